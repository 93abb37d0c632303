"""Listings (kernellab's own or IGA's ``-Xprint-json``) rendered as text, Graphviz dot or HTML.

Everything here reads only the schema of ``iga-json-listing.md``, so IGA listings and SPIR-V
listings render the same way.
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from dataclasses import field
from typing import Any

from kernellab.records import dataclass
from kernellab.textsafe import escape, escape_line


@dataclass
class Block:
    """A label and the instructions up to the next label (``label`` is None for the preamble)."""

    label: dict[str, Any] | None
    instructions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.label.get("symbol", f"L{self.label.get('id')}")) if self.label else "(entry)"

    @property
    def node(self) -> str:
        return f"L{self.label['id']}" if self.label else "pre"


def blocks(listing: dict[str, Any]) -> list[Block]:
    out: list[Block] = []
    for el in listing.get("elems", []):
        if el.get("kind") == "L":
            out.append(Block(el))
        else:
            if not out:
                out.append(Block(None))
            out[-1].instructions.append(el)
    return out


def instructions(listing: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in listing.get("elems", []) if e.get("kind") == "I"]


def is_spirv(listing: dict[str, Any]) -> bool:
    return str(listing.get("platform", "")).startswith("spirv")


def summary(listing: dict[str, Any]) -> dict[str, Any]:
    """Blocks, instructions, and the peak of each register file's live total."""
    insts = instructions(listing)
    peaks: dict[str, int] = {}
    for inst in insts:
        for rf, n in (inst.get("liveTotals") or {}).items():
            if isinstance(n, int) and n > peaks.get(rf, -1):
                peaks[rf] = n
    nblocks = sum(1 for e in listing.get("elems", []) if e.get("kind") == "L")
    return {"blocks": nblocks, "instructions": len(insts), "peakLiveTotals": peaks}


# --- operands as text ---------------------------------------------------------------------------

def _reg(reg: dict[str, Any] | None, spirv: bool, symbol: str | None = None,
         ambiguous: frozenset[str] = frozenset()) -> str:
    if not reg:
        return "?"
    if spirv:
        if not symbol:
            return f"%{reg.get('r')}"
        # OpName need not be unique (glslang names every argument temporary "param")
        return f"%{symbol}.{reg.get('r')}" if symbol in ambiguous else f"%{symbol}"
    rn, r, sr = reg.get("rn", "?"), reg.get("r", 0), reg.get("sr", 0)
    if rn in ("null",):
        return "null"
    return f"{rn}{r}.{sr}" if sr is not None else f"{rn}{r}"


def _rgn(rgn: dict[str, Any] | None) -> str:
    if not rgn:
        return ""
    if "v" in rgn or "w" in rgn:
        return f"<{rgn.get('v', '')};{rgn.get('w', '')},{rgn.get('h', '')}>"
    return f"<{rgn.get('h', '')}>"


def ambiguous_symbols(listing: dict[str, Any]) -> frozenset[str]:
    """SPIR-V value names that more than one id carries in this listing."""
    seen: dict[str, set] = {}
    for inst in instructions(listing):
        for op in [inst.get("dst") or {}, *(inst.get("srcs") or [])]:
            sym, reg = op.get("symbol"), op.get("reg")
            if sym and reg:
                seen.setdefault(sym, set()).add((reg.get("rn"), reg.get("r")))
    return frozenset(s for s, regs in seen.items() if len(regs) > 1)


def operand_text(op: dict[str, Any], spirv: bool, ambiguous: frozenset[str] = frozenset()) -> str:
    kind = op.get("kind")
    mods = op.get("mods", "")
    prefix = ("-" if "n" in mods else "") + ("(abs)" if "a" in mods else "")
    typ = f":{op['type']}" if op.get("type") and not spirv else ""
    if kind == "RD":
        reg = _reg(op.get("reg"), spirv, op.get("symbol"), ambiguous)
        return prefix + reg + ("" if spirv else _rgn(op.get("rgn"))) + typ
    if kind == "RI":
        areg = op.get("areg") or {}
        return f"{prefix}r[{areg.get('rn', 'a')}{areg.get('r', 0)}.{areg.get('sr', 0)},{op.get('aoff', 0)}]" \
               f"{_rgn(op.get('rgn'))}{typ}"
    if kind == "IM":
        v = str(op.get("value", ""))
        if spirv and op.get("type") == "string":
            return json.dumps(v)
        if spirv and op.get("symbol"):
            return f"{op['symbol']}={v}"  # a named (usually specialization) constant
        return v + typ
    if kind == "LB":
        return str(op.get("target", "?"))
    if kind == "DA":
        ln = f":{op['len']}" if "len" in op else ""
        return _reg(op.get("reg"), spirv) + ln
    if kind == "AD":
        addr = op.get("addr") or {}
        areg = op.get("areg") or addr.get("reg")
        return "[" + _reg(areg, spirv) + "]"
    return f"<{kind}>"


