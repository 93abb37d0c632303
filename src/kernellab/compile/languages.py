"""The compile stage table: every source language with its stages, from each language's module.

The table is written out here rather than filled in by imports, so reading this file tells
which languages exist and in which order they are offered; ``all_stages(language).keys()`` is
a language's stage list.
"""
from __future__ import annotations

from collections import OrderedDict

from kernellab.compile import glsl_stages, opencl_stages, spirv_asm_stages, spirv_stages, tensor_glsl
from kernellab.compile.stage import CompileRequest, Language, Stage
from kernellab.errors import InputError

#: language name -> its stages (in the order the languages are offered)
LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (
    glsl_stages.LANGUAGE,
    spirv_stages.LANGUAGE,
    opencl_stages.LANGUAGE,
    spirv_asm_stages.LANGUAGE,
    tensor_glsl.LANGUAGE,
)}

#: the stage each language's runnable Vulkan module comes from
VULKAN_MODULE_STAGE: dict[str, str] = {name: lang.vulkan_module for name, lang in LANGUAGES.items()
                                       if lang.vulkan_module is not None}


def language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise InputError(f"unknown kernel language {name!r} (have: {', '.join(LANGUAGES)})") from None


def all_stages(language_name: str) -> OrderedDict[str, Stage]:
    """Every stage defined for a language, in pipeline order, whether or not its tool exists."""
    stages: OrderedDict[str, Stage] = OrderedDict()
    for stage in language(language_name).stages:
        stages[stage.name] = stage
    return stages


def stages_for(request: CompileRequest) -> OrderedDict[str, Stage]:
    """The stages available for ``request`` in pipeline order (stages whose tool is missing are left out)."""
    return OrderedDict((n, s) for n, s in all_stages(request.language).items() if s.run is None or s.available())
