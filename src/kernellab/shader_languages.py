"""The one table of kernel languages: a scenario shader's ``type`` and the compile language it is
built as, and the family whose file-given compiler options a language takes.

It sits low (it imports nothing) so that the model's readers, the compiler-option allow-lists
(``compiler_options.py``), the compile layer, the runtime and verify read the same table.
"""
from __future__ import annotations

#: a scenario shader's ``type`` -> the compile language it is built as (``compile/pipeline.py``'s table)
LANGUAGE_OF_SHADER_TYPE: dict[str, str] = {"GLSL": "glsl", "SPIR-V": "spirv", "OpenCL-C": "opencl-c"}
#: a compile language -> the shader ``type`` a scenario writes for it
SHADER_TYPE_OF_LANGUAGE: dict[str, str] = {language: kind for kind, language in LANGUAGE_OF_SHADER_TYPE.items()}

#: a compile language, shader type or kernel-instantiation ``language`` -> the family of compiler
#: options it takes ("glsl": glslang's, "opencl": OpenCL C's); SPIR-V and binaries take none
LANGUAGE_FAMILIES: dict[str, str] = {
    "glsl": "glsl", "glsl-tensors": "glsl", "tensor-glsl": "glsl", "GLSL": "glsl",
    "opencl-c": "opencl", "OpenCL-C": "opencl", "OpenCL": "opencl",
}


def family(language: str) -> str | None:
    """The option family of a compile language or shader type; None when it takes no options."""
    return LANGUAGE_FAMILIES.get(language)
