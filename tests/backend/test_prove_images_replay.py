"""``kernellab verify --prove`` on kernel-instantiation files with image and sampler arguments: the
proven copy, its racy twin and a write outside the image, each counterexample replayed on
Oclgrind (the launch's images are its global size, the image the proof assumed)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernellab.cli import main

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

KERNELS = """
__kernel void copy(__write_only image2d_t dest, __read_only image2d_t src, sampler_t s) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  write_imagef(dest, p, read_imagef(src, s, p));
}
__kernel void halves(__write_only image2d_t dest, __read_only image2d_t src, sampler_t s) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  write_imagef(dest, (int2)(p.x / 2, p.y), read_imagef(src, s, p));
}
__kernel void shifted(__write_only image2d_t dest, __read_only image2d_t src, sampler_t s) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  write_imagef(dest, (int2)(p.x, p.y + 8), read_imagef(src, s, p));
}
"""


def prove(tmp: Path, entry: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    (tmp / "k.cl").write_text(KERNELS)
    doc = [{"language": "OpenCL", "kernel_file": "k.cl", "entry_point": entry, "global_size": [16, 8],
            "local_size": [4, 4], "kernel_arguments": [{"type": "image"}, {"type": "image"}, {"type": "sampler"}]}]
    (tmp / f"{entry}.json").write_text(json.dumps(doc))
    capsys.readouterr()
    status = main(["verify", "--prove", "--json", str(tmp / f"{entry}.json")])
    return status, json.loads(capsys.readouterr().out)


def test_image_copy_proven(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = prove(tmp_path, "copy", capsys)
    assert status == 0 and doc["launches"][0]["proof"] == "proven"


def test_racy_image_write_is_a_defect_the_replay_confirms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = prove(tmp_path, "halves", capsys)
    assert status == 1 and doc["launches"][0]["proof"] == "defect"
    (race,) = doc["findings"]
    assert race["kind"] == "data-race" and race["severity"] == "defect"  # confirmed by Oclgrind
    example = race["examples"][0]["counterexample"]
    assert [a["type"] for a in example["kernel_arguments"]] == ["image", "image", "sampler"]


def test_write_outside_the_image_is_out_of_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # rows 8.. are past the launch's 16 x 8 image, and past its memory: Oclgrind sees the write
    status, doc = prove(tmp_path, "shifted", capsys)
    assert status == 1
    assert [(f["kind"], f["severity"]) for f in doc["findings"]] == [("out-of-bounds", "defect")]


BLUR = Path(__file__).resolve().parents[2] / "examples" / "image_blur"


@pytest.mark.parametrize("store, kind", [("p", None), ("p / 2", "data-race"), ("p + ivec2(1, 0)", "out-of-bounds")])
def test_scenario_images_proven_or_found_and_replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     store: str, kind: str | None) -> None:
    # the blur example (a sampled image read around each texel, a storage image written) and twins
    # that write two texels' worth into one and past the image's edge: the scenario's own images
    # (64 x 48 RGBA8), replayed by the SPIR-V checker
    for name in ("scenario.json", "input.dds"):
        (tmp_path / name).write_bytes((BLUR / name).read_bytes())
    (tmp_path / "blur.comp").write_text((BLUR / "blur.comp").read_text().replace("imageStore(dst, p,",
                                                                                 f"imageStore(dst, {store},"))
    capsys.readouterr()
    status = main(["verify", "--prove", "--json", str(tmp_path / "scenario.json")])
    doc = json.loads(capsys.readouterr().out)
    if kind is None:
        assert status == 0 and doc["launches"][0]["proof"] == "proven"
    else:
        assert status == 1 and [(f["kind"], f["severity"]) for f in doc["findings"]] == [(kind, "defect")]
        assert "image memory" in doc["findings"][0]["message"]
