"""OpenCL images and samplers in the proof (``verify/prove/images.py``): a proven image copy and
its racy twin, writes outside the launch's image, image barrier phases and read-write races (GLSL
storage images, which compile to the same instructions), samplers passed to a function without a
body, and what stays ``unknown``."""
from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from kernellab import tools

z3 = pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from kernellab.verify.prove import engine, images, opencl  # noqa: E402

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
needs_clspv = pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv")
needs_glslang = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

COPY = """
__kernel void k(__write_only image2d_t dest, __read_only image2d_t src, sampler_t s) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  write_imagef(dest, %s, read_imagef(src, s, p));
}
"""


def prove_cl(tmp: Path, source: str, global_size: tuple[int, ...] = (16, 8), local: tuple[int, int, int] = (4, 4, 1),
             symbolic: bool = False) -> engine.Outcome:
    path = tmp / "k.cl"
    path.write_text(source)
    compiled = opencl.compile_kernel(path, "k", "", local, [], work_dim=len(global_size))
    launch = opencl.launch(compiled, global_size, local, [], symbolic_sizes=symbolic)
    return engine.prove(compiled.module, launch, timeout=60)


def kinds(o: engine.Outcome) -> set[str]:
    return {f.kind for f in o.findings}


@needs_clspv
def test_image_copy_is_proven_and_its_racy_twin_is_a_race_on_the_image(tmp_path: Path) -> None:
    assert prove_cl(tmp_path, COPY % "p").verdict == "proven"
    racy = prove_cl(tmp_path, COPY % "(int2)(p.x / 2, p.y)")
    assert racy.verdict == "defect" and kinds(racy) == {"data-race"}
    (race,) = racy.findings
    assert race.address_space == "image" and "write-write" in race.message
    a, b = race.work_items
    assert a["global"][0] // 2 == b["global"][0] // 2 and a["global"][1] == b["global"][1]
    assert a["global"] != b["global"]


@needs_clspv
def test_write_outside_the_image_is_out_of_bounds_and_races_with_nothing(tmp_path: Path) -> None:
    # the launch's image is its global size (16 x 8 texels of 16 bytes)
    outside = prove_cl(tmp_path, COPY % "(int2)(p.x + 1, p.y)")
    assert kinds(outside) == {"out-of-bounds"}
    (f,) = outside.findings
    assert f.address_space == "image" and "outside its 2048 bytes" in f.message
    assert f.work_items[0]["global"][0] == 15  # the last column writes past the image
    # negative coordinates are outside too (OpenCL's coordinates are signed)
    assert kinds(prove_cl(tmp_path, COPY % "(int2)(p.x - 1, p.y)")) == {"out-of-bounds"}
    # a one-dimensional launch gives no height: the write is unknown, never proven
    one = prove_cl(tmp_path, COPY % "p", global_size=(16,), local=(4, 1, 1))
    assert one.verdict == "unknown" and "whose extent the launch does not give" in (one.reason or "")
    # nor does a launch make a depth image (clspv types it as a plain one: its parameter's type tells)
    depth = prove_cl(tmp_path, "__kernel void k(__write_only image2d_depth_t d) {\n"
                               "  write_imagef(d, (int2)(get_global_id(0), get_global_id(1)), 0.0f);\n}\n")
    assert depth.verdict == "unknown" and "whose extent the launch does not give" in (depth.reason or "")


@needs_clspv
def test_reads_through_any_sampler_are_any_value_whatever_the_coordinates(tmp_path: Path) -> None:
    # a read far outside the image (a clamped or border texel) is no finding; the value read is
    # unconstrained, so a kernel that writes where it depends is a race
    source = """
const sampler_t lit = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
__kernel void k(__write_only image2d_t dest, __read_only image2d_t src, __read_only image2d_t isrc,
                __global int *out) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  float4 v = read_imagef(src, lit, p + (int2)(1000, -5));
  int4 w = read_imagei(isrc, p);
  write_imagef(dest, p, v);
  out[p.y * 16 + p.x] = w.x;
  %s
}
"""
    assert prove_cl(tmp_path, source % "").verdict == "proven"
    racy = prove_cl(tmp_path, source % "if (w.y == 7) out[0] = 1;")
    assert kinds(racy) == {"data-race"} and racy.findings[0].address_space == "storage-buffer"


