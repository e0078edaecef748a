"""The one orchestrator: lower -> passes -> (codegen + cache + launch) -> buffers back into nodes.

Small graphs (every array below `eager_threshold` elements) and the `numpy` backend run on the
reference interpreter: no passes, no compile, so tiny work costs about what NumPy costs.
"""

from __future__ import annotations

import contextvars
import linecache
import math
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from lazyarray import backends, config, debug, stats
from lazyarray.graph import live
from lazyarray.graph.node import Node, buffer, toposort
from lazyarray.ir import fpstate
from lazyarray.ir.hlo import Module
from lazyarray.ir.interpret import evaluate
from lazyarray.ir.lower import lower
from lazyarray.ir.text import print_module
from lazyarray.passes import MAX_PLANS, optimize, run_pipeline
from lazyarray.passes.fusion import REASONS
from lazyarray.runtime import pool
from lazyarray.runtime.executor import (KernelRecord, Trace, execute, execute_lean,
                                        execute_replay, kernel_record, launch_prepared,
                                        prepared_single, recheck_flags, whole_owner)

_lock = threading.RLock()  # one materialization at a time mutates nodes
STRICT_ERRSTATE = ("raise", "call", "log", "print")  # modes only NumPy's own loops honour
# the jit trace in progress (lazyarray.jit): refuses to compute the values it traces
TRACING: contextvars.ContextVar = contextvars.ContextVar("lazyarray_tracing", default=None)


def device_backend(order: list[Node]) -> backends.Backend | None:
    """The backend that keeps its results in its own memory (`Backend.device_results`: cuda,
    xla) and runs this evaluation: the configured one, or the one holding an input that lives
    only there (computation follows data, as in the Array API); None: the host."""
    row = backends.configured(config.get().backend)
    if row is not None and row.device_results:
        return row
    for n in order:
        if n.op == "buffer" and not n.on_host:
            return backends.get(n.holder)
    return None


def on_device(order: list[Node]) -> bool:
    """Does this evaluation run on the GPU? With backend="cuda", or when any input lives only
    there (computation follows data, as in the Array API)."""
    device = device_backend(order)
    return device is not None and device.name == "cuda"


def _use_interpreter(nodes: list[Node]) -> bool:
    o = config.get()
    if o.backend == "numpy":
        return True
    if not fpstate.compiled_ok():
        return True  # np.errstate(...="raise"), under="warn": NumPy's own loops report
    if any(not n.on_host for n in nodes if n.op == "buffer"):
        return False  # small work on GPU-resident data stays there (no transfer)
    threshold = o.eager_threshold
    return all(math.prod(n.shape) < threshold for n in nodes)


def interpret_graph(order: list[Node], roots: list[Node]) -> list[np.ndarray]:
    """The reference interpreter straight on the graph (small work: no lowering, no passes)."""
    uses: dict[int, int] = {}
    for n in order:
        for s in n.srcs:
            uses[id(s)] = uses.get(id(s), 0) + 1
    for r in roots:
        uses[id(r)] = uses.get(id(r), 0) + 1
    vals: dict[int, np.ndarray] = {}
    memo: dict = {}  # multi-result library calls: run once
    # under the caller's np.errstate: NumPy raises (calls, logs) as it would; the categories
    # that warn raise here, to be recorded (fpstate) and issued at the user's line
    rec = fpstate.active()
    with np.errstate(**(rec.raising if rec is not None else {})):
        for n in order:
            if n.op in ("buffer", "constant"):
                vals[id(n)] = n.value
                continue
            xs = [vals[id(s)] for s in n.srcs]
            srcs = tuple(id(s) for s in n.srcs)
            try:
                vals[id(n)] = evaluate(n, xs, memo, srcs)
            except FloatingPointError as exc:
                if rec is None:
                    raise
                vals[id(n)] = fpstate.retry(rec, exc, evaluate, n, xs, memo, srcs)
            for s in n.srcs:  # free each intermediate at its last use
                uses[id(s)] -= 1
                if not uses[id(s)]:
                    del vals[id(s)]
    return [vals[id(r)] for r in roots]


