"""The in-memory kernel cache and what runs a kernel.

Kernels are cached by signature = sha256(masked fused HLO text + launch Spec + codegen
version): sizes, slice offsets and scalar constants are arguments, never part of the key.
Here too: explain()'s records of the kernels an evaluation ran, building a kernel (now or in
the background), launching it, and settling what a launch reports (floating-point flags,
value errors).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import logging
import math
import os
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
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
from lazyarray.runtime import background, blas, compile_service, diskcache, dispatch, native
from lazyarray.runtime.dispatch import dispatcher, ran_in_parallel, while_blas_spins

log = logging.getLogger("lazyarray")


@dataclass
class KernelEntry:
    key: str
    source: str | None  # None: the code generator declined; the interpreter runs it
    kernel: object = None
    reason: str = ""  # why the code generator declined
    compile_s: float = 0.0  # seconds to compile (or load from disk) this process
    origin: str = ""  # "compiled" | "disk" | "worker" (compiled by the worker, loaded) once built
    building: object = None  # a background build in flight (options(compile="thread"))
    # compile="background": the specializations the worker process was asked for
    # ((dispatcher, argument types) -> compile_service.Job), and those ready to launch here
    jobs: dict = field(default_factory=dict)
    ready: set = field(default_factory=set)
    worker_s: float = 0.0  # seconds the worker process spent building its specializations
    exact: bool = False  # rendered with exact floating-point checks (`escalate`)
    superseded: bool = False  # its fusion escalated: launches are not prepared with it
    # argument types -> [parallel, serial] kernels linked from native images (`native_pair`:
    # each None where there is no image, _UNSEEN until asked for); and whether any is linked
    native: dict = field(default_factory=dict)
    linked: bool = False
    cache_key: tuple = ()  # (masked text, Spec, math): the fusion and layout it serves


@dataclass
class KernelRecord:
    """What explain() reports about one fusion of an evaluation."""

    name: str
    kind: str
    key: str
    status: str  # "hit" | "miss" | "interpreted" | "compiling" (interpreted meanwhile)
    source: str | None
    comp: Module | None = None  # the fused computation
    reason: str = ""  # why the fusion ends at its roots (passes.fusion.REASONS)
    # on a miss: how the nearest cached signature differs (`differs`; a function until read)
    differs_from: Callable[[], str] | str = ""
    entry: KernelEntry | None = None
    seconds: float = 0.0  # wall time of the run (build included), when not dry
    compiled: bool = False  # this run compiled (or loaded from disk) the kernel

    @property
    def differs(self) -> str:
        """On a miss: how the nearest cached signature differs (computed once, when read)."""
        d = self.differs_from
        if callable(d):
            d = self.differs_from = d()
        return d

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
        _asked.clear()
        escalated.clear()


_masked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _masked_text(comp: Module) -> str:
    masked = _masked.get(comp)
    if masked is None:
        masked = _masked[comp] = print_computation(comp, masked=True)
    return masked


def nearest_difference(comp: Module, spec, limit: int = 256):
    """How the closest signature in the kernel cache differs from (comp, spec), as a function
    that returns a short diff: the `limit` most recently used kernels of the same kind are
    taken now, compared when the diff is read (explain's report; difflib over hundreds of
    kernels cost a first evaluation milliseconds per kernel)."""
    text = _masked_text(comp)
    with cache_lock:
        keys = [k for k in reversed(cache) if k[1].kind == spec.kind][:limit]
    keys = [k[:2] for k in keys if k[:2] != (text, spec)]
    return functools.partial(_nearest_diff, text, spec, keys)


def _nearest_diff(text: str, spec, keys: list) -> str:
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
    fusion = (masked, launch.spec, math)
    exact = fusion in escalated
    k = (*fusion, exact)
    with cache_lock:
        e = cache.get(k)
        if e is not None:
            cache.move_to_end(k)
    if e is not None:
        return e, True
    key = hashlib.sha256((f"{CODEGEN_VERSION}\n{masked}\n{launch.spec}\n{math}"
                          + ("\nexact checks" if exact else "")).encode()).hexdigest()[:24]
    try:
        e = KernelEntry(key, render(comp, launch.spec, exact), exact=exact, cache_key=fusion)
    except Unsupported as why:
        e = KernelEntry(key, None, reason=str(why), exact=exact, cache_key=fusion)
    with cache_lock:
        e = cache.setdefault(k, e)
        while len(cache) > MAX_KERNELS_IN_MEMORY:
            cache.popitem(last=False)
    return e, False


def is_cached(comp: Module, launch: Launch) -> bool:
    fusion = (_masked_text(comp), launch.spec, config.get().math)
    with cache_lock:
        return (*fusion, fusion in escalated) in cache


# Fusions (masked text, Spec, math) whose kernel with cheap floating-point checks flagged
# while NumPy's warnings were recorded: rendered with exact checks from then on (data holding
# NaN or inf flags every cheap launch, and each flag re-runs the fusion on NumPy)
escalated: set = set()
on_escalate: list = []  # callbacks(comp): forget launches prepared with the cheap kernel


def escalate(entry: KernelEntry | None, comp: Module | None) -> bool:
    """After a flagged launch of `entry`'s kernel: render its fusion with exact checks from
    the next launch on, when its checks were cheap (True when this call escalated it), and
    forget the launches of `comp` prepared with it (another computation of the same fusion
    may still hold one: its first flag drops it)."""
    if entry is None or entry.exact or not entry.cache_key or entry.source is None:
        return False
    new = not entry.superseded
    if new:
        stats.bump("checks_escalated")
        if len(escalated) >= MAX_KERNELS_IN_MEMORY:  # (bounded as the kernel cache is)
            escalated.clear()
        escalated.add(entry.cache_key)
        entry.superseded = True
    for forget in on_escalate:
        forget(comp)
    return new


def build_kernel(entry: KernelEntry, launch: Launch, args: list, path: str) -> None:
    """Background job: import (or write) the kernel module and compile the specialization
    this launch needs; the kernel is published only once it is ready to run."""
    cpu = dispatch.numba_cpu()
    kernel = cpu.compile_kernel(entry.key, entry.source, diskcache.kernel_folder(path, entry.key))
    diskcache.evict_now_and_then(path)
    chosen = dispatcher(kernel, math.prod(launch.sizes), False, False)
    t0 = time.perf_counter()
    entry.origin = cpu.build(chosen, args)
    entry.compile_s += time.perf_counter() - t0
    entry.kernel = kernel


# what loading the first kernels costs a process: importing Numba (~0.35 s here), readying its
# CPU target (~0.4 s), each kernel's machine code (~30-70 ms), on a thread that shares the
# GIL with the program (a 64^3 ocean column's first run took 1.6 s with the loads, 0.8 s
# without: asv_bench/tools/first_run.py)
FIRST_LOAD_S = 1.0
_rent = [0.0, False]  # (interpreter seconds spent waiting for kernels, first load paid for)


def pay(seconds: float) -> None:
    """Count interpreter time spent on fusions whose kernels are not loaded: once it reaches
    what loading Numba costs, loading starts (a ski-rental rule: a short program that Numba
    would slow down never loads it; a long one pays at most twice the best choice)."""
    _rent[0] += seconds
    if _rent[0] >= FIRST_LOAD_S:
        _rent[1] = True


def _may_load() -> bool:
    return _rent[1] or "numba" in sys.modules


# masked text of a fusion whose kernel was asked for -> what it waits for (`interpret_only`):
# the worker's job, or _NEVER (built, but loadable only through Numba: until `_may_load`)
_asked: dict = {}
_NEVER = threading.Event()


def interpret_only(comp: Module) -> bool:
    """compile="background": may this fusion skip planning and run on the interpreter? While
    no kernel may be loaded yet (`_may_load`), once its kernel was asked for: planning a
    launch (layouts, the version rule's hazards, the kernel's key) would cost more than the
    interpreted work of a small fusion, and nothing could launch it anyway -- until the
    worker is done with it (its native image is then linked: `built_elsewhere`)."""
    waits = _asked.get(_masked_text(comp))
    return waits is not None and not waits.is_set() and not _may_load()


def built_elsewhere(entry: KernelEntry, comp: Module, launch: Launch, args: list,
                    serial_only: bool, in_place: bool) -> bool:
    """compile="background": may this launch run its kernel now? True once the
    specialization it needs is loaded in this process; otherwise False: interpret meanwhile.

    A specialization the disk cache lacks is compiled by the worker process
    (`compile_service`) at once. One on disk is loaded on the build thread -- once Numba is
    loaded, or once the interpreter has spent FIRST_LOAD_S waiting for kernels (`pay`): a
    short program runs on the interpreter from start to end, never importing Numba. A
    specialization with a native image (`native_pair`) is linked at once, without Numba."""
    fn = dispatch.variant(math.prod(launch.sizes), serial_only, in_place)
    sig = compile_service.describe(args)
    if sig is None:  # (an argument the worker cannot rebuild: compiled here)
        return True
    want = (fn, sig)
    if want in entry.ready:
        return True
    state = entry.jobs.get(want)
    if state is None:
        if not os.path.exists(diskcache.built_marker(diskcache.cache_dir(), entry.key, fn,
                                                     sig)):
            job = entry.jobs[want] = compile_service.submit(
                entry.key, entry.source, diskcache.cache_dir(), ("kernel", "kernel_serial")[fn],
                sig)
            _asked[_masked_text(comp)] = job.done
            return False
        state = "built"
    if isinstance(state, compile_service.Job):
        if not state.done.is_set():
            return False
        entry.worker_s += state.seconds
        state = "built"
    if state == "built":
        forget_native(entry, sig, fn)  # (built since this process last looked)
        if native_pair(entry, sig, fn) is not None:
            entry.jobs.pop(want, None)
            entry.ready.add(want)
            _asked.pop(_masked_text(comp), None)
            return True
        _asked[_masked_text(comp)] = _NEVER
        entry.jobs[want] = background.submit(load_built, entry, *want) if _may_load() \
            else state
        return False
    if not state.done.is_set():  # (loading)
        return False
    entry.ready.add(want)  # (loaded; or it failed: the launch then builds it, and says why)
    del entry.jobs[want]
    return True


def load_built(entry: KernelEntry, fn: int, sig: tuple) -> None:
    """Load (or, for a damaged disk entry, compile) dispatcher `fn` of the entry's kernel for
    argument types `sig`: the build thread's job."""
    kernel = ensure_kernel(entry)
    cpu = dispatch.numba_cpu()
    t0 = time.perf_counter()
    types = cpu.numba_signature(sig)
    origin = cpu.build_signature(kernel[fn], types)
    if origin:
        entry.compile_s += time.perf_counter() - t0
        entry.origin = "worker" if origin == "disk" and entry.worker_s else origin
        diskcache.count_load(diskcache.cache_dir(), entry.key, fn, sig)
    write_native(entry, kernel[fn], fn, sig, types, types=True)


