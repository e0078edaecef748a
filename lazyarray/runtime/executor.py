"""Run an optimized module: plan each fusion's launch, find or build its kernel, launch it.

Kernels are cached in memory by signature = sha256(masked fused HLO text + launch Spec +
codegen version): sizes, slice offsets and scalar constants are arguments, never part of the
key. Outputs are allocated by NumPy (fast, reusable pages), never inside the kernel.
"""

from __future__ import annotations

import math
import hashlib
import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from lazyarray import stats
from lazyarray.codegen.cpu import CODEGEN_VERSION, Unsupported, acc_dtype, partial_mode, render
from lazyarray.ir.hlo import MOVEMENT, Instr, Module
from lazyarray.ir.interpret import apply_movement, interpret
from lazyarray.ir.text import print_computation
from lazyarray.ops.table import reduce_init
from lazyarray.runtime import diskcache
from lazyarray.runtime.layout import Launch, plan
from lazyarray.storage import apply_update

log = logging.getLogger("lazyarray")

PARALLEL_MIN = 1 << 17  # iterations below which a kernel runs serially (thread wake-up costs)
MAX_CHUNKS = 64  # partial rows of a reduction over its outer dim (fixed: deterministic sums)


@dataclass
class KernelEntry:
    key: str
    source: str | None  # None: the code generator declined; the interpreter runs it
    kernel: object = None
    reason: str = ""


@dataclass
class KernelRecord:
    """What explain() reports about one fusion of an evaluation."""

    name: str
    kind: str
    key: str
    status: str  # "hit" | "miss" | "interpreted"
    source: str | None
    hlo: str = ""


@dataclass
class Trace:
    kernels: list[KernelRecord] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)  # per write: "in place" or "copy"


MAX_KERNELS_IN_MEMORY = 2048  # least recently used kernels beyond this are dropped
_cache: OrderedDict[tuple, KernelEntry] = OrderedDict()
_cache_lock = threading.Lock()


def cache_clear() -> None:
    with _cache_lock:
        _cache.clear()


_masked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _entry(comp: Module, launch: Launch) -> tuple[KernelEntry, bool]:
    masked = _masked.get(comp)
    if masked is None:
        masked = _masked[comp] = print_computation(comp, masked=True)
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