def instruction_text(inst: dict[str, Any], spirv: bool, ambiguous: frozenset[str] = frozenset()) -> str:
    op = str(inst.get("op", "?"))
    if inst.get("subop") is not None:
        op += f".{inst['subop']}" if not spirv else f" {inst.get('set', '')}.{inst['subop']}".replace(" .", " ")
    parts: list[str] = []
    if not spirv:
        pred, wren = inst.get("pred"), inst.get("wren")
        freg = _reg(inst.get("freg") or {}, False) if inst.get("freg") else "f0.0"
        if pred is not None:
            flag = f"{'~' if pred.get('inv') else ''}{freg}{pred.get('func', '')}"
            parts.append(f"(W&{flag})" if wren else f"({flag})")
        elif wren:
            parts.append("(W)")
        es = inst.get("es")
        opname = op
        if es is not None:
            opname += f" ({es}|M{inst.get('eo', 0)})"
        parts.append(opname)
        fm = inst.get("fm")
        if fm:
            parts.append(f"({fm.get('cond', '')}){freg}")
        if inst.get("dst"):
            parts.append(operand_text(inst["dst"], False))
        parts.extend(operand_text(s, False) for s in inst.get("srcs") or [])
        opts = [str(o) for o in inst.get("opts") or []]
        if inst.get("regDist"):
            opts.append(str(inst["regDist"]))
        sbid = inst.get("sbid")
        if isinstance(sbid, dict) and "id" in sbid:
            opts.append(f"${sbid['id']}{sbid.get('func', '')}")
        if opts:
            parts.append("{" + ",".join(opts) + "}")
        return " ".join(parts)
    dst = inst.get("dst")
    if dst:
        parts.append(operand_text(dst, True, ambiguous) + " =")
    parts.append(op)
    if dst and dst.get("type"):
        parts.append(str(dst["type"]))
    parts.extend(operand_text(s, True, ambiguous) for s in inst.get("srcs") or [])
    return " ".join(parts)


_FILE_LINE = re.compile(r"^(.*?):(\d+)(:|$)")


def short_comment(comment: str) -> str:
    """A comment with its source path cut to the file name (``/a/b/k.comp:12: x`` -> ``k.comp:12: x``)."""
    m = _FILE_LINE.match(comment)
    if m and "/" in m.group(1):
        return m.group(1).rsplit("/", 1)[1] + comment[len(m.group(1)):]
    return comment


def _live(inst: dict[str, Any]) -> str:
    lt = inst.get("liveTotals") or {}
    return " ".join(f"{k}={v}" for k, v in lt.items())


