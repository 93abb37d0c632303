"""The compile stage table: every source language with its stages, from each language's module.

The table is written out here rather than filled in by imports, so reading this file tells
which languages exist and in which order they are offered; ``all_stages(language).keys()`` is
a language's stage list. A language's module is imported when its stages are first asked for:
a run of a SPIR-V module loads none of the GLSL, OpenCL C or tensor stages (issue 23: ~20 M
instructions of start-up).
"""
from __future__ import annotations

import importlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping

from kernellab.compile.stage import CompileRequest, Language, Stage
from kernellab.errors import InputError

#: language name -> the module of ``kernellab.compile`` whose ``LANGUAGE`` holds its stages (in
#: the order the languages are offered)
LANGUAGE_MODULES: dict[str, str] = {
    "glsl": "glsl_stages",
    "spirv": "spirv_stages",
    "opencl-c": "opencl_stages",
    "spirv-asm": "spirv_asm_stages",
    "glsl-tensors": "tensor_glsl",
}

#: the stage each language's runnable Vulkan module comes from (each module's ``Language`` says
#: the same: tests/unit/test_compile_languages.py compares them), written out so that asking for it
#: imports no compiler's module
VULKAN_MODULE_STAGE: dict[str, str] = {"glsl": "spirv", "spirv": "spirv", "opencl-c": "spirv-vulkan",
                                       "spirv-asm": "spirv", "glsl-tensors": "spirv"}


class _Languages(Mapping[str, Language]):
    """Language name -> :class:`Language`, each module imported on first use."""

    def __getitem__(self, name: str) -> Language:
        module = importlib.import_module(f"kernellab.compile.{LANGUAGE_MODULES[name]}")
        lang: Language = module.LANGUAGE
        return lang

    def __iter__(self) -> Iterator[str]:
        return iter(LANGUAGE_MODULES)

    def __len__(self) -> int:
        return len(LANGUAGE_MODULES)


#: language name -> its stages (in the order the languages are offered)
LANGUAGES: Mapping[str, Language] = _Languages()


def language(name: str) -> Language:
    if name not in LANGUAGE_MODULES:
        raise InputError(f"unknown kernel language {name!r} (have: {', '.join(LANGUAGES)})")
    return LANGUAGES[name]


def all_stages(language_name: str) -> OrderedDict[str, Stage]:
    """Every stage defined for a language, in pipeline order, whether or not its tool exists."""
    stages: OrderedDict[str, Stage] = OrderedDict()
    for stage in language(language_name).stages:
        stages[stage.name] = stage
    return stages


def stages_for(request: CompileRequest) -> OrderedDict[str, Stage]:
    """The stages available for ``request`` in pipeline order (stages whose tool is missing are left out)."""
    return OrderedDict((n, s) for n, s in all_stages(request.language).items() if s.run is None or s.available())
