"""The in-memory kernel cache and what runs a kernel.

Kernels are cached by signature = sha256(masked fused HLO text + launch Spec + codegen
version): sizes, slice offsets and scalar constants are arguments, never part of the key.
Here too: explain()'s records of the kernels an evaluation ran, building a kernel (now or in
the background), launching it, and settling what a launch reports (floating-point flags,
value errors).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from lazyarray import config, stats
from lazyarray.codegen.body import Unsupported
from lazyarray.codegen.cpu import CODEGEN_VERSION, render
from lazyarray.codegen.layout import Launch
from lazyarray.ir import fpstate
from lazyarray.ir.hlo import MOVEMENT, Module
from lazyarray.ir.interpret import interpret
from lazyarray.ir.text import print_computation
from lazyarray.runtime import blas, diskcache, dispatch
from lazyarray.runtime.dispatch import dispatcher, ran_in_parallel, while_blas_spins


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
cache: OrderedDict[tuple, KernelEntry] = OrderedDict()  # (masked text, Spec, math) -> entry
cache_lock = threading.Lock()


def cache_clear() -> None:
    with cache_lock:
        cache.clear()


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
    with cache_lock:
        keys = [k for k in reversed(cache) if k[1].kind == spec.kind][:limit]
    keys = [k for k in keys if k[:2] != (text, spec)]
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


def kernel_entry(comp: Module, launch: Launch) -> tuple[KernelEntry, bool]:
    """(the cache's entry for this fusion and launch layout, whether it was cached): a new
    entry holds the rendered source (or why the code generator declined), no kernel yet."""
    masked = _masked_text(comp)
    math = config.get().math  # (the code generator reads it: codegen/body.numpy_loop)
    k = (masked, launch.spec, math)
    with cache_lock:
        e = cache.get(k)
        if e is not None:
            cache.move_to_end(k)
    if e is not None:
        return e, True
    key = hashlib.sha256(
        f"{CODEGEN_VERSION}\n{masked}\n{launch.spec}\n{math}".encode()).hexdigest()[:24]
    try:
        e = KernelEntry(key, render(comp, launch.spec))
    except Unsupported as why:
        e = KernelEntry(key, None, reason=str(why))
    with cache_lock:
        e = cache.setdefault(k, e)
        while len(cache) > MAX_KERNELS_IN_MEMORY:
            cache.popitem(last=False)
    return e, False


def is_cached(comp: Module, launch: Launch) -> bool:
    with cache_lock:
        return (_masked_text(comp), launch.spec, config.get().math) in cache


def build_kernel(entry: KernelEntry, launch: Launch, args: list, path: str) -> None:
    """Background job: import (or write) the kernel module and compile the specialization
    this launch needs; the kernel is published only once it is ready to run."""
    cpu = dispatch.numba_cpu()
    kernel = cpu.compile_kernel(entry.key, entry.source, path)
    diskcache.evict(path)
    chosen = dispatcher(kernel, math.prod(launch.sizes), False, False)
    t0 = time.perf_counter()
    entry.origin = cpu.build(chosen, args)
    entry.compile_s += time.perf_counter() - t0
    entry.kernel = kernel


_compile_lock = threading.Lock()  # threads launching one new kernel build it once


def ensure_kernel(entry: KernelEntry, counter: str = "disk_writes") -> tuple:
    """The entry's (parallel, serial) dispatchers, importing (or writing) its kernel module
    once whichever thread asks first (a new source file is counted under `counter`)."""
    with _compile_lock:
        if entry.kernel is None:
            path = diskcache.cache_dir()
            entry.kernel = dispatch.numba_cpu().compile_kernel(entry.key, entry.source, path,
                                                               counter=counter)
            diskcache.evict(path)
    return entry.kernel


def run_kernel(entry: KernelEntry, launch: Launch, args: list, serial_only: bool = False,
               in_place: bool = False) -> int:
    """Run the kernel (building it first if needed); returns its count of possible
    floating-point events."""
    cpu = dispatch.numba_cpu()
    if entry.kernel is None:
        ensure_kernel(entry)
    t0 = time.perf_counter()
    work = math.prod(launch.sizes)
    chosen = dispatcher(entry.kernel, work, serial_only, in_place)
    if blas.spinning():
        chosen = while_blas_spins(chosen, entry.kernel, work) or chosen
    try:
        built, flagged = cpu.launch(chosen, args)
    finally:
        if chosen is entry.kernel[0]:
            ran_in_parallel()
    if built:  # this launch compiled (or loaded) a specialization: count it as build time
        entry.compile_s += time.perf_counter() - t0
        entry.origin = built
    return flagged


_VALUE_ERRORS = (ValueError, IndexError, ZeroDivisionError, FloatingPointError)


def value_error(exc: BaseException) -> BaseException | None:
    """The value-dependent error a kernel raised (a parallel region wraps it in SystemError),
    or None for a compile/load failure."""
    while exc is not None:
        if isinstance(exc, _VALUE_ERRORS) and not type(exc).__module__.startswith("numba"):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def regenerated(operands: list, regen: dict | None) -> list:
    """`operands` with each product result that may have been overwritten by a donated
    output computed again (`executor.run_fusion`'s `regen`): a flag is rare, and the warnings
    NumPy gives depend on the values the fusion read. The product's own warnings were
    recorded the first time."""
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