def render_text(listing: dict[str, Any]) -> str:
    spirv = is_spirv(listing)
    amb = ambiguous_symbols(listing)
    lines = []
    title = listing.get("function") or "kernel"
    s = summary(listing)
    peaks = ", ".join(f"{k} {v}" for k, v in s["peakLiveTotals"].items()) or "none"
    lines.append(f"// {title}  platform {listing.get('platform', '?')}  listing {listing.get('version', '?')}")
    lines.append(f"// {s['blocks']} blocks, {s['instructions']} instructions, peak live: {peaks}")
    last_comment = None
    for b in blocks(listing):
        if b.label is not None:
            lab = b.label
            edges = []
            if lab.get("preds"):
                edges.append("preds " + ",".join(f"L{p}" for p in lab["preds"]))
            if lab.get("succs"):
                edges.append("succs " + ",".join(f"L{p}" for p in lab["succs"]))
            pc = f"{lab['pc']:>6} " if "pc" in lab else ""
            lines.append(f"{pc}L{lab.get('id')} {b.name}:" + (f"  // {'; '.join(edges)}" if edges else ""))
        for inst in b.instructions:
            pc = f"{inst['pc']:>6} " if "pc" in inst else ""
            text = f"{pc}{inst.get('id', ''):>5}  {instruction_text(inst, spirv, amb)}"
            extra = []
            live = _live(inst)
            if live:
                extra.append(f"live {live}")
            comment = inst.get("comment")
            if comment and comment != last_comment:
                extra.append(short_comment(str(comment)))
            last_comment = comment if comment else last_comment
            if extra:
                text = f"{text:<72} // " + "  ".join(extra)
            lines.append(text)
    return escape("\n".join(lines)) + "\n"  # op names, OpName strings and comments come from the module


# --- dot ------------------------------------------------------------------------------------------

def _dot_escape(s: str) -> str:
    s = escape_line(s)  # first, so that dot sees the backslashes of the escapes as text
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("{", "\\{").replace("}", "\\}") \
        .replace("<", "\\<").replace(">", "\\>").replace("|", "\\|")


def render_dot(listings: Iterable[dict[str, Any]]) -> str:
    """The control-flow graph of each listing: one box per block listing its instructions."""
    out = ["digraph cfg {", '  node [shape=record, fontname="monospace", fontsize=10];']
    for n, listing in enumerate(listings):
        spirv = is_spirv(listing)
        amb = ambiguous_symbols(listing)
        out.append(f"  subgraph cluster_{n} {{")
        out.append(f'    label="{_dot_escape(str(listing.get("function") or listing.get("platform", "kernel")))}";')
        bl = blocks(listing)
        for b in bl:
            body = "\\l".join(_dot_escape(instruction_text(i, spirv, amb)) for i in b.instructions)
            out.append(f'    f{n}_{b.node} [label="{{{_dot_escape(b.name)}|{body}\\l}}"];')
        for b in bl:
            if b.label is None:
                continue
            for s in b.label.get("succs") or []:
                out.append(f"    f{n}_{b.node} -> f{n}_L{s};")
        if bl and bl[0].label is None and len(bl) > 1:
            out.append(f"    f{n}_pre -> f{n}_{bl[1].node} [style=dashed];")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