def materialize(nodes: list[Node], host: bool = False) -> None:
    """Compute every pending node in `nodes` in one pass and turn each into a buffer leaf.

    `host`: compute on the host even if inputs live on the GPU (a view being observed: its
    base is fetched once, then NumPy applies the view).

    Floating-point warnings NumPy would give (np.errstate "warn") are issued afterwards, once
    each, at the user's line that forced the evaluation."""
    for n in nodes:  # nothing pending (an observed eager result, a computed array): no work
        if n.op != "buffer" or host and n._host is None:
            break
    else:
        return
    warn = fpstate._warn_state()[1]  # (fpstate.recording, inlined: every evaluation passes)
    if not warn:
        _materialize(nodes, host)
        return
    rec = fpstate.Recorder(warn)
    token = fpstate._current.set(rec)
    try:
        _materialize(nodes, host)
    finally:  # what NumPy warned before an error it raised is still warned
        fpstate._current.reset(token)
        if rec.messages:
            fpstate.emit(rec, forcing_frame())


def replay(module: Module, args: list, report: Report, attach) -> None:
    """Run the optimized `module` of an earlier evaluation (`report`'s) on new arguments of
    the same shapes: a large trace's value (trace_tier.force_large), what `materialize` would
    compute for the same graph, with the same warnings at the user's line, without building,
    lowering or optimizing the graph (as a `jit` replay). `attach(node)` receives the computed
    buffer node before warnings are issued.

    A module of prepared launches (one fusion of its parameters: `prepared_single`; fusions
    and their tuple elements: `execute_lean`) takes the lean path: the warnings recorder is
    set up only when something needs it (a launch that counted a possible flag), and the
    report is built when `last_report()` asks for it. With the caches cold (a large kernel
    just ran), every Python object a call touches costs a memory access: the where/clip chain's call
    at 1e7 spent about 200 µs around its kernel before."""
    global _last
    guard = _Recording()
    try:
        with _lock:
            t0 = time.perf_counter()
            direct = prepared_single(module, args)
            if direct is not None:
                p, ins, operands = direct
                results, flagged = launch_prepared(p, operands)
                if flagged:
                    guard(recheck_flags, ins.value, operands, p.entry)
                value, runs = results[0], ((p, ins, None),)
            else:
                done = execute_lean(module, args, guard)
                if done is None:  # any other module: its instructions in order (`execute`)
                    trace = Trace()
                    done = [guard(execute_replay, module, args, trace)], trace.kernels
                (value,), runs = done
            _materialization()
            _trace_replay()
            attach(buffer(value))
            seconds = time.perf_counter() - t0
            _last = (report, runs, seconds, forcing_site())
    finally:
        if guard.rec is not None and guard.rec.messages:
            fpstate.emit(guard.rec, forcing_frame())


_materialization, _trace_replay, _plan_hit = (stats.materialization, stats.trace_replay,
                                              stats.plan_hit)


class _Recording:
    """`guard(fn, *args)`: `fn(*args)` with NumPy's warnings recorded into the replay's
    recorder (made the first time; none when no category is set to "warn")."""

    __slots__ = ("rec",)

    def __init__(self):
        self.rec = None

    def __call__(self, fn, *args):
        rec = self.rec
        if rec is None:
            warn = fpstate._warn_state()[1]
            if not warn:
                return fn(*args)
            rec = self.rec = fpstate.Recorder(warn)
        token = fpstate._current.set(rec)
        try:
            return fn(*args)
        finally:
            fpstate._current.reset(token)


def _partners(order: list[Node], pending: list[Node], tracing, host: bool) -> list[Node]:
    """The nodes of live pending arrays that share work with this evaluation
    (`graph/live.py`), to compute with it: on the host's tiers, outside a jit trace, when
    NumPy's floating-point errors are not raised (a partner's would raise at another line)."""
    if tracing is not None or host or not fpstate.compiled_ok() \
            or config.get().backend not in ("cpu", "numpy"):
        return []
    extra = live.partners(order, pending)
    if extra:
        stats.bump("co_materialized", len(extra))
    return extra


