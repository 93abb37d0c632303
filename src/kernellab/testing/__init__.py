"""Helpers shared by kernellab's tests and benchmarks (reference runners, comparisons)."""
