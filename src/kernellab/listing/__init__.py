"""Instruction listings: SPIR-V decoded with the official grammar, as listings in IGA's JSON
schema (labels with CFG edges, operands, def/use links, live totals), rendered as text, dot or
HTML; IGA's own listings are read and rendered the same way. See ``docs/listing.md``.

>>> from kernellab.listing import decode, build_listings, ListingOptions
>>> listings = build_listings(decode(open("k.spv", "rb").read()), ListingOptions(defs=True))
"""
from __future__ import annotations

from kernellab.listing.build import ListingOptions, build_listings
from kernellab.listing.iga import load_listings, validate_listing
from kernellab.listing.render import render_dot, render_html, render_text, summary
from kernellab.listing.spirv import decode

__all__ = ["ListingOptions", "build_listings", "decode", "load_listings", "validate_listing", "render_text",
           "render_dot", "render_html", "summary"]
