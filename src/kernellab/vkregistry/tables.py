"""The tables this package derives from the Vulkan registry: where each lives and how it is written."""
from __future__ import annotations

from pathlib import Path

from kernellab import jsontext

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: the pip package that carries ``vk.xml`` (needed only to regenerate a table)
REGISTRY_PACKAGE = "vulkan-object"


def data_path(name: str) -> Path:
    """The committed table ``kernellab/data/<name>``."""
    from importlib import resources  # when a table is read: a run of buffers reads none

    return Path(str(resources.files("kernellab") / "data" / name))


def read(name: str, key: str) -> Any:
    return jsontext.loads(data_path(name).read_text())[key]


def registry_version() -> str:
    from importlib import metadata  # 15 ms of imports: only when a table is regenerated

    return metadata.version(REGISTRY_PACKAGE)


def write(path: Path, module: str, key: str, content: Any) -> Path:
    """Write a regenerated table, saying which registry it came from and how to regenerate it."""
    doc = {"source": f"{REGISTRY_PACKAGE} {registry_version()} (vk.xml); regenerate with python -m {module}",
           key: content}
    import json

    write_staged(path, json.dumps(doc, indent=1) + "\n")
    return path


def regenerate_main(module: str, doc: str | None, regenerate: Callable[[Path | None], Path | list[Path]]) -> None:
    """``python -m kernellab.vkregistry.NAME [PATH]``: a table regenerated from the registry, with
    ``--help`` that says what it writes before anything is written."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="where to write (default: the copy kernellab ships)")
    args = parser.parse_args()
    try:
        written = regenerate(args.path)
    except OSError as exc:  # a folder that is not there, a file in its place, no room: one line
        from kernellab.textsafe import escape

        print(escape(f"python -m {module}: cannot write: {exc}"), file=sys.stderr)
        raise SystemExit(1) from None
    for path in written if isinstance(written, list) else [written]:
        print(f"wrote {path}", file=sys.stderr)


def write_staged(path: Path, text: str) -> None:
    """``text`` as the file ``path``: written to a temporary file of its own beside it, then
    renamed over it (never written through a file or a symlink planted under a fixed name, never
    into a FIFO in its place, never left half-written); the temporary file removed on failure."""
    import os
    import tempfile

    fd, staged = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(staged, 0o644)
        os.replace(staged, path)
    except BaseException:
        try:
            os.unlink(staged)
        except OSError:
            pass
        raise
