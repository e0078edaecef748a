"""Moments fusion: a sum over leading axes and the sum of squared deviations from a value
computed from it (a variance) become one kernel that reads the array once.

`X.std(axis=0)` is two reductions over X: the sum (for the mean m), then sum((X - m)**2),
which needs m before it can start; `fuse` leaves them as two kernels, each reading X from
memory. Both can come from one read, block by block: for each block of rows (in cache), its
sum s_b and, in a second pass over the still-cached block, q_b = sum((x - s_b/n_b)**2). Then
for any m, exactly,

    sum over the block of (x - m)**2 = q_b + n_b * (s_b/n_b - m)**2

because the block's deviations from its own mean add up to zero. So once the sums give m,
the second reduction is a sum over blocks, not over X (the decomposition behind Chan, Golub
and LeVeque's parallel variance; the correction terms are small where m is near the block
means, as it is for a variance, so nothing cancels). Blocks are fixed runs of rows, so
results do not depend on the thread count.

The pattern, on `fuse`'s output: an input fusion F1 whose only reduction is `add` of an
array X over its leading axes 0..k-1 (any epilogue: the mean, its keepdims reshape), and an
input fusion F2 whose only reduction is `add`, over the same axes, of `d * d` (or
`square(d)`) with
`d = X - broadcast(M)`, M one of F1's results with one value per kept element, then any
epilogue (divide by the count, sqrt). X is the same operand, read through the same views,
and neither fusion reads anything else. The merged computation keeps both fusions'
instructions (the interpreter and every check read it as before); codegen/moments.py emits
its kernel. Only on the CPU: the device pipelines keep two kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lazyarray.ir.hlo import MOVEMENT, REDUCE_LIKE, Builder, Instr, Module
from lazyarray.passes.fusion import join_reasons

MAX_COLS = 256  # kept elements: partials per block stay a small fraction of X
# (and at least two: a full reduction keeps its two kernels, whose four accumulators per
# thread live in registers and read X at the memory's speed, where a block's second pass
# through lanes in memory costs about as much as reading it again; measured 1.7x slower)


@dataclass(frozen=True)
class Parts:
    """Where the pieces of a moments computation are (instruction ids)."""

    x: int  # the load of X (its parameter, or a view of it)
    total: int  # reduce(X): the sum
    mean: int  # the value M subtracted from X (one per kept element)
    deviations: int  # reduce(d * d)
    k: int  # reduced axes 0..k-1 of X


def _squared(comp: Module, i: int) -> Instr | None:
    """The instruction d when instruction i is d * d or square(d)."""
    sq = comp.instrs[i]
    if sq.opcode == "square" or sq.opcode == "multiply" and sq.operands[0] == sq.operands[1]:
        return comp.instrs[sq.operands[0]]
    return None


def _single_reduce(comp: Module) -> int | None:
    reds = [i for i, ins in enumerate(comp.instrs) if ins.opcode in REDUCE_LIKE]
    if len(reds) != 1:
        return None
    r = comp.instrs[reds[0]]
    if r.opcode != "reduce" or r.attr("to_apply") != "add" or r.dtype.kind != "f":
        return None
    return reds[0]


def _leading(comp: Module, r: int) -> int | None:
    """k when reduction r reduces exactly axes 0..k-1 of its operand, keeping 2..MAX_COLS
    elements."""
    ins = comp.instrs[r]
    shape = comp.instrs[ins.operands[0]].shape
    dims = tuple(ins.attr("dimensions"))
    k = len(dims)
    if k < 1 or dims != tuple(range(k)) or not 2 <= math.prod(shape[k:]) <= MAX_COLS:
        return None
    return k


def _load_chain(comp: Module, i: int) -> tuple | None:
    """The views from a parameter to instruction i, as (parameter index, (op, shape, attrs)
    ...), or None when i is not a parameter seen through views."""
    chain = []
    while comp.instrs[i].opcode in MOVEMENT:
        ins = comp.instrs[i]
        chain.append((ins.opcode, ins.shape, ins.attrs))
        i = ins.operands[0]
    if comp.instrs[i].opcode != "parameter":
        return None
    return (comp.instrs[i].attr("index"), *reversed(chain))


def _per_kept(comp: Module, b: int, k: int) -> int | None:
    """The operand of broadcast b when it repeats one value per kept element along axes
    0..k-1 (from the kept shape, or the keepdims shape), else None."""
    ins = comp.instrs[b]
    if ins.opcode != "broadcast":
        return None
    src = comp.instrs[ins.operands[0]]
    shape, dims = ins.shape, tuple(ins.attr("dimensions"))
    kept = shape[k:]
    if src.shape == kept and dims == tuple(range(k, len(shape))):
        return ins.operands[0]
    if src.shape == (1,) * k + kept and dims == tuple(range(len(shape))):
        return ins.operands[0]
    return None


def _only_params(comp: Module, allowed: set[int]) -> bool:
    return all(ins.attr("index") in allowed for ins in comp.instrs if ins.opcode == "parameter")


def match(m: Module, f2: int) -> tuple[int, int, int] | None:
    """(F1, output index of M in F1, position of X among F2's operands) when top-level
    fusion f2 is the second half of a moments pair, else None."""
    ins = m.instrs[f2]
    if ins.opcode != "fusion" or ins.attr("kind") != "input":
        return None
    comp = ins.value
    r2 = _single_reduce(comp)
    if r2 is None or (k := _leading(comp, r2)) is None:
        return None
    d = _squared(comp, comp.instrs[r2].operands[0])
    if d is None:
        return None
    if d.opcode != "subtract" or d.dtype != comp.instrs[r2].dtype:
        return None
    xchain = _load_chain(comp, d.operands[0])
    mp = _per_kept(comp, d.operands[1], k)
    if xchain is None or mp is None or comp.instrs[d.operands[0]].dtype != d.dtype:
        return None
    while comp.instrs[mp].opcode == "reshape":
        mp = comp.instrs[mp].operands[0]
    if comp.instrs[mp].opcode != "parameter":
        return None
    jx, jm = xchain[0], comp.instrs[mp].attr("index")
    if jx == jm or not _only_params(comp, {jx, jm}):
        return None
    src = ins.operands[jm]  # M at top level: F1, or an element of F1's tuple
    top = m.instrs[src]
    if top.opcode == "get-tuple-element":
        f1, out = top.operands[0], top.attr("index")
    else:
        f1, out = src, 0
    first = m.instrs[f1]
    if first.opcode != "fusion" or first.attr("kind") != "input":
        return None
    if top.opcode != "get-tuple-element" and len(first.value.outputs) != 1:
        return None
    comp1 = first.value
    r1 = _single_reduce(comp1)
    if r1 is None or _leading(comp1, r1) != k or comp1.instrs[r1].dtype != d.dtype:
        return None
    chain1 = _load_chain(comp1, comp1.instrs[r1].operands[0])
    if chain1 is None or chain1[1:] != xchain[1:] or not _only_params(comp1, {chain1[0]}):
        return None
    if first.operands[chain1[0]] != ins.operands[jx]:
        return None
    cols = comp.instrs[r2].shape
    if any(math.prod(c.instrs[o].shape) != math.prod(cols)
           for c in (comp, comp1) for o in c.outputs):
        return None  # (every result has one value per kept element)
    return f1, out, jx


def parts(comp: Module) -> Parts | None:
    """The pieces of a merged moments computation (see `fuse_moments`), or None when `comp`
    is not one."""
    reds = []  # (one pass: every launch plan asks)
    for i, ins in enumerate(comp.instrs):
        if ins.opcode in REDUCE_LIKE:
            if ins.opcode != "reduce" or len(reds) == 2:
                return None
            reds.append(i)
    if len(reds) != 2:
        return None
    total, dev = reds
    d = _squared(comp, comp.instrs[dev].operands[0])
    if d is None or d.opcode != "subtract" or comp.instrs[total].operands[0] != d.operands[0]:
        return None
    k = len(comp.instrs[total].attr("dimensions"))
    mean = _per_kept(comp, d.operands[1], k)
    if mean is None:
        return None
    return Parts(d.operands[0], total, mean, dev, k)


def _merge(m: Module, f1: int, out: int, jx: int, f2: int) -> Module:
    """`m` with fusions f1 and f2 replaced by one moments fusion at f1's place."""
    a, b2 = m.instrs[f1], m.instrs[f2]
    b = Builder()
    local1: dict[int, int] = {}
    for j, ins in enumerate(a.value.instrs):
        local1[j] = b.add(Instr(ins.opcode, tuple(local1[o] for o in ins.operands), ins.shape,
                                ins.dtype, ins.attrs, ins.value))
    xlocal = local1[next(j for j, i in enumerate(a.value.instrs) if i.opcode == "parameter")]
    mean = local1[a.value.outputs[out]]
    local2: dict[int, int] = {}
    for j, ins in enumerate(b2.value.instrs):
        if ins.opcode == "parameter":
            idx = ins.attr("index")
            if idx == jx:  # X: F1's parameter (Builder shares the views read through it)
                local2[j] = xlocal
            else:  # M: F1's value (a reshape of it in F2 now reshapes F1's value)
                local2[j] = mean
            continue
        local2[j] = b.add(Instr(ins.opcode, tuple(local2[o] for o in ins.operands), ins.shape,
                                ins.dtype, ins.attrs, ins.value))
    users = m.users()
    n1 = len(a.value.outputs)
    gte1 = {i: m.instrs[i].attr("index") for i in users[f1]
            if m.instrs[i].opcode == "get-tuple-element"}
    keep1 = []  # F1's outputs still read by something other than F2
    for n in range(n1):
        readers = [u for g, idx in gte1.items() if idx == n for u in users[g]] \
            if n1 > 1 else users[f1]
        if f1 in m.outputs or any(u != f2 for u in readers) or any(
                g in m.outputs for g, idx in gte1.items() if idx == n):
            keep1.append(n)
    outs = [local1[a.value.outputs[n]] for n in keep1] + [local2[o] for o in b2.value.outputs]
    comp = b.build(outs, "fused_moments")
    reason = join_reasons(a.attr("reason", ""), b2.attr("reason", ""))
    nb = Builder()
    new: dict[int, int] = {}
    at: dict[tuple[int, int], int] = {}  # (old fusion, output) -> new top-level id
    for i, ins in enumerate(m.instrs):
        if i == f2:
            continue
        if i == f1:
            first = comp.instrs[comp.outputs[0]]
            f = nb.add(Instr("fusion", tuple(new[o] for o in a.operands), first.shape,
                             first.dtype, (("kind", "moments"), ("reason", reason)), comp))
            slots = [(f1, n) for n in keep1] + [(f2, n) for n in range(len(b2.value.outputs))]
            for s, key in enumerate(slots):  # (one result: the fusion itself)
                ri = comp.instrs[comp.outputs[s]]
                at[key] = f if len(slots) == 1 else nb.add(Instr(
                    "get-tuple-element", (f,), ri.shape, ri.dtype, (("index", s),)))
            if n1 == 1 and keep1:  # (read whole: a fusion of one output)
                new[f1] = at[(f1, 0)]
            if len(b2.value.outputs) == 1:
                new[f2] = at[(f2, 0)]
            continue
        if ins.opcode == "get-tuple-element" and ins.operands[0] in (f1, f2):
            key = (ins.operands[0], ins.attr("index"))
            if key in at:
                new[i] = at[key]
            continue  # (an element of F1 only F2 read: gone with F2)
        new[i] = nb.add(Instr(ins.opcode, tuple(new[o] for o in ins.operands), ins.shape,
                              ins.dtype, ins.attrs, ins.value))
    return nb.build([new[o] for o in m.outputs], m.name)


def fuse_moments(m: Module) -> Module:
    """Merge each moments pair of `m` (see the module docstring) into one fusion."""
    while True:  # each merge removes a fusion, so this ends
        for i in range(len(m.instrs)):
            found = match(m, i)
            if found is not None:
                m = _merge(m, found[0], found[1], found[2], i)
                break
        else:
            return m
