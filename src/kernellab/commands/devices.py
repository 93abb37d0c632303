"""``kernellab devices``: list the devices each backend sees."""
from __future__ import annotations

import argparse
import json
from typing import Any

from kernellab.backends.base import choose_device
from kernellab.backends.registry import backend_class
from kernellab.backends.registry import names as backend_names
from kernellab.errors import KernellabError


def register(sub: Any) -> None:
    p = sub.add_parser("devices", help="list the devices kernellab can run on",
                       description="List Vulkan and OpenCL devices; '*' marks the one chosen by default "
                                   "(discrete GPU > integrated > virtual > CPU).")
    p.add_argument("--backend", choices=backend_names(), action="append",
                   help="only this backend (may be repeated)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=devices)


def devices(args: argparse.Namespace) -> int:
    names = args.backend or backend_names()
    result: dict[str, Any] = {}
    failures = 0
    for name in names:
        try:
            found = backend_class(name).devices()
        except (KernellabError, ImportError) as exc:
            result[name] = {"error": str(exc)}
            failures += 1
            continue
        default = choose_device(found, None) if found else None
        result[name] = {"devices": [{"index": d.index, "name": d.name, "kind": d.kind, "driver": d.driver,
                                     "api_version": d.api_version, "default": d == default,
                                     **{k: v for k, v in d.details.items() if k != "extensions"}}
                                    for d in found]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, entry in result.items():
            print(f"{name}:")
            if "error" in entry:
                print(f"  (none) {entry['error']}")
            for d in entry.get("devices", []):
                mark = "*" if d["default"] else " "
                print(f" {mark}{d['index']}: {d['name']} [{d['kind']}] api {d['api_version']}, driver {d['driver']}")
    return 1 if failures == len(names) else 0