# --- html -----------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h2{margin-top:2em}
table.lst{border-collapse:collapse;font-family:monospace;font-size:12px}
table.lst td{padding:1px 8px;vertical-align:top;white-space:pre}
tr.lbl td{background:#eef;font-weight:bold;padding-top:6px}
td.live{color:#555;text-align:right}
td.cmt{color:#080}
.graphs{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}
svg text{font-family:monospace;font-size:11px}
"""


def _live_svg(listing: dict[str, Any]) -> str:
    insts = instructions(listing)
    files = sorted({rf for i in insts for rf in (i.get("liveTotals") or {})})
    if not insts or not files:
        return "<p>No live totals in this listing.</p>"
    w, h, pad = 640, 200, 32
    peak = max((i.get("liveTotals") or {}).get(rf, 0) for i in insts for rf in files) or 1
    colors = ["#c33", "#36c", "#393", "#c90", "#939", "#099"]
    parts = [f'<svg width="{w}" height="{h + 2 * pad}" viewBox="0 0 {w} {h + 2 * pad}">',
             f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h}" fill="none" stroke="#999"/>',
             f'<text x="2" y="{pad + 4}">{peak}</text><text x="2" y="{pad + h}">0</text>',
             f'<text x="{pad}" y="{h + 2 * pad - 6}">instruction 0 .. {len(insts) - 1}: '
             'live totals per register file</text>']
    n = max(len(insts) - 1, 1)
    for k, rf in enumerate(files):
        pts = " ".join(f"{pad + (w - 2 * pad) * i / n:.1f},"
                       f"{pad + h - h * (inst.get('liveTotals') or {}).get(rf, 0) / peak:.1f}"
                       for i, inst in enumerate(insts))
        color = colors[k % len(colors)]
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{pts}"/>')
        parts.append(f'<text x="{w - pad + 4}" y="{pad + 12 + 14 * k}" fill="{color}">{html.escape(rf)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _cfg_svg(listing: dict[str, Any]) -> str:
    """Blocks stacked in listing order; forward edges arc on the right, back edges on the left."""
    bl = [b for b in blocks(listing) if b.label is not None]
    if not bl:
        return ""
    row, bw, mid = 26, 200, 160
    h = row * len(bl) + 20
    pos = {int(b.label["id"]): k for k, b in enumerate(bl)}  # type: ignore[index]
    parts = [f'<svg width="{bw + 2 * mid}" height="{h}">',
             '<defs><marker id="ah" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto">'
             '<path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>']
    for k, b in enumerate(bl):
        y = 10 + row * k
        label = html.escape(f"L{b.label['id']} {b.name}  ({len(b.instructions)})")  # type: ignore[index]
        # each block links to its rows in the listing table
        parts.append(f'<a href="#L{b.label["id"]}"><rect x="{mid}" y="{y}" width="{bw}" height="{row - 8}" '  # type: ignore[index]
                     f'rx="3" fill="#eef" stroke="#88a"/><text x="{mid + 6}" y="{y + 13}">{label}</text></a>')
    for k, b in enumerate(bl):
        for s in b.label.get("succs") or []:  # type: ignore[union-attr]
            t = pos.get(int(s))
            if t is None:
                continue
            y1, y2 = 10 + row * k + (row - 8) / 2, 10 + row * t + (row - 8) / 2
            span = abs(t - k)
            if t > k:
                x = mid + bw
                bulge = x + 12 + 10 * min(span, 12)
            else:
                x = mid
                bulge = x - 12 - 10 * min(span, 12)
            parts.append(f'<path d="M{x},{y1} C{bulge},{y1} {bulge},{y2} {x},{y2}" fill="none" '
                         f'stroke="{"#36c" if t > k else "#c33"}" marker-end="url(#ah)"/>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(listings: list[dict[str, Any]], title: str = "kernellab listing") -> str:
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    for listing in listings:
        spirv = is_spirv(listing)
        amb = ambiguous_symbols(listing)
        s = summary(listing)
        name = listing.get("function") or "kernel"
        peaks = ", ".join(f"{html.escape(k)}: {v}" for k, v in s["peakLiveTotals"].items()) or "none"
        out.append(f"<h2>{html.escape(str(name))}</h2><p>platform {html.escape(str(listing.get('platform', '?')))}"
                   f" &middot; {s['blocks']} blocks &middot; {s['instructions']} instructions"
                   f" &middot; peak live totals {peaks}</p>")
        out.append(f"<div class='graphs'><div><h3>Control flow</h3>{_cfg_svg(listing)}</div>"
                   f"<div><h3>Live totals</h3>{_live_svg(listing)}</div></div>")
        out.append("<h3>Instructions</h3><table class='lst'>")
        last_comment = None
        for b in blocks(listing):
            if b.label is not None:
                lab = b.label
                edges = " ".join(x for x in (
                    "preds " + ",".join(f"L{p}" for p in lab.get("preds", [])) if lab.get("preds") else "",
                    "succs " + ",".join(f"L{p}" for p in lab.get("succs", [])) if lab.get("succs") else "") if x)
                out.append(f"<tr class='lbl' id='L{lab.get('id')}'><td>{lab.get('pc', '')}</td>"
                           f"<td colspan='4'>L{lab.get('id')} {html.escape(b.name)}  {html.escape(edges)}</td></tr>")
            for inst in b.instructions:
                comment = inst.get("comment")
                shown = short_comment(str(comment)) if comment and comment != last_comment else ""
                last_comment = comment if comment else last_comment
                out.append(f"<tr><td>{inst.get('pc', '')}</td><td>{inst.get('id', '')}</td>"
                           f"<td>{html.escape(instruction_text(inst, spirv, amb))}</td>"
                           f"<td class='live'>{html.escape(_live(inst))}</td>"
                           f"<td class='cmt'>{html.escape(shown)}</td></tr>")
        out.append("</table>")
    out.append("</body></html>\n")
    return escape("".join(out))
