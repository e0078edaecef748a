"""Row fusion: a reduction over the trailing axes, and the work that reads its result back
through a broadcast, become one kernel that iterates over rows.

Softmax, `e = exp(x - x.max(1, keepdims=True)); e / e.sum(1, keepdims=True)`, leaves `fuse`
as four kernels (max, exp, sum, divide) with two full-size intermediates. Each reads the
previous one's per-row result through `broadcast(reshape(r))`, so the whole chain can run row
by row: one parallel loop over the rows, and inside it one pass over the row per reduction and
one for the full-size results, with the row in cache throughout. x is read from memory once
and the result written once; nothing full-size is written in between.

This pass works on `fuse`'s output. Fusions over one row space (full shape S, reduced axes
S[k:], the same for every reduction) join a row fusion when they read a member's per-row
result through such a broadcast, or a member's full-size result element by element. A
fusion whose other operands depend on a member cannot join (the kernel would need a value
computed outside it while it runs). The merged computation keeps the members' instructions;
its views of a reduction's result are per-row values in the kernel (codegen/rows.py).

Rows must be short enough to stay in cache (`ROW_MAX`) and numerous enough to share among
threads (`ROWS_MIN`); other shapes keep `fuse`'s kernels.
"""

from __future__ import annotations

import math

from lazyarray.ir.hlo import MOVEMENT, Builder, Instr, Module
from lazyarray.passes.fusion import MAX_FUSION, join_reasons

ROW_MAX = 1 << 15  # elements per row: a row and its scratch copies stay in the L2 cache
ROWS_MIN = 8  # rows: fewer leave threads idle (the unfused kernels split the columns)


def is_row(comp: Module) -> bool:
    """Is `comp` a row fusion's computation? Only these broadcast a computed value (other
    fusions end where a value is read through a broadcast; an epilogue reshapes at most)."""
    return any(ins.opcode == "broadcast" and comp.instrs[_base(comp, i)].opcode
               not in ("parameter", "constant") for i, ins in enumerate(comp.instrs))


def _base(comp: Module, i: int) -> int:
    while comp.instrs[i].opcode in MOVEMENT:
        i = comp.instrs[i].operands[0]
    return i


def row_space(comp: Module) -> tuple[tuple[int, ...], int] | None:
    """(S, k) when every reduction of `comp` reduces S over exactly the axes k.. (k >= 1),
    with no other kind of reduction; None otherwise."""
    space = None
    for ins in comp.instrs:
        if ins.opcode in ("argreduce", "scan"):
            return None
        if ins.opcode == "reduce":
            shape = comp.instrs[ins.operands[0]].shape
            dims = tuple(ins.attr("dimensions"))
            k = len(shape) - len(dims)
            if k < 1 or dims != tuple(range(k, len(shape))):
                return None
            if space is not None and space != (shape, k):
                return None
            space = (shape, k)
    return space


def _fits(shape: tuple[int, ...], k: int) -> bool:
    return math.prod(shape[:k]) >= ROWS_MIN and 1 < math.prod(shape[k:]) <= ROW_MAX


def _member_space(ins: Instr) -> tuple | None:
    """The row space a fusion can take part in: ("input", S, k) or ("loop", S)."""
    if ins.opcode != "fusion" or any(i.opcode == "gather" for i in ins.value.instrs):
        return None  # (a gather reads its table at computed positions: not per row)
    kind = ins.attr("kind")
    if kind == "input":
        space = row_space(ins.value)
        return None if space is None else ("input", *space)
    if kind == "loop":
        comp = ins.value
        shapes = {comp.instrs[o].shape for o in comp.outputs}
        return ("loop", ins.shape) if len(shapes) == 1 else None
    return None


def _row_read(comp: Module, p: int, shape: tuple[int, ...], k: int) -> bool:
    """Is parameter p of `comp` (a per-row value) read only as broadcast to S, one value per
    row: directly in its keepdims shape, or after a reshape to it?"""
    keep = shape[:k] + (1,) * (len(shape) - k)

    def per_row(i: int, reshaped: bool) -> bool:
        users = [j for j, ins in enumerate(comp.instrs) if i in ins.operands]
        for u in users:
            ins = comp.instrs[u]
            if ins.opcode == "reshape" and not reshaped and ins.shape == keep:
                if not per_row(u, True):
                    return False
            elif ins.opcode != "broadcast" or comp.instrs[i].shape != keep \
                    or ins.shape != shape or tuple(ins.attr("dimensions")) != tuple(range(len(shape))):
                return False
        return bool(users)

    return per_row(p, False)


def _direct_read(comp: Module, p: int) -> bool:
    """Is parameter p read element by element (no view of it)?"""
    return all(ins.opcode not in MOVEMENT for ins in comp.instrs if p in ins.operands)


def _find_union(m: Module, start: int) -> list[int] | None:
    """The fusions that join the row fusion grown from input fusion `start`, in order."""
    _, shape, k = _member_space(m.instrs[start])
    members = [start]
    produced: dict[int, int] = {start: start}  # top-level id -> member fusion producing it
    for i in range(start + 1, len(m.instrs)):
        ins = m.instrs[i]
        if ins.opcode == "get-tuple-element" and ins.operands[0] in produced:
            produced[i] = produced[ins.operands[0]]
            continue
        space = _member_space(ins)
        if space is None or space[1] != shape or (space[0] == "input"
                                                                 and space[2] != k):
            continue
        reads = [j for j, o in enumerate(ins.operands) if o in produced]
        if not reads:
            continue
        comp = ins.value
        params = {p.attr("index"): q for q, p in enumerate(comp.instrs) if p.opcode == "parameter"}
        ok = True
        for j in reads:
            o = ins.operands[j]
            if m.instrs[o].shape == shape:
                ok = _direct_read(comp, params[j])
            else:
                ok = m.instrs[produced[o]].attr("kind") == "input" and \
                     math.prod(m.instrs[o].shape) == math.prod(shape[:k]) and \
                     _row_read(comp, params[j], shape, k)
            if not ok:
                break
        others = [o for j, o in enumerate(ins.operands) if j not in reads]
        if not ok or any(_depends(m, o, produced) for o in others):
            continue
        if sum(len(m.instrs[f].value.instrs) for f in members) + len(comp.instrs) > MAX_FUSION:
            break
        members.append(i)
        produced[i] = i
    return members if len(members) > 1 else None


