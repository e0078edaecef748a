"""A kernel's parallel loops as part functions: the source the CPU backend compiles.

The code generator writes each parallel loop as `for X in prange(N): BODY`. Numba's parfor
pass would compile such a loop into a gufunc by a second full compile of its body, which was
most of a kernel's compile time (3.8 s of 4.6 s for five kernels; docs/internals.md, "Part
functions"). Here each outermost `prange` loop becomes a plain function of a part of its
range,

    def _part0(part, parts, _n, <the values BODY reads from before the loop>):
        fpe = 0
        for X in range(part * _n // parts, (part + 1) * _n // parts):
            BODY
        return fpe                # the loop's event count (`fpe += ...`), from 0

and the loop itself `fpe += _p.launch(_part0, _p.parts(N), args)`, which runs the parts on
the threads of Numba's threading layer, or calls the one part on the calling thread
(`backends/numba_parts.py`), and returns the sum of their counts. Other reductions
(`x = max(x, ...)`, `min`, several sums) get one slot a part, combined after the launch.
The kernel is compiled serially; Numba's parfor pass is not run.

`split_parallel_loops` declines (returns None) a loop it cannot rewrite exactly: a `return`
in it, another kind of reduction, a value written in the loop that is read after it before
it is written again, a `prange` inside another statement. The kernel then stays a parfor
kernel.
"""

from __future__ import annotations

import ast
import os

# parallel loops compiled as part functions (else by Numba's parfor pass): `LAZYARRAY_PARTS=0`
# turns them off, for comparisons
ENABLED = os.environ.get("LAZYARRAY_PARTS", "1") != "0"
PART_DECORATOR = "_p.part"  # names a part function (`launch` compiles it into the kernel)


def split_parallel_loops(source: str) -> str | None:
    """`source` (one `def kernel(...)` with `prange` loops) with each outermost `prange` loop
    rewritten as a call of a part function, those functions prepended; None when a loop
    cannot be (the caller compiles `source` as it is)."""
    tree = ast.parse(source)
    fn = tree.body[0]
    if len(tree.body) != 1 or not isinstance(fn, ast.FunctionDef):
        return None
    ints = {s.targets[0].id for s in fn.body
            if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Constant)
            and type(s.value.value) is int}
    parts: list[ast.FunctionDef] = []
    try:
        fn.body = _rewrite_block(fn.body, fn, ints, parts)
    except _Declined:
        return None
    if not parts:
        return None
    tree.body = [*parts, fn]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _Declined(Exception):
    pass


def _is_prange(node) -> bool:
    return (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "prange")


def _rewrite_block(stmts: list, fn, ints: set, parts: list) -> list:
    out = []
    for k, s in enumerate(stmts):
        if _is_prange(s):
            out.extend(_rewrite_loop(s, stmts[k + 1:], fn, ints, parts))
            continue
        if any(_is_prange(n) for n in ast.walk(s)):
            raise _Declined  # (a prange loop inside another statement: not rewritten)
        out.append(s)
    return out


def _rewrite_loop(loop: ast.For, after: list, fn, ints: set, parts: list) -> list:
    if loop.orelse or len(loop.iter.args) != 1 or loop.iter.keywords \
            or not isinstance(loop.target, ast.Name):
        raise _Declined
    if any(isinstance(n, (ast.Return, ast.Yield, ast.Global, ast.Nonlocal))
           for n in ast.walk(loop)):
        raise _Declined
    for n in ast.walk(loop):  # an inner prange is a serial loop inside a part
        if _is_prange(n):
            n.iter.func.id = "range"
    first = _first_uses(loop.body)
    local = _defined_in(fn) - {loop.target.id}  # (other names are the module's globals)
    reads = [name for name, how in first.items() if how == "load" and name in local]
    stored = {n.id for s in loop.body for n in ast.walk(s)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    # a value read before the loop and written in it: a reduction (parfor's rule), or declined
    reductions = {name: _reduction(name, loop.body, ints) for name in reads if name in stored}
    if (stored - set(reductions)) & _read_before_written(after):
        raise _Declined  # a value of the loop's last iteration, read after it
    k = len(parts)
    var = loop.target.id
    lo, hi = "part * _n // parts", "(part + 1) * _n // parts"
    if _only_indexes(var, loop.body):  # unsigned: no negative-index wraparound per access,
        lo, hi = f"np.uint64({lo})", f"np.uint64({hi})"  # which keeps LLVM from vectorizing
    sums = [name for name, how in reductions.items() if how == "+"]
    # one sum (the event count): what each part returns, summed by `launch`; else one slot
    # a part per reduction, combined after the launch
    returned = sums[0] if len(reductions) == 1 and sums else None
    reds = {} if returned else {name: f"_r{k}_{j}" for j, name in enumerate(reductions)}
    free = [name for name in reads if name not in reductions or reductions[name] != "+"]
    head = f"def _part{k}(part, parts, {', '.join(['_n', *reds.values(), *free])}):"
    part_src = "\n".join([
        head, *(f"    {name} = 0" for name in sums),  # (a max or min starts from its value)
        f"    for {var} in range({lo}, {hi}):",
        "        pass",
        *(f"    {r}[part] = {name}" for name, r in reds.items()),
        *([f"    return {returned}"] if returned else [])])
    part = ast.parse(part_src).body[0]
    part.decorator_list = [ast.parse(PART_DECORATOR, mode="eval").body]
    hoisted = _scratch_arrays(loop.body, stored | {var})
    part.body[len(sums)].body = [b for b in loop.body if b not in hoisted]
    part.body[len(sums):len(sums)] = hoisted
    parts.append(part)
    combine = {"+": "{0} += {1}[_j]", "max": "{0} = max({0}, {1}[_j])",
               "min": "{0} = min({0}, {1}[_j])"}
    call = f"_p.launch(_part{k}, _q{k}, ({', '.join([f'_n{k}', *reds.values(), *free])},))"
    call_src = "\n".join([
        f"_n{k} = {ast.unparse(loop.iter.args[0])}",
        f"_q{k} = _p.parts(_n{k})",
        *(f"{r} = np.full(_q{k}, {name})" for name, r in reds.items()),
        f"{returned} += {call}" if returned else call,
        *(f"for _j in range(_q{k}):\n    " + combine[reductions[name]].format(name, r)
          for name, r in reds.items())])
    return ast.parse(call_src).body


def _scratch_arrays(body: list, stored: set) -> list:
    """The statements `t = np.empty(...)` of the loop's body whose sizes do not change in the
    loop: allocated once a part, before its loop (as parfor hoists them once a thread; a
    row loop allocating three blocks a row spent a third of its time in the allocator)."""
    out = []
    for b in body:
        if isinstance(b, ast.Assign) and len(b.targets) == 1 \
                and isinstance(b.targets[0], ast.Name) and isinstance(b.value, ast.Call) \
                and ast.unparse(b.value.func) == "np.empty":
            t = b.targets[0].id
            reads = {n.id for n in ast.walk(b.value) if isinstance(n, ast.Name)} - {"np"}
            writes = sum(isinstance(n, ast.Name) and n.id == t and isinstance(n.ctx, ast.Store)
                         for s in body for n in ast.walk(s))
            if not reads & stored and writes == 1:
                out.append(b)
    return out


def _only_indexes(var: str, body: list) -> bool:
    """Whether every read of `var` in `body` is an array index (`a[var]`, `a[var, j]`)."""
    indexes = set()
    for n in (n for s in body for n in ast.walk(s)):
        if isinstance(n, ast.Subscript):
            for e in n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]:
                indexes.add(id(e))
    return all(id(n) in indexes for s in body for n in ast.walk(s)
               if isinstance(n, ast.Name) and n.id == var)