def _materialize(nodes: list[Node], host: bool) -> None:
    global _last
    with _lock:
        pending = list({id(n): n for n in nodes if not n.realized}.values())
        if not pending:
            return
        tracing = TRACING.get()
        if tracing is not None:
            tracing.check(pending)
        _materialization()
        t0 = time.perf_counter()
        order = toposort(pending)
        extra = _partners(order, pending, tracing, host)
        if extra:  # live arrays sharing this evaluation's work: computed with it
            pending += extra
            order = toposort(pending)
        dask = _dask_backend(order)
        o = config.get()
        if o.backend == "cpu" and not (o.debug or o.dump_dir) and fpstate.compiled_ok():
            # the compiled tier on the host, unless every node is small or a leaf is on the GPU
            sole = _sole_buffers(order, pending)  # before the arguments are collected: they hold them
            found = _graph_key(order, pending, o.eager_threshold)
            if found is not None:
                _run_graph(order, pending, *found, sole, t0)
                return
        if _use_interpreter(order):
            stats.bump("interpreter_runs")
            report = Report(None, None, interpreted=True, planned=False)
            outs = interpret_graph(order, pending)
            debug.interpreted(order)
        elif not host and (device := device_backend(order)) is not None:
            sole = _sole_device_buffers(order, pending) if device.donates else set()
            module, args = lower(pending, order, leaf=device.leaf)
            optimized = optimize(module, device.passes)
            trace = Trace()
            if sole:  # buffers nothing else observes: the backend may write its results there
                free = frozenset(k for k, a in enumerate(args) if id(a) in sole)
                outs = device.run(optimized, args, trace, False, free=free)
            else:
                outs = device.run(optimized, args, trace, False)
            for node, flat in zip(pending, outs, strict=True):
                node.realize_device(flat, device.name)
            _last = Report(module, optimized, trace.kernels, updates=trace.updates,
                           planned=False, seconds=time.perf_counter() - t0,
                           site=forcing_site(), backend=device.name)
            return
        elif host and any(not n.on_host for n in order if n.op == "buffer"):
            # a view of a device-resident base being observed: the base is fetched once (a
            # counted transfer) and NumPy applies the view
            report = Report(None, None, interpreted=True, planned=False)
            outs = interpret_graph(order, pending)
        else:
            sole = _sole_buffers(order, pending)  # before lowering: its argument list holds them too
            module, args = lower(pending, order)
            trace = Trace()
            if dask is not None:
                optimized = optimize(module, dask.passes)
                outs = dask.run(optimized, args, trace, False)
            elif debug.active():  # LAZYARRAY_DEBUG / LAZYARRAY_DUMP_DIR: logs, snapshots
                optimized, outs = debug.run_compiled(module, args, trace)
            else:
                optimized = optimize(module)
                free = frozenset(k for k, a in enumerate(args) if id(a) in sole)
                outs = execute(optimized, args, trace, free=free)
            report = Report(module, optimized, trace.kernels, updates=trace.updates,
                            write_reasons=trace.write_reasons, planned=False)
        report.seconds = time.perf_counter() - t0
        report.site = forcing_site()
        _last = report
        _realize(pending, outs)


def _run_graph(order: list[Node], pending: list[Node], key: tuple, args: list, sole: set,
               t0: float) -> None:
    """The compiled tier's evaluation of `pending` on the host: the plan of an earlier
    evaluation of the same structure (`_graphs`), or one lowered and optimized now; its
    prepared launches when nothing may be donated (`_run_lean`), else `execute`."""
    global _last
    plan = _graphs.get(key)
    if plan is None:
        module, args = lower(pending, order)
        plan = Report(module, optimize(module), planned=False)
        if len(_graphs) >= MAX_PLANS:
            _graphs.clear()
        _graphs[key] = plan
    else:
        _plan_hit()
    free = frozenset(k for k, a in enumerate(args) if id(a) in sole) if sole else None
    lean = None if free else _run_lean(plan.after, args)
    if lean is not None:
        outs, runs = lean
        _last = (plan, runs, time.perf_counter() - t0, forcing_site())
    else:
        trace = Trace()
        outs = execute(plan.after, args, trace, free=free or frozenset())
        _last = Report(plan.before, plan.after, trace.kernels, updates=trace.updates,
                       write_reasons=trace.write_reasons, planned=False, seconds=time.perf_counter() - t0, site=forcing_site())
    _realize(pending, outs)


def _realize(pending: list[Node], outs: list) -> None:
    for node, value in zip(pending, outs, strict=True):
        value = np.asarray(value)
        if value.dtype != node.dtype:  # the interpreter's NumPy call may widen a 0-d result
            value = value.astype(node.dtype)
        node.realize(value)


# The lazy tier's plans: a graph's structure -> the Report (modules before and after the
# passes) of its first evaluation. A graph evaluated again (a loop body, the same expression
# on new data) is neither lowered nor optimized again: its key is one walk over its nodes.
_graphs: dict[tuple, Report] = {}


