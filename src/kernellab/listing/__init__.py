"""Instruction listings: SPIR-V decoded with the official grammar, as listings in IGA's JSON
schema (labels with CFG edges, operands, def/use links, live totals), rendered as text, dot or
HTML; IGA's own listings are read and rendered the same way. See ``docs/listing.md``.

>>> from kernellab.listing import decode, build_listings, ListingOptions
>>> listings = build_listings(decode(open("k.spv", "rb").read()), ListingOptions(defs=True))
"""
from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: public name -> the module that defines it (imported on first use: the CLI loads only what it needs)
_EXPORTS = {
    "ListingOptions": "build", "build_listings": "build",
    "decode": "spirv",
    "load_listings": "iga", "validate_listing": "iga",
    "render_text": "render", "render_dot": "render", "render_html": "render", "summary": "render",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kernellab.listing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kernellab.listing.{module}"), name)
