"""Fusion -> Python source of Numba CUDA kernels (pure: no Numba import here).

The same fused HLO and launch `Spec` as the CPU code generator (codegen/cpu.py), rendered for
the GPU. Every array load is a flat device buffer plus an element offset and one element
stride per indexed dim (all kernel arguments), so views cost nothing and sizes never enter
the cache key:

    def kernel(out0, a0, o0, t0_0, t0_1, s0, n0, n1):     # outputs, loads, scalars, sizes
        x2 = s0
        for g in range(cuda.grid(1), n0 * n1, cuda.gridsize(1)):     # grid-stride loop
            i1 = g % n1
            i0 = g // n1
            x1 = a0[o0 + i0 * t0_0 + i1 * t0_1]
            x3 = np.float64((x1 * x2))
            out0[g] = x3

- loop: one grid-stride loop over the flattened iteration space; outputs are C-ordered.
- reduce: `kernel` gives each block one (output element, chunk of the reduced elements)
  pair; threads stride over the chunk, then combine in shared memory (a fixed tree: the
  result is deterministic); thread 0 writes the block's partial. `kernel_combine` folds the
  partials of each output element in order and runs the epilogue (`sqrt(sum(...))`).
  `kernel_columns` (many output elements along a kept innermost dim: column sums) gives
  each thread one output element and loops over the reduced ones, so reads coalesce.
- argreduce: one block per row; per-thread (value, index) candidates, combined in shared
  memory so that the first extreme (and the first NaN) wins, as in NumPy.
- scan: one thread per row, serial along the row.

Scalar templates are CUDA's own (the op table's `cuda` forms): Numba CUDA compiles `math` functions
and operators, not NumPy's ufuncs on scalars. `_m` is `math` on the GPU and NumPy in the
simulator (Python's `math` raises where the GPU returns inf/NaN). An op without a template
raises `Unsupported`: that fusion runs on the host interpreter (a counted transfer).
"""

from __future__ import annotations

import numpy as np

from lazyarray.codegen.body import Unsupported, acc_dtype, np_type
from lazyarray.codegen.body import epilogue_instrs as epilogue_of
from lazyarray.ir.hlo import Module
from lazyarray.ops.table import OPS, REDUCTIONS
from lazyarray.codegen.layout import Spec

CUDA_CODEGEN_VERSION = 1

PRELUDE = """import math
import numpy as np
import numba
from numba import cuda
from lazyarray.backends.cuda_scalar import fmath as _m
import lazyarray.backends.cuda_scalar as _c

"""

# the ops with a CUDA template (`OpDef.cuda`: the rest run on the host)
TEMPLATED = frozenset(name for name, op in OPS.items() if op.cuda)


def template(comp: Module, i: int) -> str:
    """The CUDA scalar expression of elementwise instruction i (raises Unsupported)."""
    ins = comp.instrs[i]
    args = [f"x{o}" for o in ins.operands]
    ops = [comp.instrs[o].dtype for o in ins.operands]
    if ins.opcode == "convert":
        src = ops[0]
        if src.kind == "c" and ins.dtype.kind != "c":
            raise Unsupported("convert from complex")
        if ins.dtype.kind == "b":
            return f"({args[0]} != 0)"
        if src.kind == "b" and ins.dtype.kind == "c":
            return f"{np_type(ins.dtype)}(np.float64({args[0]}))"
        return f"{np_type(ins.dtype)}({args[0]})"
    if ins.opcode == "select":
        return f"({args[1]} if {args[0]} else {args[2]})"
    name = ins.opcode
    kind = ops[0].kind if ops else "f"
    if any(d.kind == "c" for d in ops) or ins.dtype.kind == "c":
        kind = "c"
    t = OPS[name].cuda_template(kind) if name in OPS else None
    if t is None:
        raise Unsupported(f"{name} on {ops[0] if ops else ins.dtype} (cuda)")
    if ins.dtype.kind == "f" and ins.dtype.itemsize == 2:
        raise Unsupported("float16")
    return f"{np_type(ins.dtype)}({t.format(*args, bits=ops[0].itemsize * 8)})"


# ---- signature and indexing --------------------------------------------------------------

def _load_params(spec: Spec, dev: tuple[bool, ...]) -> list[str]:
    """Array loads (flat buffer, offset, strides), then scalar loads: by value, or (`dev`)
    as an element of a device buffer, so that no value leaves the GPU to be passed."""
    params, k = [], 0
    for p, dims in spec.loads:
        if dims is not None:
            params += [f"a{k}", f"o{k}", *(f"t{k}_{d}" for d in dims)]
            k += 1
    for s, on_device in enumerate(dev):
        params += [f"s{s}", f"so{s}"] if on_device else [f"s{s}"]
    return params