@needs_clspv
def test_image_queries_give_the_launch_extent(tmp_path: Path) -> None:
    source = """
__kernel void k(__write_only image2d_t dest) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  if (get_image_width(dest) == 16 && get_image_height(dest) == 8) write_imagef(dest, p, (float4)(0.0f));
  else write_imagef(dest, (int2)(0, 0), (float4)(1.0f));
}
"""
    assert prove_cl(tmp_path, source).verdict == "proven"
    assert kinds(prove_cl(tmp_path, source, global_size=(8, 8))) == {"data-race"}


@needs_clspv
def test_sampler_passed_to_a_function_without_a_body_is_no_pointer(tmp_path: Path) -> None:
    from kernellab.verify.prove import stubs

    ir = ("define spir_func void @bar(%opencl.sampler_t addrspace(2)* %0) {\n  call void @__kl_stub(i32 0)\n}\n"
          "define spir_func void @baz(%opencl.image2d_wo_t addrspace(1)* %0) {\n  call void @__kl_stub(i32 4)\n}\n")
    assert stubs.pointer_stubs(ir) == ["baz"]  # an image could be written through: still refused
    source = """
void bar(sampler_t s);
__kernel void k(__write_only image2d_t dest, sampler_t s) {
  bar(s);
  write_imagef(dest, (int2)(get_global_id(0), get_global_id(1)), (float4)(0.0f));
}
"""
    assert prove_cl(tmp_path, source).verdict == "proven"


@needs_clspv
def test_image_writes_with_symbolic_sizes_are_unknown(tmp_path: Path) -> None:
    o = prove_cl(tmp_path, COPY % "p", symbolic=True)
    assert o.verdict == "unknown" and "--prove-sizes" in (o.reason or "")


@needs_clspv
def test_the_dynamic_spirv_checker_still_refuses_opencl_images(tmp_path: Path) -> None:
    from kernellab.spirvsim.clspv import launch, reflection
    from kernellab.spirvsim.module import Unsupported

    path = tmp_path / "k.cl"
    path.write_text(COPY % "p")
    kernel = reflection(opencl.compile_source(path, ""))["k"]
    assert [a.kind for _, a in sorted(kernel.arguments.items())] == [
        "ArgumentStorageImage", "ArgumentSampledImage", "ArgumentSampler"]
    with pytest.raises(Unsupported, match="images and samplers"):
        launch(kernel, [16, 8], [4, 4], [b"", b"", b""])
    path.write_text("const sampler_t s = CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;\n"
                    "__kernel void k(__read_only image2d_t i, __global float *o) { o[0] = read_imagef(i, s, (int2)(0)).x; }")
    kernel = reflection(opencl.compile_source(path, ""))["k"]
    assert kernel.literal_samplers and kernel.literal_samplers[0][2] & 0x0F  # the mask: CLK_ADDRESS_CLAMP
    with pytest.raises(Unsupported, match="LiteralSampler"):
        launch(kernel, [1], [1], [b"", struct.pack("<q", 0)])


# --- storage images (GLSL's imageLoad/imageStore: the OpImageRead/OpImageWrite of OpenCL's
# read_write images, which clspv builds only for OpenCL C 2.0 with options the proof cannot give)

def prove_glsl_image(body: str, groups: int = 2, decls: str = "",
                     more: dict[tuple[int, int], images.Extent] | None = None) -> engine.Outcome:
    from kernellab.spirvsim import glsl_to_spirv
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load

    source = f"""#version 450
layout(local_size_x = 8, local_size_y = 4) in;
layout(binding = 0, rgba32f) uniform image2D img;
{decls}
void main() {{
  ivec2 p = ivec2(gl_GlobalInvocationID.xy);
  {body}
}}
"""
    module = load(glsl_to_spirv(source), "main", file="shader.comp", eval_spec_op=eval_spec_op)
    launch = engine.Launch(module.local_size, (groups, 1, 1))
    launch.images[(0, 0)] = images.Extent(2)  # the image is the launch's global size: 16 x 4 texels
    launch.buffer_sizes[(0, 0)] = 16 * 4 * 16
    for key, ext in (more or {}).items():
        launch.images[key] = ext
        launch.buffer_sizes[key] = ext.bytes((16, 4, 1))
    return engine.prove(module, launch, timeout=60)


