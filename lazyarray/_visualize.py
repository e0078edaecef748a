"""`lazyarray.visualize`: the pending graph, as optimized and fused, in Graphviz DOT."""

from __future__ import annotations

import os
import shutil
import subprocess

from lazyarray import engine
from lazyarray.array import Array
from lazyarray.graph.node import toposort
from lazyarray.ir.hlo import Instr, Module
from lazyarray.ir.lower import lower
from lazyarray.ir.text import attr_str, type_str
from lazyarray.ops.table import OPS
from lazyarray.runtime.executor import KernelRecord, Trace, execute

RENDERED = (".svg", ".png")  # written by Graphviz's `dot`; any other name gets the DOT text


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(i: int, ins: Instr) -> str:
    """`%i opcode` / attributes / type: what the HLO text prints, one node per instruction."""
    op = ins.opcode
    head = f"%{i} {op}"
    if op in OPS:
        d = OPS[op]
        head = f"%{i} {d.hlo}" + (f" {d.direction}" if d.direction else "")
    elif op == "parameter":
        head = f"%{i} parameter({ins.attr('index')})"
    elif op == "constant":
        head = f"%{i} constant({ins.value.item()!r})"
    attrs = [attr_str("dimensions" if k == "permutation" else k, v) for k, v in ins.attrs
             if op not in ("parameter", "reshape") and k not in ("kind", "shape")]
    return "\n".join([head, *attrs, type_str(ins.shape, ins.dtype)])


def _shape(ins: Instr) -> str:
    return {"parameter": "ellipse", "constant": "plain"}.get(ins.opcode, "box")


def to_dot(m: Module, kernels: list[KernelRecord] | None = None) -> str:
    """DOT text for an optimized module: one cluster (``subgraph cluster_K``) per fusion,
    holding its instructions (nodes ``fK_J``); other instructions are nodes ``nI``.
    `kernels` (from a dry run of the executor) adds each kernel's cache status."""
    lines = ["digraph lazyarray {", "  rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=10];']
    value_node: dict[int, list[str]] = {}  # entry instruction -> DOT node(s) of its value(s)
    fusions = [i for i, ins in enumerate(m.instrs) if ins.opcode == "fusion"]
    for i, ins in enumerate(m.instrs):
        if ins.opcode == "fusion":
            k = fusions.index(i)
            sub: Module = ins.value
            title = f"fusion.{k}: kind={ins.attr('kind')}"
            style = "rounded"
            if kernels is not None and k < len(kernels):
                title += f", cache={kernels[k].status}\nsignature {kernels[k].key}"
                if kernels[k].status == "interpreted":
                    style = "rounded,dashed"
            lines += [f"  subgraph cluster_{k} {{", f"    label={_quote(title)};",
                      f'    style="{style}"; color=blue;']
            for j, s in enumerate(sub.instrs):
                lines.append(f"    f{k}_{j} [label={_quote(_label(j, s))}, shape={_shape(s)}];")
            for j, s in enumerate(sub.instrs):
                lines += [f"    f{k}_{o} -> f{k}_{j};" for o in s.operands]
            lines.append("  }")
            for p in sub.params:  # the fusion's operands feed its parameters
                src = value_node[ins.operands[p.attr("index")]][0]
                lines.append(f"  {src} -> f{k}_{sub.instrs.index(p)};")
            value_node[i] = [f"f{k}_{o}" for o in sub.outputs]
            continue
        lines.append(f"  n{i} [label={_quote(_label(i, ins))}, shape={_shape(ins)}];")
        if ins.opcode == "get-tuple-element":
            lines.append(f"  {value_node[ins.operands[0]][ins.attr('index')]} -> n{i};")
        else:
            lines += [f"  {value_node[o][0]} -> n{i};" for o in ins.operands]
        value_node[i] = [f"n{i}"]
    for k, o in enumerate(m.outputs):
        lines.append(f'  out{k} [label="output {k}", shape=plaintext];')
        lines.append(f"  {value_node[o][0]} -> out{k} [style=bold];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def plan(nodes: list) -> tuple[Module, list[KernelRecord]]:
    """The optimized module that evaluating `nodes` would run, and its kernels (dry run)."""
    with engine._lock:
        pending = list({id(n): n for n in nodes if not n.realized}.values())
        module, args = lower(pending, toposort(pending))
        optimized = engine.optimize(module)
        trace = Trace()
        execute(optimized, args, trace, dry=True)
    return optimized, trace.kernels


def visualize(*arrays, filename: str | None = None) -> str:
    """Draw how `arrays` would be evaluated: the optimized HLO, fusions as clusters.

    Nothing is computed. Each fusion (one kernel) is a cluster labelled with its kind and
    kernel cache status; every instruction is a node labelled with its opcode, attributes,
    dtype and shape (``f64[1000]``); edges run from operands to users.

    Parameters
    ----------
    *arrays : Array
        The arrays whose pending computation to draw; computed arrays are parameters of
        it (an already computed array alone draws an empty graph).
    filename : str, optional
        Also write the drawing there: ``.svg`` and ``.png`` are rendered with Graphviz's
        ``dot`` program (which must be installed), any other name receives the DOT text.

    Returns
    -------
    str
        The graph in Graphviz DOT.

    Raises
    ------
    RuntimeError
        `filename` ends in ``.svg`` or ``.png`` and Graphviz's ``dot`` is not on the PATH.
    """

    nodes = [a._node for a in arrays if isinstance(a, Array)]
    text = to_dot(*plan(nodes))
    if filename is None:
        return text
    filename = os.fspath(filename)
    ext = os.path.splitext(filename)[1].lower()
    if ext in RENDERED:
        dot = shutil.which("dot")
        if dot is None:
            raise RuntimeError(f"visualize: writing {ext} needs Graphviz's `dot` program, which "
                               "is not on the PATH; install Graphviz, or pass a .dot filename "
                               "to get the DOT text")
        subprocess.run([dot, f"-T{ext[1:]}", "-o", filename], input=text, text=True,
                       check=True, capture_output=True)
    else:
        with open(filename, "w") as f:
            f.write(text)
    return text
