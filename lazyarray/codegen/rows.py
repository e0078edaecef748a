"""A row fusion (passes/rows.py) -> the Python source of one Numba kernel.

The launch is two-dimensional: n0 rows (in parallel) of n1 elements. Each load indexes
(row, element), the row only (a per-row value) or the element only (a value repeated on every
row), or nothing (a scalar). Per row, in the computation's order:

    for i0 in prange(n0):
        acc = init0                           # one pass per reduction
        for i1 in range(n1): <its operand>; acc = combine(acc, value)
        x7 = acc                              # then the per-row values it makes possible
        ...
        for i1 in range(n1): <the full-size results>; out0[i0, i1] = ...

An element value a later pass needs again is recomputed when it is cheap, and otherwise
stored in a row-sized scratch buffer (`scr<i>`, allocated once per thread) and read back. A
reduction whose operand uses vectorizable math (exp, log, ...) first stores the operand for
the whole row (a loop with no carried value, which LLVM vectorizes) and then accumulates it.
Accumulation uses four lanes in a fixed order, so results do not depend on the thread count.
"""

from __future__ import annotations

from lazyarray.codegen.body import (VECTOR_MATH, ancestors, loop_body, loop_checks, expr_of,
                                    fp_line, indent, nonfinite_test, numpy_loop,
                                    reduce_may_raise, acc_dtype, np_type, vector_combine)
from lazyarray.ir.hlo import MOVEMENT, Module
from lazyarray.ops.table import REDUCTIONS
from lazyarray.passes.fusion import is_cheap
from lazyarray.codegen.layout import Spec


def row_levels(comp: Module, spec: Spec) -> tuple[set[int], dict[int, tuple | None]]:
    """(instructions with one value per row, load dims by load instruction)."""
    dims = dict(spec.loads)
    row: set[int] = set()
    for i, ins in enumerate(comp.instrs):
        if i in dims:
            if dims[i] is None or dims[i] == (0,):
                row.add(i)
        elif ins.opcode in ("parameter", "constant"):
            continue  # only read through a load point
        elif ins.opcode == "reduce":
            row.add(i)
        elif (ins.opcode in MOVEMENT or ins.is_elementwise) and all(o in row for o in ins.operands):
            row.add(i)
    return row, dims


def render_rows(comp: Module, spec: Spec) -> list[str]:
    """The kernel body (after the signature and the scalar loads), indented one level."""
    row, dims = row_levels(comp, spec)
    reds = [i for i, ins in enumerate(comp.instrs) if ins.opcode == "reduce"]
    full_outs = [(k, o) for k, o in enumerate(comp.outputs) if o not in row
                 or comp.instrs[o].shape == comp.instrs[comp.instrs[reds[0]].operands[0]].shape]
    row_outs = [(k, o) for k, o in enumerate(comp.outputs) if (k, o) not in full_outs]
    # the passes over the row: one per reduction (its operand), then one for full results
    passes = [[comp.instrs[r].operands[0]] for r in reds]
    if full_outs:
        passes.append([o for _, o in full_outs])
    first: dict[int, int] = {}
    raw = [ancestors(comp, spec, roots, row) - row for roots in passes]
    for n, need in enumerate(raw):
        for i in need:
            first.setdefault(i, n)
    scratch = {i for n, need in enumerate(raw) for i in need
               if first[i] < n and not is_cheap(comp.instrs[i])}
    idx = ["i0", "i1"]
    out_at = {o: k for k, o in full_outs}
    lines = [f"scr{i} = np.empty(n1, {np_type(comp.instrs[i].dtype)})" for i in sorted(scratch)]
    done_row: set[int] = set()

    def row_values() -> list[str]:
        """Per-row values whose operands are known, in order (with their checks)."""
        out = []
        for i in sorted(row - done_row):
            ins = comp.instrs[i]
            if ins.opcode == "reduce" or any(o in row and o not in done_row
                                             for o in ins.operands):
                continue
            if i in dims:
                if dims[i] == (0,):
                    k = [p for p, d in spec.loads if d is not None].index(i)
                    out.append(f"x{i} = a{k}[i0]")
            elif ins.opcode in MOVEMENT:
                out.append(f"x{i} = x{ins.operands[0]}")
            elif ins.is_elementwise:
                out.append(f"x{i} = {expr_of(comp, i)}")
                out += fp_line(comp, i, set())
            done_row.add(i)
        return out

    lines += row_values()
    called: set[int] = set()  # NumPy's loops computed for the row into `scr<i>` so far
    for n, roots in enumerate(passes):
        stop = row | {i for i in scratch if first[i] < n}
        alloc, pre = _row_calls(comp, spec, roots, stop, called, scratch, first, n)
        lines = alloc + lines + pre
        stop |= called
        need = ancestors(comp, spec, roots, stop) - stop
        aliases = {i: f"scr{i}[i1]" for i in scratch if first[i] < n and i in raw[n]}
        aliases.update({i: f"scr{i}[i1]" for i in called})
        store = [f"scr{i}[i1] = x{i}" for i in sorted(scratch) if first[i] == n]
        if n < len(reds):
            r = reds[n]
            alloc, pass_lines = _reduce_pass(comp, spec, idx, r, need, aliases, store)
            lines = alloc + lines + pass_lines
            done_row.add(r)
            lines += row_values()
        else:
            body = loop_body(comp, spec, idx, set(), only=need, aliases=aliases)
            body += [f"out{out_at[o]}[i0, i1] = x{o}" for o in roots]
            lines += ["for i1 in range(n1):", *indent(body + store, 1)]
    lines += [f"out{k}[i0] = x{o}" for k, o in row_outs]
    return indent(["for i0 in prange(n0):", *indent(lines, 1)], 1)


