"""Suites of workloads with expected outputs: sidecars, comparison, discovery, pools and reports.

Each module has one job; nothing here imports numpy, Vulkan or OpenCL at import time, so
``kernellab test --help`` and ``import kernellab`` stay quick.
"""
from __future__ import annotations
