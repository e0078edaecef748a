"""Launch layout: from a fused computation and its operand arrays to a canonical loop nest.

Views inside the fusion are applied here with NumPy (zero-copy strides). Then the iteration
space is canonicalized the way NumPy's iterator coalesces: size-1 dimensions are dropped,
broadcast (stride-0) dimensions are not indexed at all, and adjacent dimensions that every
operand walks contiguously are merged. The kernel signature is the pattern that results
(rank, which dims each input indexes, which dims are reduced) -- never the sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided

from lazyarray.ir.hlo import MOVEMENT, Module
from lazyarray.ir.interpret import apply_movement
from lazyarray.passes import moments
from lazyarray.passes.rows import is_row, row_space
from lazyarray.ops.indexing import other_axes


# Outputs of a 1-d or 2-d loop kernel stream past the caches from this size: smaller ones are
# likely read again while they are still cached.
STREAM_MIN_BYTES = 16 << 20
# A 1-d reduction prefetches its loads from this size on (`Spec.prefetch`): the distance at 1e7 on
# an Intel Xeon, 3.5 -> 3.0 ms (one core keeps too few of its misses in flight to draw the
# memory's bandwidth from two streams); below, mostly cached, the blocks cost up to 10%.
# None: decided by the CPU on first use (`prefetch_min_bytes`)
PREFETCH_MIN_BYTES: int | None = None
# ...and a 2-d loop's when its rows are this long: a short row is mostly its ends, stored
# plainly (the column standardization's rows of 8 float64 streamed ran 1.9x slower)
STREAM_ROW_MIN_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Spec:
    """The shape-free part of a launch: with the masked HLO text, the kernel's cache key."""

    kind: str  # "loop" | "reduce" | "argreduce" | "scan" | "update" (a loop storing a region)
    rank: int  # canonical loop rank
    reduced: tuple[bool, ...]  # per canonical dim
    loads: tuple[tuple[int, tuple[int, ...] | None], ...]  # (instr id, dims indexed | None=scalar)
    chunked: bool  # reduction whose outer dim is reduced: per-chunk partials
    # per gather: (its instr id, canonical dims its table walks); the table array is indexed
    # by those dims, then by one index per gathered axis
    tables: tuple[tuple[int, tuple[int, ...]], ...] = ()
    # array loads (by position among them) passed as a flat 1-d window of their memory with
    # unit stride along their last dim, indexed by unsigned arithmetic on the outer strides
    # (runtime arguments): LLVM vectorizes those loads, not loads from strided 2-d views
    flat: tuple[int, ...] = ()
    flat_store: bool = False  # a write's store, likewise into a flat window of its region
    # a 1-d or 2-d loop whose outputs are larger than the caches: stored by non-temporal
    # (streaming) stores, which do not read each output line before writing it (codegen/cpu.py)
    stream: bool = False
    # a 1-d reduction over chunks whose array loads are larger than the caches: each block of
    # PREFETCH_BLOCK elements first asks for the lines PREFETCH_AHEAD elements further on
    # (software prefetch, codegen/cpu.py `_prefetch_lines`)
    prefetch: bool = False
    # a whole 1-d float64 sum added in NumPy's pairwise order (np.add.reduce's bits): the loop
    # stores its values (on the kernel's stack when they fit), then `_h.pairwise_sum` adds
    # them; asked for by callers that owe NumPy's bits (the trace tier's totals)
    pairwise: bool = False


@dataclass(slots=True)
class Launch:
    spec: Spec
    sizes: tuple[int, ...]  # canonical loop sizes
    arrays: list[np.ndarray]  # per array load, in spec.loads order
    scalars: list[object]  # per scalar load
    empty: bool  # the iteration space has no elements
    region: tuple | None = None  # update: (offset, canonical strides) in elements of the base
    flat_strides: list = field(default_factory=list)  # np.uint64 outer strides of flat loads
    views: list = field(default_factory=list)  # the array loads as views (before flattening)
    scalar_views: list = field(default_factory=list)  # per scalar load, the view it reads


def load_points(comp: Module) -> list[int]:
    """Instructions whose values the loop body reads: parameters/constants/views used by ops."""
    points = []
    for ins in comp.instrs:
        if ins.opcode in MOVEMENT or ins.opcode in ("parameter", "constant"):
            continue
        # a gather's table is not loaded by position; a write's base is not read: the kernel
        # stores into (a copy of) its buffer
        for o in ins.operands[1:] if ins.opcode in ("gather", "update") else ins.operands:
            src = comp.instrs[o]
            if (src.opcode in MOVEMENT or src.opcode in ("parameter", "constant")) and o not in points \
                    and comp.instrs[_base(comp, o)].opcode in ("parameter", "constant"):
                points.append(o)
    return points