def _graph_key(order: list[Node], roots: list[Node], threshold: int) -> tuple | None:
    """(the structure of the pending graph `order`, as `lower` would see it, its arguments):
    per node its op, shape, dtype, attributes and inputs' positions; per leaf which argument
    it is (two leaves of one array are one argument); per constant its bytes. Equal keys lower
    to equal modules. None when no node has `threshold` elements (the interpreter's work) or
    a leaf lives on the GPU (`_use_interpreter`, `on_device`)."""
    pos: dict[int, int] = {}
    parts: list = []
    args: list = []
    index: dict[int, int] = {}
    big = False
    for i, n in enumerate(order):
        pos[id(n)] = i
        op = n.op
        if not big:
            big = math.prod(n.shape) >= threshold
        if op == "buffer":
            if n._host is None and n.device is not None:
                return None
            v = n.value
            k = index.setdefault(id(v), len(args))
            if k == len(args):
                args.append(v)
            parts.append((0, n.shape, n.dtype, k))
        elif op == "constant":
            v = n.value
            parts.append((1, n.dtype, v.dtype.str, v.tobytes()))
        else:
            parts.append((op, n.shape, n.dtype, n.attrs, *map(pos.__getitem__, map(id, n.srcs))))
    if not big:
        return None
    parts.append(tuple(map(pos.__getitem__, map(id, roots))))
    return tuple(parts), args


def _run_lean(module: Module, args: list) -> tuple[list, tuple] | None:
    """(the outputs, the runs for the report) of `module` on `args` when it is one fusion of
    its parameters whose launch is prepared (`replay`'s lean path: no walk, no donor search;
    the caller knows no argument may be donated), else None (`execute` runs it: a module of
    several fusions may write one's result into another's buffer)."""
    direct = prepared_single(module, args)
    if direct is None:
        return None
    p, ins, operands = direct
    results, flagged = launch_prepared(p, operands)
    if flagged:
        recheck_flags(ins.value, operands, p.entry)
    return results, ((p, ins, None),)


def _refs(order: list[Node], inner: dict, idle: int | None = None) -> dict[int, tuple[int, int]]:
    """Per buffer leaf of `order` read by pending nodes: id(array) -> (references to the leaf
    beyond the pending graph's own, references to its memory's owner), as counted here; only
    the leaves with `idle` references beyond the graph's, when given."""
    out = {}
    for n in order:
        if n.op != "buffer" or id(n) not in inner:
            continue
        nref = sys.getrefcount(n) - inner[id(n)]
        if idle is not None and nref != idle:  # held elsewhere (a user's array): never sole
            continue
        v = n._host
        if not isinstance(v, np.ndarray) or not v.flags.c_contiguous or not whole_owner(v) \
                or n.device is not None:  # a GPU copy of it would go stale
            continue
        owner = v if v.base is None else v.base
        if owner is v:
            mem = sys.getrefcount(v)
        else:  # a view of all of its owner: the view is held (node, here) and the owner (the
            # view's base, here, and the pool's list when pooled): held elsewhere = more
            mem = max(sys.getrefcount(v) + 1, sys.getrefcount(owner) + (not pool.owns(v)))
        out[id(v)] = (nref, mem)
    return out


def _inner_refs(order: list[Node]) -> dict[int, int]:
    inner: dict[int, int] = {}
    for n in order:
        for s in n.srcs:
            inner[id(s)] = inner.get(id(s), 0) + 1
    return inner


def _idle_refs() -> tuple[int, int]:
    """What `_refs` counts for a leaf only the pending graph holds (a probe: reference counts
    differ between Python versions)."""
    a = np.empty(1)
    leaf = Node("buffer", (), (1,), a.dtype, (), a)
    del a
    order = [leaf, Node("negative", (leaf,), (1,), leaf.dtype)]
    del leaf
    (counts,) = _refs(order, _inner_refs(order)).values()
    return counts


def _sole_buffers(order: list[Node], pending: list[Node]) -> set[int]:
    """ids of the input arrays of this evaluation that nothing outside its pending graph can
    observe, so once the graph's last reader is done the buffer is dead and may be written in
    place (buffer donation for inputs; the version rule of runtime/versions.py). A reader is
    anyone holding the leaf or its memory -- a user-visible array, another pending graph, a
    NumPy view -- *or* holding a node of this graph that reads the leaf, directly or not, and
    that this evaluation does not compute for good: `y = x * 2; z = y + 1; del x`, forcing
    `z`, must leave `x`'s buffer intact, as `y` will read it later."""
    inner = _inner_refs(order)
    counts = _refs(order, inner, _IDLE[0])
    sole = {k for k, c in counts.items() if c == _IDLE}
    if sole:
        sole -= _read_later(order, inner, pending)
    return sole


