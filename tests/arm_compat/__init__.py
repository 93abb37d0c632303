"""Byte-for-byte comparison of `kernellab run` with Arm's Scenario Runner (see docs/arm-compat.md)."""