def load_all(timeout: float | None = None) -> bool:
    """`lazyarray.wait_compiles`: wait for the worker, then load every specialization asked
    for here (the next evaluations launch kernels); False if `timeout` passed first."""
    if not compile_service.wait(timeout):
        return False
    _rent[1] = True
    with cache_lock:
        entries = [e for e in cache.values() if e.jobs]
    for entry in entries:
        for want, state in list(entry.jobs.items()):
            if isinstance(state, compile_service.Job):
                entry.worker_s += state.seconds
            elif state != "built":
                state.done.wait(timeout)
                continue
            forget_native(entry, want[1], want[0])
            if native_pair(entry, want[1], want[0]) is not None:
                entry.ready.add(want)
                del entry.jobs[want]
                continue
            try:
                load_built(entry, *want)
            except Exception as exc:  # noqa: BLE001 - the launch builds it, and says why
                log.warning("lazyarray: loading kernel %s failed: %s", entry.key, exc)
            entry.ready.add(want)
            del entry.jobs[want]
    return True


_compile_lock = threading.Lock()  # threads launching one new kernel build it once


def ensure_kernel(entry: KernelEntry, counter: str = "disk_writes") -> tuple:
    """The entry's (parallel, serial) dispatchers, importing (or writing) its kernel module
    once whichever thread asks first (a new source file is counted under `counter`)."""
    with _compile_lock:
        if entry.kernel is None:
            path = diskcache.cache_dir()
            entry.kernel = dispatch.numba_cpu().compile_kernel(
                entry.key, entry.source, diskcache.kernel_folder(path, entry.key),
                counter=counter)
            diskcache.evict_now_and_then(path)
    return entry.kernel