def _sole_device_buffers(order: list[Node], pending: list[Node]) -> set[int]:
    """`_sole_buffers` for leaves whose data lives only on a device: ids of the device arrays
    nothing outside this evaluation's graph observes (buffer donation on the device)."""
    inner = _inner_refs(order)
    sole = set()
    for n in order:
        if n.op == "buffer" and id(n) in inner and n._host is None and n.device is not None \
                and sys.getrefcount(n) - inner[id(n)] == _IDLE[0] \
                and sys.getrefcount(n.device) == _DEVICE_IDLE:
            sole.add(id(n.device))
    if sole:
        sole -= _read_later(order, inner, pending)
    return sole


def _idle_device_refs() -> int:
    """What `sys.getrefcount` says of an object one attribute alone holds (a probe, as
    `_idle_refs`: reference counts differ between Python versions)."""
    leaf = Node("buffer", (), (1,), np.dtype(np.float64), (), None)
    leaf.device = object()
    return sys.getrefcount(leaf.device)


_DEVICE_IDLE = _idle_device_refs()  # a device array only its node holds


def _read_later(order: list[Node], inner: dict, pending: list[Node]) -> set[int]:
    """ids of the buffers that a node of `order` reads, directly or through other nodes, when
    that node is held outside the graph (a live array's version, a view's memo, another
    graph) and is not one of the `pending` nodes this evaluation realizes: it stays pending,
    and will read those buffers again."""
    done = {id(n) for n in pending}
    held = [n for n in order if n.op != "buffer" and id(n) not in done
            and sys.getrefcount(n) - inner.get(id(n), 0) > _IDLE[0]]
    out: set[int] = set()
    seen: set[int] = set()
    while held:
        n = held.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op == "buffer":
            if n._host is not None:
                out.add(id(n._host))
            if n.device is not None:
                out.add(id(n.device))
        elif not n.realized:
            held.extend(n.srcs)
    return out


def forcing_frame():
    """The innermost frame outside lazyarray and NumPy: the user's code forcing an evaluation
    (None if there is none)."""
    return fpstate.user_frame()


