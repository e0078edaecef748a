"""Launches remembered per operand layout: a fusion's first launch for some operand shapes,
strides and dtypes keeps everything but the operand arrays (`prepared`), and later calls
with the same layouts (replays, loops) launch the kernel directly, rebuilding any load views
from the new operands. A write's launch is remembered the same way (`update_launch`).
"""

from __future__ import annotations

import math
import operator
import time
from dataclasses import dataclass

import numpy as np

from lazyarray import config, stats
from lazyarray.codegen.layout import Launch, plan
from lazyarray.ir.hlo import Instr, Module
from lazyarray.runtime import compile_service, dispatch, kernels, pool
from lazyarray.runtime.buffers import PREPARED_COMPUTATIONS, donate, donor_candidates, load_base
from lazyarray.runtime.dispatch import (dispatcher, ran_in_parallel, replay_dispatcher,
                                        while_blas_spins)
from lazyarray.runtime.kernels import (KernelEntry, KernelRecord, Trace, recheck_flags,
                                       regenerated, value_error)


@dataclass(slots=True)
class _Prepared:
    """A launch remembered for one operand layout: everything but the operand arrays."""

    entry: KernelEntry
    kernel: object  # the dispatcher (parallel or serial) the sizes chose
    outs: list  # (shape, dtype, kernel-side shape) per result
    partials: list  # (shape, init, dtype) per reduction partials buffer
    src: list  # operand index per array load
    tail: list  # scalars, sizes and the kind's extra arguments
    candidates: tuple = ()  # operands whose buffer may take the result (donor_candidates)
    direct: bool = False  # every load is an operand itself (no view to rebuild)
    one: object = None  # where `kernel` is parallel: it on the calling thread (OneThread)
    near_blas: bool = False  # `one` runs while BLAS's workers may spin (while_blas_spins)
    paused: list = None  # after a pause: [seconds in parallel, on one thread, launches]
    spare: list = None  # small partials buffers between launches (`_partials`)
    small: bool = False  # every result is below the pool's size: np.empty directly
    keep: bool = False  # the partials are small enough to keep between launches
    reads: tuple = ()  # scalars read off operands at each launch (`scalar_reads`)

    def __post_init__(self):
        self.direct = all(type(j) is int for j in self.src)
        self.tail = [plain(v) for v in self.tail]
        self.spare = []
        self.small = all(math.prod(shape) * dtype.itemsize < pool.MIN_BYTES
                         for shape, dtype, _ in self.outs)
        self.keep = sum(math.prod(shape) * np.dtype(dtype).itemsize
                        for shape, _, dtype in self.partials) <= SPARE_PARTIALS


def plain(v):
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


prepared: dict[Module, dict] = {}  # computation -> {operand layouts: _Prepared}
PREPARED_LAYOUTS = 8  # remembered operand layouts per computation
kernels.on_escalate.append(lambda comp: prepared.pop(comp, None))  # (its next launch plans anew)


def layout_key(operands: list, serial: bool, in_place: bool = False) -> tuple | None:
    """The key of a prepared launch: the operand layouts, and the options its kernel
    depends on (the `math` option chooses the kernel's source)."""
    try:
        return (serial, in_place, config.get().math, *map(_LAYOUT, operands))
    except AttributeError:
        return None


_LAYOUT = operator.attrgetter("shape", "strides", "dtype")


def prepare(comp: Module, launch: Launch, entry: KernelEntry, results: list, head: list,
            partials: list, tail: list, operands: list, serial: bool,
            in_place: bool) -> _Prepared | None:
    """Remember this launch if its loads are the operands themselves and its scalars are
    constants: then only the operand arrays change from one call to the next."""
    if entry.source is None or launch.spec.kind == "update" or launch.empty \
            or launch.spec.tables:
        return None
    kernels_ = entry.kernel
    work = math.prod(launch.sizes)
    if entry.linked or kernels_ is None:  # (native kernels, for these argument types)
        kernels_ = kernels.native_pair(entry, compile_service.describe(
            [*head, *launch.arrays, *tail]), dispatch.variant(work, serial, in_place)) \
            or kernels_
    if kernels_ is None:
        return None
    reads = scalar_reads(comp, launch, operands)
    src = load_sources(launch.arrays, operands)
    if reads is None or None in src:
        return None
    n = len(results)
    outs = [(r.shape, r.dtype, a.shape) for r, a in zip(results, head[:n], strict=True)]
    kernel = dispatcher(kernels_, work, serial, in_place)
    if kernel is None:
        return None
    one = dispatch.one_thread(kernel) if kernel is kernels_[0] else None
    return _Prepared(entry, kernel, outs, partials, src, tail,
                     donor_candidates(comp, launch, operands), one=one,
                     near_blas=while_blas_spins(kernel, kernels_, work) is not None,
                     paused=[math.inf, math.inf, 0], reads=reads)


