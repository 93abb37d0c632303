"""PySchedCL kernel specs: an OpenCL kernel described with symbolic sizes and a partition class.

Reading happens in two steps. :func:`~kernellab.formats.pyschedcl.spec.load_spec` checks the
file's shape (every field, every expression parsed with :mod:`kernellab.expressions`) and
reports all problems at once with JSON pointers. :meth:`KernelSpec.resolve
<kernellab.formats.pyschedcl.kernel.KernelSpec.resolve>` then evaluates the expressions for given
variables (``--set dataset=4096``) into a ``ResolvedKernel`` with plain integers, again reporting
every problem with its pointer. Task files (``spec partition dataset`` lines), PySchedCL's
``.graph`` DAG files and its expanded JSON DAGs are read by :mod:`.graph`.

The modules, bottom up: :mod:`.elements` (OpenCL C element types), :mod:`.kernel` (the checked
spec and its resolution), :mod:`.spec` (reading a spec file), :mod:`.graph` (task sets and
DAGs), :mod:`.schema` (a JSON Schema for editors). Host data and the conversion to a scenario
live above the file formats (:mod:`kernellab.runtime.partition`,
:mod:`kernellab.convert.pyschedcl_scenario`).

See ``docs/pyschedcl.md`` for what each field means and the choices made where PySchedCL was
silent.
"""
