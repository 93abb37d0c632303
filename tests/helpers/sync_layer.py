"""Scenarios of dispatches with and without the barrier that orders them, checked two ways:
by ``kernellab verify`` (the SPIR-V checker's model of Vulkan synchronization) and by the Khronos
validation layer's synchronization validation while ``kernellab run`` records them on lavapipe.

The layer runs in a child process (``python sync_layer.py SCENARIO RECORDING``), with either
kernellab's own recording (``kernellab``: every scenario barrier recorded for the compute stage
with shader reads and writes on both sides) or Arm's runner's (``arm``: each barrier with the
scenario's own stages and access masks through vkCmdPipelineBarrier2, the implicit barrier all
commands / memory read and write), which is what the scenario states. ``python sync_layer.py
--table`` prints the comparison table of docs/verify-vulkan.md.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

LAYER = "VK_LAYER_KHRONOS_validation"
LAYER_MANIFEST = Path("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json")
_HAZARD = re.compile(r"SYNC-HAZARD-([A-Z-]+)")

WRITE = ("#version 450\nlayout(local_size_x = 16) in;\n"
         "layout(std430, set = 0, binding = 0) buffer X { uint x[]; };\n"
         "void main() { x[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x; }\n")
READ = ("#version 450\nlayout(local_size_x = 16) in;\n"
        "layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };\n"
        "layout(std430, set = 0, binding = 1) buffer O { uint o[]; };\n"
        "void main() { o[gl_GlobalInvocationID.x] = x[gl_GlobalInvocationID.x] + 1u; }\n")
W, R = "ACCESS_COMPUTE_SHADER_WRITE", "ACCESS_COMPUTE_SHADER_READ"


def _barrier(uid: str, buffer: str | None, src: str = W, dst: str = R, src_stage: str = "COMPUTE",
             dst_stage: str = "COMPUTE") -> dict[str, Any]:
    fields = {"uid": uid, "src_access": src, "dst_access": dst, "src_stage": [src_stage], "dst_stage": [dst_stage]}
    if buffer is None:
        return {"memory_barrier": fields}
    return {"buffer_barrier": dict(fields, buffer_resource=buffer, size=256)}


#: the barrier resources the cases use
BARRIERS = [_barrier("bx", "x"), _barrier("by", "y"), _barrier("m", None),
            _barrier("m_read_read", None, src=R), _barrier("m_write_write", None, dst=W),
            _barrier("m_to_graphics", None, dst_stage="GRAPHICS"),
            _barrier("m_from_graphics", None, src=R, src_stage="GRAPHICS")]


def _dispatch(shader: str, *buffers: str) -> dict[str, Any]:
    return {"dispatch_compute": {"shader_ref": shader, "rangeND": [4], "implicit_barrier": False,
                                 "bindings": [{"set": 0, "id": k, "resource_ref": b} for k, b in enumerate(buffers)]}}


def _sync(*barriers: str) -> list[dict[str, Any]]:
    if barriers == ("boundary",):
        return [{"mark_boundary": {"resources": []}}]
    refs = {"memory_barrier_refs": [b for b in barriers if b.startswith("m")],
            "buffer_barrier_refs": [b for b in barriers if b.startswith("b")]}
    return [{"dispatch_barrier": refs}] if barriers else []


_FIRST = {"read-after-write": ("w", "x"), "write-after-write": ("w", "x"), "write-after-read": ("r", "x", "o")}
_SECOND = {"read-after-write": ("r", "x", "o"), "write-after-write": ("w", "x"), "write-after-read": ("w", "x")}


def _pair(hazard: str, between: tuple[str, ...]) -> list[dict[str, Any]]:
    return [_dispatch(*_FIRST[hazard]), *_sync(*between), _dispatch(*_SECOND[hazard])]


#: name -> (commands, the hazards the spec's text gives; a note where the layer disagrees)
CASES: dict[str, tuple[list[dict[str, Any]], set[str]]] = {}
for _hazard in _FIRST:
    _short = "".join(w[0] for w in _hazard.split("-")).upper()  # RAW, WAW, WAR
    CASES[f"{_short}, nothing between"] = (_pair(_hazard, ()), {_hazard})
    CASES[f"{_short}, buffer barrier on another buffer"] = (
        _pair(_hazard, ("by",)), set() if _hazard == "write-after-read" else {_hazard})
    CASES[f"{_short}, buffer barrier on the buffer"] = (_pair(_hazard, ("bx",)), set())
    CASES[f"{_short}, global memory barrier"] = (_pair(_hazard, ("m",)), set())
    CASES[f"{_short}, frame boundary"] = (_pair(_hazard, ("boundary",)), set())
CASES.update({
    "chain: A writes x, barrier(x), B writes y, barrier(y), C reads x": (
        [_dispatch("w", "x"), *_sync("bx"), _dispatch("w", "y"), *_sync("by"), _dispatch("r", "x", "o")], set()),
    "chain: A writes x, barrier(y), B writes y, barrier(y), C reads x": (
        [_dispatch("w", "x"), *_sync("by"), _dispatch("w", "y"), *_sync("by"), _dispatch("r", "x", "o")],
        {"read-after-write"}),
    "RAW, memory barrier read->read": (_pair("read-after-write", ("m_read_read",)), {"read-after-write"}),
    "RAW, memory barrier write->write": (_pair("read-after-write", ("m_write_write",)), {"read-after-write"}),
    "WAW, memory barrier write->read": (_pair("write-after-write", ("m",)), set()),
    "WAW, memory barrier read->read": (_pair("write-after-write", ("m_read_read",)), {"write-after-write"}),
    "WAR, memory barrier read->read": (_pair("write-after-read", ("m_read_read",)), set()),
    "RAW, compute->graphics then graphics->compute": (
        [_dispatch("w", "x"), *_sync("m_to_graphics"), *_sync("m_from_graphics"), _dispatch("r", "x", "o")], set()),
    "RAW, compute->graphics only": (
        [_dispatch("w", "x"), *_sync("m_to_graphics"), _dispatch("r", "x", "o")], {"read-after-write"}),
})


def write_case(folder: Path, name: str) -> Path:
    """The scenario of case ``name`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "w.comp").write_text(WRITE)
    (folder / "r.comp").write_text(READ)
    resources: list[dict[str, Any]] = [{"shader": {"uid": "w", "src": "w.comp", "type": "GLSL"}},
                                       {"shader": {"uid": "r", "src": "r.comp", "type": "GLSL"}}]
    resources += [{"buffer": {"uid": b, "size": 256, "shader_access": "readwrite"}} for b in ("x", "y", "o")]
    path = folder / "s.json"
    path.write_text(json.dumps({"resources": resources + BARRIERS, "commands": CASES[name][0]}))
    return path


def checker_hazards(path: Path) -> set[str]:
    """The hazard classes ``kernellab verify`` reports between dispatches."""
    out = subprocess.run([sys.executable, "-m", "kernellab", "verify", str(path), "--json"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    return {_class(f["message"]) for f in json.loads(out.stdout)["findings"]
            if f.get("race", {}).get("scope") == "inter-dispatch"}


def _class(message: str) -> str:
    found = re.search(r"\((read-after-write|write-after-write|write-after-read)\)", message)
    assert found, message
    return found.group(1)


def layer_hazards(path: Path, recording: str) -> set[str]:
    """The hazard classes the validation layer's synchronization validation reports while
    ``kernellab run`` records the scenario (``recording``: ``kernellab`` or ``arm``)."""
    env = dict(os.environ, VK_INSTANCE_LAYERS=LAYER,
               VK_LAYER_ENABLES="VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT:"
                                "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT")
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run([sys.executable, __file__, str(path), recording, out], capture_output=True, text=True,
                              env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return {m.lower() for m in _HAZARD.findall(done.stdout + done.stderr)}


def _record_as_arm(path: Path) -> None:
    """Make kernellab's Vulkan backend record barriers as Arm's runner does (barrier.cpp,
    compute.cpp): each scenario barrier with its own stages and access masks."""
    from kernellab import model as m
    from kernellab.backends import vulkan as backend
    from kernellab.formats.scenario import load_scenario
    scenario, _ = load_scenario(path)

    def stages(vk: Any, names: list[str]) -> int:
        bits = {"COMPUTE": vk.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, "ALL": vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                "GRAPHICS": vk.VK_PIPELINE_STAGE_2_FRAGMENT_SHADER_BIT
                | vk.VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT}
        out = 0
        for name in names:
            out |= bits[name]
        return out

    def access(vk: Any, name: str) -> int:
        return {W: vk.VK_ACCESS_2_SHADER_WRITE_BIT, R: vk.VK_ACCESS_2_SHADER_READ_BIT,
                "ACCESS_MEMORY_WRITE": vk.VK_ACCESS_2_MEMORY_WRITE_BIT,
                "ACCESS_MEMORY_READ": vk.VK_ACCESS_2_MEMORY_READ_BIT}[name]

    def barrier(self: Any, buffers: Any, memory: bool, label: str) -> None:
        # Arm's recording needs synchronization2's structs, which only the full binding declares
        self.gpu.use_full_binding()
        vk = self.gpu.vk
        cmd = vk.adopt(self.gpu.begin())
        index, kind = label.split(":", 1)
        mems, bufs = [], []
        if kind == "implicit_barrier":
            every = vk.VK_ACCESS_2_MEMORY_READ_BIT | vk.VK_ACCESS_2_MEMORY_WRITE_BIT
            mems.append(vk.VkMemoryBarrier2(srcStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, srcAccessMask=every,
                                            dstStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, dstAccessMask=every))
        else:
            c = scenario.commands[int(index)]
            assert isinstance(c, m.DispatchBarrier)
            for ref in c.memory_barrier_refs:
                b = scenario.by_uid[ref]
                assert isinstance(b, m.MemoryBarrier)
                mems.append(vk.VkMemoryBarrier2(srcStageMask=stages(vk, b.src_stage), dstStageMask=stages(vk, b.dst_stage),
                                                srcAccessMask=access(vk, b.src_access),
                                                dstAccessMask=access(vk, b.dst_access)))
            for ref, (buf, offset, size) in zip(c.buffer_barrier_refs, buffers):
                b = scenario.by_uid[ref]
                assert isinstance(b, m.BufferBarrier)
                bufs.append(vk.VkBufferMemoryBarrier2(
                    srcStageMask=stages(vk, b.src_stage), dstStageMask=stages(vk, b.dst_stage),
                    srcAccessMask=access(vk, b.src_access), dstAccessMask=access(vk, b.dst_access),
                    srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                    buffer=vk.adopt(buf.handle), offset=offset, size=size))
        vk.vkCmdPipelineBarrier2(cmd, vk.VkDependencyInfo(memoryBarrierCount=len(mems), pMemoryBarriers=mems or None,
                                                          bufferMemoryBarrierCount=len(bufs),
                                                          pBufferMemoryBarriers=bufs or None))

    backend.VulkanBackend._barrier = barrier  # type: ignore[method-assign]


def table(folder: Path) -> str:
    """The markdown table of docs/verify-vulkan.md: each case, the spec's answer, the checker's,
    and the layer's on both recordings."""
    def cell(found: set[str]) -> str:
        return ", ".join(sorted(h.replace("read-after-write", "RAW").replace("write-after-write", "WAW")
                                .replace("write-after-read", "WAR") for h in found)) or "none"
    rows = ["| case | spec | `kernellab verify` | layer, Arm's recording | layer, kernellab's recording |",
            "|---|---|---|---|---|"]
    for n, name in enumerate(CASES):
        path = write_case(folder / str(n), name)
        rows.append(f"| {name} | {cell(CASES[name][1])} | {cell(checker_hazards(path))} | "
                    f"{cell(layer_hazards(path, 'arm'))} | {cell(layer_hazards(path, 'kernellab'))} |")
    return "\n".join(rows)


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        with tempfile.TemporaryDirectory() as tmp:
            print(table(Path(tmp)))
        sys.exit(0)
    scenario_path, recording, output = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    if recording == "arm":
        _record_as_arm(scenario_path)
    from kernellab.cli import main
    sys.exit(main(["run", str(scenario_path), "--output", output]))