def _row_calls(comp: Module, spec: Spec, roots, stop: set[int], called: set[int],
               scratch: set[int], first: dict, n: int) -> tuple[list[str], list[str]]:
    """The instructions of pass n calling NumPy's loops (`numpy_loop`), computed for the whole
    row before the pass: their operands into row buffers `rta<i>_<k>`, then one call each into
    `scr<i>` (a level at a time: exp(sin(x)) calls sin first), then their checks. Adds them to
    `called`; returns (buffers to allocate once per thread, the lines)."""
    alloc, lines = [], []
    while True:
        calls = sorted(i for i in ancestors(comp, spec, roots, stop | called) - stop - called
                       if numpy_loop(comp, i))
        ready = [i for i in calls if not (ancestors(comp, spec, comp.instrs[i].operands,
                                                    stop | called) & (set(calls) - {i}))]
        if not ready:
            return alloc, lines
        where = {}
        fill = {}
        for i in ready:
            for k, o in enumerate(comp.instrs[i].operands):
                if o in called or (o in scratch and first[o] < n):
                    where[(i, k)] = f"scr{o}"
                else:
                    where[(i, k)] = f"rta{i}_{k}"
                    fill[(i, k)] = o
            alloc.append(f"scr{i} = np.empty(n1, {np_type(comp.instrs[i].dtype)})")
        alloc += [f"rta{i}_{k} = np.empty(n1, {np_type(comp.instrs[o].dtype)})"
                  for (i, k), o in fill.items()]
        if fill:
            inner = stop | called
            reached = ancestors(comp, spec, set(fill.values()), inner)
            stored = called | {i for i in scratch if first[i] < n}  # in `scr<i>` already
            body = loop_body(comp, spec, ["i0", "i1"], set(), only=reached - inner,
                             aliases={a: f"scr{a}[i1]" for a in stored & reached})
            lines += ["for i1 in range(n1):", *indent(
                body + [f"{where[key]}[i1] = x{o}" for key, o in fill.items()], 1)]
        for i in ready:
            bufs = ", ".join(where[(i, k)] for k in range(len(comp.instrs[i].operands)))
            lines.append(f"_h.numpy_block_{comp.instrs[i].opcode}({bufs}, scr{i}, n1)")
        lines += loop_checks(comp, ready, where, "scr{}", "for i1 in range(n1):", "i1")
        called.update(ready)


def _reduce_pass(comp: Module, spec: Spec, idx: list[str], r: int, need: set[int],
                 aliases: dict[int, str], store: list[str]) -> tuple[list[str], list[str]]:
    """One pass over the row accumulating reduction r (and storing the scratch values first
    computed here): (buffers to allocate once per thread, the pass)."""
    rins = comp.instrs[r]
    rdef = REDUCTIONS[rins.attr("to_apply")]
    acc_t = np_type(acc_dtype(rdef.name, rins.dtype))
    v = rins.operands[0]
    k = [i for i, ins in enumerate(comp.instrs) if ins.opcode == "reduce"].index(r)
    body = loop_body(comp, spec, idx, set(), only=need, aliases=aliases)
    combine = vector_combine(rins) or rdef.combine
    step = lambda lane, x: f"acc{lane} = {acc_t}({combine.format(f'acc{lane}', x)})"  # noqa: E731
    lines, alloc = [], []
    load = None
    if v in aliases:  # the operand is in a scratch buffer already
        body, load = [], lambda q: f"scr{v}[{q}]"
    elif not vector_combine(rins) and any(m in line for line in body for m in VECTOR_MATH):
        # the operand for the whole row first (vectorized), then the accumulation (a float
        # sum, max or min vectorizes with the math in one loop)
        buf = f"scr{v}" if f"scr{v}[i1] = x{v}" in store else f"vec{r}"
        if buf == f"vec{r}":
            alloc.append(f"{buf} = np.empty(n1, {np_type(comp.instrs[v].dtype)})")
            store = [*store, f"{buf}[i1] = x{v}"]
        lines += ["for i1 in range(n1):", *indent(body + store, 1)]
        body, store, load = [], [], lambda q: f"{buf}[{q}]"
    if vector_combine(rins):  # one accumulator, vectorized by LLVM (see `vector_combine`)
        lines += [f"acc0 = init{k}", "for i1 in range(n1):"]
        lines += indent([*body, *store, step(0, f"x{v}")] if load is None else
                         [step(0, load("i1"))], 1)
    else:
        lines += [f"acc{j} = init{k}" for j in range(4)]
        lines.append("for q in range(0, n1 - 3, 4):")
        for j in range(4):
            if load is None:
                lines += indent([f"i1 = q + {j}", *body, *store, step(j, f"x{v}")], 1)
            else:
                lines += indent([step(j, load(f"q + {j}"))], 1)
        lines.append("for i1 in range(n1 // 4 * 4, n1):")
        lines += indent([*body, *store, step(0, f"x{v}")] if load is None else
                         [step(0, load("i1"))], 1)
        lines += [step(0, "acc1"), step(2, "acc3"), step(0, "acc2")]
    lines.append(f"x{r} = {np_type(rins.dtype)}(acc0)")
    if reduce_may_raise(comp, r):
        lines.append(f"fpf |= {nonfinite_test(f'x{r}')}")
    return alloc, lines

