"""HLO text: printer and parser (round trip: parse(print(m)) prints identically).

    HloModule main

    %fused.0 (p0: f64[1000], p1: f64[]) -> f64[1000] {
      %0 = f64[1000] parameter(0)
      %1 = f64[] parameter(1)
      %2 = f64[1000] broadcast(%1), dimensions={}
      ROOT %3 = f64[1000] multiply(%0, %2)
    }

    ENTRY %main {
      %0 = f64[1000] parameter(0)
      %1 = f64[] constant(2)
      ROOT %2 = f64[1000] fusion(%0, %1), kind=loop, calls=%fused.0
    }

`masked=True` prints sizes, constant values and view attributes (slice positions, transposes:
the runtime applies views as NumPy strides) as `?`: with the launch layout, the
shape-polymorphic signature of a kernel (DESIGN section 3).
"""

from __future__ import annotations

import re

import numpy as np

from lazyarray.ops.library import LIBRARY, parse_param
from lazyarray.ir.hlo import MOVEMENT, Instr, Module
from lazyarray.ops.dtypes import FROM_HLO, hlo_name
from lazyarray.ops.table import BY_HLO, OPS


def type_str(shape, dtype, masked=False) -> str:
    dims = ",".join("?" if masked else str(d) for d in shape)
    return f"{hlo_name(dtype)}[{dims}]"


def _value_str(v: np.ndarray) -> str:
    x = v.item()
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, complex):  # 1.0+2.0j, no parentheses: complex() parses it back
        imag = repr(x.imag)
        return f"{x.real!r}{imag if imag.startswith('-') else '+' + imag}j"
    return repr(x)


def attr_str(k: str, v) -> str:
    if k == "slices":
        return "slice={" + ", ".join(f"[{a}:{b}:{c}]" for a, b, c in v) + "}"
    if isinstance(v, tuple):
        return f"{k}={{{','.join(map(str, v))}}}"
    if k == "calls":
        return f"calls=%{v}"
    return f"{k}={v}"


def _instr_str(i: int, ins: Instr, outputs, masked: bool, fusion_names: dict) -> str:
    ops = ", ".join(f"%{o}" for o in ins.operands)
    attrs = list(ins.attrs)
    opcode = ins.opcode
    if opcode == "parameter":
        ops, attrs = str(ins.attr("index")), []
    elif opcode == "constant":
        ops = "?" if masked else _value_str(ins.value)
    elif opcode == "fusion":
        attrs = [*attrs, ("calls", fusion_names[id(ins.value)])]
    elif opcode == "transpose":
        attrs = [("dimensions", ins.attr("permutation"))]
    elif opcode == "reshape":  # the target shape is the instruction's own
        attrs = []
    elif opcode in OPS:
        op = OPS[opcode]
        opcode = op.hlo
        if op.direction:
            attrs = [("direction", op.direction)]
    if opcode == "fusion" and len(ins.value.outputs) > 1:
        sub = ins.value
        t = "(" + ", ".join(type_str(sub.instrs[o].shape, sub.instrs[o].dtype, masked)
                            for o in sub.outputs) + ")"
    else:
        t = type_str(ins.shape, ins.dtype, masked)
    if masked and (ins.opcode in MOVEMENT or ins.opcode == "update"):
        attrs = []  # views and written regions are NumPy strides at launch: not in the kernel
    tail = "".join(", " + attr_str(k, v) for k, v in attrs)
    root = "ROOT " if outputs == (i,) else ""
    return f"  {root}%{i} = {t} {opcode}({ops}){tail}"


def _computation(m: Module, header: str, masked: bool, fusion_names: dict) -> list[str]:
    lines = [header + " {"]
    lines += [_instr_str(i, ins, m.outputs, masked, fusion_names) for i, ins in enumerate(m.instrs)]
    if len(m.outputs) != 1:
        lines.append("  ROOT tuple(" + ", ".join(f"%{o}" for o in m.outputs) + ")")
    lines.append("}")
    return lines


def print_module(m: Module, masked: bool = False) -> str:
    fusions = [ins.value for ins in m.instrs if ins.opcode == "fusion"]
    names = {id(f): f"fused.{k}" for k, f in enumerate(fusions)}
    lines = [f"HloModule {m.name}", ""]
    for f in fusions:
        params = ", ".join(f"p{p.attr('index')}: {type_str(p.shape, p.dtype, masked)}"
                           for p in f.params)
        outs = [type_str(f.instrs[o].shape, f.instrs[o].dtype, masked) for o in f.outputs]
        res = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
        lines += _computation(f, f"%{names[id(f)]} ({params}) -> {res}", masked, names)
        lines.append("")
    lines += _computation(m, f"ENTRY %{m.name}", masked, names)
    return "\n".join(lines) + "\n"