def _scalar_lines(spec: Spec, dev: tuple[bool, ...]) -> list[str]:
    points = [p for p, dims in spec.loads if dims is None]
    return [f"x{p} = s{s}[so{s}]" if on_device else f"x{p} = s{s}"
            for s, (p, on_device) in enumerate(zip(points, dev, strict=True))]


def _array_loads(spec: Spec) -> list[str]:
    lines, k = [], 0
    for p, dims in spec.loads:
        if dims is not None:
            at = " + ".join([f"o{k}", *(f"i{d} * t{k}_{d}" for d in dims)])
            lines.append(f"x{p} = a{k}[{at}]")
            k += 1
    return lines


def _unflatten(flat: str, dims: list[int], tmp: str) -> list[str]:
    """i<d> for each of `dims` (C order) from the flat index `flat`."""
    if not dims:
        return []
    if len(dims) == 1:
        return [f"i{dims[0]} = {flat}"]
    lines = [f"{tmp} = {flat}"]
    for d in reversed(dims[1:]):
        lines += [f"i{d} = {tmp} % n{d}", f"{tmp} = {tmp} // n{d}"]
    return lines + [f"i{dims[0]} = {tmp}"]


def _prod(dims: list[int]) -> str:
    return " * ".join(f"n{d}" for d in dims) or "1"


def _elementwise(comp: Module, skip: set[int]) -> list[str]:
    return [f"x{i} = {template(comp, i)}" for i, ins in enumerate(comp.instrs)
            if ins.is_elementwise and i not in skip]


def _indent(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + line for line in lines]


def _numba_type(dtype: np.dtype) -> str:
    return "numba.boolean" if dtype.kind == "b" else f"numba.{dtype.name}"


def _reductions(comp: Module) -> list[int]:
    return [i for i, ins in enumerate(comp.instrs) if ins.opcode == "reduce"]


def signature(comp: Module, spec: Spec, dev: tuple[bool, ...]) -> list[str]:
    params = [f"out{k}" for k in range(len(comp.outputs))]
    if spec.kind == "reduce":
        params += [f"part{k}" for k in range(len(_reductions(comp)))]
    params += _load_params(spec, dev) + [f"n{d}" for d in range(spec.rank)]
    if spec.kind == "reduce":
        params += [f"init{k}" for k in range(len(_reductions(comp)))] + ["nsplit"]
    if spec.kind == "scan":
        params.append("init0")
    return params


def combine_signature(comp: Module, spec: Spec, dev: tuple[bool, ...]) -> list[str]:
    """`kernel_combine(...)`: outputs, partials, scalar loads, kept size, split count."""
    nred = len(_reductions(comp))
    scal = [q for q in _load_params(spec, dev) if q.startswith("s")]
    return ([f"out{k}" for k in range(len(comp.outputs))] + [f"part{k}" for k in range(nred)]
            + scal + ["nkept", "nsplit"])


# ---- kernels -------------------------------------------------------------------------------

def render(comp: Module, spec: Spec, block: int, dev: tuple[bool, ...] | None = None) -> str:
    """Source defining `kernel` (and `kernel_combine` for reductions) for this fusion.

    `block` (threads per block, a power of two) sizes the shared-memory trees; `dev` says, per
    scalar load, whether it is read from a device buffer (default: none is).
    """
    if dev is None:
        dev = (False,) * sum(d is None for _, d in spec.loads)
    for ins in comp.instrs:
        if ins.dtype is not None and ins.dtype.kind == "f" and ins.dtype.itemsize == 2:
            raise Unsupported("float16")
        if ins.opcode == "gather":  # not rendered for the GPU yet: the host interpreter runs it
            raise Unsupported("gather (cuda)")
    if spec.kind == "loop":
        return _render_loop(comp, spec, dev)
    if spec.kind == "reduce":
        return _render_reduce(comp, spec, block, dev)
    if spec.kind == "scan":
        return _render_scan(comp, spec, dev)
    return _render_argreduce(comp, spec, block, dev)


def _head(name: str, params: list[str]) -> list[str]:
    return ["@cuda.jit(cache=True)", f"def {name}({', '.join(params)}):"]


