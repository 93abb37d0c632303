"""The command-line flags of PySchedCL kernel specs, shared by ``run``, ``import``,
``partition-sweep`` and ``schedule``. Kept free of heavy imports: ``run`` registers them on every
start-up."""
from __future__ import annotations

from kernellab.runtime.split_modes import SPLIT_MODES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


def add_spec_arguments(parser: Any, *, runner: bool = True) -> None:
    """The flags a PySchedCL spec needs, for ``run`` (and ``import``/``partition-sweep``):
    ``--set NAME=VALUE`` (repeatable), ``--partition P``, ``--devices CPU,GPU``, ``--seed``,
    ``--input POS=FILE.npy`` (repeatable), ``--split subbuffer|offset``."""
    have = {a for action in parser._actions for a in action.option_strings}

    def add(flag: str, **kw: Any) -> None:
        if flag not in have:
            parser.add_argument(flag, **kw)

    add("--set", action="append", default=None, metavar="NAME=VALUE",
        help="a variable of a kernel spec's expressions, e.g. --set dataset=4096 (repeatable)")
    add("--partition", type=int, default=None, metavar="P",
        help="kernel spec: P/10 of the NDRange on the GPU-class device, the rest on the CPU-class one (0..10)")
    add("--devices", default=None, metavar="CPU,GPU",
        help="kernel spec: the CPU-class and GPU-class OpenCL devices (kind cpu/gpu, index or name substring)")
    if runner:
        add("--seed", type=int, default=0, help="seed of the generated input data (default 0)")
        add("--input", action="append", default=None, metavar="POS=FILE.npy",
            help="kernel spec: data for the buffer argument POS (repeatable)")
        add("--split", choices=SPLIT_MODES, default="subbuffer",
            help="kernel spec: give each part sub-buffers with ids from 0 (default) or a global work offset")
