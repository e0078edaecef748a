"""Reference semantics of the HLO: evaluate a Module one instruction at a time with NumPy.

This is the "living definition" every compiled backend is tested against, and the tier that
runs small work with no compile at all. Each instruction is one NumPy call on operands that
lowering already converted to NumPy's loop dtypes, so results match NumPy bit for bit.
"""

from __future__ import annotations

import numpy as np

from lazyarray.ir import fpstate
from lazyarray.ir.hlo import Instr, Module
from lazyarray.ops import library
from lazyarray.ops.indexing import gather_ref
from lazyarray.ops.table import OPS, REDUCTIONS
from lazyarray.storage import apply_update


def apply_movement(ins: Instr, x: np.ndarray) -> np.ndarray:
    """A movement instruction as a NumPy view (reshape copies only where NumPy must)."""
    op = ins.opcode
    if op == "reshape":
        return x.reshape(ins.shape)
    if op == "transpose":
        return x.transpose(ins.attr("permutation"))
    if op == "slice":
        return x[tuple(slice(a, None if b < 0 else b, c) for a, b, c in ins.attr("slices"))]
    if op == "broadcast":
        dims = ins.attr("dimensions")
        placed = [1] * len(ins.shape)
        for d, n in zip(dims, x.shape, strict=True):
            placed[d] = n
        return np.broadcast_to(x.reshape(placed), ins.shape)
    raise ValueError(op)


def evaluate(ins, xs: list, memo: dict | None = None, sources: tuple = ()) -> np.ndarray:
    """One instruction (or graph Node: same opcodes and attributes) on operand values `xs`."""
    op = ins.opcode
    if op == "constant":
        return ins.value
    if op in OPS:
        out = OPS[op].ref(*xs)
        return np.asarray(out).astype(ins.dtype, copy=False)
    if op == "convert":
        x = xs[0]
        if ins.dtype.kind == "b":
            return np.asarray(x != 0)
        return np.asarray(x.real if x.dtype.kind == "c" and ins.dtype.kind != "c" else x
                          ).astype(ins.dtype)
    if op == "select":
        return np.where(*xs)
    if op in ("reshape", "transpose", "slice", "broadcast"):
        return apply_movement(ins, xs[0])
    if op == "reduce":
        ufunc = REDUCTIONS[ins.attr("to_apply")].ufunc
        return np.asarray(ufunc.reduce(xs[0], axis=ins.attr("dimensions"), dtype=ins.dtype))
    if op == "scan":
        ufunc = REDUCTIONS[ins.attr("to_apply")].ufunc
        return np.asarray(ufunc.accumulate(xs[0], axis=-1, dtype=ins.dtype)) if xs[0].ndim else xs[0]
    if op == "argreduce":
        f = np.argmax if ins.attr("to_apply") == "max" else np.argmin
        return np.asarray(f(xs[0], axis=-1))
    if op == "gather":
        return gather_ref(xs[0], xs[1:], ins.attr("axes"), ins.attr("offset_dims"), ins.shape)
    if op == "dot":
        return np.asarray(np.matmul(xs[0], xs[1]))
    if op == "custom-call":
        return library.call(ins, xs, memo, sources)
    if op == "update":
        return apply_update(xs[0], xs[1], ins.attr("offset"), ins.attr("strides"), inplace=False)
    if op == "fusion":
        outs = interpret(ins.value, xs, report=True)
        return outs[0] if len(outs) == 1 else tuple(outs)
    if op == "get-tuple-element":
        return xs[0][ins.attr("index")]
    raise NotImplementedError(f"no reference semantics for {op}")


def _evaluate_as(ins: Instr, xs: list, memo: dict, sources: tuple) -> np.ndarray:
    """`evaluate`, with a floating-point error named after the operation NumPy reports for
    it (`warn_as`: a product computed as a multiply and a sum warns "... in matmul")."""
    try:
        return evaluate(ins, xs, memo, sources)
    except FloatingPointError as exc:
        text = str(exc)
        if " in " not in text:
            raise
        raise FloatingPointError(text[:text.rindex(" in ") + 4] + ins.attr("warn_as")) from None


def interpret(module: Module, args: list, report: bool = False,
              outputs: tuple | None = None) -> list[np.ndarray]:
    """Run `module` with NumPy, floating-point errors ignored; `report`: record the warnings
    NumPy would give into the evaluation's recorder (`fpstate`), if it has one. `outputs`:
    the instructions whose values to return (default: the module's outputs); instructions
    after the last of them are not run."""
    rec = fpstate.active() if report else None
    outputs = module.outputs if outputs is None else outputs
    end = max(outputs, default=-1) + 1
    vals: list = [None] * len(module.instrs)
    users_left = [0] * len(module.instrs)
    for ins in module.instrs:
        for o in ins.operands:
            users_left[o] += 1
    memo: dict = {}  # multi-result library calls: run once
    with np.errstate(all="ignore", **(rec.raising if rec is not None else {})):
        for i, ins in enumerate(module.instrs[:end]):
            if ins.opcode == "parameter":
                vals[i] = np.asarray(args[ins.attr("index")])
            else:
                xs = [vals[o] for o in ins.operands]
                run = _evaluate_as if ins.attr("warn_as") else evaluate
                try:
                    vals[i] = run(ins, xs, memo, ins.operands)
                except FloatingPointError as exc:
                    if rec is None:
                        raise
                    vals[i] = fpstate.retry(rec, exc, run, ins, xs, memo, ins.operands)
                for o in ins.operands:  # free intermediates at their last use
                    users_left[o] -= 1
                    if users_left[o] == 0 and o not in outputs:
                        vals[o] = None
    return [vals[o] for o in outputs]
