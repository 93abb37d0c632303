"""How a split kernel's parts see their share of the NDRange (``--split``).

A module of its own, importing nothing, so the command line can offer the modes at start-up
without loading the partition runner.
"""
from __future__ import annotations

#: ``subbuffer``: each part's work-item ids start at 0 over its own rows; ``offset``: each part
#: is launched with a global work offset over whole-size buffers
SPLIT_MODES = ("subbuffer", "offset")
