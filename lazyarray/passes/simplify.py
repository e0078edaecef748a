"""Local rewrites: algebraic simplification, constant folding, movement push-down; and DCE.

Each rewrite is a small function with a before => after docstring, applied bottom-up by one
driver that rebuilds the module through a CSE-ing Builder.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from lazyarray.ir.hlo import MOVEMENT, Builder, Instr, Module, rebuild
from lazyarray.ops.table import OPS, Cost


def dce(m: Module) -> Module:
    """Drop instructions no output depends on."""
    live = [False] * len(m.instrs)
    for o in m.outputs:
        live[o] = True
    for i in range(len(m.instrs) - 1, -1, -1):
        if live[i]:
            for o in m.instrs[i].operands:
                live[o] = True
    return m if all(live) else rebuild(m, live)


def _scalar_of(instrs, i) -> np.ndarray | None:
    """The scalar value of a constant or a broadcast constant, else None."""
    ins = instrs[i]
    if ins.opcode == "broadcast" and instrs[ins.operands[0]].opcode == "constant":
        ins = instrs[ins.operands[0]]
    return ins.value if ins.opcode == "constant" else None


def _identity(b: Builder, ins: Instr) -> int | None:
    """negate(negate(x)) => x.

    Nothing is rewritten on the value of a constant (x*1 => x, x+0 => x): constants are kernel
    parameters, so a rewrite keyed on the value would give a program whose loop variable
    passes through 1.0 or 0.0 (`a + dt * b`, `c * d * k`) a kernel of another structure,
    compiled for that value alone; one multiply by a parameter costs a fused loop nothing."""
    instrs = b.instrs
    if ins.opcode == "negative" and instrs[ins.operands[0]].opcode == "negative":
        return instrs[ins.operands[0]].operands[0]
    return None


def _fold(b: Builder, ins: Instr) -> int | None:
    """op(c1, broadcast(c2)) => broadcast(constant(op(c1, c2)))  (all operands scalar)."""
    if not ins.is_elementwise or ins.opcode not in OPS:
        return None
    vals = [_scalar_of(b.instrs, o) for o in ins.operands]
    if any(v is None for v in vals):
        return None
    with np.errstate(all="ignore"):
        v = np.asarray(OPS[ins.opcode].ref(*vals)).astype(ins.dtype)
    c = b.add(Instr("constant", (), (), ins.dtype, (), v))
    if ins.shape == ():
        return c
    return b.add(Instr("broadcast", (c,), ins.shape, ins.dtype, (("dimensions", ()),)))


PUSH_BUDGET = 256  # pushes of views per sweep, beyond 4 per instruction (see `_push`)
SHARED_PUSH_OPS = 8  # a view pushed into a value other consumers read copies at most this
# many elementwise ops (the tree below it; a bigger shared value is read once, computed)


def _tree_ops(instrs: list, i: int, limit: int) -> int:
    """Elementwise ops in the tree below instruction i, counted as a push would copy them
    (a shared operand once per path; views see through), stopping past `limit`."""
    ins = instrs[i]
    if ins.opcode in MOVEMENT:
        return _tree_ops(instrs, ins.operands[0], limit)
    if not ins.is_elementwise or not ins.operands:
        return 0
    n = 1
    for o in ins.operands:
        n += _tree_ops(instrs, o, limit - n)
        if n > limit:
            break
    return n


def _push(b: Builder, mv: Instr, operand: int, users: list[int], memo: dict) -> int:
    """movement(elementwise(a, b)) => elementwise(movement(a), movement(b)).

    Views then reach the leaves, where they are free (NumPy strides), and fusion sees one
    iteration space. Not done when it would recompute an expensive op: a growing broadcast, or
    an expensive producer that other consumers also read; nor into a producer other consumers
    read once the sweep has made `memo[None]` pushes, or whose tree holds more than
    SHARED_PUSH_OPS elementwise ops: each view of a shared value is its own copy of the work
    below it, and views of views compose into new views at every level, so a loop taking a
    row and a column of its last result (`path = minimum(path, add.outer(path[:, k],
    path[k, :]))`) would make 3**k of them, and a time step reading slices of the last
    step's value (`u[:, 1:-1] -= c * (h[:, 1:] - h[:, :-1])`, then `h -= ...`) would copy
    every earlier step into each kernel; such a view reads the value computed once.
    """
    key = (mv.opcode, mv.shape, mv.attrs, operand)
    if key in memo:
        return memo[key]
    src = b.instrs[operand]
    grows = mv.opcode == "broadcast" and math.prod(mv.shape) > math.prod(src.shape)
    expensive = src.opcode in OPS and OPS[src.opcode].cost is Cost.EXPENSIVE
    shared = users.get(operand, 0) > 1
    scalar = _scalar_of(b.instrs, operand)
    if scalar is not None:  # a broadcast scalar moved anywhere is the scalar broadcast there
        c = operand if src.opcode == "constant" else src.operands[0]
        out = b.add(Instr("broadcast", (c,), mv.shape, b.instrs[c].dtype, (("dimensions", ()),)))
    elif src.is_elementwise and not (expensive and (grows or shared)) \
            and not (shared and (len(memo) > memo[None] or _tree_ops(
                b.instrs, operand, SHARED_PUSH_OPS) > SHARED_PUSH_OPS)):
        new_ops = tuple(_push(b, mv, o, users, memo) for o in src.operands)
        out = b.add(Instr(src.opcode, new_ops, mv.shape, src.dtype, src.attrs, src.value))
    else:
        # the operand's dtype: below a compare or a convert it differs from mv's
        out = b.add(Instr(mv.opcode, (operand,), mv.shape, src.dtype, mv.attrs))
    memo[key] = out
    return out


def simplify(m: Module) -> Module:
    """One bottom-up sweep of the local rewrites; then DCE."""
    b = Builder()
    new_id: list[int] = []
    users: dict[int, int] = {}  # new id -> number of consumers in the original module
    orig_users = [0] * len(m.instrs)
    for ins in m.instrs:
        for o in ins.operands:
            orig_users[o] += 1
    memo: dict = {None: PUSH_BUDGET + 4 * len(m.instrs)}  # (None: the budget of `_push`)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        for ins in m.instrs:
            ins = Instr(ins.opcode, tuple(new_id[o] for o in ins.operands), ins.shape, ins.dtype,
                        ins.attrs, ins.value)
            out = _identity(b, ins)
            if out is None:
                out = _fold(b, ins)
            if out is None and ins.opcode in MOVEMENT:
                out = _push(b, ins, ins.operands[0], users, memo)
            if out is None:
                out = b.add(ins)
            users[out] = users.get(out, 0) + orig_users[len(new_id)]
            new_id.append(out)
    finally:
        sys.setrecursionlimit(limit)
    return dce(b.build([new_id[o] for o in m.outputs], m.name))