def print_computation(m: Module, masked: bool = False) -> str:
    """One (fused) computation alone: the canonical text a kernel signature hashes."""
    return "\n".join(_computation(m, "computation", masked, {})) + "\n"


# ---- parser ----------------------------------------------------------------------------------

_TYPE = r"(?P<type>\([^)]*\)|\w+\[[^\]]*\])"
_LINE = re.compile(r"^\s*(?P<root>ROOT )?%(?P<id>\d+) = " + _TYPE + r" (?P<op>[\w\-]+)\((?P<args>[^)]*)\)(?P<attrs>.*)$")
_HEADER = re.compile(r"^(ENTRY )?%(?P<name>[\w.]+)")


def _parse_type(t: str):
    m = re.fullmatch(r"(\w+)\[([^\]]*)\]", t.strip())
    dims = tuple(int(d) for d in m.group(2).split(",") if d)
    return dims, FROM_HLO[m.group(1)]


def _parse_attrs(text: str) -> dict:
    out: dict[str, object] = {}
    for m in re.finditer(r"(\w+)=(\{[^{}]*\}|%?[\w.\-+]+)", text):
        k, v = m.group(1), m.group(2)
        if k == "slice":
            out["slices"] = tuple(tuple(int(x) for x in s.split(":"))
                                  for s in re.findall(r"\[([^\]]*)\]", v))
        elif v.startswith("{"):
            out[k] = tuple(int(x) for x in v[1:-1].split(",") if x)
        else:
            out[k] = v.lstrip("%")
    return out


def _parse_value(text: str, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "b":
        x = text == "true"
    elif dtype.kind == "c":
        x = complex(text)
    elif dtype.kind == "f":
        x = float(text)
    else:
        x = int(text)
    return np.asarray(x, dtype=dtype)


def _parse_instr(m: re.Match, fusions: dict) -> Instr:
    op, args, attrs = m.group("op"), m.group("args"), _parse_attrs(m.group("attrs"))
    typ = m.group("type")
    shape, dtype = _parse_type(typ) if not typ.startswith("(") else ((), None)
    operands = tuple(int(a.strip()[1:]) for a in args.split(",") if a.strip().startswith("%"))
    if op == "parameter":
        return Instr(op, (), shape, dtype, (("index", int(args)),))
    if op == "constant":
        return Instr(op, (), shape, dtype, (), _parse_value(args.strip(), dtype))
    if op == "fusion":
        sub = fusions[attrs["calls"]]
        first = sub.instrs[sub.outputs[0]]
        extra = (("reason", attrs["reason"]),) if "reason" in attrs else ()
        return Instr(op, operands, first.shape, first.dtype, (("kind", attrs["kind"]), *extra), sub)
    if op == "transpose":
        return Instr(op, operands, shape, dtype, (("permutation", attrs["dimensions"]),))
    if op == "reshape":
        return Instr(op, operands, shape, dtype, (("shape", shape),))
    if op == "compare" or (op, None) in BY_HLO:
        name = BY_HLO[(op, attrs.get("direction"))].name
        return Instr(name, operands, shape, dtype)
    if op == "custom-call":
        spec = LIBRARY[attrs["target"]]
        vals = [("target", attrs["target"])]
        vals += [(p, parse_param(attrs[p]) if isinstance(attrs[p], str) else attrs[p])
                 for p in spec.params if p in attrs]
        if spec.outputs > 1:
            vals.append(("output", int(attrs["output"])))
        return Instr(op, operands, shape, dtype, tuple(vals))
    order = {"broadcast": ("dimensions",), "reduce": ("dimensions", "to_apply"),
             "argreduce": ("to_apply",), "scan": ("to_apply",), "slice": ("slices",), "get-tuple-element": ("index",),
             "update": ("offset", "strides"), "gather": ("axes", "offset_dims")}
    keys = order.get(op, ())
    vals = tuple((k, int(attrs[k]) if k in ("index", "offset") else attrs[k]) for k in keys)
    return Instr(op, operands, shape, dtype, vals)


def parse_module(text: str) -> Module:
    fusions: dict[str, Module] = {}
    name, instrs, outputs = None, [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith("HloModule"):
            continue
        if line.startswith("}"):
            outs = tuple(outputs if outputs is not None else (len(instrs) - 1,))
            fusions[name] = Module(tuple(instrs), outs, "main" if name == "main" else name)
            instrs, outputs = [], None
            continue
        h = _HEADER.match(line)
        if h:
            name = h.group("name")
            continue
        t = re.match(r"^\s*ROOT tuple\(([^)]*)\)", line)
        if t:
            outputs = tuple(int(a.strip()[1:]) for a in t.group(1).split(","))
            continue
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"cannot parse HLO line: {line!r}")
        instrs.append(_parse_instr(m, fusions))
        if m.group("root"):
            outputs = (len(instrs) - 1,)
    return fusions["main"] if "main" in fusions else fusions[name]
