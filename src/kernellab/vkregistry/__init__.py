"""Facts from the Vulkan registry (``vk.xml``) that kernellab needs on the host, as plain data.

Each table is derived from the registry by code in this package and committed under
``kernellab/data/``, so reading it needs neither the registry package nor a Vulkan driver.
"""
