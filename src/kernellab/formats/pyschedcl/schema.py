"""A JSON Schema of a kernel spec, for editors."""
from __future__ import annotations

from typing import Any

from kernellab.formats.pyschedcl.elements import SCALAR_TYPES, VECTOR_WIDTHS


def json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of a kernel spec, for editors; the reader checks more
    (positions 0..N-1, expressions, sizes) than a schema can say."""
    types = sorted(set(SCALAR_TYPES) - {"unsigned"})
    type_pattern = "^(" + "|".join(t.replace(" ", r"\s+") for t in types) + ")(" + "|".join(
        map(str, VECTOR_WIDTHS)) + ")?$"
    expr = {"type": "string", "description": "a symbolic expression: numbers, variables (dataset, size_percent, "
                                             "offset_percent, partition, --set names), + - * / // % **, "
                                             "comparisons, lists, min max ceil floor partition_round"}
    number_or_expr = {"oneOf": [{"type": "number"}, expr]}
    sizes = {"oneOf": [expr, {"type": "integer", "minimum": 1},
                       {"type": "array", "minItems": 1, "maxItems": 3, "items": number_or_expr}]}
    elem_type = {"type": "string", "pattern": type_pattern}
    buffer = {"type": "object", "required": ["pos", "size", "type"], "properties": {
        "pos": {"type": "integer", "minimum": 0}, "size": number_or_expr, "type": elem_type,
        "break": {"enum": [0, 1], "description": "1: split with dimension 0 of the NDRange; 0: whole to every part"},
        "from": {"type": "object", "properties": {"kernel": {}, "pos": {"type": "integer"}}}}}
    var_argument = {"type": "object", "required": ["pos", "type", "value"], "properties": {
        "pos": {"type": "integer", "minimum": 0}, "type": elem_type,
        "value": {"oneOf": [{"type": "number"}, expr, {"type": "array", "items": number_or_expr}]}}}
    local_argument = {"type": "object", "required": ["pos", "type", "size"], "properties": {
        "pos": {"type": "integer", "minimum": 0}, "type": elem_type, "size": number_or_expr}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "PySchedCL kernel spec (kernellab)",
        "type": "object",
        "required": ["name", "src", "workDimension", "globalWorkSize"],
        "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "src": {"type": "string", "minLength": 1},
            "workDimension": {"type": "integer", "minimum": 1, "maximum": 3},
            "partition": {"type": "integer", "minimum": 0, "maximum": 10},
            "globalWorkSize": sizes,
            "localWorkSize": sizes,
            "inputBuffers": {"type": "array", "items": buffer},
            "outputBuffers": {"type": "array", "items": buffer},
            "ioBuffers": {"type": "array", "items": buffer},
            "varArguments": {"type": "array", "items": var_argument},
            "localArguments": {"type": "array", "items": local_argument},
            "id": {"type": ["string", "integer"]},
            "macros_values": {"type": "object", "additionalProperties": number_or_expr},
            "symbolicVariables": {"type": "object", "additionalProperties": {"type": "number"}},
        },
    }