def forcing_site() -> tuple | None:
    """Where user code forced the current evaluation: (file, line, function) of the innermost
    frame outside lazyarray and NumPy, or None. `Report.forced_at` reads the source line only
    when asked (linecache costs 30-40 µs per evaluation with cold caches)."""
    f = fpstate.user_frame()
    return None if f is None else (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


def _site_text(site: tuple | None) -> str:
    if site is None:
        return "<unknown>"
    file, line, name = site
    text = linecache.getline(file, line).strip()
    return f"{file}:{line} in {name}" + (f": {text}" if text else "")


_IDLE = _idle_refs()


def _dask_backend(order: list[Node]) -> backends.Backend | None:
    """The dask backend when it runs this graph, else None (after computing any dask leaves
    of the graph: the other tiers take NumPy buffers)."""
    if config.get().backend == "dask" and not _use_interpreter(order):
        return backends.get("dask")
    dask = backends.loaded("dask")
    if dask is not None and dask.module.foreign_leaves:
        dask.module.resolve_leaves(order)
    return None


@dataclass
class Report:
    """One evaluation, explained: the HLO before/after the passes and, per kernel, why its
    fusion ends where it does, its cache status and build time.

    `explain(*arrays)` returns a plan (nothing computed); `explain()` with no arrays returns
    the report of the last evaluation that ran, with the line that forced it.
    """

    before: Module | None
    after: Module | None
    kernels: list[KernelRecord] = field(default_factory=list)
    interpreted: bool = False
    updates: list[str] = field(default_factory=list)  # per write: "in place", "copy" or "new"
    write_reasons: list[str] = field(default_factory=list)  # per write: why, in words
    site: tuple | None = None  # (file, line, function) that forced (or asked to explain) it
    seconds: float = 0.0  # wall time of the evaluation (0 for a plan)
    planned: bool = True  # True: from explain(*arrays), nothing ran
    backend: str = ""  # a device backend that ran it ("cuda", "xla"); "": the host

    @property
    def forced_at(self) -> str:
        """The user's source line that forced (or asked to explain) it: "file:line in
        function: source"."""
        return _site_text(self.site)

    @property
    def hlo_before(self) -> str:
        return print_module(self.before) if self.before is not None else ""

    @property
    def hlo_after(self) -> str:
        return print_module(self.after) if self.after is not None else ""

    @property
    def num_kernels(self) -> int:
        """Compiled kernels the evaluation launches (0 when it runs on the interpreter)."""
        if self.interpreted:
            return 0
        return sum(k.status in ("hit", "miss") for k in self.kernels)

    @property
    def bytes_avoided(self) -> int:
        """Bytes of intermediate arrays that fusion kept out of memory."""
        return 0 if self.interpreted else sum(k.bytes_avoided for k in self.kernels)

    def __str__(self) -> str:
        what = "plan" if self.planned else f"evaluation ({self.seconds * 1e3:.3f} ms)"
        lines = [f"== {what}, forced at {self.forced_at} =="]
        if self.interpreted:
            lines.append("(below the eager threshold, numpy backend or a strict errstate: "
                         "runs on the interpreter, no kernels)")
            if self.before is not None:
                lines += ["== HLO ==", self.hlo_before]
            return "\n".join(lines)
        if self.backend:
            lines.append(f"== backend: {self.backend} ==")
        lines += ["== HLO before optimization ==", self.hlo_before,
                  "== HLO after optimization ==", self.hlo_after,
                  f"== kernels: {self.num_kernels}, intermediates avoided: "
                  f"{self.bytes_avoided} bytes =="]
        for k in self.kernels:
            why = "+".join(REASONS.get(r, r) for r in k.reason.split("+")) if k.reason else ""
            lines.append(f"{k.name}: kind={k.kind} signature={k.key} cache={k.status}"
                         + (f" built={k.origin} in {k.compile_s * 1e3:.1f} ms" if k.origin else "")
                         + (" (interpreted while the kernel compiles in the background)"
                            if k.status == "compiling" else ""))
            if why:
                lines.append(f"  ends because {why}")
            lines.append(f"  intermediates avoided: {k.bytes_avoided} bytes")
            if k.differs:
                lines.append("  differs from the nearest cached signature:")
                lines += ["    " + d for d in k.differs.splitlines()]
            if k.source:
                lines.append(str(k.source))  # (a device backend's run: its live record)
        if self.updates:
            lines.append("== writes: " + ", ".join(self.updates) + " ==")
            lines += [f"  write {i}: {why}" for i, why in enumerate(self.write_reasons)]
        return "\n".join(lines)

    __repr__ = __str__


_last: Report | tuple | None = None  # a tuple: a lean replay's, built when asked (`replay`)


def last_report() -> Report | None:
    """The report of the last evaluation that ran (None before the first)."""
    global _last
    last = _last
    if type(last) is tuple:
        report, runs, seconds, site = last
        records = []
        for run in runs:
            if type(run) is KernelRecord:  # (a launch that is not prepared)
                record = run
                record.name = f"fusion.{len(records)}"
            else:
                p, ins, spent = run
                record = kernel_record(p, ins, len(records))
                record.seconds = seconds if spent is None else spent
            records.append(record)
        last = _last = Report(report.before, report.after, records, planned=False,
                              seconds=seconds, site=site)
    return last


def explain(nodes: list[Node]) -> Report:
    """Plan the evaluation of `nodes` without computing them."""
    with _lock:
        at = forcing_site()
        pending = list({id(n): n for n in nodes if not n.realized}.values())
        order = toposort(pending)
        trace = Trace()
        device = device_backend(order)
        if device is not None:
            module, args = lower(pending, order, leaf=device.module.peek_leaf)
            optimized = run_pipeline(module, device.passes)
            device.run(optimized, args, trace, True)
        else:
            sole = _sole_buffers(order, pending)
            module, args = lower(pending, order)
            optimized = run_pipeline(module)
            free = frozenset(k for k, a in enumerate(args) if id(a) in sole)
            execute(optimized, args, trace, dry=True, free=free)
        return Report(module, optimized, trace.kernels, _use_interpreter(order), trace.updates,
                      write_reasons=trace.write_reasons, site=at,
                      backend=device.name if device is not None else "")