def _nchunks(sizes, kept) -> int:
    return max(1, min(sizes[0], MAX_CHUNKS, (1 << 22) // max(1, math.prod(kept))))


def _kernel_args(comp: Module, launch: Launch) -> tuple[list, list]:
    """(results as the HLO shapes them, the kernel's argument list)."""
    spec, sizes = launch.spec, launch.sizes
    kept = tuple(n for n, r in zip(sizes, spec.reduced, strict=True) if not r)
    canon_shape = (sizes if spec.kind in ("loop", "scan") else kept) or (1,)
    results = [np.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
    args = [r.reshape(canon_shape) for r in results]
    inits = []
    if spec.kind == "reduce":
        reds = [ins for ins in comp.instrs if ins.opcode == "reduce"]
        nparts = _nchunks(sizes, kept) if spec.chunked else 1
        for ins in reds:
            name = ins.attr("to_apply")
            adt = acc_dtype(name, ins.dtype)
            inits.append(reduce_init(name, adt))
            shape = (nparts, *kept) if partial_mode(spec) else (1,)
            args.append(np.full(shape, inits[-1], adt))
    args += [*launch.arrays, *launch.scalars, *sizes]
    if spec.kind == "reduce":
        args += [*inits, _nchunks(sizes, kept) if spec.chunked else 1]
    if spec.kind == "scan":
        ins = next(i for i in comp.instrs if i.opcode == "scan")
        name = ins.attr("to_apply")
        args.append(reduce_init(name, acc_dtype(name, ins.dtype)))
    return results, args


def run_fusion(ins: Instr, operands: list, trace: Trace | None, dry: bool,
               serial: bool = False) -> list:
    """Run one fusion on NumPy operands (`serial`: never the parallel kernel, for callers that
    already run one fusion per thread, such as the dask backend's chunk tasks)."""
    comp: Module = ins.value
    launch = plan(comp, operands)
    entry, hit = _entry(comp, launch)
    if trace is not None:
        status = "interpreted" if entry.source is None or launch.empty else (
            "hit" if hit else "miss")
        trace.kernels.append(KernelRecord(f"fusion.{len(trace.kernels)}", ins.attr("kind"),
                                          entry.key, status, entry.source,
                                          print_computation(comp)))
    if dry:
        return [np.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
    if entry.source is None or launch.empty:  # declined by codegen, or nothing to iterate
        stats.bump("fallbacks" if entry.source is None else "interpreter_runs")
        return interpret(comp, operands)
    stats.bump("hits" if hit else "misses")
    results, args = _kernel_args(comp, launch)
    for attempt in (0, 1):
        try:
            _launch(entry, launch, args, serial)
            return results
        except Exception as exc:
            value_error = _value_error(exc)
            if value_error is not None:  # NumPy raises it too (integer ** negative, ...)
                raise value_error from None
            if attempt == 0:  # a corrupt or stale disk entry: forget it, compile afresh
                diskcache.purge(diskcache.cache_dir(), entry.key)
                entry.kernel = None
                results, args = _kernel_args(comp, launch)
                continue
            log.warning("lazyarray: kernel %s failed (%s); interpreting", entry.key, exc)
            entry.source, entry.reason = None, str(exc)
            stats.bump("fallbacks")
            return interpret(comp, operands)


_VALUE_ERRORS = (ValueError, IndexError, ZeroDivisionError, FloatingPointError)


def _value_error(exc: BaseException) -> BaseException | None:
    """The value-dependent error a kernel raised (a parallel region wraps it in SystemError),
    or None for a compile/load failure."""
    while exc is not None:
        if isinstance(exc, _VALUE_ERRORS) and not type(exc).__module__.startswith("numba"):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _donatable(m: Module, i: int, o: int, last_use: list[int], value: np.ndarray) -> bool:
    """May instruction i write into operand o's buffer (XLA's buffer donation)?

    Only a buffer this execution made (not a parameter, not an output, not a view) whose last
    reader is i: no one can observe the old version any more.
    """
    return (m.instrs[o].opcode not in ("parameter", "constant") and last_use[o] == i
            and o not in m.outputs and isinstance(value, np.ndarray) and value.flags.owndata
            and value.flags.writeable and value.flags.c_contiguous)


_compile_lock = threading.Lock()  # threads launching one new kernel build it once


def _launch(entry: KernelEntry, launch: Launch, args: list, serial_only: bool = False) -> None:
    from lazyarray.backends import numba_cpu

    if entry.kernel is None:
        with _compile_lock:
            if entry.kernel is None:
                path = diskcache.cache_dir()
                entry.kernel = numba_cpu.compile_kernel(entry.key, entry.source, path)
                diskcache.evict(path)
    parallel, serial = entry.kernel
    work = math.prod(launch.sizes)
    numba_cpu.launch(parallel if work >= PARALLEL_MIN and not serial_only else serial, args)


def execute(m: Module, args: list, trace: Trace | None = None, dry: bool = False) -> list:
    vals: list = [None] * len(m.instrs)
    last_use = [-1] * len(m.instrs)
    for i, ins in enumerate(m.instrs):
        for o in ins.operands:
            last_use[o] = i
    for i, ins in enumerate(m.instrs):
        op = ins.opcode
        if op == "parameter":
            vals[i] = args[ins.attr("index")]
        elif op == "constant":
            vals[i] = ins.value
        elif op in MOVEMENT:
            vals[i] = apply_movement(ins, vals[ins.operands[0]])
        elif op == "fusion":
            out = run_fusion(ins, [vals[o] for o in ins.operands], trace, dry)
            vals[i] = out[0] if len(out) == 1 else tuple(out)
        elif op == "get-tuple-element":
            vals[i] = vals[ins.operands[0]][ins.attr("index")]
        elif op == "dot":
            a, b = (vals[o] for o in ins.operands)
            vals[i] = np.empty(ins.shape, ins.dtype) if dry else np.asarray(np.matmul(a, b))
            if not dry:
                stats.bump("library_calls")
        elif op == "update":
            base, value = (vals[o] for o in ins.operands)
            inplace = _donatable(m, i, ins.operands[0], last_use, base)
            if trace is not None:
                trace.updates.append("in place" if inplace else "copy")
            if dry:
                vals[i] = base if inplace else np.empty(base.shape, base.dtype)
                continue
            vals[i] = apply_update(base, value, ins.attr("offset"), ins.attr("strides"),
                                   inplace=inplace)
            stats.bump("updates_in_place" if inplace else "updates_copied")
        else:
            raise AssertionError(f"unfused {op} at top level")
    return [vals[o] for o in m.outputs]
