"""``kernellab schema``: print the JSON Schema of scenario files (for editors)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("schema", help="print a JSON Schema for scenario files",
                       description="Print a JSON Schema (draft 2020-12) that editors can use to check scenario files.")
    p.add_argument("-o", "--output", type=Path, help="write to this file instead of standard output")
    p.add_argument("--expectations", action="store_true", help="the schema of expectations sidecars (NAME.expect.json)")
    p.set_defaults(func=schema)


def schema(args: argparse.Namespace) -> int:
    from kernellab.formats.scenario import json_schema
    from kernellab.outputs import write_text

    if getattr(args, "expectations", False):
        from kernellab.suite.expectations import json_schema as expectations_schema
        text = json.dumps(expectations_schema(), indent=2) + "\n"
    else:
        text = json.dumps(json_schema(), indent=2) + "\n"
    if args.output:
        write_text(args.output, text)
    else:
        print(text, end="")
    return 0