def _render_loop(comp: Module, spec: Spec, dev) -> str:
    dims = list(range(spec.rank))
    body = _unflatten("g", dims, "q") + _array_loads(spec) + _elementwise(comp, set())
    body += [f"out{k}[g] = x{o}" for k, o in enumerate(comp.outputs)]
    lines = _head("kernel", signature(comp, spec, dev)) + _indent(_scalar_lines(spec, dev))
    lines += _indent([f"for g in range(cuda.grid(1), {_prod(dims)}, cuda.gridsize(1)):"])
    lines += _indent(body, 2)
    return "\n".join(lines) + "\n"


def _epilogue_inputs(comp: Module, epi: set[int]) -> list[str]:
    """Elementwise values the epilogue reads that are not derived from a reduction (computed
    from scalar loads only): recomputed in the combine kernel."""
    need: set[int] = set()
    for i in sorted(epi, reverse=True):
        for o in comp.instrs[i].operands:
            if comp.instrs[o].is_elementwise and o not in epi:
                need.add(o)
    work = list(need)
    while work:
        for o in comp.instrs[work.pop()].operands:
            if comp.instrs[o].is_elementwise:
                if o not in need:
                    need.add(o)
                    work.append(o)
            elif comp.instrs[o].opcode not in ("parameter", "constant", "broadcast", "reshape"):
                raise Unsupported("an epilogue input that is not a scalar")
    return [f"x{i} = {template(comp, i)}" for i in sorted(need)]


def _finish(comp: Module, epi: set[int]) -> list[str]:
    """After the accumulators: results, reshapes of them (aliases), then the epilogue."""
    lines = [f"x{r} = acc{k}" for k, r in enumerate(_reductions(comp))]
    lines += _epilogue_inputs(comp, epi)
    alias: set[int] = set()
    for i, ins in enumerate(comp.instrs):
        if ins.opcode == "reshape" and (comp.instrs[ins.operands[0]].opcode == "reduce"
                                        or ins.operands[0] in alias):
            alias.add(i)
            lines.append(f"x{i} = x{ins.operands[0]}")
        elif i in epi:
            lines.append(f"x{i} = {template(comp, i)}")
    reds = set(_reductions(comp))
    for o in comp.outputs:
        if o not in reds and o not in alias and o not in epi:
            raise Unsupported("a reduction fusion output that is not per output element")
    return lines + [f"out{j}[jj] = x{o}" for j, o in enumerate(comp.outputs)]


def _render_reduce(comp: Module, spec: Spec, block: int, dev) -> str:
    reds = _reductions(comp)
    epi = epilogue_of(comp)
    kept = [d for d in range(spec.rank) if not spec.reduced[d]]
    red = [d for d in range(spec.rank) if spec.reduced[d]]
    acc_t, combine = [], []
    for r in reds:
        rins = comp.instrs[r]
        if rins.attr("to_apply") in ("maximum", "minimum") and rins.dtype.kind == "c":
            raise Unsupported("max/min of complex (cuda)")
        acc_t.append(acc_dtype(rins.attr("to_apply"), rins.dtype))
        combine.append(REDUCTIONS[rins.attr("to_apply")].combine)

    def step(k: int, a: str, v: str) -> str:
        return f"{np_type(acc_t[k])}({combine[k].format(a, v)})"

    lines = _head("kernel", signature(comp, spec, dev)) + _indent(_scalar_lines(spec, dev))
    body = [f"sh{k} = cuda.shared.array({block}, {_numba_type(t)})" for k, t in enumerate(acc_t)]
    body += ["tid = cuda.threadIdx.x", f"nkept = {_prod(kept)}", f"nred = {_prod(red)}",
             "for blk in range(cuda.blockIdx.x, nkept * nsplit, cuda.gridDim.x):"]
    inner = ["jj = blk // nsplit", "c = blk % nsplit", "lo = c * nred // nsplit",
             "hi = (c + 1) * nred // nsplit", *_unflatten("jj", kept, "q")]
    inner += [f"acc{k} = init{k}" for k in range(len(reds))]
    inner += [f"for r in range(lo + tid, hi, {block}):"]
    inner += _indent(_unflatten("r", red, "p") + _array_loads(spec) + _elementwise(comp, epi))
    inner += _indent([f"acc{k} = {step(k, f'acc{k}', f'x{comp.instrs[r].operands[0]}')}"
                      for k, r in enumerate(reds)])
    inner += [f"sh{k}[tid] = acc{k}" for k in range(len(reds))]
    inner += ["cuda.syncthreads()", f"w = {block // 2}", "while w > 0:", "    if tid < w:"]
    inner += _indent([f"sh{k}[tid] = {step(k, f'sh{k}[tid]', f'sh{k}[tid + w]')}"
                      for k in range(len(reds))], 2)
    inner += ["    cuda.syncthreads()", "    w //= 2", "if tid == 0:"]
    inner += _indent([f"part{k}[c * nkept + jj] = sh{k}[0]" for k in range(len(reds))])
    inner += ["cuda.syncthreads()"]
    lines += _indent(body) + _indent(inner, 2)

    # alternative: one thread per output element, serial over the reduced elements. When the
    # innermost dim is kept, neighbouring threads read neighbouring elements (coalesced):
    # the launcher picks it for column sums of many columns
    lines += ["", ""] + _head("kernel_columns", signature(comp, spec, dev))
    cols = _scalar_lines(spec, dev) + [f"nkept = {_prod(kept)}", f"nred = {_prod(red)}",
                                       "for jj in range(cuda.grid(1), nkept, cuda.gridsize(1)):"]
    col = _unflatten("jj", kept, "q") + [f"acc{k} = init{k}" for k in range(len(reds))]
    col += ["for r in range(nred):"]
    col += _indent(_unflatten("r", red, "p") + _array_loads(spec) + _elementwise(comp, epi))
    col += _indent([f"acc{k} = {step(k, f'acc{k}', f'x{comp.instrs[r].operands[0]}')}"
                    for k, r in enumerate(reds)])
    col += _finish(comp, epi)
    lines += _indent(cols) + _indent(col, 2)

    # second kernel: fold each output element's partials in order, then the epilogue
    lines += ["", ""] + _head("kernel_combine", combine_signature(comp, spec, dev))
    comb = _scalar_lines(spec, dev)
    comb += ["for jj in range(cuda.grid(1), nkept, cuda.gridsize(1)):"]
    fold = [f"acc{k} = part{k}[jj]" for k in range(len(reds))]
    fold += ["for c in range(1, nsplit):"]
    fold += _indent([f"acc{k} = {step(k, f'acc{k}', f'part{k}[c * nkept + jj]')}"
                     for k in range(len(reds))])
    fold += _finish(comp, epi)
    lines += _indent(comb) + _indent(fold, 2)
    return "\n".join(lines) + "\n"


