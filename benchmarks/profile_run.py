"""cProfile of one ``kernellab`` command through the program's real path (the kept class and
module code installed, the quick exit): ``os._exit`` writes the stats before the process ends,
which ``python -m cProfile -m kernellab`` never gets to do.

    python benchmarks/profile_run.py STATS_FILE run --scenario S.json --output OUT
    python -c "import pstats; pstats.Stats('STATS_FILE').sort_stats('tottime').print_stats(15)"
"""
from __future__ import annotations

import cProfile
import os
import sys


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out, argv = sys.argv[1], sys.argv[2:]
    profile = cProfile.Profile()
    real_exit = os._exit

    def dump_then_exit(code: int) -> None:
        profile.disable()
        profile.dump_stats(out)
        real_exit(code)

    os._exit = dump_then_exit  # type: ignore[assignment]
    sys.argv = ["kernellab", *argv]
    profile.enable()
    from kernellab.cli import program
    try:
        program()
    except SystemExit:
        profile.disable()
        profile.dump_stats(out)
        raise


if __name__ == "__main__":
    main()