def scalar_reads(comp: Module, launch: Launch, operands: list) -> tuple | None:
    """Per scalar load of `launch` read off an operand rather than a constant (`x - x.mean()`
    reads the mean a kernel before computed): (its place in the kernel's tail, the operand,
    the element's index in it), found by address, for a replay to read again; None when such
    a value is not an element of a C-contiguous operand."""
    reads, k = [], 0
    for p, dims in launch.spec.loads:
        if dims is not None:
            continue
        if comp.instrs[load_base(comp, p)].opcode != "constant":
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


def load_sources(arrays: list, operands: list) -> list:
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


def run_prepared(p: _Prepared, ins: Instr, operands: list, trace: Trace | None,
                 donors: tuple, regen: dict | None = None) -> list:
    """Run fusion `ins` as the prepared launch `p`, settling its flags; with a `trace`,
    recorded there and timed."""
    record = None
    if trace is not None:
        record = kernel_record(p, ins, len(trace.kernels))
        trace.kernels.append(record)
        t0 = time.perf_counter()
    results, flagged = launch_prepared(p, operands, donors)
    if flagged:
        recheck_flags(ins.value, regenerated(operands, regen), p.entry)
    if record is not None:
        record.seconds = time.perf_counter() - t0
    return results


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
        donate(results, args, operands, donors, p.candidates)
    parts = _partials(p) if p.partials else None
    if parts is not None:
        args += parts
    args += map(operands.__getitem__, p.src) if p.direct else [  # (`_source`, inlined)
        operands[j] if type(j) is int else _rebuilt(j, operands) for j in p.src]
    if p.reads:  # scalars another kernel computed: this launch's values
        tail = list(p.tail)
        for k, j, i in p.reads:
            tail[k] = plain(operands[j].reshape(-1)[i])
        args += tail
    else:
        args += p.tail
    stats.hit()
    kernel, t0 = (p.kernel, None) if p.one is None else replay_dispatcher(p)
    before = len(kernel.overloads)
    try:
        flagged = kernel(*args)  # the specialization the first launch built (layouts match)
        if len(kernel.overloads) != before:  # another one (a read-only flag differs, ...)
            stats.bump("compiles")
        stats.kernel_launched()
    except Exception as exc:
        raised = value_error(exc)
        if raised is not None:
            raise raised from None
        raise
    finally:
        if kernel is p.kernel and p.one is not None:
            ran_in_parallel()
        if parts is not None and p.keep:
            p.spare.append(parts)
    if t0 is not None:  # after a pause: how long each way took, the last time
        p.paused[kernel is p.one] = time.perf_counter() - t0
    return results, flagged


_update_launches: dict[Module, dict] = {}  # write computation -> {operand layouts: template}


def update_launch(comp: Module, operands: list, lkey: tuple | None) -> Launch:
    """The launch of a write's fusion: planned once per operand layout, then rebuilt from
    the operands (a loop writing the same region every step plans it once)."""
    known = _update_launches.get(comp) if lkey is not None else None
    t = known.get(lkey) if known is not None else None
    if t is not None:
        spec, sizes, scalars, region, flat_strides, arrays, views, reads = t
        if reads:  # scalars another kernel computed (`dt` as a 0-d array): this call's values
            scalars = list(scalars)
            for k, j, i in reads:
                scalars[k] = operands[j].reshape(-1)[i]
        return Launch(spec, sizes, [_source(r, operands) for r in arrays], scalars, False,
                      region, flat_strides, [_source(r, operands) for r in views])
    launch = plan(comp, operands, flat=True)
    if lkey is None or launch.empty or launch.spec.tables:
        return launch
    reads = scalar_reads(comp, launch, operands)
    arrays, views = load_sources(launch.arrays, operands), load_sources(launch.views, operands)
    if reads is not None and None not in arrays and None not in views:
        if len(_update_launches) >= PREPARED_COMPUTATIONS:
            _update_launches.clear()
        known = _update_launches.setdefault(comp, {})
        if len(known) >= PREPARED_LAYOUTS:
            known.clear()
        known[lkey] = (launch.spec, launch.sizes, launch.scalars, launch.region,
                       launch.flat_strides, arrays, views, reads)
    return launch