def _render_scan(comp: Module, spec: Spec, dev) -> str:
    (root,) = comp.outputs
    rins = comp.instrs[root]
    rdef = REDUCTIONS[rins.attr("to_apply")]
    adt = acc_dtype(rdef.name, rins.dtype)
    if rins.dtype.kind == "c" and rdef.name in ("maximum", "minimum"):
        raise Unsupported("max/min of complex (cuda)")
    last = spec.rank - 1
    outer = list(range(last))
    lines = _head("kernel", signature(comp, spec, dev)) + _indent(_scalar_lines(spec, dev))
    lines += _indent([f"for row in range(cuda.grid(1), {_prod(outer)}, cuda.gridsize(1)):"])
    body = _unflatten("row", outer, "q") + ["acc = init0", f"for i{last} in range(n{last}):"]
    body += _indent(_array_loads(spec) + _elementwise(comp, {root}))
    body += _indent([f"acc = {np_type(adt)}({rdef.combine.format('acc', f'x{rins.operands[0]}')})",
                     f"out0[row * n{last} + i{last}] = acc"])
    lines += _indent(body, 2)
    return "\n".join(lines) + "\n"


def _render_argreduce(comp: Module, spec: Spec, block: int, dev) -> str:
    (root,) = comp.outputs
    rins = comp.instrs[root]
    vdt = comp.instrs[rins.operands[0]].dtype
    if vdt.kind == "c":
        raise Unsupported("argmax/argmin of complex (cuda)")
    better = "<" if rins.attr("to_apply") == "min" else ">"
    last = spec.rank - 1
    outer = list(range(last))
    v = f"x{rins.operands[0]}"
    lines = _head("kernel", signature(comp, spec, dev)) + _indent(_scalar_lines(spec, dev))
    lines += _indent([f"shv = cuda.shared.array({block}, {_numba_type(vdt)})",
                      f"shi = cuda.shared.array({block}, numba.int64)",
                      "tid = cuda.threadIdx.x",
                      f"for row in range(cuda.blockIdx.x, {_prod(outer)}, cuda.gridDim.x):"])
    body = _unflatten("row", outer, "q")
    body += [f"best = {np_type(vdt)}(0)", "bi = -1", f"for i{last} in range(tid, n{last}, {block}):"]
    body += _indent(_array_loads(spec) + _elementwise(comp, {root}))
    body += _indent([f"if bi < 0 or (best == best and ({v} {better} best or {v} != {v})):",
                     f"    best = {v}", f"    bi = i{last}"])
    body += ["shv[tid] = best", "shi[tid] = bi", "cuda.syncthreads()",
             f"w = {block // 2}", "while w > 0:", "    if tid < w:"]
    pick = ["ia = shi[tid]", "ib = shi[tid + w]", "va = shv[tid]", "vb = shv[tid + w]",
            "an = va != va", "bn = vb != vb",
            "if ib >= 0 and (ia < 0 or (bn and (not an or ib < ia)) or (not an and not bn and ("
            f"vb {better} va or (vb == va and ib < ia)))):",
            "    shv[tid] = vb", "    shi[tid] = ib"]
    body += _indent(pick, 2) + ["    cuda.syncthreads()", "    w //= 2",
                                "if tid == 0:", "    out0[row] = shi[0]", "cuda.syncthreads()"]
    lines += _indent(body, 2)
    return "\n".join(lines) + "\n"