def _defined_in(fn) -> set[str]:
    """The parameters of `fn` and the names it writes."""
    return {a.arg for a in fn.args.args} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _reduction(name: str, body: list, ints: set) -> str:
    """How the loop `body` reduces `name`, a value it reads from before and writes: "+" when
    every write is `name += ...` and `name` starts as an integer (the event counts), "max"
    or "min" when every write is `name = max(name, ...)` (or `min`) and it is read nowhere
    else. Anything else declines."""
    writes, reads = [], 0
    for n in (n for s in body for n in ast.walk(s)):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) \
                and n.target.id == name:
            writes.append("+" if isinstance(n.op, ast.Add) else "?")
        elif isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in n.targets):
            v = n.value
            ok = (len(n.targets) == 1 and isinstance(v, ast.Call)
                  and isinstance(v.func, ast.Name) and v.func.id in ("max", "min")
                  and len(v.args) == 2 and not v.keywords
                  and isinstance(v.args[0], ast.Name) and v.args[0].id == name)
            writes.append(v.func.id if ok else "?")
            reads -= ok  # (its own operand)
        elif isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
            reads += 1
    kinds = set(writes)
    if reads or len(kinds) != 1 or "?" in kinds or kinds == {"+"} and name not in ints:
        raise _Declined
    return kinds.pop()


def _first_uses(stmts: list) -> dict[str, str]:
    """Each name used in `stmts` -> "load" when its first use in evaluation order reads it
    (a value from before the statements), "store" when it writes it, "cond" when only a
    branch or a loop body may have written it (a read after that declines)."""
    first: dict[str, str] = {}

    def use(name: str, how: str) -> None:
        was = first.get(name)
        if was is None or was == "cond" and how == "store":
            first[name] = how
        elif was == "cond" and how == "load":
            raise _Declined

    def expr(e) -> None:
        for n in _ordered(e):
            if isinstance(n, ast.Name):
                use(n.id, "load" if isinstance(n.ctx, ast.Load) else "store")

    def nested(*blocks) -> None:  # a loop body (maybe never run) or the branches of an if
        uses = [_first_uses(b) for b in blocks]
        for name in dict.fromkeys(n for u in uses for n in u):  # (in order: the same text
            # in every process, whatever the hash seed)
            hows = [u.get(name) for u in uses]
            use(name, "load" if "load" in hows else "store" if all(
                h == "store" for h in hows) and len(blocks) > 1 else "cond")

    for s in stmts:
        if isinstance(s, ast.Assign):
            expr(s.value)
            for t in s.targets:
                expr(t)
        elif isinstance(s, ast.AugAssign):
            expr(s.value)
            expr(ast.Name(s.target.id, ast.Load()) if isinstance(s.target, ast.Name)
                 else s.target)
            expr(s.target)
        elif isinstance(s, ast.For):
            expr(s.iter)
            nested([ast.Assign([s.target], ast.Constant(0)), *s.body])
        elif isinstance(s, ast.While):
            expr(s.test)
            nested(s.body)
        elif isinstance(s, ast.If):
            expr(s.test)
            nested(s.body, s.orelse)
        elif isinstance(s, (ast.Expr, ast.Pass, ast.Break, ast.Continue, ast.Return,
                            ast.Raise)):
            expr(s)
        else:
            raise _Declined
    return first


def _ordered(node):
    """The nodes of an expression in evaluation order (children before the node, left to
    right; a Store target after the value that a statement evaluates first)."""
    for child in ast.iter_child_nodes(node):
        yield from _ordered(child)
    yield node


def _read_before_written(stmts: list) -> set[str]:
    """Names the statements read before writing them (in the first use's order)."""
    try:
        return {name for name, how in _first_uses(stmts).items() if how == "load"}
    except _Declined:
        return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)}