def run_kernel(entry: KernelEntry, launch: Launch, args: list, serial_only: bool = False,
               in_place: bool = False) -> int:
    """Run the kernel (building it first if needed); returns its count of possible
    floating-point events."""
    work = math.prod(launch.sizes)
    pair = native_pair(entry, compile_service.describe(args), dispatch.variant(
        work, serial_only, in_place)) if entry.linked or entry.kernel is None else None
    chosen = None if pair is None else dispatcher(pair, work, serial_only, in_place)
    if chosen is not None:
        if blas.spinning():
            chosen = while_blas_spins(chosen, pair, work) or chosen
        stats.bump("kernels_launched")
        stats.bump("native_launches")
        try:
            return chosen(*args)
        finally:
            if chosen is pair[0]:
                ran_in_parallel()
    cpu = dispatch.numba_cpu()
    if entry.kernel is None:
        ensure_kernel(entry)
    t0 = time.perf_counter()
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
        sig = compile_service.describe(args)
        try:  # (never raises: the kernel ran, and a retry would run an update twice)
            if sig is not None:
                fn = int(chosen is entry.kernel[1])
                diskcache.mark_built(diskcache.cache_dir(), entry.key, fn, sig)
                write_native(entry, chosen, fn, sig, args)
        except Exception as exc:  # noqa: BLE001 - the next process compiles it again
            log.warning("lazyarray: kernel %s not marked built: %s", entry.key, exc)
    return flagged


