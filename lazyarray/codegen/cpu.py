"""Fusion -> Python source of one Numba kernel (pure: no Numba import here).

The source depends only on the fused computation's masked text and the launch Spec, so it is
shape-polymorphic: sizes, slice offsets and scalar constants are all kernel arguments.

    def kernel(out0, a0, a1, s0, n0):          # outputs, array loads, scalar loads, sizes
        for i0 in prange(n0):
            x1 = a0[i0]
            ...
            out0[i0] = x5

Reductions keep a scalar accumulator over the trailing reduced dims; when the outermost dim
is reduced, each of `nchunks` fixed chunks (a count independent of the thread count, so the
result is deterministic) accumulates into its own row of a partials array.
"""

from __future__ import annotations

import numpy as np

from lazyarray.codegen.body import (BLOCK, NONFINITE_BITS, PREFETCH_BLOCK, VECTOR_MATH, acc_dtype,
                                    ancestors, block_buffers, cheap_checks, check_supported,
                                    epilogue_instrs, expr_of, fp_line, has_row_lanes, indent,
                                    kernel_params, loop_body, loop_instrs, nonfinite_test,
                                    np_type, prefetch_lines,
                                    reduce_may_raise, reductions_of, row_lanes, scalar_loads,
                                    slow_path_instrs, stored_output, vector_block, vector_combine)
from lazyarray.codegen.moments import render_moments
from lazyarray.codegen.rows import render_rows
from lazyarray.ir.hlo import Module
from lazyarray.ops.table import OPS, REDUCTIONS
from lazyarray.codegen.layout import Spec

# 7: kernels return a count of possible FP events; 8: flat loads; 9: fma; 10: flat stores;
# 11: exact checks of values that reach an output in a second pass, only when one is not finite;
# 12: unsigned lane indices; 13: BLOCK lanes in reductions with vector math; 14: checks
# moved down chains of one-operand ops; 15: row lanes in column reductions; 16: trace-tier
# sums; 17: row fusion kernels; 18: non-finite counts of values that may not reach an
# output; 19: reduction kernels check float values for not finite only (`loop_body`'s `loose`);
# 20: one-compare checks of values of known sign, exp of a value <= 0 without the upper clamp;
# 21: streaming stores of large loop outputs (Spec.stream), the running maximum of magnitude
# bits in place of a count of non-finite values (`magnitude_bits`); 22: streaming from
# registers, 1-d and 2-d (`_render_stream_direct`); 23: float sum, max, min
# vectorized (`vector_combine`), a running maximum per row (`_row_maxima`),
# software prefetch in large 1-d reductions (`Spec.prefetch`); -1 from a loop whose second
# pass would read an input its output overwrote; 24: argmax/argmin in two passes (the extreme,
# then its first index), tanh, sinh, cosh, log2, log10, arctanh, arcsinh, arccosh, cbrt as
# lazyarray's own (`_h.tanh`, ...); ...; 30: power of floats, exp2 and tan as lazyarray's own
# (`_h.power` no longer calls libm: the same kernel source compiles to other code); 31:
# a whole 1-d argmax/argmin in parallel chunks; 32: float math through NumPy's own loops
# (`_h.numpy_loop_<op>`, `_h.numpy_block_<op>`; ops/loops.py), in blocks of CALL_BLOCK; 34:
# whole 1-d float64 sums in NumPy's pairwise order on request (`Spec.pairwise`); 35: cheap
# floating-point checks unless a fusion's cheap kernel flagged (`body._cheap`); 36: a gathered
# index checked by one call (`_h.gather_index`), not six lines of source per index; 37: a
# streamed store's private flag as an array (`_fp_scopes`: Numba's reduction analysis); 38: an
# array in streamed loops only (a variable in row and moment loops again); 39: float64 add,
# subtract, multiply and divide of float64 operands as Python operators (`OpDef.f8`); 40:
# kernels compiled without Numba's C-callable wrapper (`numba_cpu.compile_kernel`)
CODEGEN_VERSION = 40


def render(comp: Module, spec: Spec, exact: bool = False) -> str:
    """Python source defining `kernel(...)` for this fusion and launch layout, with cheap
    floating-point checks, or with `exact` ones (see `body._cheap`)."""
    with cheap_checks(not exact):
        return _render(comp, spec)


