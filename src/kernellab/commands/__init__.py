"""The subcommands, one module each; the flags several share are defined here once."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_allow_outside(parser: argparse.ArgumentParser) -> None:
    """``--allow-outside PATH``: one flag, one meaning, on every command that reads a workload's
    kernels (cli adds it to each compiling command; the setting is ``config.allow_outside``)."""
    parser.add_argument("--allow-outside", action="append", type=Path, default=[], metavar="PATH",
                        help="let include folders and #include targets lie in PATH too (default: only the "
                             "workload's folder); may be repeated")
