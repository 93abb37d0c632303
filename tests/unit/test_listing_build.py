"""SPIR-V listings: CFG edges, def/use links and live totals against hand-worked small cases."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.compile.pipeline import Compiler, CompileRequest
from kernellab.listing.build import ListingOptions, build_listings
from kernellab.listing.iga import validate_listing
from kernellab.listing.render import blocks
from kernellab.listing.spirv import decode

SHADERS = Path(__file__).parent / "shaders"

HEADER = """
               OpCapability Shader
          %glsl = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
               OpName %main "main"
               OpName %sq "square"
               OpName %n "n"
               OpName %i "i"
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
        %int = OpTypeInt 32 1
      %float = OpTypeFloat 32
       %fnii = OpTypeFunction %int %int %int
       %bool = OpTypeBool
      %int_0 = OpConstant %int 0
      %int_1 = OpConstant %int 1
      %int_2 = OpConstant %int 2
    %float_2 = OpConstant %float 2
"""

DIAMOND = HEADER + """
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %n = OpUndef %int
          %c = OpSLessThan %bool %n %int_0
               OpSelectionMerge %merge None
               OpBranchConditional %c %then %else
       %then = OpLabel
          %a = OpIAdd %int %n %int_1
               OpBranch %merge
       %else = OpLabel
          %b = OpISub %int %n %int_1
               OpBranch %merge
      %merge = OpLabel
          %p = OpPhi %int %a %then %b %else
          %q = OpIMul %int %p %n
               OpReturn
               OpFunctionEnd
"""

LOOP = HEADER + """
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %n = OpUndef %int
               OpBranch %header
     %header = OpLabel
          %i = OpPhi %int %int_0 %entry %next %body
          %c = OpSLessThan %bool %i %n
               OpLoopMerge %exit %body None
               OpBranchConditional %c %body %exit
       %body = OpLabel
       %next = OpIAdd %int %i %int_1
               OpBranch %header
       %exit = OpLabel
               OpReturn
               OpFunctionEnd
"""

CALL = HEADER + """
       %main = OpFunction %void None %fn
      %entry = OpLabel
          %x = OpFunctionCall %int %sq %int_1 %int_2
          %f = OpExtInst %float %glsl Sqrt %float_2
               OpReturn
               OpFunctionEnd
         %sq = OpFunction %int None %fnii
          %a = OpFunctionParameter %int
          %b = OpFunctionParameter %int
      %sqbody = OpLabel
          %r = OpIMul %int %a %a
               OpReturnValue %r
               OpFunctionEnd
