"""Run an optimized module: plan each fusion's launch, find or build its kernel, launch it.

Kernels are cached in memory by signature = sha256(masked fused HLO text + launch Spec +
codegen version): sizes, slice offsets and scalar constants are arguments, never part of the
key. Outputs are allocated by NumPy (fast, reusable pages), never inside the kernel.
"""

from __future__ import annotations

import difflib
import math
import operator
import hashlib
import logging
import functools
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from lazyarray import config, stats
from lazyarray.codegen.body import (Unsupported, acc_dtype, fp_check, has_row_lanes,
                                    reduce_may_raise, row_lanes)
from lazyarray.codegen.cpu import CODEGEN_VERSION, partial_mode, render
from lazyarray.ir import fpstate
from lazyarray.ir.hlo import Instr, MOVEMENT, Module
from lazyarray.ir.interpret import apply_movement, interpret
from lazyarray.ir.text import print_computation
from lazyarray.ops import library
from lazyarray.ops.table import reduce_init
from lazyarray.passes.rows import row_space
from lazyarray.runtime import background, blas, diskcache, pool
from lazyarray.codegen.layout import Launch, moment_blocks, plan, span
from lazyarray.storage import box, copy_outside, strided_view

log = logging.getLogger("lazyarray")

PARALLEL_MIN = 1 << 15  # iterations below which a kernel runs serially (thread wake-up costs)
# ... and for a kernel reading a matmul's result: BLAS's threads still spin for a while after
# the call, and OpenMP workers woken then wait for the cores (W5 at 256²: 0.48 ms serial,
# 1.0 ms parallel; docs/performance.md)
PARALLEL_MIN_AFTER_BLAS = 1 << 17
# ... and, on the calling thread, for any kernel while BLAS's threads may still spin from a
# product (`blas.spinning`): a parallel launch then costs 0.5-8 ms more, one thread at most
# that up to here
PARALLEL_MIN_NEAR_BLAS = 1 << 21
# idle seconds after which the OpenMP workers may sleep (libgomp spins GOMP_SPINCOUNT=10000
# rounds first); waking them costs a launch 0.5 ms on a small VM, microseconds elsewhere
PAUSE_S = 3e-4
EXPLORE_EVERY = 16  # a launch after a pause tries the way it did not pick every n-th time
# ... unless its last launch in parallel after a pause took this long: waking the workers is
# then a small part of it (W2 at 1e7: 4.8 ms in parallel, 5.3-5.5 on one thread)
PAUSE_LONG_S = 2e-3
_workers_done = -math.inf  # time.perf_counter() when a parallel launch last ended
VECTOR_MIN = 1 << 12  # iterations from which a serial launch in place runs vectorized code
MAX_CHUNKS = 64  # partial rows of a reduction over its outer dim (fixed: deterministic sums)
CHUNK_ROWS = 32  # rows per chunk at least, where each chunk has partials of a row's length


@dataclass
class KernelEntry:
    key: str
    source: str | None  # None: the code generator declined; the interpreter runs it
    kernel: object = None
    reason: str = ""  # why the code generator declined
    compile_s: float = 0.0  # seconds to compile (or load from disk) this process
    origin: str = ""  # "compiled" | "disk" once built
    building: object = None  # a background build in flight (options(background_compile=True))


@dataclass
class KernelRecord:
    """What explain() reports about one fusion of an evaluation."""

    name: str
    kind: str
    key: str
    status: str  # "hit" | "miss" | "interpreted"
    source: str | None
    comp: Module | None = None  # the fused computation
    reason: str = ""  # why the fusion ends at its roots (passes.fusion.REASONS)
    differs: str = ""  # on a miss: how the nearest cached signature differs
    entry: KernelEntry | None = None
    seconds: float = 0.0  # wall time of the run (build included), when not dry
    compiled: bool = False  # this run compiled (or loaded from disk) the kernel

    @property
    def hlo(self) -> str:
        return print_computation(self.comp) if self.comp is not None else ""

    @property
    def compile_s(self) -> float:
        return self.entry.compile_s if self.entry is not None else 0.0

    @property
    def origin(self) -> str:
        return self.entry.origin if self.entry is not None else ""

    @property
    def bytes_avoided(self) -> int:
        """Bytes of intermediate arrays this kernel never writes (values kept in registers)."""
        if self.comp is None:
            return 0
        outs = set(self.comp.outputs)
        return sum(math.prod(ins.shape) * ins.dtype.itemsize
                   for i, ins in enumerate(self.comp.instrs)
                   if i not in outs and ins.opcode not in MOVEMENT
                   and ins.opcode not in ("parameter", "constant"))


@dataclass
class Trace:
    kernels: list[KernelRecord] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)  # per write: "in place" or "copy"
    write_reasons: list[str] = field(default_factory=list)  # per write: why, in words


MAX_KERNELS_IN_MEMORY = 2048  # least recently used kernels beyond this are dropped
_cache: OrderedDict[tuple, KernelEntry] = OrderedDict()
_cache_lock = threading.Lock()


def cache_clear() -> None:
    with _cache_lock:
        _cache.clear()


_masked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _masked_text(comp: Module) -> str:
    masked = _masked.get(comp)
    if masked is None:
        masked = _masked[comp] = print_computation(comp, masked=True)
    return masked


def nearest_difference(comp: Module, spec, limit: int = 256) -> str:
    """How the closest signature in the kernel cache differs from (comp, spec): a short diff.

    Only the `limit` most recently used kernels of the same kind are compared.
    """
    text = _masked_text(comp)
    with _cache_lock:
        keys = [k for k in reversed(_cache) if k[1].kind == spec.kind][:limit]
    keys = [k for k in keys if k != (text, spec)]
    if not keys:
        return f"no cached {spec.kind} kernel to compare with"
    lines = text.splitlines()
    best = max(keys, key=lambda k: difflib.SequenceMatcher(None, lines, k[0].splitlines()).ratio())
    if best[0] == text:
        return f"same HLO; launch layout differs: {best[1]} -> {spec}"
    diff = [d for d in difflib.unified_diff(best[0].splitlines(), lines, "cached", "this", n=0,
                                            lineterm="") if not d.startswith(("---", "+++", "@@"))]
    if best[1] != spec:
        diff.append(f"launch layout: {best[1]} -> {spec}")
    return "\n".join(diff)


def _entry(comp: Module, launch: Launch) -> tuple[KernelEntry, bool]:
    masked = _masked_text(comp)
    k = (masked, launch.spec)
    with _cache_lock:
        e = _cache.get(k)
        if e is not None:
            _cache.move_to_end(k)
    if e is not None:
        return e, True
    key = hashlib.sha256(f"{CODEGEN_VERSION}\n{masked}\n{launch.spec}".encode()).hexdigest()[:24]
    try:
        e = KernelEntry(key, render(comp, launch.spec))
    except Unsupported as why:
        e = KernelEntry(key, None, reason=str(why))
    with _cache_lock:
        e = _cache.setdefault(k, e)
        while len(_cache) > MAX_KERNELS_IN_MEMORY:
            _cache.popitem(last=False)
    return e, False