@needs_glslang
def test_read_write_image_races_per_texel_and_image_barriers_order_a_work_group() -> None:
    assert prove_glsl_image("imageStore(img, p, imageLoad(img, p) * 2.0);").verdict == "proven"
    shifted = prove_glsl_image("vec4 v = imageLoad(img, ivec2(p.x ^ 1, p.y)); imageStore(img, p, v);")
    assert kinds(shifted) == {"data-race"} and "read-write" in shifted.findings[0].message
    # a barrier that orders image memory separates the read and the write within a work-group ...
    ordered = ("vec4 v = imageLoad(img, ivec2(p.x ^ 1, p.y)); memoryBarrierImage(); barrier(); "
               "imageStore(img, p, v);")
    assert prove_glsl_image(ordered).verdict == "proven"
    # ... one that orders only buffers and shared memory does not
    unordered = ("vec4 v = imageLoad(img, ivec2(p.x ^ 1, p.y)); memoryBarrierBuffer(); barrier(); "
                 "imageStore(img, p, v);")
    assert kinds(prove_glsl_image(unordered)) == {"data-race"}
    # and no barrier orders two work-groups: a neighbour across the group edge (x = 7 and 8)
    across = ("vec4 v = imageLoad(img, ivec2(min(p.x + 1, 15), p.y)); memoryBarrierImage(); barrier(); "
              "imageStore(img, p, v);")
    race = prove_glsl_image(across)
    assert kinds(race) == {"data-race"}
    a, b = race.findings[0].work_items
    assert a["group"] != b["group"]


@needs_glslang
def test_unmodelled_image_operation_is_unknown_naming_it() -> None:
    o = prove_glsl_image("imageAtomicAdd(counts, p, 1u);", decls="layout(binding = 1, r32ui) uniform uimage2D counts;")
    assert o.verdict == "unknown" and "OpImageTexelPointer" in (o.reason or "")
    assert o.line is not None and o.line[1] == 7


@needs_clspv
def test_images_passed_to_called_functions(tmp_path: Path) -> None:
    source = """
void put(__write_only image2d_t d, int2 p, float4 v) { write_imagef(d, p, v); }
float4 get(__read_only image2d_t s, sampler_t sm, int2 p) { return read_imagef(s, sm, p); }
__kernel void k(__write_only image2d_t dest, __read_only image2d_t src, sampler_t s) {
  int2 p = (int2)(get_global_id(0), get_global_id(1));
  put(dest, %s, get(src, s, p));
}
"""
    assert prove_cl(tmp_path, source % "p").verdict == "proven"
    assert kinds(prove_cl(tmp_path, source % "(int2)(p.x & ~1, p.y)")) == {"data-race"}


@needs_glslang
def test_reads_outside_an_image_are_findings_only_where_the_launch_says_so() -> None:
    # Vulkan (a scenario's image): the dynamic checker reports a load outside the image; OpenCL:
    # an undefined value, no finding
    decls = "layout(binding = 1, rgba32f) uniform readonly image2D src;"
    body = "imageStore(img, p, imageLoad(src, p + ivec2(1, 0)));"
    vulkan = prove_glsl_image(body, decls=decls, more={(0, 1): images.Extent(2, (16, 4, 1), 4, bounded_reads=True)})
    assert kinds(vulkan) == {"out-of-bounds"} and "a 4-byte read of image memory" in vulkan.findings[0].message
    assert prove_glsl_image(body, decls=decls, more={(0, 1): images.Extent(2)}).verdict == "proven"


def test_one_image_bound_twice_is_refused() -> None:
    from kernellab.spirvsim import Binding, ImageBinding

    a = ImageBinding("pic", "VK_FORMAT_R8G8B8A8_UNORM", 4, 4, 1, bytes(64))
    assert images.shared_image({(0, 0): a, (0, 1): Binding("buf", bytes(16))}) is None
    assert "bound twice" in (images.shared_image({(0, 0): a, (0, 2): a}) or "")