"""


def assemble(text: str) -> bytes:
    spirv_as = tools.require("spirv-as")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "m.spvasm", Path(tmp) / "m.spv"
        src.write_text(text)
        spirv_as.run(["--target-env", "vulkan1.0", str(src), "-o", str(out)], what="assembling")
        return out.read_bytes()


def listing_of(text: str, **opts) -> list[dict]:
    return build_listings(decode(assemble(text)), ListingOptions(defs=True, **opts))


def labels(listing: dict) -> list[dict]:
    return [e for e in listing["elems"] if e["kind"] == "L"]


def insts(listing: dict) -> list[dict]:
    return [e for e in listing["elems"] if e["kind"] == "I"]


def live(listing: dict) -> list[int]:
    return [i["liveTotals"]["v"] for i in insts(listing)]


def test_diamond_cfg_edges():
    (lst,) = listing_of(DIAMOND)
    assert lst["version"] == "2.0" and lst["platform"] == "spirv1.0-vulkan" and lst["function"] == "main"
    ls = labels(lst)
    assert [(lab["id"], lab.get("preds"), lab.get("succs")) for lab in ls] == [
        (0, None, [1, 2]), (1, [0], [3]), (2, [0], [3]), (3, [1, 2], None)]


def test_diamond_live_totals_hand_worked():
    # 0 OpFunction; 1 n=undef {n}; 2 c=n<0 {n,c}; 3 merge {n,c}; 4 br c {n,c};
    # 5 a=n+1 {n,a}; 6 br {n,a}; 7 b=n-1 {n,b}; 8 br {n,b}; 9 p=phi {p,n}; 10 q=p*n {p,n,q}; 11 ret; 12 end
    (lst,) = listing_of(DIAMOND)
    assert live(lst) == [0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 0, 0]


def test_diamond_def_use_links():
    (lst,) = listing_of(DIAMOND)
    by_id = {i["id"]: i for i in insts(lst)}
    assert by_id[1]["dst"]["uses"] == [2, 5, 7, 10]  # n
    assert by_id[5]["dst"]["uses"] == [9]  # a, read by the phi
    phi = by_id[9]
    assert phi["op"] == "OpPhi"
    assert [s["kind"] for s in phi["srcs"]] == ["RD", "LB", "RD", "LB"]
    assert phi["srcs"][0]["defs"] == [5] and phi["srcs"][2]["defs"] == [7]
    assert phi["srcs"][1]["target"] == labels(lst)[1]["symbol"]
    assert by_id[10]["dst"]["uses"] == []  # q is dead
    assert by_id[2]["srcs"][1] == {"kind": "IM", "value": "0", "type": "int"}


def test_loop_back_edge_and_live_totals_hand_worked():
    (lst,) = listing_of(LOOP)
    ls = labels(lst)
    assert [(lab.get("preds"), lab.get("succs")) for lab in ls] == [
        (None, [1]), ([0, 2], [2, 3]), ([1], [1]), ([1], None)]
    # 1 n {n}; 2 br {n}; 3 i=phi {i,n}; 4 c=i<n {i,n,c}; 5 loopmerge {i,n,c}; 6 br c {i,n,c};
    # 7 next=i+1 {i,n,next}; 8 br {n,next} (next feeds the phi along the back edge); 9 ret
    assert live(lst) == [0, 1, 1, 2, 3, 3, 3, 3, 2, 0, 0]
    by_id = {i["id"]: i for i in insts(lst)}
    assert by_id[3]["dst"]["uses"] == [4, 7]
    assert by_id[7]["dst"]["uses"] == [3]
    assert by_id[3]["srcs"][2]["defs"] == [7]


def test_function_calls_parameters_and_extended_instructions():
    main, square = listing_of(CALL)
    assert main["function"] == "main" and square["function"] == "square"
    call, sqrt = insts(main)[1], insts(main)[2]
    assert call["op"] == "OpFunctionCall"
    assert call["srcs"] == [{"kind": "LB", "target": "square"}, {"kind": "IM", "value": "1", "type": "int"},
                            {"kind": "IM", "value": "2", "type": "int"}]
    assert sqrt["op"] == "OpExtInst" and sqrt["subop"] == "Sqrt" and sqrt["set"] == "GLSL.std.450"
    assert sqrt["srcs"] == [{"kind": "IM", "value": "2", "type": "float"}]
    # 0 OpFunction; 1 a {a}; 2 b {a,b} (b is never read); 3 r=a*a {a,r}; 4 ret r {r}; 5 end
    assert live(square) == [0, 1, 2, 2, 1, 0]
    assert insts(square)[1]["dst"]["uses"] == [3] and insts(square)[2]["dst"]["uses"] == []


def test_pcs_are_word_offsets():
    data = assemble(DIAMOND)
    module = decode(data)
    (lst,) = build_listings(module, ListingOptions(pcs=True))
    from kernellab.listing import grammar

    opcode_of = {spec.opname: code for code, spec in grammar.core().instructions.items()}
    words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]
    for el in lst["elems"]:
        at = words[el["pc"]] & 0xFFFF  # the low half of an instruction's first word is its opcode
        assert at == opcode_of["OpLabel" if el["kind"] == "L" else el["op"]]
    assert lst["elems"][0]["pc"] == next(i.offset for i in module.instructions if i.opname == "OpFunction")
    assert "pc" not in build_listings(module)[0]["elems"][0]


def test_defs_off_means_no_dataflow_fields():
    (lst,) = build_listings(decode(assemble(DIAMOND)))
    for i in insts(lst):
        assert "uses" not in (i.get("dst") or {})
        assert all("defs" not in s for s in i["srcs"])


def test_hex_floats():
    (main, _) = build_listings(decode(assemble(CALL)), ListingOptions(hex_floats=True))
    assert insts(main)[2]["srcs"][0]["value"] == "0x1p+1"


@pytest.mark.parametrize("flag", ["-g", "-gVS"])
def test_source_lines_from_debug_info(flag: str):
    g = tools.require("glslangValidator")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "m.spv"
        g.run(["-V", flag, "-o", str(out), str(SHADERS / "loop_branch.comp")], what="compiling")
        (lst,) = build_listings(decode(out.read_bytes()), ListingOptions(defs=True))
    comments = [i.get("comment", "") for i in insts(lst)]
    assert any(c.endswith("loop_branch.comp:12: acc += data.values[k] * params.scale;") for c in comments)
    assert any(c.endswith("loop_branch.comp:17: data.values[i] = acc;") for c in comments)
    # non-semantic debug instructions are folded into comments, not listed
    assert all(i["op"] != "OpLine" and i.get("set", "").startswith("NonSemantic") is False for i in insts(lst))


def test_shared_memory_and_globals_are_module_scope_registers():
    art = Compiler(CompileRequest(SHADERS / "calls_shared.comp", "glsl")).artifact("spirv")
    listings = build_listings(decode(art.data), ListingOptions(defs=True, target_env="vulkan1.2"))
    main = next(x for x in listings if x["function"] == "main")
    assert main["platform"] == "spirv1.5-vulkan1.2"
    tile = [s for i in insts(main) for s in i["srcs"] if s.get("symbol") == "tile"]
    assert tile and tile[0]["reg"]["rn"] == "g" and tile[0]["type"] == "_ptr_Workgroup__arr_float_uint_32" and tile[0]["defs"] == []
    barrier = next(i for i in insts(main) if i["op"] == "OpControlBarrier")
    assert [s["kind"] for s in barrier["srcs"]] == ["IM", "IM", "IM"]
    switch_block = next(b for b in blocks(main) if any(i["op"] == "OpSwitch" for i in b.instructions))
    switch = switch_block.instructions[-1]
    case_targets = [s["target"] for s in switch["srcs"] if s["kind"] == "LB"]
    assert len(case_targets) == 4  # default, cases 0, 1 and 3
    symbol_of = {lab["id"]: lab["symbol"] for lab in labels(main)}
    assert {symbol_of[x] for x in switch_block.label["succs"]} == set(case_targets)
    spec = [s for i in insts(main) for s in i["srcs"] if s.get("symbol") == "SHIFT"]
    assert spec and spec[0]["kind"] == "IM" and spec[0]["value"] == "3"


@pytest.mark.parametrize("text", [DIAMOND, LOOP, CALL], ids=["diamond", "loop", "call"])
def test_own_listings_pass_the_listing_validator(text: str):
    for lst in listing_of(text, pcs=True):
        assert validate_listing(lst, "x.json") == []
