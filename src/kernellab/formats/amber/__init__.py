"""AmberScript: the compute subset of Google's Amber test format, read into kernellab's scenario
model (docs/amber.md)."""