def _base(comp: Module, i: int) -> int:
    while comp.instrs[i].opcode in MOVEMENT:
        i = comp.instrs[i].operands[0]
    return i


def _value(comp: Module, i: int, operands: list, memo: dict):
    if i in memo:
        return memo[i]
    ins = comp.instrs[i]
    if ins.opcode == "parameter":
        v = operands[ins.attr("index")]
    elif ins.opcode == "constant":
        v = ins.value
    else:
        v = apply_movement(ins, _value(comp, ins.operands[0], operands, memo))
    memo[i] = v
    return v


def plan(comp: Module, operands: list[np.ndarray], memo: dict | None = None,
         flat: bool = False, in_place: bool = False, pairwise: bool = False) -> Launch:
    """The launch of `comp` over `operands` (`memo`: values of view instructions the caller
    computed already, by instruction id; `flat`: pass strided multi-dimensional loads with a
    unit inner stride as flat windows, see `Spec.flat`; `in_place`: the result may go into
    an operand's buffer, so it is not streamed: a non-temporal store to a line the kernel
    just read, still in cache, costs more than a plain one (the dense layer's bias + relu at 2048^2
    in place: 7.0 ms streamed, 0.6 ms plain)); `pairwise`: a whole 1-d float64 sum adds in
    NumPy's pairwise order (`Spec.pairwise`; ignored for any other reduction)."""
    found = moments.parts(comp)
    if found is not None:
        return _plan_moments(comp, operands, memo, found)
    if is_row(comp):
        return _plan_rows(comp, operands, memo, flat)
    reds = [ins for ins in comp.instrs if ins.opcode in ("reduce", "argreduce", "scan")]
    root = reds[0] if reds else comp.instrs[comp.outputs[0]]
    if root.opcode in ("reduce", "argreduce", "scan"):
        space = comp.instrs[root.operands[0]].shape
        red = root.attr("dimensions") if root.opcode == "reduce" else (len(space) - 1,)
        kind = root.opcode
    elif root.opcode == "update":  # the loop over the written region
        space, red, kind = comp.instrs[root.operands[1]].shape, (), "update"
    else:
        space, red, kind = root.shape, (), "loop"
    memo = {} if memo is None else dict(memo)
    points = load_points(comp)
    views = [np.asarray(_value(comp, p, operands, memo)) for p in points]
    empty = any(n == 0 for n in space)

    # drop size-1 dims (an argreduce keeps its reduced last dim even when it has size 1)
    along_last = kind in ("argreduce", "scan")  # these keep their last dim as it is
    keep = [d for d, n in enumerate(space) if n != 1 or (along_last and d in red)]
    sizes = [space[d] for d in keep]
    reduced = [d in red for d in keep]
    # a load has the iteration space's shape, or is a scalar (a 0-d constant, or a constant
    # broadcast over a reduction's epilogue): read once, not indexed
    if any(v.shape != space and any(v.strides) for v in views):
        raise AssertionError("a load does not span the iteration space")
    strides = [[v.strides[d] for d in keep] if v.shape == space else [0] * len(keep)
               for v in views]
    # gathers: each table walks the space along its offset dims (stride 0 along the others)
    gathers = [i for i, ins in enumerate(comp.instrs) if ins.opcode == "gather"]
    tables = []
    for g in gathers:
        ins = comp.instrs[g]
        t = np.asarray(_value(comp, ins.operands[0], operands, memo))
        if ins.shape != tuple(space):
            raise AssertionError("a gather does not span the iteration space")
        axes = ins.attr("axes")
        walk = [0] * len(space)
        for d, a in zip(ins.attr("offset_dims"), other_axes(t.ndim, axes), strict=True):
            walk[d] = t.strides[a]
        if not empty and any(t.shape[a] == 0 for a in axes):
            empty = True  # every index is out of range: the interpreter raises NumPy's error
        tables.append((t, axes))
        strides.append([walk[d] for d in keep])
    if kind == "update":  # the store walks the region: it must merge dims as the loads do
        strides.append([root.attr("strides")[d] for d in keep])

    # merge adjacent dims that every load walks as one (same reducedness; outputs are C order)
    d = len(sizes) - 2
    while d >= 0:
        ok = reduced[d] == reduced[d + 1] and not (along_last and reduced[d + 1])
        if ok:
            for s in strides:
                if (s[d] == 0) != (s[d + 1] == 0) or (s[d] != 0 and s[d] != s[d + 1] * sizes[d + 1]):
                    ok = False
                    break
        if ok:
            sizes[d] *= sizes[d + 1]
            for s in strides:
                s[d] = s[d + 1]
                del s[d + 1]
            del sizes[d + 1], reduced[d + 1]
        d -= 1

    region = None
    if kind == "update":
        region = (root.attr("offset"), tuple(strides.pop()))
    loads, arrays, scalars, scalar_views = [], [], [], []
    for p, v, s in zip(points, views, strides[:len(views)], strict=True):
        dims = tuple(k for k, st in enumerate(s) if st != 0)  # stride 0: broadcast, not indexed
        if not dims:
            loads.append((p, None))
            scalars.append(v[(0,) * v.ndim] if v.size else v.dtype.type(0))
            scalar_views.append(v)
        else:
            loads.append((p, dims))
            shape, st = tuple(sizes[k] for k in dims), tuple(s[k] for k in dims)
            arrays.append(v if (v.shape, v.strides) == (shape, st) else
                          as_strided(v, shape, st, writeable=False))
    table_specs = []
    for g, (t, axes), s in zip(gathers, tables, strides[len(views):], strict=True):
        dims = tuple(k for k, st in enumerate(s) if st != 0)
        table_specs.append((g, dims))
        arrays.append(as_strided(t, tuple(sizes[k] for k in dims) + tuple(t.shape[a] for a in axes),
                                 tuple(s[k] for k in dims) + tuple(t.strides[a] for a in axes),
                                 writeable=False))
    flat_loads, flat_strides, views = [], [], list(arrays)
    if flat and not empty:
        for k, a in enumerate(arrays[:len(arrays) - len(gathers)]):
            window = _flat_window(a)
            if window is not None:
                flat_loads.append(k)
                flat_strides += [np.uint64(st // a.itemsize) for st in a.strides[:-1]]
                arrays[k] = window
    flat_store = (flat and kind == "update" and not empty and len(sizes) >= 2
                  and region[1][-1] == 1 and all(st >= 0 for st in region[1]))
    if flat_store:
        flat_strides += [np.uint64(st) for st in region[1][:-1]]
    chunked = kind == "reduce" and bool(reduced) and reduced[0]
    row_bytes = sizes[-1] * sum(comp.instrs[o].dtype.itemsize for o in comp.outputs) \
        if sizes else 0
    stream = (flat and kind == "loop" and not empty and not in_place and len(sizes) in (1, 2)
              and math.prod(sizes[:-1]) * row_bytes >= STREAM_MIN_BYTES
              and (len(sizes) == 1 or row_bytes >= STREAM_ROW_MIN_BYTES))
    prefetch = (chunked and len(sizes) == 1 and not empty and not gathers
                and sum(a.nbytes for a in arrays) >= prefetch_min_bytes())
    pairwise = (pairwise and kind == "reduce" and tuple(reduced) == (True,) and not gathers
                and len(reds) == 1 and root.attr("to_apply") == "add"
                and root.dtype == np.float64)
    spec = Spec(kind, len(sizes), tuple(reduced), tuple(loads), chunked and not pairwise,
                tuple(table_specs), tuple(flat_loads), flat_store, stream,
                prefetch and not pairwise, pairwise)
    return Launch(spec, tuple(sizes), arrays, scalars, empty, region, flat_strides, views,
                  scalar_views)


def _plan_rows(comp: Module, operands: list, memo: dict | None, flat: bool) -> Launch:
    """A row fusion's launch (passes/rows.py): n0 rows of n1 elements. Each load becomes a
    (rows, elements) array, a per-row vector (dims (0,)), a per-element vector repeated on
    every row (dims (1,)) or a scalar; NumPy's reshape copies a view it cannot merge."""
    shape, k = row_space(comp)
    rows, cols = math.prod(shape[:k]), math.prod(shape[k:])
    memo = {} if memo is None else dict(memo)
    loads, arrays, scalars, flat_loads, flat_strides, views = [], [], [], [], [], []
    scalar_views = []
    for p in load_points(comp):
        v = np.asarray(_value(comp, p, operands, memo))
        if v.shape == shape:
            outer = any(v.strides[:k]) and rows > 1
            inner = any(v.strides[k:]) and cols > 1
            if inner and outer:
                a, dims = v.reshape(rows, cols), (0, 1)
            elif outer:
                a, dims = v[(Ellipsis, *(0,) * (len(shape) - k))].reshape(rows), (0,)
            elif inner:
                a, dims = v[(0,) * k].reshape(cols), (1,)
            else:
                a, dims = None, None
        elif v.ndim and v.size == rows and math.prod(v.shape[:k]) == rows:
            a, dims = v.reshape(rows), (0,)
        elif not any(v.strides):
            a, dims = None, None
        else:
            raise AssertionError("a row fusion's load spans neither rows nor elements")
        loads.append((p, dims))
        if dims is None:
            scalars.append(v[(0,) * v.ndim] if v.size else v.dtype.type(0))
            scalar_views.append(v)
            continue
        views.append(a)
        if flat and dims == (0, 1) and rows and cols:
            window = _flat_window(a)
            if window is not None:
                flat_loads.append(len(arrays))
                flat_strides.append(np.uint64(a.strides[0] // a.itemsize))
                a = window
        arrays.append(a)
    spec = Spec("row", 2, (False, True), tuple(loads), False, (), tuple(flat_loads))
    return Launch(spec, (rows, cols), arrays, scalars, rows == 0 or cols == 0, None,
                  flat_strides, views, scalar_views)


def _plan_moments(comp: Module, operands: list, memo: dict | None,
                  found: moments.Parts) -> Launch:
    """A moments fusion's launch (passes/moments.py): X as n0 rows (the reduced axes) of n1
    kept elements, passed as its flat C-ordered elements (a copy of a view that is not
    C-contiguous); every other load is a scalar (the fusion reads nothing else)."""
    shape, k = comp.instrs[found.x].shape, found.k
    rows, cols = math.prod(shape[:k]), math.prod(shape[k:])
    memo = {} if memo is None else dict(memo)
    loads, arrays, scalars, scalar_views = [], [], [], []
    for p in load_points(comp):
        v = np.asarray(_value(comp, p, operands, memo))
        if p == found.x:
            loads.append((p, (0, 1)))
            arrays.append(np.ascontiguousarray(v).reshape(-1))
        elif not any(v.strides):
            loads.append((p, None))
            scalars.append(v[(0,) * v.ndim] if v.size else v.dtype.type(0))
            scalar_views.append(v)
        else:
            raise AssertionError("a moments fusion reads an array other than X")
    spec = Spec("moments", 2, (True, False), tuple(loads), True)
    return Launch(spec, (rows, cols), arrays, scalars, rows == 0 or cols == 0, None, [],
                  list(arrays), scalar_views)


# elements of X per block of a moments kernel (32 KiB of float64: the second pass over a block
# reads it from L1, 48 KiB on recent x86 cores; the column standardization at 1e6x8 on an Intel
# Xeon: 4.8 ms a call, 5.0 with 2^11, 5.2 with 2^13, 5.4 with 2^15, the earlier choice)
MOMENT_BLOCK = 1 << 12
MOMENT_LANES = 64  # lanes a block is summed into (a multiple of the kept size when it fits)


def moment_blocks(rows: int, cols: int) -> tuple[int, int, int]:
    """(rows per block, blocks, lanes) of a moments kernel: fixed by the sizes alone, so the
    order of every addition is too."""
    cols = max(1, cols)
    rb = max(1, MOMENT_BLOCK // cols)
    return rb, -(-rows // rb), cols * max(1, MOMENT_LANES // cols)


def _flat_window(a: np.ndarray) -> np.ndarray | None:
    """`a` (a strided view of two or more dims, unit stride along the last) as the 1-d window
    of memory from its first element to its last, or None when it is not such a view."""
    item = a.itemsize
    if a.ndim < 2 or a.flags.c_contiguous or a.strides[-1] != item or a.size == 0 \
            or any(st < 0 or st % item for st in a.strides):
        return None
    n = span(a.shape, [st // item for st in a.strides])
    return as_strided(a, (n,), (item,), writeable=False)


def span(shape, strides) -> int:
    """Elements from the first to the last of a (non-empty) strided region, strides >= 0."""
    return 1 + sum((n - 1) * st for n, st in zip(shape, strides))


def prefetch_min_bytes() -> int:
    """PREFETCH_MIN_BYTES, set on first use where it is None: 16 MiB, or never on AMD's Zen
    cores, whose own prefetcher keeps both of the distance's streams in flight: there the prefetch
    instructions made the distance at 1e7 1.2-1.3x slower than without (an EPYC, Zen 3, 2 cores:
    7.3-7.6 against 5.7-6.2 ms, the hand-written Numba loop 5.8-6.4)."""
    global PREFETCH_MIN_BYTES
    if PREFETCH_MIN_BYTES is None:
        import llvmlite.binding as llvm

        zen = llvm.get_host_cpu_name().startswith("znver")
        PREFETCH_MIN_BYTES = 1 << 62 if zen else 16 << 20
    return PREFETCH_MIN_BYTES