def _depends(m: Module, o: int, produced: dict[int, int]) -> bool:
    stack, seen = [o], set()
    while stack:
        i = stack.pop()
        if i in produced:
            return True
        if i not in seen:
            seen.add(i)
            stack.extend(m.instrs[i].operands)
    return False


def _merge(m: Module, members: list[int]) -> Module:
    """`m` with the fusions `members` replaced by one row fusion."""
    mset = set(members)
    users: dict[int, list[int]] = {}
    for i, ins in enumerate(m.instrs):
        for o in ins.operands:
            users.setdefault(o, []).append(i)
    # member results: top-level id -> (member, output index)
    result: dict[int, tuple[int, int]] = {f: (f, 0) for f in members}
    for i, ins in enumerate(m.instrs):
        if ins.opcode == "get-tuple-element" and ins.operands[0] in mset:
            result[i] = (ins.operands[0], ins.attr("index"))
    inside = mset | set(result)
    b = Builder()
    params: dict[int, int] = {}  # outside top-level id -> local parameter
    outer_ops: list[int] = []
    value: dict[tuple[int, int], int] = {}
    for f in members:
        fins = m.instrs[f]
        comp = fins.value
        local: dict[int, int] = {}
        for j, ins in enumerate(comp.instrs):
            if ins.opcode == "parameter":
                o = fins.operands[ins.attr("index")]
                if o in result:
                    src = result[o]
                    if len(m.instrs[src[0]].value.outputs) > 1 and o == src[0]:
                        raise AssertionError("a tuple read whole")
                    local[j] = value[src]
                    continue
                if o not in params:
                    params[o] = b.add(Instr("parameter", (), ins.shape, ins.dtype,
                                            (("index", len(outer_ops)),)))
                    outer_ops.append(o)
                local[j] = params[o]
            else:
                local[j] = b.add(Instr(ins.opcode, tuple(local[x] for x in ins.operands),
                                       ins.shape, ins.dtype, ins.attrs, ins.value))
        for n, o in enumerate(comp.outputs):
            value[(f, n)] = local[o]
    # results read outside the union (or returned) are the row fusion's outputs
    roots: list[tuple[int, int]] = []
    for t, src in result.items():
        if t in m.outputs or any(u not in inside for u in users.get(t, ())):
            if not (t in mset and len(m.instrs[t].value.outputs) > 1):
                roots.append(src)
    roots = list(dict.fromkeys(roots))
    comp = b.build([value[r] for r in roots], "fused_row")
    reason = ""  # the kernel ends where the members whose results leave it ended
    for f in dict.fromkeys(src[0] for src in roots):
        why = m.instrs[f].attr("reason", "")
        reason = join_reasons(reason, why) if reason else why
    return _rebuild(m, members, inside, result, roots, comp, outer_ops, reason)


def _rebuild(m: Module, members: list[int], inside: set[int], result: dict, roots: list,
             comp: Module, outer_ops: list[int], reason: str) -> Module:
    """The top-level module with the union's fusions replaced by the row fusion, placed at the
    last member; instructions reading its results from before there move after it."""
    last = max(members)
    b = Builder()
    new: dict[int, int] = {}
    deferred: list[int] = []
    done = False

    def emit(i: int) -> None:
        ins = m.instrs[i]
        new[i] = b.add(Instr(ins.opcode, tuple(new[o] for o in ins.operands), ins.shape,
                             ins.dtype, ins.attrs, ins.value))

    for i in range(len(m.instrs)):
        if i in inside:
            if i == last:
                first = comp.instrs[comp.outputs[0]]
                f = b.add(Instr("fusion", tuple(new[o] for o in outer_ops), first.shape,
                                first.dtype, (("kind", "row"), ("reason", reason)), comp))
                for n, r in enumerate(roots):
                    ri = comp.instrs[comp.outputs[n]]
                    at = f if len(roots) == 1 else b.add(Instr(
                        "get-tuple-element", (f,), ri.shape, ri.dtype, (("index", n),)))
                    for t, src in result.items():
                        if src == r:
                            new[t] = at
                done = True
                for d in deferred:
                    emit(d)
                deferred = []
            continue
        if not done and any(o in inside or o in deferred for o in m.instrs[i].operands):
            deferred.append(i)
            continue
        emit(i)
    return b.build([new[o] for o in m.outputs], m.name)


def fuse_rows(m: Module) -> Module:
    """Merge each chain of row-space fusions of `m` into one row fusion."""
    while True:  # each merge removes fusions, so this ends
        union = None
        for i, ins in enumerate(m.instrs):
            sp = _member_space(ins)
            if sp is not None and sp[0] == "input" and _fits(sp[1], sp[2]):
                union = _find_union(m, i)
                if union is not None:
                    break
        if union is None:
            return m
        m = _merge(m, union)