def _render(comp: Module, spec: Spec) -> str:
    check_supported(comp)
    params = ", ".join(kernel_params(comp, spec))
    head = [f"def kernel({params}):", "    fpe = 0", "    fpf = False"]
    head += indent(scalar_loads(spec), 1)
    idx = [f"i{d}" for d in range(spec.rank)]
    if spec.kind in ("loop", "update"):
        src = head + _render_loop(comp, spec, idx)
    elif spec.kind == "reduce":
        src = head + _render_reduce(comp, spec, idx)
    elif spec.kind == "scan":
        src = head + _render_scan(comp, spec, idx)
    elif spec.kind == "row":
        src = head + render_rows(comp, spec)
    elif spec.kind == "moments":
        src = head + render_moments(comp, spec)
    else:
        src = head + _render_argreduce(comp, spec, idx)
    src += ["    fpe += fpf", "    return fpe  # how many places may have raised a floating-point flag"]
    return "\n".join(_fp_scopes(src)) + "\n"


def _fp_scopes(lines: list[str]) -> list[str]:
    """Numba allows one update of a parallel loop's reduction variable per iteration: inside
    each `prange` loop the checks OR into a private `fpp`, added to `fpe` once at the end of
    the iteration; outside, into `fpf`. In a streamed store's loop (blocks of a few
    elements, each an inner loop), `fpp` is a one-element array: as a variable updated two
    loops deep, its copies form a cycle that Numba's reduction analysis rejects ("unexpected
    cycle in lookup()") in some kernels, which then did not compile. (Not elsewhere: in row
    and moment loops the array's load and store per element cost 2-3x.)"""
    out: list[str] = []
    open_at: list[int] = []  # indentation of the prange loop being closed
    single = False  # its body has one check: added to `fpe` directly (no private flag)
    flag = "fpp"  # the private flag as it is read and updated ("fpp[0]": an array)
    for k, line in enumerate(lines):
        ind = len(line) - len(line.lstrip())
        while open_at and ind <= open_at[-1]:
            at = open_at.pop()
            if not single:
                out.append(" " * (at + 4) + f"fpe += {flag}")
        if open_at and line.lstrip().startswith("fpf |= "):
            line = line.replace("fpf |= ", "fpe += " if single else f"{flag} |= ", 1)
        out.append(line)
        if line.lstrip().startswith("for ") and "prange(" in line:
            open_at.append(ind)
            body = []
            for rest in lines[k + 1:]:
                if len(rest) - len(rest.lstrip()) <= ind:
                    break
                body.append(rest)
            single = sum(b.lstrip().startswith("fpf |= ") for b in body) <= 1
            streamed = any(b.lstrip().startswith("_h.stream(") for b in body)
            flag = "fpp[0]" if streamed else "fpp"
            if not single:
                out.append(" " * (ind + 4) + ("fpp = np.zeros(1, np.bool_)" if streamed
                                              else "fpp = False"))
    return out


def _nest(dims: list[int], var: str, parallel: bool) -> list[str]:
    lines = []
    for depth, d in enumerate(dims):
        rng = "prange" if parallel and depth == 0 else "range"
        lines.append("    " * depth + f"for {var}{d} in {rng}(n{d}):")
    return lines


SUPERBLOCK = 64 * BLOCK  # elements per parallel iteration of a blocked 1-d loop
CALL_BLOCK = 256  # elements per block of a kernel calling NumPy's loops (`block_size`)


def block_size(comp: Module, spec: Spec, roots, skip: set[int]) -> int:
    """Elements per block of a blocked loop or of a reduction's BLOCK lanes: CALL_BLOCK
    when the block calls NumPy's loops (each call, and the check loop after it, then covers
    more elements), else BLOCK."""
    return CALL_BLOCK if loop_instrs(comp, spec, roots, skip) else BLOCK


def _row_maxima(nest: list[str], body: list[str]) -> list[str]:
    """The loop `nest` around `body` (indented under its innermost loop). When the body
    keeps the running maximum `nfo` and the nest has two loops or more, the innermost loop
    keeps its own (`nfr`), folded into `nfo` after it: the vectorized loop's maximum across
    its lanes then no longer waits on the row before, as it did when the loop started from
    `nfo` (the column standardization's rows of 8: 3.8 ms, against 3.1 ms this way, 2.7 ms with no
    checks)."""
    depth = len(nest)
    if depth < 2 or not any(line.lstrip().startswith("nfo = max(") for line in body):
        return nest + indent(body, depth)
    body = [line.replace("nfo = max(nfo,", "nfr = max(nfr,") for line in body]
    pad = "    " * (depth - 1)
    return [*nest[:-1], f"{pad}nfr = 0", nest[-1], *indent(body, depth),
            f"{pad}nfo = max(nfo, nfr)"]


