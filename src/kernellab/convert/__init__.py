"""Conversions between workload formats that need a compiler or a device.

A kernel-instantiation file or a PySchedCL spec becomes a scenario (and a scenario's OpenCL C
dispatches become kernel instantiations) by building the kernels on an OpenCL device: the
argument types, struct layouts and intermediate buffer contents come from there. Plain file
reading and writing stays in :mod:`kernellab.formats`.
"""