# ---- fixed kernels: strided copy (gather / update), fill, tiled matmul ----------------------

def render_copy(rank: int) -> str:
    """`copy(dst, doff, dst strides.., src, soff, src strides.., sizes..)`: dst[view] = src[view]."""
    dims = list(range(rank))
    params = (["dst", "doff", *(f"d{d}" for d in dims), "src", "soff", *(f"t{d}" for d in dims)]
              + [f"n{d}" for d in dims])
    lines = _head("kernel", params)
    lines += _indent([f"for g in range(cuda.grid(1), {_prod(dims)}, cuda.gridsize(1)):"])
    at_d = " + ".join(["doff", *(f"i{d} * d{d}" for d in dims)])
    at_s = " + ".join(["soff", *(f"i{d} * t{d}" for d in dims)])
    lines += _indent(_unflatten("g", dims, "q") + [f"dst[{at_d}] = src[{at_s}]"], 2)
    return "\n".join(lines) + "\n"


def render_fill(rank: int) -> str:
    """`fill(dst, doff, dst strides.., value, sizes..)`: dst[view] = value."""
    dims = list(range(rank))
    params = ["dst", "doff", *(f"d{d}" for d in dims), "value", *(f"n{d}" for d in dims)]
    lines = _head("kernel", params)
    lines += _indent([f"for g in range(cuda.grid(1), {_prod(dims)}, cuda.gridsize(1)):"])
    at_d = " + ".join(["doff", *(f"i{d} * d{d}" for d in dims)])
    lines += _indent(_unflatten("g", dims, "q") + [f"dst[{at_d}] = value"], 2)
    return "\n".join(lines) + "\n"


MATMUL_TILE = 16


def render_matmul(dtype: np.dtype, tile: int = MATMUL_TILE) -> str:
    """C (m, n) = A (m, k) @ B (k, n), all C-contiguous and flat: shared-memory tiles of
    `tile` x `tile`; launched on a 2-D grid of 2-D blocks."""
    t, nt = np_type(dtype), _numba_type(dtype)
    return "\n".join(_head("kernel", ["c", "a", "b", "m", "n", "k"]) + _indent([
        f"sa = cuda.shared.array(({tile}, {tile}), {nt})",
        f"sb = cuda.shared.array(({tile}, {tile}), {nt})",
        "tx = cuda.threadIdx.x", "ty = cuda.threadIdx.y",
        f"row = cuda.blockIdx.y * {tile} + ty", f"col = cuda.blockIdx.x * {tile} + tx",
        f"acc = {t}(0)",
        f"for p in range(0, k, {tile}):",
        f"    sa[ty, tx] = a[row * k + p + tx] if row < m and p + tx < k else {t}(0)",
        f"    sb[ty, tx] = b[(p + ty) * n + col] if col < n and p + ty < k else {t}(0)",
        "    cuda.syncthreads()",
        f"    for q in range({tile}):",
        f"        acc = {t}(acc + sa[ty, q] * sb[q, tx])",
        "    cuda.syncthreads()",
        "if row < m and col < n:",
        "    c[row * n + col] = acc"])) + "\n"


def supported(name: str) -> bool:
    """Does the CUDA code generator have a template for elementwise op `name`?"""
    return name in TEMPLATED


__all__ = [
    "CUDA_CODEGEN_VERSION",
    "OPS",
    "PRELUDE",
    "Unsupported",
    "combine_signature",
    "render",
    "render_copy",
    "render_fill",
    "render_matmul",
    "signature",
    "supported",
    "template",
]
