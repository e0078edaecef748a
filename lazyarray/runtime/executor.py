"""Run an optimized module: plan each fusion's launch, find or build its kernel, launch it.

`execute` walks the module's instructions (fusions, views, products, library calls, writes);
`execute_replay` and `execute_lean` are a replay's shorter paths over prepared launches. The
kernel cache is in `kernels`, the buffers a launch writes and donation in `buffers`, the
launches remembered per operand layout in `launches`, the choice of threads in `dispatch`.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from lazyarray import config, stats
from lazyarray.codegen.layout import Launch, plan
from lazyarray.ir import fpstate
from lazyarray.ir.hlo import Instr, MOVEMENT, Module
from lazyarray.ir.interpret import apply_movement, interpret
from lazyarray.ops import library
from lazyarray.runtime import background, blas, compile_service, diskcache, pool
from lazyarray.runtime.buffers import (PREPARED_COMPUTATIONS, covering_updates, donatable,
                                       donate, donor_candidates, gathered, hazard, kernel_args,
                                       new_version, note_in_place, owes_exact_warnings, uses,
                                       version_buffer, why_copied, writable, write_kind)
from lazyarray.runtime.dispatch import PARALLEL_MIN_AFTER_BLAS
from lazyarray.runtime.kernels import (KernelEntry, KernelRecord, Trace, build_kernel,
                                       built_elsewhere, forget_native, interpret_only, pay,
                                       is_cached, kernel_entry, nearest_difference,
                                       recheck_flags, regenerated, run_kernel, value_error)
from lazyarray.runtime.launches import (PREPARED_LAYOUTS, launch_prepared, layout_key, prepare,
                                        run_prepared, update_launch)
from lazyarray.runtime.launches import prepared
from lazyarray.storage import copy_outside, strided_view

# read from here by the engine, the dask backend and the benchmark tools
from lazyarray.runtime.buffers import whole_owner  # noqa: F401
from lazyarray.runtime.kernels import cache_clear  # noqa: F401
from lazyarray.runtime.launches import kernel_record  # noqa: F401

log = logging.getLogger("lazyarray")


def run_fusion(ins: Instr, operands: list, trace: Trace | None, dry: bool,
               serial: bool = False, donors: tuple = (), regen: dict | None = None,
               fresh: bool = False, exact: bool = False) -> list:
    """Run one fusion on NumPy operands (`serial`: never the parallel kernel, for callers that
    already run one fusion per thread, such as the dask backend's chunk tasks).

    An update fusion writes its base's new version; `donors` holding the base's operand
    index lets it write into the base's own buffer (see `buffers.new_version`); `fresh`: the
    writes that follow overwrite every element outside its region
    (`buffers.covering_updates`), so a new version's buffer is left uninitialized there.
    `regen`: for donors of a fusion that owes NumPy's exact warnings, the operands of the
    matrix product each is the result of: a flagged launch computes them again for its
    recheck (`kernels.regenerated`). `exact`: the fusion owes NumPy's exact warnings: an
    update written in place whose value reads the written region keeps the region's old
    values aside for a flagged launch's recheck (O(region), never a copy of the buffer)."""
    comp: Module = ins.value
    if not dry and compile_mode() == "background" and interpret_only(comp):
        return _interpret_unplanned(ins, operands, trace, donors, fresh)
    if ins.attr("kind") == "update":
        return _run_update(ins, operands, trace, dry, serial, donors, fresh, exact)
    in_place = bool(donors) and ins.attr("kind") == "loop"
    lkey = None if dry else layout_key(operands, serial, in_place)
    if lkey is not None:
        known = prepared.get(comp)
        p = known.get(lkey) if known is not None else None
        if p is not None:
            return run_prepared(p, ins, operands, trace, donors, regen)
    launch = plan(comp, operands, flat=True, in_place=in_place)
    differs = "" if trace is None or is_cached(comp, launch) \
        else nearest_difference(comp, launch.spec)
    entry, hit = kernel_entry(comp, launch)
    if trace is None:
        if dry:
            return [np.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
        return _run_fusion(comp, operands, launch, entry, hit, lkey, serial, donors,
                           regen=regen)
    # a hit needs a built kernel (explain's plan renders, never builds)
    status = "interpreted" if entry.source is None or launch.empty else (
        "hit" if hit and (entry.kernel is not None or entry.linked) else "miss")
    record = KernelRecord(f"fusion.{len(trace.kernels)}", ins.attr("kind"), entry.key, status,
                          entry.source, comp, ins.attr("reason", ""), differs, entry)
    trace.kernels.append(record)
    if dry:
        return [np.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
    record.compiled = not (entry.source is None or launch.empty or entry.kernel
                             or entry.linked)
    t0 = time.perf_counter()
    try:
        return _run_fusion(comp, operands, launch, entry, hit, lkey, serial, donors,
                           regen=regen, record=record)
    finally:
        record.seconds = time.perf_counter() - t0


def _run_update(ins: Instr, operands: list, trace: Trace | None, dry: bool, serial: bool,
                donors: tuple, fresh: bool = False, exact: bool = False) -> list:
    """An update fusion: one kernel computes the written value and stores it in the region."""
    comp: Module = ins.value
    root = comp.instrs[comp.outputs[0]]
    k = comp.instrs[root.operands[0]].attr("index")
    base = operands[k]
    launch = update_launch(comp, operands, None if dry else layout_key(operands, serial))
    differs = "" if trace is None or is_cached(comp, launch) \
        else nearest_difference(comp, launch.spec)
    entry, hit = kernel_entry(comp, launch)
    # the interpreter (codegen declined, or an empty region) returns a new array
    runs = entry.source is not None and not launch.empty
    why = "" if k in donors and runs else why_copied(k in donors, not runs)
    inplace = not why
    # a value that reads the written region at other elements than the one it stores (a
    # row update reading its own row shifted) goes through a buffer of the region's size,
    # then into the region: 2 x region more traffic, where a new version copies the array
    # outside the region (a stencil over the whole interior: that copy is the smaller)
    hazardous = inplace and hazard(launch, base)
    through = hazardous and THROUGH_SHARE * math.prod(launch.sizes) < base.size
    if hazardous:
        why = THROUGH if through else why_copied(True, False)
        inplace = through
    # owing exact warnings, an in-place update whose value reads its own region keeps the
    # region's old values aside (O(region)): a flagged launch re-reads them (`_run_fusion`)
    keep = inplace and not through and exact and hazard(launch, base, True)
    fresh = fresh and not inplace
    record = None
    if trace is not None:
        trace.updates.append(write_kind(inplace, fresh))
        trace.write_reasons.append(why or "in place")
        status = "interpreted" if entry.source is None or launch.empty else (
            "hit" if hit and (entry.kernel is not None or entry.linked) else "miss")
        record = KernelRecord(f"fusion.{len(trace.kernels)}", "update", entry.key, status,
                              entry.source, comp, ins.attr("reason", ""), differs, entry)
        trace.kernels.append(record)
        record.compiled = not (dry or entry.source is None or launch.empty or entry.kernel
                                 or entry.linked)
    if dry:
        return [writable(base) if inplace else np.empty(base.shape, base.dtype)]
    stats.bump("updates_fused")
    stats.bump(write_count(inplace, base))
    t0 = time.perf_counter()
    try:
        if entry.source is None or launch.empty:
            return _run_fusion(comp, operands, launch, entry, hit, None, serial)
        store = new_version(comp, launch, base, inplace, fresh)
        if through:
            store = _through_buffer(store, launch)
        return _run_fusion(comp, operands, launch, entry, hit, None, serial, store=store,
                           record=record, keep=keep)
    finally:
        if record is not None:
            record.seconds = time.perf_counter() - t0


THROUGH = "in place, through a buffer of the region (the value reads the region elsewhere)"
THROUGH_SHARE = 3  # `_run_update`: through a buffer when the region is under 1/3 of the array


def _through_buffer(store: tuple, launch: Launch) -> tuple:
    """`store` (the new version's buffer, the region the kernel stores into) with a fresh
    buffer of the region's layout in place of the region, and what copies it into the
    region once the kernel ran: (buffer, region view, (the region, the buffer's elements))."""
    out, region = store
    temp = np.empty(region.shape, region.dtype)
    if launch.spec.flat_store:  # a flat window: only the region's elements go back
        st = launch.region[1]
        sizes = launch.sizes or (1,)
        back = (strided_view(region, 0, sizes, st or (1,)), strided_view(temp, 0, sizes,
                                                                         st or (1,)))
    else:
        back = (region, temp)
    return out, temp, back


def _run_fusion(comp: Module, operands: list, launch: Launch, entry: KernelEntry,
                hit: bool, lkey: tuple | None, serial: bool = False, donors: tuple = (),
                store=None, regen: dict | None = None,
                record: KernelRecord | None = None, keep: bool = False) -> list:
    if entry.source is None or launch.empty:  # declined by codegen, or nothing to iterate
        stats.bump("fallbacks" if entry.source is None else "interpreter_runs")
        return _interpret(comp, operands)
    stats.bump("hits" if hit else "misses")
    results, head, tail = kernel_args(comp, launch, store)
    mode = compile_mode()
    if mode == "thread" and entry.kernel is None:
        if entry.building is None:
            entry.building = background.submit(build_kernel, entry, launch,
                                               [*head, *launch.arrays, *tail],
                                               diskcache.cache_dir())
        if not entry.building.done.is_set():  # not ready: the interpreter answers meanwhile
            stats.bump("background_interpreted")
            return _interpret(comp, operands)
    elif mode == "background" and not built_elsewhere(
            entry, comp, launch, [*head, *launch.arrays, *tail], serial, bool(donors)):
        stats.bump("background_interpreted")  # the worker process builds it meanwhile
        if record is not None:
            record.status, record.compiled = "compiling", False
        t0 = time.perf_counter()
        try:
            return _interpret(comp, operands, None if store is None else store[0])
        finally:
            pay(time.perf_counter() - t0)
    fresh = [(a.shape, a.flat[0], a.dtype) for a in head[len(results):]]  # partials' inits
    if donors:
        donate(results, head, operands, donors, donor_candidates(comp, launch, operands))
    for attempt in (0, 1):
        try:
            old = store[1].copy() if keep else None
            flagged = run_kernel(entry, launch, [*head, *launch.arrays, *tail], serial,
                                 bool(donors))
            if launch.spec.tables and tail[-1][0]:
                _raise_index_error(comp, operands)
            if flagged and old is not None:  # the region's old values back for the recheck
                new, store[1][...] = store[1].copy(), old
                recheck_flags(comp, operands, entry)
                store[1][...] = new
            elif flagged:
                recheck_flags(comp, regenerated(operands, regen), entry)
            if store is not None and len(store) == 3:  # (`_through_buffer`)
                np.copyto(*store[2])
        except Exception as exc:
            raised = value_error(exc)
            if raised is not None:  # NumPy raises it too (integer ** negative, ...)
                raise raised from None
            if attempt == 0:  # a corrupt or stale disk entry: forget it, compile afresh
                diskcache.purge(diskcache.cache_dir(), entry.key)
                entry.kernel = None
                forget_native(entry, compile_service.describe([*head, *launch.arrays, *tail]))
                results, head, tail = kernel_args(comp, launch, store)
                continue
            log.warning("lazyarray: kernel %s failed (%s); interpreting", entry.key, exc)
            entry.source, entry.reason = None, str(exc)
            stats.bump("fallbacks")
            return _interpret(comp, operands)
        # the kernel ran: remember its launch (outside the retry above: a second run of an
        # update that stored in place would apply it twice)
        if lkey is not None and not entry.superseded:
            try:
                _remember(comp, lkey, prepare(comp, launch, entry, results, head, fresh, tail,
                                              operands, serial, bool(donors)))
            except Exception as exc:  # noqa: BLE001 - (an optimization: launched unprepared)
                log.warning("lazyarray: launch of kernel %s not remembered: %s", entry.key, exc)
        return results


def _remember(comp: Module, lkey: tuple, p) -> None:
    if p is not None:
        known = prepared.get(comp)
        if known is None or len(known) >= PREPARED_LAYOUTS:
            if len(prepared) >= PREPARED_COMPUTATIONS:
                prepared.clear()
            known = prepared[comp] = {}
        known[lkey] = p


def _interpret(comp: Module, operands: list, out: np.ndarray | None = None) -> list:
    """The interpreter in place of a kernel, reporting floating-point warnings as NumPy would.
    `out`: an update's new version's buffer (`buffers.version_buffer`): the written value is
    computed, then stored into its region of that buffer, as the kernel would (in place when
    it is the old version's: no copy of the whole array)."""
    if out is None:
        return interpret(comp, operands, report=True)
    root = comp.instrs[comp.outputs[0]]
    (value,) = interpret(comp, operands, report=True, outputs=(root.operands[1],))
    strided_view(out.reshape(-1), root.attr("offset"), value.shape, root.attr("strides"))[
        ...] = value
    return [out]


def _interpret_unplanned(ins: Instr, operands: list, trace: Trace | None, donors: tuple,
                         fresh: bool) -> list:
    """A fusion no kernel can run yet (`kernels.interpret_only`), interpreted without the
    planning a launch needs: an update stores its value into the old version's buffer when
    that version is dead (`donors`), whatever the value reads (it is computed whole before
    the store), else into a copy."""
    comp: Module = ins.value
    if trace is not None:
        trace.kernels.append(KernelRecord(f"fusion.{len(trace.kernels)}", ins.attr("kind"), "",
                                          "compiling", None, comp, ins.attr("reason", "")))
    stats.bump("background_interpreted")
    t0 = time.perf_counter()
    try:
        if ins.attr("kind") != "update":
            return interpret(comp, operands, report=True)
        root = comp.instrs[comp.outputs[0]]
        k = comp.instrs[root.operands[0]].attr("index")
        base, inplace = operands[k], k in donors
        if trace is not None:
            trace.updates.append(write_kind(inplace, fresh and not inplace))
            trace.write_reasons.append("in place" if inplace else why_copied(False, False))
        stats.bump("updates_fused")
        stats.bump(write_count(inplace, base))
        return _interpret(comp, operands, version_buffer(comp, base, inplace, fresh))
    finally:
        pay(time.perf_counter() - t0)


def compile_mode() -> str:
    """How a kernel not built yet is built: "background" (a worker process; the interpreter
    answers meanwhile), "thread" (the same on a thread of this process) or "now"."""
    o = config.get()
    if o.background_compile:
        return "thread"
    return o.compile if o.backend == "cpu" else "now"


def _raise_index_error(comp: Module, operands: list) -> None:
    """A kernel flagged an out-of-range gather index: NumPy's IndexError, from the reference
    semantics on the same operands (the first bad index in NumPy's order)."""
    interpret(comp, operands)
    raise IndexError("index out of bounds in a gather")  # unreachable: the interpreter raised


def execute_replay(m: Module, args: list, trace: Trace) -> np.ndarray:
    """`execute(m, args, trace)[0]` for a replay (`engine.replay`: nothing donated)."""
    direct = prepared_single(m, args)
    if direct is not None:
        return run_prepared(*direct, trace, ())[0]
    return np.asarray(execute(m, args, trace)[0])


def prepared_single(m: Module, args: list) -> tuple | None:
    """(the prepared launch, the fusion, its operands) when `m` is one fusion of its
    parameters (elementwise chains, stencils) whose launch is prepared for these layouts: a
    replay runs it directly, with no walk over the instructions and no donor search; else
    None."""
    single = _single.get(m)
    if single is None:
        if len(_single) >= PREPARED_COMPUTATIONS:
            _single.clear()
        single = _single[m] = _single_fusion(m)
    if single:
        ins, params = single
        operands = [args[k] for k in params]
        known = prepared.get(ins.value)
        p = None if known is None else known.get(layout_key(operands, False))
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


_LEAN_OPS = frozenset({"parameter", "fusion", "get-tuple-element"})
_lean: dict[Module, bool] = {}


def execute_lean(m: Module, args: list, guard) -> tuple[list, list] | None:
    """`execute(m, args)` for a replay (`engine.replay`) of a module of parameters, fusions
    (not updates) and tuple elements (a row softmax, column statistics): each fusion's
    prepared launch, with no donor search and no kernel records; None for any other module.
    `guard(fn, *args)` runs what needs NumPy's warnings recorded: the recheck of a flagged
    launch, a fusion whose launch is not prepared for these layouts. Returns (the outputs, per fusion its (prepared
    launch, fusion, seconds) or its KernelRecord) for the report (`engine.last_report`)."""
    lean = _lean.get(m)
    if lean is None:
        if len(_lean) >= PREPARED_COMPUTATIONS:
            _lean.clear()
        lean = _lean[m] = all(ins.opcode in _LEAN_OPS and ins.attr("kind") != "update"
                              for ins in m.instrs)
    if not lean:
        return None
    dead = uses(m)[1]
    vals: list = [None] * len(m.instrs)
    runs = []
    for i, ins in enumerate(m.instrs):
        op = ins.opcode
        if op == "parameter":
            vals[i] = args[ins.attrs[0][1]]  # ("index", k)
        elif op == "fusion":
            operands = [vals[o] for o in ins.operands]
            key = layout_key(operands, False)
            known = prepared.get(ins.value)
            p = None if known is None else known.get(key)
            if p is None:  # not preparable (a row kernel), or not yet for these layouts
                trace = Trace()
                out = guard(run_fusion, ins, operands, trace, False)
                runs += trace.kernels
            else:
                t0 = time.perf_counter()
                out, flagged = launch_prepared(p, operands)
                if flagged:
                    guard(recheck_flags, ins.value, operands, p.entry)
                runs.append((p, ins, time.perf_counter() - t0))
            vals[i] = out[0] if len(out) == 1 else tuple(out)
        else:  # get-tuple-element
            vals[i] = vals[ins.operands[0]][ins.attr("index")]
        for o in dead[i]:  # released at its last use: a pooled buffer is free for the next result
            vals[o] = None
    return [vals[o] for o in m.outputs], runs


def write_count(inplace: bool, base) -> str:
    """The counter of a write: in place, or into a new version whose rest was copied from the
    old buffer, or filled from a constant (the old version a broadcast scalar: no buffer)."""
    if inplace:
        return "updates_in_place"
    constant = isinstance(base, np.ndarray) and base.size > 1 and not any(base.strides)
    return "updates_filled" if constant else "updates_copied"


def execute(m: Module, args: list, trace: Trace | None = None, dry: bool = False,
            free: frozenset = frozenset()) -> list:
    """Run `m` on `args`; `free`: indices of the arguments nothing outside this execution can
    observe (their buffers may be donated, written in place, at their last use)."""
    vals: list = [None] * len(m.instrs)
    last_use, dead = uses(m)
    covering = covering_updates(m)
    older: dict = {}  # a version written in place -> the older versions sharing its buffer
    calls: dict = {}  # multi-result library calls: run once
    products: dict = {}  # a dot's instruction -> its operands (`regenerated`)
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
                           if donatable(m, i, o, last_use, vals[o], free, older))
            if donors and ins.attr("kind") != "update":  # (a gathered operand is read anywhere)
                read_anywhere = gathered(ins.value)
                donors = tuple(k for k in donors if k not in read_anywhere)
            regen = None
            exact = bool(donors) and owes_exact_warnings(ins.value)
            if exact and ins.attr("kind") != "update":
                # only a product's result, which can be computed again for a recheck
                regen = {k: products[ins.operands[k]] for k in donors
                         if ins.operands[k] in products}
                donors = tuple(regen)
            if dry and ins.attr("kind") != "update":  # explain reports where writes go
                donors = ()
            serial = any(m.instrs[o].opcode == "dot" and vals[o].size < PARALLEL_MIN_AFTER_BLAS
                         for o in ins.operands)
            out = run_fusion(ins, [vals[o] for o in ins.operands], trace, dry, serial=serial,
                             donors=donors, regen=regen or None, fresh=i in covering,
                             exact=exact)
            vals[i] = out[0] if len(out) == 1 else tuple(out)
            if donors and ins.attr("kind") == "update":
                for k in donors:
                    note_in_place(m, older, i, ins.operands[k], vals)
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
            inplace = donatable(m, i, ins.operands[0], last_use, base, free, older)
            fresh = not inplace and i in covering
            if trace is not None:
                trace.updates.append(write_kind(inplace, fresh))
                trace.write_reasons.append("in place" if inplace else why_copied(False, False))
            if dry:
                vals[i] = writable(base) if inplace else np.empty(base.shape, base.dtype)
            else:  # the new version: the old one's buffer, or a new one (`new_version`)
                offset, strides = ins.attr("offset"), ins.attr("strides")
                out = writable(base) if inplace else pool.empty(base.shape, base.dtype)
                if not (inplace or fresh):
                    copy_outside(out, base, offset, value.shape, strides)
                vals[i] = pool.place(out, value, offset, strides)
                stats.bump(write_count(inplace, base))
                if inplace:
                    note_in_place(m, older, i, ins.operands[0], vals)
        else:
            raise AssertionError(f"unfused {op} at top level")
        for o in dead[i]:  # released at its last use: a pooled buffer is free for the next result
            vals[o] = None
    return [vals[o] for o in m.outputs]
