"""The compile stage table's names: every source language with its stages.

The table itself is in :mod:`kernellab.compile.pipeline` (a run, which needs the compiler, then
imports one module less: issue 23); this module keeps its names where the commands and tests
import them.
"""
from __future__ import annotations

from kernellab.compile.pipeline import (
    LANGUAGE_MODULES,
    LANGUAGES,
    VULKAN_MODULE_STAGE,
    all_stages,
    language,
    stages_for,
)

__all__ = ["LANGUAGES", "LANGUAGE_MODULES", "VULKAN_MODULE_STAGE", "all_stages", "language", "stages_for"]