def _has(comp: Module, launch: Launch) -> bool:
    with _cache_lock:
        return (_masked_text(comp), launch.spec) in _cache


def _nchunks(sizes, kept) -> int:
    """Chunks of dim 0 of a chunked reduction: fixed by the shape (deterministic sums). Where
    rows are kept (`X.sum(axis=0)`), a chunk spans CHUNK_ROWS rows or more, so that its
    partials stay small beside its input (a (100, 10000) column sum with 64 chunks of
    4 partial rows: 2.7 ms, NumPy's 0.27; with 3 chunks, 0.2 ms)."""
    if not kept:
        return max(1, min(sizes[0], MAX_CHUNKS))
    rows = sizes[0] // CHUNK_ROWS
    return max(1, min(rows, MAX_CHUNKS, (1 << 22) // max(1, math.prod(kept))))


def _inits(comp: Module) -> list:
    """Per reduction of `comp`, its start value in its accumulator's dtype."""
    return [reduce_init(ins.attr("to_apply"), acc_dtype(ins.attr("to_apply"), ins.dtype))
            for ins in comp.instrs if ins.opcode == "reduce"]


def _kernel_args(comp: Module, launch: Launch, store=None) -> tuple[list, list, list]:
    """(results as the HLO shapes them, the kernel's arguments before the array loads,
    after them): the kernel takes `head + launch.arrays + tail`. `store`: a write's new
    version, (whole buffer, the region the kernel stores into)."""
    spec, sizes = launch.spec, launch.sizes
    kept = tuple(n for n, r in zip(sizes, spec.reduced, strict=True) if not r)
    canon_shape = (sizes if spec.kind in ("loop", "scan") else kept) or (1,)
    if store is not None:
        return [store[0]], [store[1]], [*launch.scalars, *launch.flat_strides, *sizes]
    results = [pool.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
    if spec.kind == "row":  # (rows, elements) results, and per-row ones
        full = row_space(comp)[0]
        head = [r.reshape(sizes if r.shape == full else sizes[:1]) for r in results]
        return results, head, [*launch.scalars, *launch.flat_strides, *sizes, *_inits(comp)]
    if spec.kind == "moments":  # one value per kept element; partials per block
        rb, nblocks, w = moment_blocks(*sizes)
        acc = acc_dtype("add", next(i for i in comp.instrs if i.opcode == "reduce").dtype)
        head = [r.reshape(sizes[1]) for r in results]
        head += [np.zeros((nblocks, sizes[1]), acc) for _ in range(2)]
        return results, head, [*launch.scalars, *sizes, rb, nblocks, w]
    head = [r.reshape(canon_shape) for r in results]
    inits = []
    if spec.kind == "reduce":
        inits = _inits(comp)
        lanes = row_lanes(spec, math.prod(kept))
        nparts = _nchunks(sizes, kept) * lanes if spec.chunked else 1
        shape = (nparts, *kept) if partial_mode(spec) else (1,)
        head += [np.full(shape, init, init.dtype) for init in inits]
    tail = [*launch.scalars, *launch.flat_strides, *sizes]
    if spec.kind == "reduce":
        tail += [*inits, _nchunks(sizes, kept) if spec.chunked else 1]
        tail += [lanes] if has_row_lanes(spec) else []
    if spec.kind == "scan":
        ins = next(i for i in comp.instrs if i.opcode == "scan")
        name = ins.attr("to_apply")
        tail.append(reduce_init(name, acc_dtype(name, ins.dtype)))
    if spec.tables:
        tail.append(np.zeros(1, np.int64))  # the kernel's out-of-range flag
    return results, head, tail


@dataclass(slots=True)
class _Prepared:
    """A launch remembered for one operand layout: everything but the operand arrays."""

    entry: KernelEntry
    kernel: object  # the dispatcher (parallel or serial) the sizes chose
    outs: list  # (shape, dtype, kernel-side shape) per result
    partials: list  # (shape, init, dtype) per reduction partials buffer
    src: list  # operand index per array load
    tail: list  # scalars, sizes and the kind's extra arguments
    candidates: tuple = ()  # operands whose buffer may take the result (_donor_candidates)
    direct: bool = False  # every load is an operand itself (no view to rebuild)
    one: object = None  # where `kernel` is parallel: it on the calling thread (OneThread)
    near_blas: bool = False  # `one` runs while BLAS's workers may spin (_while_blas_spins)
    paused: list = None  # after a pause: [seconds in parallel, on one thread, launches]
    spare: list = None  # small partials buffers between launches (`_partials`)
    small: bool = False  # every result is below the pool's size: np.empty directly
    keep: bool = False  # the partials are small enough to keep between launches
    reads: tuple = ()  # scalars read off operands at each launch (`_scalar_reads`)

    def __post_init__(self):
        self.direct = all(type(j) is int for j in self.src)
        self.tail = [_plain(v) for v in self.tail]
        self.spare = []
        self.small = all(math.prod(shape) * dtype.itemsize < pool.MIN_BYTES
                         for shape, dtype, _ in self.outs)
        self.keep = sum(math.prod(shape) * np.dtype(dtype).itemsize
                        for shape, _, dtype in self.partials) <= SPARE_PARTIALS


def _plain(v):
    """A float64, int64 or bool NumPy scalar as the Python number Numba types the same:
    the dispatcher types a Python number on its fast path, a NumPy scalar through a slower
    one (12 µs of a replay's call with cold caches)."""
    t = type(v)
    return float(v) if t is np.float64 else int(v) if t is np.int64 \
        else bool(v) if t is np.bool_ else v


SPARE_PARTIALS = 1 << 16  # bytes of partials a prepared launch keeps for its next launch


def _partials(p: "_Prepared") -> list:
    """Fresh partials buffers for a launch of `p`, filled with their start values: the last
    launch's when they are small (`SPARE_PARTIALS`; `launch_prepared` hands them back)."""
    try:
        parts = p.spare.pop()  # (atomic: two threads never take the same buffers)
    except IndexError:
        return [np.full(shape, init, dtype) for shape, init, dtype in p.partials]
    for a, (_, init, _) in zip(parts, p.partials):
        a.fill(init)
    return parts


_prepared: dict[Module, dict] = {}  # computation -> {operand layouts: _Prepared}
PREPARED_LAYOUTS = 8  # remembered operand layouts per computation
PREPARED_COMPUTATIONS = 4096


def _layout_key(operands: list, serial: bool, in_place: bool = False) -> tuple | None:
    try:
        return (serial, in_place, *map(_LAYOUT, operands))
    except AttributeError:
        return None


_LAYOUT = operator.attrgetter("shape", "strides", "dtype")


def _prepare(comp: Module, launch: Launch, entry: KernelEntry, results: list, head: list,
             partials: list, tail: list, operands: list, serial: bool,
             in_place: bool) -> _Prepared | None:
    """Remember this launch if its loads are the operands themselves and its scalars are
    constants: then only the operand arrays change from one call to the next."""
    if entry.kernel is None or entry.source is None or launch.spec.kind == "update" \
            or launch.empty or launch.spec.tables:
        return None
    reads = _scalar_reads(comp, launch, operands)
    src = _sources(launch.arrays, operands)
    if reads is None or None in src:
        return None
    n = len(results)
    outs = [(r.shape, r.dtype, a.shape) for r, a in zip(results, head[:n], strict=True)]
    work = math.prod(launch.sizes)
    kernel = _dispatcher(entry.kernel, work, serial, in_place)
    one = None
    if kernel is entry.kernel[0]:
        from lazyarray.backends import numba_cpu

        one = numba_cpu.one_thread(kernel)
    return _Prepared(entry, kernel, outs, partials, src, tail,
                     _donor_candidates(comp, launch, operands), one=one,
                     near_blas=_while_blas_spins(kernel, entry.kernel, work) is not None,
                     paused=[math.inf, math.inf, 0], reads=reads)


def _scalar_reads(comp: Module, launch: Launch, operands: list) -> tuple | None:
    """Per scalar load of `launch` read off an operand rather than a constant (`x - x.mean()`
    reads the mean a kernel before computed): (its place in the kernel's tail, the operand,
    the element's index in it), found by address, for a replay to read again; None when such
    a value is not an element of a C-contiguous operand."""
    reads, k = [], 0
    for p, dims in launch.spec.loads:
        if dims is not None:
            continue
        if comp.instrs[_load_base(comp, p)].opcode != "constant":
            at = _element_of(launch.scalar_views[k], operands) \
                if k < len(launch.scalar_views) else None
            if at is None:
                return None
            reads.append((k, *at))
        k += 1
    return tuple(reads)


def _element_of(v: np.ndarray, operands: list) -> tuple[int, int] | None:
    """(operand index, flat index) of the element at the start of view `v`, within a
    C-contiguous operand of its dtype (`_recipe`'s search); else None."""
    if not isinstance(v, np.ndarray) or not v.size:
        return None
    r = _recipe(v, operands)
    return None if r is None or r[1] % v.itemsize else (r[0], r[1] // v.itemsize)


def _replayable(comp: Module, launch: Launch) -> bool:
    """Can this launch be replayed on other operands of the same layouts? Its scalars must be
    constants (not values read off the operands) and it must have no gather tables."""
    return not launch.empty and not launch.spec.tables and all(
        comp.instrs[_load_base(comp, p)].opcode == "constant"
        for p, dims in launch.spec.loads if dims is None)


def _sources(arrays: list, operands: list) -> list:
    """Per launch array: the index of the operand it is, or how to rebuild it from one
    (`_recipe`), or None."""
    out = []
    for a in arrays:
        j = next((j for j, o in enumerate(operands) if o is a), None)
        out.append(_recipe(a, operands) if j is None else j)
    return out


def _source(src, operands: list) -> np.ndarray:
    return operands[src] if type(src) is int else _rebuilt(src, operands)


def _recipe(a: np.ndarray, operands: list) -> tuple | None:
    """How to rebuild load array `a` (a view of an operand) from the operands of a later call
    with the same layouts: (operand index, byte offset, shape, strides, writeable), or None
    when `a` is not within one C-contiguous operand's memory."""
    ptr = a.__array_interface__["data"][0]
    lo = ptr + sum((n - 1) * st for n, st in zip(a.shape, a.strides) if st < 0)
    hi = ptr + sum((n - 1) * st for n, st in zip(a.shape, a.strides) if st > 0) + a.itemsize
    for j, o in enumerate(operands):
        if isinstance(o, np.ndarray) and o.flags.c_contiguous and o.dtype == a.dtype:
            start = o.__array_interface__["data"][0]
            if start <= lo and hi <= start + o.nbytes:
                return (j, ptr - start, a.shape, a.strides, a.flags.writeable)
    return None


def _rebuilt(recipe: tuple, operands: list) -> np.ndarray:
    j, offset, shape, strides, writeable = recipe
    o = operands[j]
    v = np.ndarray(shape, o.dtype, buffer=o, offset=offset, strides=strides)
    if not writeable:
        v.setflags(write=False)  # (cheaper than asking `v.flags` first)
    return v


def _donor_candidates(comp: Module, launch: Launch, operands: list) -> tuple[int, ...]:
    """Operands whose buffer a single-output loop kernel may write its result into: same
    shape and dtype as the result, read only at the index being written (no view, no
    broadcast), so every element is read before it is overwritten, in the same iteration."""
    if launch.spec.kind != "loop" or len(comp.outputs) != 1:
        return ()
    out = comp.instrs[comp.outputs[0]]
    full = tuple(range(launch.spec.rank))
    gathered = _gathered(comp)
    ok = []
    for j, a in enumerate(operands):
        if not isinstance(a, np.ndarray) or a.shape != out.shape or a.dtype != out.dtype \
                or j in gathered:  # (a gather reads it anywhere: `v[idx] // v`)
            continue
        reads = [(p, dims) for p, dims in launch.spec.loads
                 if comp.instrs[_load_base(comp, p)].opcode == "parameter"
                 and comp.instrs[_load_base(comp, p)].attr("index") == j]
        if reads and all(comp.instrs[p].opcode == "parameter" and dims == full
                         for p, dims in reads):
            ok.append(j)
    return tuple(ok)


_gathered_memo: dict = {}


def _gathered(comp: Module) -> frozenset:
    """The parameters of a fusion that a gather reads (at any element: never a donor)."""
    known = _gathered_memo.get(comp)
    if known is None:
        if len(_gathered_memo) >= PREPARED_COMPUTATIONS:
            _gathered_memo.clear()
        known = _gathered_memo[comp] = frozenset(
            comp.instrs[_load_base(comp, ins.operands[0])].attr("index")
            for ins in comp.instrs if ins.opcode == "gather"
            and comp.instrs[_load_base(comp, ins.operands[0])].opcode == "parameter")
    return known


def _donate(results: list, head: list, operands: list, donors: tuple, candidates: tuple) -> None:
    """Write the result into a dead operand's buffer (XLA's buffer donation for kernels)."""
    for j in donors:
        if j in candidates:
            a = _writable(operands[j])
            results[0] = a
            head[0] = a.reshape(head[0].shape)
            stats.bump("buffers_donated")
            return


def _load_base(comp: Module, i: int) -> int:
    while comp.instrs[i].opcode in MOVEMENT:
        i = comp.instrs[i].operands[0]
    return i


def _run_prepared(p: _Prepared, ins: Instr, operands: list, trace: Trace | None,
                  donors: tuple, regen: dict | None = None) -> list:
    record = None
    if trace is not None:
        record = kernel_record(p, ins, len(trace.kernels))
        trace.kernels.append(record)
        t0 = time.perf_counter()
    results, flagged = launch_prepared(p, operands, donors)
    if flagged:
        recheck_flags(ins.value, _regenerated(operands, regen))
    if record is not None:
        record.seconds = time.perf_counter() - t0
    return results


def _replay_dispatcher(p: _Prepared) -> tuple[object, float | None]:
    """The dispatcher to replay `p` (whose kernel is parallel) with, and the start time
    where the launch comes after a pause (it is then timed): on the calling thread while
    BLAS's workers may spin (`_while_blas_spins`); after a pause (`PAUSE_S`), when the
    workers sleep and waking them may cost more than they save, in parallel the first time,
    on one thread the next, then the way that was faster after a pause before (the other
    again every EXPLORE_EVERY-th time), or in parallel whenever that took PAUSE_LONG_S or
    more the last time; else in parallel."""
    if p.near_blas and blas.spinning():
        return p.one, None
    t0 = time.perf_counter()
    if not t0 - _workers_done > PAUSE_S:
        return p.kernel, None
    paused = p.paused
    paused[2] += 1
    together, alone = paused[0], paused[1]
    if together >= PAUSE_LONG_S or alone == math.inf:  # (together: inf before the first)
        return (p.kernel if together >= PAUSE_LONG_S else p.one), t0
    faster = alone < together
    if paused[2] % EXPLORE_EVERY == 0:
        faster = not faster
    return (p.one if faster else p.kernel), t0


def _ran_in_parallel() -> None:
    global _workers_done
    _workers_done = time.perf_counter()


def kernel_record(p: _Prepared, ins: Instr, k: int) -> KernelRecord:
    """explain()'s record of fusion `k` of an evaluation, run as the prepared launch `p`."""
    return KernelRecord(f"fusion.{k}", ins.attr("kind"), p.entry.key, "hit", p.entry.source,
                        ins.value, ins.attr("reason", ""), "", p.entry)


def launch_prepared(p: _Prepared, operands: list, donors: tuple = ()) -> tuple[list, int]:
    """Run the prepared launch `p` on `operands`: (its results, how many places may have
    raised a floating-point flag: `recheck_flags` settles them)."""
    if len(p.outs) == 1:
        shape, dtype, k = p.outs[0]
        results = [np.empty(shape, dtype) if p.small else pool.empty(shape, dtype)]
        args = [results[0] if k == shape else results[0].reshape(k)]
    else:
        results = [pool.empty(shape, dtype) for shape, dtype, _ in p.outs]
        args = [r.reshape(k) for r, (_, _, k) in zip(results, p.outs, strict=True)]
    if donors and p.candidates:
        _donate(results, args, operands, donors, p.candidates)
    parts = _partials(p) if p.partials else None
    if parts is not None:
        args += parts
    args += map(operands.__getitem__, p.src) if p.direct else [  # (`_source`, inlined)
        operands[j] if type(j) is int else _rebuilt(j, operands) for j in p.src]
    if p.reads:  # scalars another kernel computed: this launch's values
        tail = list(p.tail)
        for k, j, i in p.reads:
            tail[k] = _plain(operands[j].reshape(-1)[i])
        args += tail
    else:
        args += p.tail
    stats.hit()
    kernel, t0 = (p.kernel, None) if p.one is None else _replay_dispatcher(p)
    before = len(kernel.overloads)
    try:
        flagged = kernel(*args)  # the specialization the first launch built (layouts match)
        if len(kernel.overloads) != before:  # another one (a read-only flag differs, ...)
            stats.bump("compiles")
        stats.kernel_launched()
    except Exception as exc:
        value_error = _value_error(exc)
        if value_error is not None:
            raise value_error from None
        raise
    finally:
        if kernel is p.kernel and p.one is not None:
            _ran_in_parallel()
        if parts is not None and p.keep:
            p.spare.append(parts)
    if t0 is not None:  # after a pause: how long each way took, the last time
        p.paused[kernel is p.one] = time.perf_counter() - t0
    return results, flagged


def _regenerated(operands: list, regen: dict | None) -> list:
    """`operands` with each product result that may have been overwritten by a donated
    output computed again (`run_fusion`'s `regen`): a flag is rare, and the warnings NumPy
    gives depend on the values the fusion read. The product's own warnings were recorded
    the first time."""
    if not regen or fpstate.active() is None:
        return operands
    operands = list(operands)
    with np.errstate(all="ignore"):
        for k, (a, b) in regen.items():
            operands[k] = np.asarray(blas.matmul(a, b))
    return operands


def recheck_flags(comp: Module, operands: list) -> None:
    """A kernel counted possible floating-point events: when the evaluation records NumPy's
    warnings, re-run the fusion on NumPy's loops to learn exactly which (values discarded)."""
    if fpstate.active() is not None:
        stats.bump("fp_rechecks")
        interpret(comp, operands, report=True)


def _interpret(comp: Module, operands: list) -> list:
    """The interpreter in place of a kernel, reporting floating-point warnings as NumPy would."""
    return interpret(comp, operands, report=True)


def run_fusion(ins: Instr, operands: list, trace: Trace | None, dry: bool,
               serial: bool = False, donors: tuple = (), regen: dict | None = None,
               fresh: bool = False) -> list:
    """Run one fusion on NumPy operands (`serial`: never the parallel kernel, for callers that
    already run one fusion per thread, such as the dask backend's chunk tasks).

    An update fusion writes its base's new version; `donors` holding the base's operand
    index lets it write into the base's own buffer (see `_store`); `fresh`: the writes that
    follow overwrite every element outside its region (`_covering_updates`), so a new
    version's buffer is left uninitialized there. `regen`: for donors of a
    fusion that owes NumPy's exact warnings, the operands of the matrix product each is the
    result of: a flagged launch computes them again for its recheck (`_regenerated`)."""
    comp: Module = ins.value
    if ins.attr("kind") == "update":
        return _run_update(ins, operands, trace, dry, serial, donors, fresh)
    in_place = bool(donors) and ins.attr("kind") == "loop"
    lkey = None if dry else _layout_key(operands, serial, in_place)
    if lkey is not None:
        known = _prepared.get(comp)
        p = known.get(lkey) if known is not None else None
        if p is not None:
            return _run_prepared(p, ins, operands, trace, donors, regen)
    launch = plan(comp, operands, flat=True, in_place=in_place)
    differs = "" if trace is None or _has(comp, launch) else nearest_difference(comp, launch.spec)
    entry, hit = _entry(comp, launch)
    if trace is None:
        if dry:
            return [np.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
        return _run_fusion(comp, operands, launch, entry, hit, lkey, serial, donors,
                           regen=regen)
    # a hit needs a built kernel (explain's plan renders, never builds)
    status = "interpreted" if entry.source is None or launch.empty else (
        "hit" if hit and entry.kernel is not None else "miss")
    record = KernelRecord(f"fusion.{len(trace.kernels)}", ins.attr("kind"), entry.key, status,
                          entry.source, comp, ins.attr("reason", ""), differs, entry)
    trace.kernels.append(record)
    if dry:
        return [np.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
    record.compiled = not (entry.source is None or launch.empty or entry.kernel)
    t0 = time.perf_counter()
    try:
        return _run_fusion(comp, operands, launch, entry, hit, lkey, serial, donors,
                           regen=regen)
    finally:
        record.seconds = time.perf_counter() - t0


_update_launches: dict[Module, dict] = {}  # write computation -> {operand layouts: template}


def _update_launch(comp: Module, operands: list, lkey: tuple | None) -> Launch:
    """The launch of a write's fusion: planned once per operand layout, then rebuilt from
    the operands (a loop writing the same region every step plans it once)."""
    known = _update_launches.get(comp) if lkey is not None else None
    t = known.get(lkey) if known is not None else None
    if t is not None:
        spec, sizes, scalars, region, flat_strides, arrays, views = t
        return Launch(spec, sizes, [_source(r, operands) for r in arrays], scalars, False,
                      region, flat_strides, [_source(r, operands) for r in views])
    launch = plan(comp, operands, flat=True)
    if lkey is None or not _replayable(comp, launch):
        return launch
    arrays, views = _sources(launch.arrays, operands), _sources(launch.views, operands)
    if None not in arrays and None not in views:
        if len(_update_launches) >= PREPARED_COMPUTATIONS:
            _update_launches.clear()
        known = _update_launches.setdefault(comp, {})
        if len(known) >= PREPARED_LAYOUTS:
            known.clear()
        known[lkey] = (launch.spec, launch.sizes, launch.scalars, launch.region,
                       launch.flat_strides, arrays, views)
    return launch


def _run_update(ins: Instr, operands: list, trace: Trace | None, dry: bool, serial: bool,
                donors: tuple, fresh: bool = False) -> list:
    """An update fusion: one kernel computes the written value and stores it in the region."""
    comp: Module = ins.value
    root = comp.instrs[comp.outputs[0]]
    k = comp.instrs[root.operands[0]].attr("index")
    base = operands[k]
    launch = _update_launch(comp, operands, None if dry else _layout_key(operands, serial))
    differs = "" if trace is None or _has(comp, launch) else nearest_difference(comp, launch.spec)
    entry, hit = _entry(comp, launch)
    # the interpreter (codegen declined, or an empty region) returns a new array
    why = ("" if k in donors and entry.source is not None and not launch.empty
           and not _hazard(launch, base) else _why_copied(k in donors, entry.source is None
                                                           or launch.empty))
    inplace = not why
    fresh = fresh and not inplace
    record = None
    if trace is not None:
        trace.updates.append(_write_kind(inplace, fresh))
        trace.write_reasons.append(why or "in place")
        status = "interpreted" if entry.source is None or launch.empty else (
            "hit" if hit and entry.kernel is not None else "miss")
        record = KernelRecord(f"fusion.{len(trace.kernels)}", "update", entry.key, status,
                              entry.source, comp, ins.attr("reason", ""), differs, entry)
        trace.kernels.append(record)
        record.compiled = not (dry or entry.source is None or launch.empty or entry.kernel)
    if dry:
        return [_writable(base) if inplace else np.empty(base.shape, base.dtype)]
    stats.bump("updates_fused")
    stats.bump("updates_in_place" if inplace else "updates_copied")
    t0 = time.perf_counter()
    try:
        if entry.source is None or launch.empty:
            return _run_fusion(comp, operands, launch, entry, hit, None, serial)
        return _run_fusion(comp, operands, launch, entry, hit, None, serial,
                           store=_store(comp, launch, base, inplace, fresh))
    finally:
        if record is not None:
            record.seconds = time.perf_counter() - t0


# The in-place rule for writes. A write's kernel stores into the old version's own buffer only
# when (1) no one can observe the old version any more: the buffer was made by this execution,
# or is an input that nothing outside the pending graph holds (engine._sole_buffers), and no
# later instruction reads it, directly or through a view (`_donatable`); and (2) the kernel
# reads the old buffer nowhere but at the element it is storing, so each element is read
# before it is overwritten, in the same iteration (`_hazard`). Otherwise the new version is a
# fresh (pooled) buffer: the elements outside the region copied, the region stored by the
# kernel, which reads the old buffer only -- read once, written once.
def _hazard(launch: Launch, base: np.ndarray) -> bool:
    """Does the kernel read `base` anywhere but at the very element it stores?"""
    offset, st = launch.region
    item = base.dtype.itemsize
    at = base.__array_interface__["data"][0] + offset * item
    here = (tuple(launch.sizes), tuple(s * item for s in st))
    for a in launch.views:
        if np.may_share_memory(a, base) and (
                (a.shape, a.strides) != here or a.__array_interface__["data"][0] != at):
            return True
    return False


def _store(comp: Module, launch: Launch, base: np.ndarray, inplace: bool, fresh: bool = False):
    """(the new version's buffer, the region of it the kernel stores into, canonical);
    `fresh`: the rest of a new buffer is written later (`_covering_updates`): not copied."""
    root = comp.instrs[comp.outputs[0]]
    if inplace:
        out = _writable(base)
    else:
        out = pool.empty(base.shape, base.dtype)
        if not fresh:
                    copy_outside(out, base, root.attr("offset"),
                             comp.instrs[root.operands[1]].shape, root.attr("strides"))
    offset, st = launch.region
    if launch.spec.flat_store:  # from the region's first element to its last
        return out, out.reshape(-1)[offset:offset + span(launch.sizes, st)]
    view = strided_view(out.reshape(-1), offset, launch.sizes or (1,), st or (1,))
    return out, view


def _run_fusion(comp: Module, operands: list, launch: Launch, entry: KernelEntry,
                hit: bool, lkey: tuple | None, serial: bool = False, donors: tuple = (),
                store=None, regen: dict | None = None) -> list:
    if entry.source is None or launch.empty:  # declined by codegen, or nothing to iterate
        stats.bump("fallbacks" if entry.source is None else "interpreter_runs")
        return _interpret(comp, operands)
    stats.bump("hits" if hit else "misses")
    results, head, tail = _kernel_args(comp, launch, store)
    if entry.kernel is None and config.get().background_compile:
        if entry.building is None:
            entry.building = background.submit(_build, entry, launch,
                                               [*head, *launch.arrays, *tail],
                                               diskcache.cache_dir())
        if not entry.building.done.is_set():  # not ready: the interpreter answers meanwhile
            stats.bump("background_interpreted")
            return _interpret(comp, operands)
    fresh = [(a.shape, a.flat[0], a.dtype) for a in head[len(results):]]  # partials' inits
    if donors:
        _donate(results, head, operands, donors, _donor_candidates(comp, launch, operands))
    for attempt in (0, 1):
        try:
            flagged = _launch(entry, launch, [*head, *launch.arrays, *tail], serial,
                              bool(donors))
            if launch.spec.tables and tail[-1][0]:
                _raise_index_error(comp, operands)
            if flagged:
                recheck_flags(comp, _regenerated(operands, regen))
            p = None if lkey is None else _prepare(comp, launch, entry, results, head, fresh,
                                                   tail, operands, serial, bool(donors))
            if p is not None:
                known = _prepared.get(comp)
                if known is None or len(known) >= PREPARED_LAYOUTS:
                    if len(_prepared) >= PREPARED_COMPUTATIONS:
                        _prepared.clear()
                    known = _prepared[comp] = {}
                known[lkey] = p
            return results
        except Exception as exc:
            value_error = _value_error(exc)
            if value_error is not None:  # NumPy raises it too (integer ** negative, ...)
                raise value_error from None
            if attempt == 0:  # a corrupt or stale disk entry: forget it, compile afresh
                diskcache.purge(diskcache.cache_dir(), entry.key)
                entry.kernel = None
                results, head, tail = _kernel_args(comp, launch, store)
                continue
            log.warning("lazyarray: kernel %s failed (%s); interpreting", entry.key, exc)
            entry.source, entry.reason = None, str(exc)
            stats.bump("fallbacks")
            return _interpret(comp, operands)


def _raise_index_error(comp: Module, operands: list) -> None:
    """A kernel flagged an out-of-range gather index: NumPy's IndexError, from the reference
    semantics on the same operands (the first bad index in NumPy's order)."""
    interpret(comp, operands)
    raise IndexError("index out of bounds in a gather")  # unreachable: the interpreter raised


_VALUE_ERRORS = (ValueError, IndexError, ZeroDivisionError, FloatingPointError)


def _value_error(exc: BaseException) -> BaseException | None:
    """The value-dependent error a kernel raised (a parallel region wraps it in SystemError),
    or None for a compile/load failure."""
    while exc is not None:
        if isinstance(exc, _VALUE_ERRORS) and not type(exc).__module__.startswith("numba"):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _owes_exact_warnings(comp: Module) -> bool:
    """Must this fusion keep its operands intact? When NumPy's error state warns (the
    default) and the kernel may count a floating-point event, the fusion is re-run on its
    operands to learn NumPy's exact warnings (`recheck_flags`): so no operand is written in
    place (the result goes to a fresh, pooled buffer instead), except a matrix product's
    result, which a recheck computes again (`_regenerated`; W5's bias + relu)."""
    return fpstate.active() is not None and _may_flag(comp)


@functools.lru_cache(maxsize=512)
def _may_flag(comp: Module) -> bool:

    return any(fp_check(comp, i) is not None or ins.opcode in ("reduce", "scan")
               and reduce_may_raise(comp, i) for i, ins in enumerate(comp.instrs))


def _donatable(m: Module, i: int, o: int, last_use: list[int], value: np.ndarray,
               free: frozenset = frozenset()) -> bool:
    """May instruction i write into operand o's buffer (XLA's buffer donation)?

    A buffer this execution made (not an output), or a parameter listed in `free` (an input
    nothing outside the pending graph holds), whose last reader is i: no one can observe the
    old version any more. Operand o may be a view of all of such a buffer (a reshape): then
    the buffer it views must be neither a result nor read after i, through any view.
    """
    b = o
    while m.instrs[b].opcode in MOVEMENT:
        b = m.instrs[b].operands[0]
    src = m.instrs[b]
    if (last_use[o] != i or last_use[b] != i or o in m.outputs or b in m.outputs
            or not isinstance(value, np.ndarray) or not value.flags.c_contiguous
            or not whole_owner(value)):
        return False
    if src.opcode == "parameter":
        return src.attr("index") in free
    return src.opcode != "constant" and value.flags.writeable


def whole_owner(a: np.ndarray) -> bool:
    """Is `a` its memory's owner, or a view of all of it (a pooled buffer, a donated input)?"""
    base = a.base
    return a.flags.owndata or (isinstance(base, np.ndarray) and base.flags.owndata
                               and base.nbytes == a.nbytes and a.flags.c_contiguous)


def _writable(a: np.ndarray) -> np.ndarray:
    """A writable alias of a donated buffer (inputs are read-only: graphs may share them; a
    donated one no longer has readers). The buffer itself stays read-only."""
    if a.flags.writeable:
        return a
    owner = a if a.base is None else a.base
    was = owner.flags.writeable
    owner.flags.writeable = True
    w = a.view()
    w.flags.writeable = True
    owner.flags.writeable = was
    return w


def _build(entry: KernelEntry, launch: Launch, args: list, path: str) -> None:
    """Background job: import (or write) the kernel module and compile the specialization
    this launch needs; the kernel is published only once it is ready to run."""
    from lazyarray.backends import numba_cpu

    kernel = numba_cpu.compile_kernel(entry.key, entry.source, path)
    diskcache.evict(path)
    chosen = _dispatcher(kernel, math.prod(launch.sizes), False, False)
    t0 = time.perf_counter()
    entry.origin = numba_cpu.build(chosen, args)
    entry.compile_s += time.perf_counter() - t0
    entry.kernel = kernel


_compile_lock = threading.Lock()  # threads launching one new kernel build it once


def _launch(entry: KernelEntry, launch: Launch, args: list, serial_only: bool = False,
            in_place: bool = False) -> int:
    """Run the kernel (building it first if needed); returns its count of possible
    floating-point events."""
    from lazyarray.backends import numba_cpu

    if entry.kernel is None:
        with _compile_lock:
            if entry.kernel is None:
                path = diskcache.cache_dir()
                entry.kernel = numba_cpu.compile_kernel(entry.key, entry.source, path)
                diskcache.evict(path)
    t0 = time.perf_counter()
    work = math.prod(launch.sizes)
    chosen = _dispatcher(entry.kernel, work, serial_only, in_place)
    if blas.spinning():
        chosen = _while_blas_spins(chosen, entry.kernel, work) or chosen
    try:
        built, flagged = numba_cpu.launch(chosen, args)
    finally:
        if chosen is entry.kernel[0]:
            _ran_in_parallel()
    if built:  # this launch compiled (or loaded) a specialization: count it as build time
        entry.compile_s += time.perf_counter() - t0
        entry.origin = built
    return flagged


def _dispatcher(kernel: tuple, work: int, one: bool, in_place: bool):
    """Which of a kernel's (parallel, serial) dispatchers runs `work` iterations: the
    parallel one on all threads from PARALLEL_MIN on, unless `one` (one thread is asked
    for); else the serial one, except for a launch that may write over an operand
    (`in_place`) from VECTOR_MIN on: the parallel one on the calling thread, whose loops
    vectorize where the serial one's do not (`numba_cpu.OneThread`)."""
    if work >= PARALLEL_MIN and not one:
        return kernel[0]
    if in_place and work >= VECTOR_MIN:
        from lazyarray.backends import numba_cpu  # (only here: every launch passes through)

        return numba_cpu.one_thread(kernel[0]) or kernel[1]
    return kernel[1]


def _while_blas_spins(chosen, kernel: tuple, work: int):
    """The dispatcher to run while NumPy's OpenBLAS workers may still spin from a product
    (`blas.spinning`), where a parallel launch waits for the cores: a parallel one below
    PARALLEL_MIN_NEAR_BLAS iterations on the calling thread (the same compiled code, so
    no new specialization), else `chosen` itself; None where that is always `chosen`."""
    if chosen is not kernel[0] or work >= PARALLEL_MIN_NEAR_BLAS:
        return None
    from lazyarray.backends import numba_cpu

    return numba_cpu.one_thread(chosen)


_last_uses: dict[Module, tuple] = {}  # module -> (per instruction, its buffer's last reader;
#                                      per instruction, the values dead after it)


def _buffer_last_uses(m: Module) -> list[int]:
    """Per instruction, the last instruction that reads its buffer, directly or through a
    view of it (a view taken early and read late keeps the buffer alive)."""
    last = [-1] * len(m.instrs)
    for i, ins in enumerate(m.instrs):
        for o in ins.operands:
            last[o] = i
    for o in m.outputs:
        last[o] = len(m.instrs)  # results outlive the execution
    for i in range(len(m.instrs) - 1, -1, -1):
        if m.instrs[i].opcode in MOVEMENT:
            base = m.instrs[i].operands[0]
            last[base] = max(last[base], last[i])
    return last


def execute_replay(m: Module, args: list, trace: Trace) -> np.ndarray:
    """`execute(m, args, trace)[0]` for a replay (`engine.replay`: nothing donated)."""
    direct = prepared_single(m, args)
    if direct is not None:
        return _run_prepared(*direct, trace, ())[0]
    return np.asarray(execute(m, args, trace)[0])


def prepared_single(m: Module, args: list) -> tuple | None:
    """(the prepared launch, the fusion, its operands) when `m` is one fusion of its
    parameters (W1, W2, W7, W8) whose launch is prepared for these layouts: a replay runs it
    directly, with no walk over the instructions and no donor search; else None."""
    single = _single.get(m)
    if single is None:
        if len(_single) >= PREPARED_COMPUTATIONS:
            _single.clear()
        single = _single[m] = _single_fusion(m)
    if single:
        ins, params = single
        operands = [args[k] for k in params]
        known = _prepared.get(ins.value)
        p = None if known is None else known.get(_layout_key(operands, False))
        if p is not None:
            return p, ins, operands
    return None


def _single_fusion(m: Module) -> tuple | bool:
    """(the fusion, the parameter index of each operand) when `m` is parameters and one
    fusion (not an update) of them with one result, its output; else False."""
    fusions = [ins for ins in m.instrs if ins.opcode != "parameter"]
    if len(fusions) != 1 or fusions[0].opcode != "fusion" or fusions[0].attr("kind") == "update" \
            or tuple(m.outputs) != (len(m.instrs) - 1,) or m.instrs[-1] is not fusions[0] \
            or len(fusions[0].value.outputs) != 1:
        return False
    ins = fusions[0]
    return ins, [m.instrs[o].attrs[0][1] for o in ins.operands]  # ("index", k)


_single: dict[Module, tuple | bool] = {}


def _uses(m: Module) -> tuple[list[int], list[list[int]]]:
    """(each instruction's buffer's last reader, the buffers each instruction reads last),
    memoized per module."""
    known = _last_uses.get(m)
    if known is None:
        last_use = _buffer_last_uses(m)
        dead: list[list[int]] = [[] for _ in m.instrs]
        for o, last in enumerate(last_use):
            if 0 <= last < len(m.instrs):
                dead[last].append(o)
        if len(_last_uses) >= PREPARED_COMPUTATIONS:
            _last_uses.clear()
        known = _last_uses[m] = (last_use, dead)
    return known


def _why_copied(dead: bool, interpreted: bool) -> str:
    """explain()'s reason for a write that did not run in place (`_hazard`, `_donatable`)."""
    if not dead:
        return ("copied: the old version is still observable (an array, a view, a pending "
                "expression or a later instruction reads it)")
    if interpreted:
        return "copied: run by the interpreter (no kernel, or an empty region)"
    return "copied: the written value reads the old buffer outside the written element"


def _write_kind(inplace: bool, fresh: bool) -> str:
    """explain()'s word for a write: into its old version's buffer, into a new buffer with the
    old version copied outside the region, or into a new buffer left unfilled there."""
    return "in place" if inplace else "new" if fresh else "copy"


def _update_region(m: Module, i: int):
    """(base operand, offset, strides, region shape) of instruction i when it is a write
    (an `update`, or an update fusion whose value does not read its base); else None."""
    ins = m.instrs[i]
    if ins.opcode == "update":
        return (ins.operands[0], ins.attr("offset"), ins.attr("strides"),
                m.instrs[ins.operands[1]].shape)
    if ins.opcode != "fusion" or ins.attr("kind") != "update":
        return None
    comp = ins.value
    root = comp.instrs[comp.outputs[0]]
    p = root.operands[0]
    if any(p in c.operands for j, c in enumerate(comp.instrs) if j != comp.outputs[0]):
        return None  # the value reads the old version
    return (ins.operands[comp.instrs[p].attr("index")], root.attr("offset"),
            root.attr("strides"), comp.instrs[root.operands[1]].shape)


_covering: dict[Module, frozenset] = {}


def _covering_updates(m: Module) -> frozenset:
    """The writes of `m` whose base is overwritten everywhere before anyone reads the new
    version: the chain of writes that starts there (each the one reader of the previous,
    reading it only as its base) stores disjoint boxes that tile the whole array
    (`concatenate`, `stack`, `block`). Their new buffer needs no copy of the old version:
    NumPy's concatenate of two 10^6 arrays in 1.1 ms, against 1.9 ms with a zero fill first.
    Memoized per module."""
    known = _covering.get(m)
    if known is not None:
        return known
    readers: list[list[int]] = [[] for _ in m.instrs]
    for j, ins in enumerate(m.instrs):
        for o in ins.operands:
            readers[o].append(j)
    found = set()
    for i in range(len(m.instrs)):
        r = _update_region(m, i)
        if r is None:
            continue
        shape, boxes, j = m.instrs[r[0]].shape, [], i
        while r is not None:
            b = box(shape, r[1], r[3], r[2])
            if b is None or any(step != 1 for _, step, _ in b):
                break
            boxes.append(b)
            if _tiles(boxes, shape):
                found.add(i)
                break
            if j in m.outputs or len(readers[j]) != 1:
                break
            k = readers[j][0]
            r = _update_region(m, k)
            if r is not None and r[0] != j:
                break
            j = k
    if len(_covering) >= PREPARED_COMPUTATIONS:
        _covering.clear()
    known = _covering[m] = frozenset(found)
    return known


def _tiles(boxes: list, shape) -> bool:
    """Do these boxes (per axis (start, 1, count)) cover `shape` exactly, without overlap?"""
    if sum(math.prod(c for _, _, c in b) for b in boxes) != math.prod(shape):
        return False
    return all(any(s0 + c0 <= s1 or s1 + c1 <= s0 for (s0, _, c0), (s1, _, c1)
                   in zip(a, b, strict=True))
               for k, a in enumerate(boxes) for b in boxes[k + 1:])


_LEAN_OPS = frozenset({"parameter", "fusion", "get-tuple-element"})
_lean: dict[Module, bool] = {}


def execute_lean(m: Module, args: list, guard) -> tuple[list, list] | None:
    """`execute(m, args)` for a replay (`engine.replay`) of a module of parameters, fusions
    (not updates) and tuple elements (W3, W6): each fusion's prepared launch, with no donor
    search and no kernel records; None for any other module. `guard(fn, *args)` runs what
    needs NumPy's warnings recorded: the recheck of a flagged launch, a fusion whose launch
    is not prepared for these layouts. Returns (the outputs, per fusion its (prepared
    launch, fusion, seconds) or its KernelRecord) for the report (`engine.last_report`)."""
    lean = _lean.get(m)
    if lean is None:
        if len(_lean) >= PREPARED_COMPUTATIONS:
            _lean.clear()
        lean = _lean[m] = all(ins.opcode in _LEAN_OPS and ins.attr("kind") != "update"
                              for ins in m.instrs)
    if not lean:
        return None
    dead = _uses(m)[1]
    vals: list = [None] * len(m.instrs)
    runs = []
    for i, ins in enumerate(m.instrs):
        op = ins.opcode
        if op == "parameter":
            vals[i] = args[ins.attrs[0][1]]  # ("index", k)
        elif op == "fusion":
            operands = [vals[o] for o in ins.operands]
            key = _layout_key(operands, False)
            known = _prepared.get(ins.value)
            p = None if known is None else known.get(key)
            if p is None:  # not preparable (a row kernel), or not yet for these layouts
                trace = Trace()
                out = guard(run_fusion, ins, operands, trace, False)
                runs += trace.kernels
            else:
                t0 = time.perf_counter()
                out, flagged = launch_prepared(p, operands)
                if flagged:
                    guard(recheck_flags, ins.value, operands)
                runs.append((p, ins, time.perf_counter() - t0))
            vals[i] = out[0] if len(out) == 1 else tuple(out)
        else:  # get-tuple-element
            vals[i] = vals[ins.operands[0]][ins.attr("index")]
        for o in dead[i]:  # released at its last use: a pooled buffer is free for the next result
            vals[o] = None
    return [vals[o] for o in m.outputs], runs


def execute(m: Module, args: list, trace: Trace | None = None, dry: bool = False,
            free: frozenset = frozenset()) -> list:
    """Run `m` on `args`; `free`: indices of the arguments nothing outside this execution can
    observe (their buffers may be donated, written in place, at their last use)."""
    vals: list = [None] * len(m.instrs)
    last_use, dead = _uses(m)
    covering = _covering_updates(m)
    calls: dict = {}  # multi-result library calls: run once
    products: dict = {}  # a dot's instruction -> its operands (`_regenerated`)
    for i, ins in enumerate(m.instrs):
        op = ins.opcode
        if op == "parameter":
            vals[i] = args[ins.attrs[0][1]]  # ("index", k)
        elif op == "constant":
            vals[i] = ins.value
        elif op in MOVEMENT:
            vals[i] = apply_movement(ins, vals[ins.operands[0]])
        elif op == "fusion":
            donors = tuple(k for k, o in enumerate(ins.operands)
                           if _donatable(m, i, o, last_use, vals[o], free))
            if donors and ins.attr("kind") != "update":  # (a gathered operand is read anywhere)
                gathered = _gathered(ins.value)
                donors = tuple(k for k in donors if k not in gathered)
            regen = None
            if donors and _owes_exact_warnings(ins.value):
                # only a product's result, which can be computed again for a recheck
                regen = {k: products[ins.operands[k]] for k in donors
                         if ins.operands[k] in products}
                donors = tuple(regen)
            if dry and ins.attr("kind") != "update":  # explain reports where writes go
                donors = ()
            serial = any(m.instrs[o].opcode == "dot" and vals[o].size < PARALLEL_MIN_AFTER_BLAS
                         for o in ins.operands)
            out = run_fusion(ins, [vals[o] for o in ins.operands], trace, dry, serial=serial,
                             donors=donors, regen=regen or None, fresh=i in covering)
            vals[i] = out[0] if len(out) == 1 else tuple(out)
        elif op == "get-tuple-element":
            vals[i] = vals[ins.operands[0]][ins.attr("index")]
        elif op == "dot":
            a, b = (vals[o] for o in ins.operands)
            vals[i] = np.empty(ins.shape, ins.dtype) if dry else np.asarray(
                fpstate.call(blas.matmul, a, b))
            if not dry:
                stats.bump("library_calls")
                products[i] = (a, b)
        elif op == "custom-call":
            if dry:
                vals[i] = np.empty(ins.shape, ins.dtype)
                continue
            ran = len(calls)
            vals[i] = library.call(ins, [vals[o] for o in ins.operands], calls, ins.operands)
            if ins.attr("output") is None or len(calls) > ran:  # a later result: no new call
                stats.bump("library_calls")
        elif op == "update":
            base, value = (vals[o] for o in ins.operands)
            inplace = _donatable(m, i, ins.operands[0], last_use, base, free)
            fresh = not inplace and i in covering
            if trace is not None:
                trace.updates.append(_write_kind(inplace, fresh))
                trace.write_reasons.append("in place" if inplace else _why_copied(False, False))
            if dry:
                vals[i] = _writable(base) if inplace else np.empty(base.shape, base.dtype)
            else:  # the new version: the old one's buffer, or a new one (`_store`)
                offset, strides = ins.attr("offset"), ins.attr("strides")
                out = _writable(base) if inplace else pool.empty(base.shape, base.dtype)
                if not (inplace or fresh):
                    copy_outside(out, base, offset, value.shape, strides)
                vals[i] = pool.place(out, value, offset, strides)
                stats.bump("updates_in_place" if inplace else "updates_copied")
        else:
            raise AssertionError(f"unfused {op} at top level")
        for o in dead[i]:  # released at its last use: a pooled buffer is free for the next result
            vals[o] = None
    return [vals[o] for o in m.outputs]
