"""The native driver APIs under the backends: Vulkan (the ``vulkan`` cffi binding) and OpenCL
(pyopencl).

One module per API (:mod:`.vk`, :mod:`.cl`) loads the binding, and is the only place where a
native result becomes a kernellab error (:mod:`.failure` classifies it, out-of-memory included);
:mod:`.devices` holds the device record every backend reports and the one rule that matches a
``--device``-style selector against a list of them. This sits low (layer 1) because more than
the backends talk to drivers: the compile stages build OpenCL device binaries and the partition
runner drives OpenCL queues of its own.
"""

#: non-empty while a native OpenCL build past the tool time limit may end this process
#: (:mod:`.build_limit`, which names it ``armed``); kept in the package, which a run imports
#: anyway, so that the ``kernellab`` program arms it without importing a module more (issue 23)
build_limit_armed: list[bool] = []