def write_native(entry: KernelEntry, kernel, fn: int, sig: tuple, args, types=False) -> None:
    """Write the native image of a specialization just built or loaded through Numba, unless
    there is one (`args`: the launch's arguments, or with `types` Numba's argument types)."""
    path = diskcache.native_image(diskcache.cache_dir(), entry.key, fn, sig)
    if native.ENABLED and not os.path.exists(path):
        native.write(path, dispatch.numba_cpu().image_parts(kernel, args, sig=types))


_UNSEEN = object()


def native_pair(entry: KernelEntry, sig: tuple | None, fn: int) -> list | None:
    """The entry's [parallel, serial] kernels for arguments described by `sig`, the one of
    dispatcher `fn` linked from its native image if not yet (no Numba: milliseconds); None
    where that one has no image."""
    if sig is None or not native.ENABLED:
        return None
    pair = entry.native.get(sig)
    if pair is None:
        pair = entry.native[sig] = [_UNSEEN, _UNSEEN]
    if pair[fn] is _UNSEEN:
        pair[fn] = _load_native(entry, fn, sig)
        entry.linked |= pair[fn] is not None
    return pair if pair[fn] is not None else None


def forget_native(entry: KernelEntry, sig: tuple | None, fn: int | None = None) -> None:
    """Look for the image of `sig` (dispatcher `fn`, or both) again at its next launch (the
    worker built it), or, with fn None, never again in this process (a launch failed)."""
    pair = entry.native.get(sig)
    if fn is None:
        entry.native[sig] = [None, None]
    elif pair is not None and pair[fn] is None:
        pair[fn] = _UNSEEN


def _load_native(entry: KernelEntry, fn: int, sig: tuple):
    path = diskcache.cache_dir()
    t0 = time.perf_counter()
    try:
        kernel = native.load(diskcache.native_image(path, entry.key, fn, sig))
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - (damaged, foreign, not linkable): Numba's way
        log.debug("lazyarray: kernel %s loads through Numba: %s", entry.key, exc)
        return None
    entry.compile_s += time.perf_counter() - t0
    entry.origin = "worker" if entry.worker_s else "disk"
    stats.bump("disk_hits")
    diskcache.count_load(path, entry.key, fn, sig)
    return kernel


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


def recheck_flags(comp: Module, operands: list, entry: KernelEntry | None = None) -> None:
    """A kernel counted possible floating-point events: when the evaluation records NumPy's
    warnings, re-run the fusion on NumPy's loops to learn exactly which (values discarded);
    a kernel with cheap checks (`entry`'s) gives way to one with exact checks (`escalate`)."""
    if fpstate.active() is not None:
        stats.bump("fp_rechecks")
        escalate(entry, comp)
        interpret(comp, operands, report=True)