def _render_loop(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    roots = [stored_output(comp, o) for o in comp.outputs]

    def stores(idx: list[str]) -> list[str]:
        at = ", ".join(idx) if spec.rank else "0"
        if spec.flat_store:  # the region as a flat window (see Spec.flat_store)
            at = " + ".join([*(f"np.uint64({idx[d]}) * fo_{d}" for d in range(spec.rank - 1)),
                             f"np.uint64({idx[-1]})"])
        # a write (update) stores its value: out0 is the written region of the new version
        return [f"out{k}[{at}] = x{r}" for k, r in enumerate(roots)]

    if spec.stream and spec.rank == 1 and not _streams_direct(comp, spec, roots):
        body = _render_stream_loop(comp, spec, idx, roots)
        loop = indent(body, 1)
    elif spec.rank and (slow_path_instrs(comp, spec, roots, set())
                        or loop_instrs(comp, spec, roots, set())):
        return _render_blocked_loop(comp, spec, idx, stores, roots)
    else:
        body = loop_body(comp, spec, idx, set(), split=True)
        if spec.stream and _streams_direct(comp, spec, roots):
            loop = indent(_render_stream_direct(comp, idx, body, stores, roots), 1)
        else:
            loop = indent(_row_maxima(_nest(list(range(spec.rank)), "i", True),
                                       body + stores(idx)), 1)
    if not any(line.lstrip().startswith("nfo = max(") for line in body):
        return loop
    # the exact checks of the gated instructions, in a second pass that runs only when an
    # output element is not finite (serial: it is the rare case). It reads the inputs again:
    # when an output was written over one of them (a donated buffer), it cannot, and the
    # kernel answers -1 ("count unknown": the executor rechecks on inputs computed again)
    recheck = loop_body(comp, spec, idx, set())
    n_arr = sum(d is not None for _, d in spec.loads)
    aliased = " or ".join(f"out{j}.ctypes.data == a{k}.ctypes.data"
                          for j in range(len(roots)) for k in range(n_arr))
    return (["    nfo = 0", *loop, f"    if nfo >= {NONFINITE_BITS:#x}:"]
            + ([f"        if {aliased}:", "            return -1"] if aliased else [])
            + indent(_nest(list(range(spec.rank)), "i", False), 2)
            + indent(recheck, spec.rank + 2))


STREAM_BLOCK = 64  # elements per block of a streaming loop
STREAM_SUPERBLOCK = 256 * STREAM_BLOCK  # elements per parallel iteration


def _render_stream_loop(comp: Module, spec: Spec, idx: list[str], roots) -> list[str]:
    """A 1-d loop whose outputs are stored streaming (`Spec.stream`), in blocks of
    STREAM_BLOCK elements computed into buffers `to<k>` (in L1), each block then written out
    by `_h.stream`: non-temporal stores where the block covers whole 64-byte lines. Blocks
    are aligned to out0's lines (a first short block up to the first boundary), and a full
    block runs a loop of constant length (LLVM unrolls it: no trip-count or overlap checks).
    Each parallel iteration (STREAM_SUPERBLOCK elements) ends with a fence. Not indented."""
    sb, b = STREAM_SUPERBLOCK, STREAM_BLOCK
    bufs = block_buffers(comp, spec, roots, set(), b) + [
        f"to{k} = np.empty({b}, {np_type(comp.instrs[r].dtype)})" for k, r in enumerate(roots)]

    def block(count: str) -> list[str]:
        return vector_block(comp, spec, idx, 0, "lo", count, set(), roots,
                             lambda _: [f"to{k}[jj] = x{r}" for k, r in enumerate(roots)],
                             split=True)
    return ["h0 = _h.stream_head(out0, 0)", f"v0 = h0 - {b} if h0 else 0",
            f"for qs in prange((n0 - v0 + {sb - 1}) // {sb}):",
            *indent(bufs, 1),
            f"    for qb in range(v0 + qs * {sb}, min(n0, v0 + (qs + 1) * {sb}), {b}):",
            "        lo = max(qb, 0)", f"        hi = min(qb + {b}, n0)",
            f"        if hi - lo == {b}:", *indent(block(str(b)), 3),
            "        else:", *indent(block("hi - lo"), 3),
            *(f"        _h.stream(out{k}, lo, to{k}, hi - lo)" for k in range(len(roots))),
            "    _h.stream_fence()"]


STREAM_ROWS = 16  # rows per parallel iteration of a streaming 2-d loop (one fence each)
STREAM_SPAN = 256  # bytes: the streaming loop of `_render_stream_direct` covers multiples
# what a loop streaming from registers may compute: operations LLVM vectorizes (a body it
# does not vectorize stores element by element, at a third of the speed)
_STREAMABLE = frozenset({
    "parameter", "constant", "broadcast", "slice", "reshape", "transpose", "add", "subtract",
    "multiply", "divide", "negative", "positive", "absolute", "fabs", "square", "sqrt",
    "maximum", "minimum", "fmax", "fmin", "clip", "select", "greater", "greater_equal", "less",
    "less_equal", "equal", "not_equal", "copysign", "floor", "ceil", "trunc", "rint"})


def _streams_direct(comp: Module, spec: Spec, roots) -> bool:
    """Does this streaming loop (`Spec.stream`) store straight from registers
    (`_render_stream_direct`)? One output (its lines decide where the streaming stores
    start), of float values, computed by operations that vectorize. Else a 1-d loop streams
    through a buffer (`_render_stream_loop`) and a 2-d one does not stream."""
    return (len(roots) == 1 and comp.instrs[roots[0]].dtype.kind == "f"
            and all(comp.instrs[i].opcode in _STREAMABLE for i in ancestors(comp, spec, roots)))


def _render_stream_direct(comp: Module, idx: list[str], body: list[str], stores,
                          roots) -> list[str]:
    """A loop (`Spec.stream`) whose output is stored by non-temporal vector stores straight from
    registers. Per piece -- a row of a 2-d loop (the stencil), STREAM_SUPERBLOCK elements
    of a 1-d one (the where/clip chain) -- three loops over its elements: up to the first 64-byte
    boundary of out0, then over whole multiples of STREAM_SPAN bytes with the store
    `_h.store_stream` (LLVM vectorizes the loop as the plain one, its stores into aligned
    non-temporal vector stores), then the rest; the first and last store plainly. The indices are
    unsigned (signed ones make the loads gathers). Each parallel iteration (STREAM_ROWS rows, or one
    piece) ends with a fence. Through a buffer instead (`_render_stream_loop`), a store and a load
    per element more: the stencil's kernel ran 1.2-1.4x slower than the plain one that way,
    0.86-0.95 of it this way; the where/clip chain's 0.79-0.84 against 0.86-0.95
    (docs/performance.md). Not indented."""
    # the streaming loop covers whole multiples of STREAM_SPAN bytes: LLVM vectorizes it in
    # groups of up to 256 bytes (8 lanes unrolled up to 4x), which then leave no element to a
    # scalar remainder (its non-temporal stores, one element each, are slow)
    span = STREAM_SPAN // comp.instrs[roots[0]].dtype.itemsize
    main = body + [f"_h.store_stream(out0, r0 + {idx[-1]}, x{roots[0]})"]
    plain = body + stores(idx)
    if len(idx) == 1:
        sb = STREAM_SUPERBLOCK
        head = [f"for qs in prange((n0 + {sb - 1}) // {sb}):", f"    lo = qs * {sb}",
                f"    hi = min(n0, lo + {sb})", "    r0 = np.uint64(0)"]
    else:
        rows = STREAM_ROWS
        head = [f"for qs in prange((n0 + {rows - 1}) // {rows}):",
                f"    for {idx[0]} in range(qs * {rows}, min(n0, (qs + 1) * {rows})):",
                f"        lo, hi = {idx[0]} * n1, ({idx[0]} + 1) * n1",
                "        r0 = np.uint64(lo)"]
    ind = len(idx)  # the indentation of a piece's loops
    i = idx[-1]
    pieces = ["h0 = min(lo + _h.stream_head(out0, lo), hi)",
              f"e0 = h0 + (hi - h0) // {span} * {span}",
              f"for {i} in range(np.uint64(lo) - r0, np.uint64(h0) - r0):", *indent(plain, 1),
              f"for {i} in range(np.uint64(h0) - r0, np.uint64(e0) - r0):", *indent(main, 1),
              f"for {i} in range(np.uint64(e0) - r0, np.uint64(hi) - r0):", *indent(plain, 1)]
    return [*head, *indent(pieces, ind), "    _h.stream_fence()"]


def _render_blocked_loop(comp: Module, spec: Spec, idx: list[str], stores, roots) -> list[str]:
    """The innermost dim in blocks of BLOCK (see `vector_block`); a 1-d loop runs its
    blocks in parallel SUPERBLOCK elements at a time (one set of buffers per superblock)."""
    last = spec.rank - 1
    size = block_size(comp, spec, roots, set())
    bufs = block_buffers(comp, spec, roots, set(), size)
    block = vector_block(comp, spec, idx, last, "qb", f"min({size}, n{last} - qb)", set(),
                          roots, stores)
    if spec.rank == 1:
        lines = [f"for qs in prange((n0 + {SUPERBLOCK - 1}) // {SUPERBLOCK}):",
                 *indent(bufs, 1),
                 (f"    for qb in range(qs * {SUPERBLOCK}, min(n0, (qs + 1) * {SUPERBLOCK}), "
                  f"{size}):"),
                 *indent(block, 2)]
        return indent(lines, 1)
    nest = _nest(list(range(last)), "i", True)  # buffers once per outermost iteration
    lines = [nest[0], *indent(bufs, 1), *nest[1:],
             *indent([f"for qb in range(0, n{last}, {size}):", *indent(block, 1)], last)]
    return indent(lines, 1)


def partial_mode(spec: Spec) -> bool:
    """Accumulate into partials (then combine) unless every reduced dim is in the trailing run."""
    t = spec.rank
    while t > 0 and spec.reduced[t - 1]:
        t -= 1
    return spec.chunked or any(spec.reduced[:t])


def _render_reduce(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    reds = reductions_of(comp)
    epi = epilogue_instrs(comp)
    kept = [d for d in range(spec.rank) if not spec.reduced[d]]
    t = spec.rank  # start of the trailing all-reduced run
    while t > 0 and spec.reduced[t - 1]:
        t -= 1
    partial = partial_mode(spec)
    combine, acc_t = [], []
    for k, r in enumerate(reds):
        rins = comp.instrs[r]
        rdef = REDUCTIONS[rins.attr("to_apply")]
        acc_t.append(np_type(acc_dtype(rdef.name, rins.dtype)))
        combine.append(rdef.combine)
    body = loop_body(comp, spec, idx, epi, loose=True)

    def stepped(lane: str) -> list[str]:
        return [f"acc{k}{lane} = {acc_t[k]}("
                f"{combine[k].format(f'acc{k}{lane}', f'x{comp.instrs[r].operands[0]}')})"
                for k, r in enumerate(reds)]

    step = stepped("")

    epi_alias: set[int] = set()

    blocked = any(m in line for line in body for m in VECTOR_MATH) or bool(
        loop_instrs(comp, spec, [comp.instrs[r].operands[0] for r in reds], epi))

    def lanes(d: int, lo: str, hi: str) -> list[str]:
        """The innermost reduced loop. Float sums, max and min (`vector_combine`): one
        accumulator, which LLVM splits into vector lanes, the body's vector math vectorized
        with it (the Gaussian sum at 1e5: 42.2 ms, against 43.5-44.7 ms in BLOCK lanes). Otherwise 4
        independent scalar accumulators (fixed order, so still deterministic): the chain no
        longer waits on one register.

        Other reductions of a body with vectorizable math (exp, expm1, log, log1p), and those
        of sin and cos (their fix-up pass needs blocks), have BLOCK lanes
        `accb<k>` instead: element q of the run goes into lane (q - lo) mod BLOCK, a block of
        BLOCK elements (then the partial last one) at a time, in a loop without a carried
        value, which LLVM vectorizes (sin and cos in the passes of `vector_block`); the lanes
        are then combined by halving (lane j with lane j + w). A fixed order, whatever the
        thread count. (the Gaussian sum: a buffer per block summed by 4 scalar lanes was 12% slower,
        and the 40 elements of a 1000-long row past the last full block another 20%.)"""
        roots = [comp.instrs[r].operands[0] for r in reds]
        steps = [vector_combine(comp.instrs[r]) for r in reds]
        if all(steps) and not (blocked and (slow_path_instrs(comp, spec, roots, epi)
                                            or loop_instrs(comp, spec, roots, epi))):
            out = [f"    i{d} = np.uint64(q)", *indent(body, 1)]
            out += [f"    acc{k} = {acc_t[k]}({c.format(f'acc{k}', f'x{o}')})"
                    for k, (c, o) in enumerate(zip(steps, roots, strict=True))]
            if spec.prefetch:  # (a 1-d reduction: d is 0)
                return [f"for qb in range({lo}, {hi}, {PREFETCH_BLOCK}):",
                        *indent(prefetch_lines(comp, spec, "qb"), 1),
                        f"    for q in range(qb, min(qb + {PREFETCH_BLOCK}, {hi})):",
                        *indent(out, 1)]
            return [f"for q in range({lo}, {hi}):", *out]
        if blocked:
            return blocked_lanes(d, lo, hi)
        out = [f"acc{k}_{j} = init{k}" for k in range(len(reds)) for j in (1, 2, 3)]
        out.append(f"for q in range({lo}, {hi} - 3, 4):")
        for j in range(4):
            lane = stepped(f"_{j}" if j else "")
            out += [f"    i{d} = np.uint64(q + {j})", *indent(body, 1), *indent(lane, 1)]
        out.append(f"for i{d} in range({lo} + ({hi} - ({lo})) // 4 * 4, {hi}):")
        out += indent(body + step, 1)
        for k in range(len(reds)):
            c = combine[k]
            pair = lambda x, y, c=c, k=k: f"{acc_t[k]}({c.format(x, y)})"  # noqa: E731
            out.append(f"acc{k} = " + pair(pair(f"acc{k}", f"acc{k}_1"),
                                           pair(f"acc{k}_2", f"acc{k}_3")))
        return out

    def blocked_lanes(d: int, lo: str, hi: str) -> list[str]:
        roots = [comp.instrs[r].operands[0] for r in reds]
        ks = range(len(reds))
        blk = block_size(comp, spec, roots, epi)  # lanes: one per element of a block
        into = lambda _: [  # noqa: E731
            f"accb{k}[jj] = {acc_t[k]}({combine[k].format(f'accb{k}[jj]', f'x{o}')})"
            for k, o in enumerate(roots)]
        # np.empty in a prange body is hoisted (once per thread); np.full would not be
        out = [f"accb{k} = np.empty({blk}, {acc_t[k]})" for k in ks]
        out += [f"for jj in range({blk}):", *(f"    accb{k}[jj] = init{k}" for k in ks)]
        out += block_buffers(comp, spec, roots, epi, blk)
        out.append(f"qt = {lo} + ({hi} - ({lo})) // {blk} * {blk}")
        out.append(f"for qb in range({lo}, qt, {blk}):")
        out += indent(vector_block(comp, spec, idx, d, "qb", str(blk), epi, roots, into,
                                     loose=True), 1)
        out += vector_block(comp, spec, idx, d, "qt", f"{hi} - qt", epi, roots, into,
                             loose=True)
        out += [f"w = {blk // 2}", "while w:", "    for jj in range(w):"]
        out += [f"        accb{k}[jj] = {acc_t[k]}("
                f"{combine[k].format(f'accb{k}[jj]', f'accb{k}[jj + w]')})" for k in ks]
        out.append("    w //= 2")
        return out + [f"acc{k} = {acc_t[k]}({combine[k].format(f'acc{k}', f'accb{k}[0]')})"
                      for k in ks]

    def finish(at: str) -> list[str]:
        lines = [f"x{r} = acc{k}" for k, r in enumerate(reds)]
        lines += [f"fpf |= {nonfinite_test(f'{np_type(comp.instrs[r].dtype)}(x{r})')}"
                  for r in reds if reduce_may_raise(comp, r)]
        for i in range(len(comp.instrs)):  # reshapes of results are aliases; then the epilogue
            ins = comp.instrs[i]
            if ins.opcode == "reshape" and (comp.instrs[ins.operands[0]].opcode == "reduce"
                                            or ins.operands[0] in epi_alias):
                epi_alias.add(i)
                lines.append(f"x{i} = x{ins.operands[0]}")
            elif i in epi:
                lines.append(f"x{i} = {expr_of(comp, i)}")
                lines += fp_line(comp, i, set())
        return lines + [f"out{j}[{at}] = x{o}" for j, o in enumerate(comp.outputs)]

    if spec.pairwise:  # NumPy's order: the values stored, then added as its pairwise loop adds
        root = comp.instrs[reds[0]].operands[0]
        lines = ["vals = _h.carray(_h.scratch(), n0) if n0 <= _h.SCRATCH else np.empty(n0)",
                 "for q in range(n0):", "    i0 = np.uint64(q)", *indent(body, 1),
                 f"    vals[q] = x{root}",
                 "acc0 = init0 + _h.pairwise_sum(vals, 0, n0)"]  # (from the identity, as NumPy)
        return indent(lines + finish("0"), 1)
    if not partial:  # every output element owns its accumulators: one pass, parallel over dim 0
        kidx = ", ".join(idx[d] for d in kept) or "0"
        lines = _nest(list(range(t)), "i", True)
        inner = [f"acc{k} = init{k}" for k in range(len(reds))]
        inner += _nest(list(range(t, spec.rank - 1)), "i", False)
        if spec.rank > t:
            inner += indent(lanes(spec.rank - 1, "0", f"n{spec.rank - 1}"), spec.rank - 1 - t)
        else:
            inner += body + step
        inner += finish(kidx)
        return indent(lines, 1) + indent(inner, t + 1)

    # partials: part[c, kept...] per chunk c of dim 0 (one chunk unless dim 0 is reduced), or
    # part[r, kept...] for row lane r of chunk c (`row_lanes`)
    laned = has_row_lanes(spec)
    pidx = ", ".join(["r" if laned else "c", *(idx[d] for d in kept)])

    def open_dim(d: int) -> str:
        if spec.chunked and d == 0:
            return "for i0 in range(c * n0 // nchunks, (c + 1) * n0 // nchunks):"
        return f"for i{d} in {'prange' if d == 0 else 'range'}(n{d}):"

    lines = ["for c in prange(nchunks):"] if spec.chunked else ["c = 0"]
    depth = 1 if spec.chunked else 0
    for d in range(t):
        lines.append("    " * depth + open_dim(d))
        depth += 1
        if d == 0 and laned:  # (lanes: a power of two)
            lines.append("    " * depth
                         + "r = c * lanes + ((i0 - c * n0 // nchunks) & (lanes - 1))")
    acc_depth = depth
    lines += indent([f"acc{k} = part{k}[{pidx}]" for k in range(len(reds))], depth)
    if t == spec.rank:  # the innermost dim is kept: accumulate element by element
        lines += indent(body + step, depth)
    else:
        for d in range(t, spec.rank - 1):
            lines.append("    " * depth + open_dim(d))
            depth += 1
        last = spec.rank - 1
        lo, hi = ("c * n0 // nchunks", "(c + 1) * n0 // nchunks") if (
            spec.chunked and last == 0) else ("0", f"n{last}")
        lines += indent(lanes(last, lo, hi), depth)
    lines += indent([f"part{k}[{pidx}] = acc{k}" for k in range(len(reds))], acc_depth)
    # combine the partials, then the epilogue, once per output element
    jidx = [f"j{d}" for d in range(spec.rank)]
    kat = ", ".join(jidx[d] for d in kept)
    comb = [f"acc{k} = part{k}[{', '.join(['0', *(jidx[d] for d in kept)])}]" for k in range(len(reds))]
    comb += ["for c in range(1, part0.shape[0]):"]
    comb += [f"    acc{k} = {acc_t[k]}({combine[k].format(f'acc{k}', f'part{k}[' + ', '.join(['c', *(jidx[d] for d in kept)]) + ']')})"
             for k in range(len(reds))]
    comb += finish(kat or "0")
    tail = _nest(kept, "j", True)
    return indent(lines, 1) + indent(tail, 1) + indent(comb, len(kept) + 1)


def _render_scan(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    """Inclusive scan along the last dim, one row per outer index (rows in parallel). The
    running value has the result's dtype, as NumPy's accumulate (a float32 cumsum rounds
    to float32 at every step)."""
    (root,) = comp.outputs
    rins = comp.instrs[root]
    rdef = REDUCTIONS[rins.attr("to_apply")]
    acc_t = np_type(rins.dtype)
    last = spec.rank - 1
    body = loop_body(comp, spec, idx, {root})
    at = ", ".join(idx)
    scan = (["acc = init0", f"for i{last} in range(n{last}):"]
            + indent(body, 1)
            + [f"    acc = {acc_t}({rdef.combine.format('acc', f'x{rins.operands[0]}')})",
               f"    out0[{at}] = acc"]
            + ([f"    fpf |= {nonfinite_test('acc')}"] if reduce_may_raise(comp, root) else []))
    lines = [("    " * d) + f"for i{d} in {'prange' if d == 0 else 'range'}(n{d}):"
             for d in range(last)]
    return indent(lines, 1) + indent(scan, last + 1)


def _render_argreduce(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    (root,) = comp.outputs
    rins = comp.instrs[root]
    last = spec.rank - 1
    better = "<" if rins.attr("to_apply") == "min" else ">"
    body = loop_body(comp, spec, idx, {root})
    v = f"x{rins.operands[0]}"
    kidx = ", ".join(idx[:last]) or "0"
    dtype = comp.instrs[rins.operands[0]].dtype
    if dtype.kind in "fiu" and last == 0:
        # A whole 1-d array in two passes: the extreme of each chunk of ARG_CHUNK elements,
        # chunks in parallel, each a loop LLVM vectorizes (llvm.maximum/minimum for floats:
        # a NaN anywhere makes it NaN); then the first chunk holding the overall extreme (the
        # first NaN's, if any), and in it the first index holding it. From the identity,
        # with unsigned indices: from the first element, or with a negative index's
        # wraparound test, LLVM did not vectorize the first pass. 10^7 float64: 2.0 ms
        # against 6.1 ms in one thread over the whole array (NumPy 3.3). Along an axis of a
        # 2-d array the rows run in parallel (`_arg_lanes`).
        if dtype.kind == "f":
            init = "np.inf" if better == "<" else "-np.inf"
            step = f"_h.{'min' if better == '<' else 'max'}_step(best, {v})"
            found = f"{v} == best or (best != best and {v} != {v})"
            wins = f"(e != e and best == best) or e {better} best"
        else:
            info = np.iinfo(dtype)
            init = info.max if better == "<" else info.min
            step, found = f"{v} if {v} {better} best else best", f"{v} == best"
            wins = f"e {better} best"
        t = np_type(dtype)
        scan = [f"ch = max({ARG_CHUNK}, (n0 + {ARG_CHUNKS - 1}) // {ARG_CHUNKS})",
                "nch = (n0 + ch - 1) // ch", f"ext = np.empty(nch, {t})",
                "for c in prange(nch):", f"    best = {t}({init})",
                "    for q in range(c * ch, min(c * ch + ch, n0)):", "        i0 = np.uint64(q)",
                *indent(body, 2), f"        best = {step}", "    ext[c] = best",
                f"best = {t}({init})", "bc = 0", "for c in range(nch):", "    e = ext[c]",
                f"    if {wins}:", "        best = e", "        bc = c", "bi = 0",
                "for q in range(bc * ch, min(bc * ch + ch, n0)):", "    i0 = np.uint64(q)",
                *indent(body, 1), f"    if {found}:", "        bi = q", "        break",
                "out0[0] = bi"]
    else:
        scan = ([f"i{last} = 0", *body, f"best = {v}", "bi = 0",
                 f"for i{last} in range(1, n{last}):"]
                + indent(body, 1)
                + [f"    if best == best and ({v} {better} best or {v} != {v}):",
                   f"        best = {v}",
                   f"        bi = i{last}",
                   f"out0[{kidx}] = bi"])
        arrays = [d for _, d in spec.loads if d is not None]
        unit = [f"a{k}.strides[-1] == a{k}.itemsize" for k, d in enumerate(arrays)
                if last in d]  # the lanes read rows along memory, not down columns
        if dtype.kind in "fiu" and not spec.tables:
            scan = [f"if n{last} >= {ARG_LANES}{''.join(' and ' + u for u in unit)}:",
                    *indent(_arg_lanes(body, v, last, better, dtype, kidx), 1),
                    "else:", *indent(scan, 1)]
    lines = []
    for d in range(last):
        lines.append("    " * d + f"for i{d} in {'prange' if d == 0 else 'range'}(n{d}):")
    return indent(lines, 1) + indent(scan, last + 1)


ARG_LANES = 16  # lanes of a row's argmax/argmin (`_arg_lanes`)
ARG_CHUNK = 4096  # elements per chunk of a whole 1-d array's argmax/argmin, at least ...
ARG_CHUNKS = 1024  # ... and chunks at most (longer chunks past that)


def _arg_lanes(body: list[str], v: str, last: int, better: str, dtype, kidx: str) -> list[str]:
    """argmax/argmin of one row (dim `last`, at least ARG_LANES long) in ARG_LANES lanes:
    element q goes to lane q mod ARG_LANES, which keeps its extreme and the first index
    holding it (a NaN is taken over a number and kept: the first NaN), a block of lanes at
    a time in a loop of selects without a carried branch, which LLVM vectorizes; the lanes
    are then merged, ties to the smaller index, so the answer is NumPy's first occurrence.
    (1000, 1000) float64 along axis 1: 0.55 ms in one scalar pass, NumPy 0.29.)"""
    t, L = np_type(dtype), ARG_LANES
    nan = dtype.kind == "f"
    take = f"({v} {better} b)" + (f" | (({v} != {v}) & (b == b))" if nan else "")
    i = f"i{last}"
    out = [f"bv = np.empty({L}, {t})", f"bx = np.empty({L}, np.int64)",
           f"for l in range({L}):", f"    {i} = np.uint64(l)", *indent(body, 1),
           f"    bv[l] = {v}", "    bx[l] = l",
           f"for qb in range({L}, n{last}, {L}):",
           f"    for l in range(min({L}, n{last} - qb)):",
           f"        {i} = np.uint64(qb + l)", *indent(body, 2),
           "        b = bv[l]", f"        take = {take}",
           f"        bv[l] = {v} if take else b", "        bx[l] = qb + l if take else bx[l]",
           "best = bv[0]", "bi = bx[0]", f"for l in range(1, {L}):", "    c = bv[l]",
           "    j = bx[l]"]
    if nan:
        out += ["    if best != best:", "        if c != c and j < bi:", "            bi = j",
                "    elif c != c or c " + better + " best or (c == best and j < bi):",
                "        best = c", "        bi = j"]
    else:
        out += [f"    if c {better} best or (c == best and j < bi):", "        best = c",
                "        bi = j"]
    return out + [f"out0[{kidx}] = bi"]
