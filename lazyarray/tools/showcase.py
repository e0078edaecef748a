"""Side-by-side benchmark runner: NumPy, lazyarray and the peers.

Run it as ``python -m lazyarray bench`` (or ``python -m lazyarray.tools.showcase``)::

    python -m lazyarray bench                  # every workload, every size (about 3 minutes)
    python -m lazyarray bench --quick          # smallest sizes, few rounds (CI smoke test)
    python -m lazyarray bench --workloads W1,W4 --sizes large --json out.json
    python -m lazyarray bench --corpus         # then the program corpus table (docs/corpus.md)

Each workload (``lazyarray.tools.workloads``) is ONE function body written against an array
namespace ``xp``; it is run with ``xp=numpy``, with ``xp=lazyarray`` (the timed call ends
with ``np.asarray(result)``, so the work really happens) and, when JAX is importable, under
``jax.jit`` with ``xp=jax.numpy`` (x64 enabled). numexpr runs the same expression where it
can be written as a numexpr string (partly, with NumPy doing the reductions, where marked
``*``), and a hand-written ``numba.njit(parallel=True)`` loop writing into a preallocated,
reused output is the "ideal" column. The table, the JSON document and the chart are drawn
by ``lazyarray.tools.showcase_report``.

Methodology (docs/benchmarks.md): every implementation is
warmed up first (compiles are excluded from the timings; lazyarray's first call is reported
on its own, with the compiles it caused, and on tiny arrays its warm-up also waits for the
trace tier's loops); then the implementations are ALTERNATED round-robin
for several rounds, and the medians are reported with their ratio to NumPy (time / NumPy
time; below 1 is faster). Every result is compared with NumPy's (``np.allclose``; for
lazyarray also dtype and shape) and marked ✓ or ✗. The machine's load average is printed
in the header and the footer: on a shared 2-core VM, multi-threaded timings drift; quote
ratios within one run, not absolute times across runs.

Exit status: 0 when every lazyarray result matched NumPy, 1 when one did not or raised,
2 for bad arguments.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from lazyarray.tools.showcase_report import (IMPLS, LEGEND, CaseResult, ImplResult, format_table,
                                             header, json_document, plot)
from lazyarray.tools.corpus import runner as corpus_runner
from lazyarray.tools.workloads import WORKLOADS, Workload, numba_kernels
from lazyarray.trace_tier import PROMOTE

__all__ = ["main", "WORKLOADS"]

# --------------------------------------------------------------------------------------
# Peers: which are importable
# --------------------------------------------------------------------------------------


@dataclass
class Env:
    la: Any = None
    la_error: str | None = None
    ne: Any = None
    jax: Any = None
    jnp: Any = None
    jax_error: str | None = None
    numba_ok: bool = False
    numba_error: str | None = None


def _load_env(use_jax: bool = True) -> Env:
    env = Env()
    # lazyarray first: it configures Numba's threading before Numba is imported.
    try:
        la = importlib.import_module("lazyarray")
        if not hasattr(la, "asarray"):
            raise ImportError("the lazyarray package has no asarray (incomplete checkout?)")
        env.la = la
    except Exception as exc:  # noqa: BLE001 -- reported in the header
        env.la_error = f"{type(exc).__name__}: {exc}"
    try:
        import numexpr

        env.ne = numexpr
    except ImportError:
        pass
    try:
        import numba  # noqa: F401

        env.numba_ok = True
    except Exception as exc:  # noqa: BLE001
        env.numba_error = f"{type(exc).__name__}: {exc}"
    if use_jax and importlib.util.find_spec("jax") is not None:
        try:
            import jax

            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp

            env.jax, env.jnp = jax, jnp
        except Exception as exc:  # noqa: BLE001
            env.jax_error = f"{type(exc).__name__}: {exc}"
    elif use_jax:
        env.jax_error = "not installed"
    else:
        env.jax_error = "disabled (--no-jax)"
    return env


# --------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------


def _check(res, ref, wl: Workload, strict: bool) -> tuple[bool, float, str]:
    """Compare ``res`` with the NumPy reference; strict also checks dtype and shape."""
    got = np.asarray(res)
    msg = ""
    if got.shape != ref.shape:
        return False, math.inf, f"shape {got.shape} != numpy's {ref.shape}"
    if strict and got.dtype != ref.dtype:
        msg = f"dtype {got.dtype} != numpy's {ref.dtype}"
    with np.errstate(all="ignore"):
        diff = np.abs(got.astype(np.float64) - ref)
        scale = np.maximum(np.abs(ref), wl.atol / wl.rtol)
        rel = float(np.max(diff / scale)) if diff.size else 0.0
    ok = bool(np.allclose(got, ref, rtol=wl.rtol, atol=wl.atol, equal_nan=True))
    if not ok and not msg:
        msg = f"max relative error {rel:.3g} (rtol {wl.rtol:g})"
    return ok and not msg, rel, msg


def _cache_compiles(la) -> int | None:
    try:
        return int(la.cache_info().get("compiles"))
    except Exception:  # noqa: BLE001
        return None


# Before each sample of calls that last SETTLE_ABOVE or more, SETTLE seconds idle, then
# untimed calls for at least WARM_FOR seconds (one at least): worker threads of the engine
# sampled before (OpenBLAS's spin about 0.1 s after a call, JAX's and OpenMP's less) would
# otherwise share the cores with this one (W5: 146 ms instead of 95), and after the pause the
# machine is slow for a while: on one VM (Intel Xeon, 2 vCPUs) W8's kernel at 1e7 ran 5.7 ms
# in the first call after 0.12 s idle, 3.2 ms from the 8th on, W7's at 4096^2 9.9 ms, then
# 7.9 (memory-bound kernels: the memory system's clock ramps up with load). Every engine is
# timed the same way, so the ratios hold either way; the warm calls make them steadier.
SETTLE, SETTLE_ABOVE, WARM_FOR = 0.12, 1e-3, 0.1
ROUND_BUDGET, MAX_ROUNDS = 8.0, 15  # seconds of timed rounds per case, most rounds


def _sample(fn: Callable[[], Any], number: int) -> float:
    gcold = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number
    finally:
        if gcold:
            gc.enable()


def _warm_up(fn: Callable[[], Any]) -> None:
    """Untimed calls of `fn` for WARM_FOR seconds, one at least."""
    end = time.perf_counter() + WARM_FOR
    fn()
    while time.perf_counter() < end:
        fn()


class Progress:
    def __init__(self, total: int, enabled: bool = True):
        self.total = total
        self.i = 0
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.t0 = time.perf_counter()
        self._last = ""

    def case(self, label: str) -> None:
        self.i += 1
        self.label = label
        self.step("")

    def step(self, what: str) -> None:
        if not self.enabled:
            return
        el = time.perf_counter() - self.t0
        line = f"[{self.i:2d}/{self.total}] {el:6.1f}s  {self.label}  {what}"
        if self.tty:
            sys.stderr.write("\r\x1b[K" + line[:150])
            sys.stderr.flush()
        elif not what:  # non-interactive: one line per case
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _build_impls(wl: Workload, inputs: tuple, env: Env, res: CaseResult,
                 engines: set[str]) -> dict[str, Callable[[], Any]]:
    """Zero-argument callables per implementation; unavailable ones get a note."""
    fns: dict[str, Callable[[], Any]] = {}
    body = wl.body
    fns["numpy"] = lambda: body(np, *inputs)

    if "lazyarray" in engines:
        la = env.la
        if la is None:
            res.impls["lazyarray"] = ImplResult("n/a", "lazyarray failed to import")
        elif wl.needs and not hasattr(la, wl.needs):
            res.impls["lazyarray"] = ImplResult("n/a", f"lazyarray has no {wl.needs}()")
        else:
            try:
                la_in = tuple(la.asarray(a) for a in inputs)
                fns["lazyarray"] = lambda: np.asarray(body(la, *la_in))
            except Exception as exc:  # noqa: BLE001
                res.impls["lazyarray"] = ImplResult("error", f"asarray: {type(exc).__name__}: {exc}")

    if "numexpr" in engines:
        if env.ne is None:
            res.impls["numexpr"] = ImplResult("n/a", "numexpr not installed")
        elif wl.numexpr is None:
            res.impls["numexpr"] = ImplResult("n/a", "not expressible")
        else:
            ne, f = env.ne, wl.numexpr
            fns["numexpr"] = lambda: f(ne, *inputs)

    if "jax" in engines:
        if env.jax is None:
            res.impls["jax"] = ImplResult("n/a", env.jax_error or "not installed")
        else:
            jax, jnp = env.jax, env.jnp
            jitted = jax.jit(lambda *a: body(jnp, *a))
            j_in = tuple(jax.device_put(jnp.asarray(a)) for a in inputs)
            fns["jax"] = lambda: jitted(*j_in).block_until_ready()

    if "numba" in engines:
        if not env.numba_ok:
            res.impls["numba"] = ImplResult("n/a", env.numba_error or "numba not importable")
        else:
            fns["numba"] = numba_kernels()[wl.name](*inputs)
    return fns


def run_case(wl: Workload, size: int, env: Env, opts: argparse.Namespace,
             progress: Progress) -> CaseResult:
    res = CaseResult(wl.name, size, wl.label(size))
    progress.step("inputs")
    inputs = tuple(np.ascontiguousarray(a) for a in wl.inputs(size))
    fns = _build_impls(wl, inputs, env, res, opts.engines)

    # NumPy reference (this first call is also NumPy's warm-up).
    progress.step("numpy reference")
    t0 = time.perf_counter()
    ref = np.asarray(fns["numpy"]())
    t_np = time.perf_counter() - t0
    warm: dict[str, float] = {"numpy": t_np}
    res.impls["numpy"] = ImplResult("ok")

    la = env.la
    for name in [n for n in IMPLS if n in fns and n != "numpy"]:
        progress.step(f"warm-up {name}")
        ir = ImplResult(partial=(name == "numexpr" and wl.numexpr_partial))
        res.impls[name] = ir
        try:
            c0 = _cache_compiles(la) if name == "lazyarray" else None
            t0 = time.perf_counter()
            out = fns[name]()
            t_first = time.perf_counter() - t0
            if name == "lazyarray":
                res.la_first_call_s = t_first
                c1 = _cache_compiles(la)
                if c0 is not None and c1 is not None:
                    res.la_first_call_compiles = c1 - c0
                la.wait_compiles()  # (the worker's kernels, loaded: the steady state)
            ok, rel, msg = _check(out, ref, wl, strict=(name == "lazyarray"))
            ir.max_rel_err = rel
            del out
            t0 = time.perf_counter()
            out = fns[name]()  # warm call: no compile any more
            warm[name] = time.perf_counter() - t0
            if name == "lazyarray" and warm[name] < 5e-3:
                # tiny arrays: the trace tier compiles a recurring chain's loop after
                # PROMOTE runs, on the background build thread; measure the steady state

                for _ in range(PROMOTE):
                    del out
                    out = fns[name]()
                la.wait_compiles()
                del out
                t0 = time.perf_counter()
                out = fns[name]()
                warm[name] = time.perf_counter() - t0
            ok2, rel2, msg2 = _check(out, ref, wl, strict=(name == "lazyarray"))
            del out
            ir.max_rel_err = max(rel, rel2)
            if ok and ok2:
                ir.status = "ok"
            else:
                ir.status = "mismatch"
                ir.note = msg or msg2
        except Exception as exc:  # noqa: BLE001 -- shown in the table, never hidden
            ir.status = "error"
            ir.note = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            fns.pop(name, None)

    # Calibrate: enough calls per sample to last opts.sample_time.
    numbers = {n: max(1, min(100_000, math.ceil(opts.sample_time / max(warm[n], 1e-7))))
               for n in fns}
    slowest = max(warm[n] for n in fns)
    if opts.rounds:
        rounds = opts.rounds
    elif opts.quick:
        rounds = 3
    else:
        rounds = 7 if slowest < 0.1 else 5 if slowest < 1.0 else 3
        # more where a round is cheap, up to ROUND_BUDGET seconds of rounds: one call of a
        # memory-bound 8 ms kernel varies 2x on a shared VM, and its median over 5 did too
        per_round = sum(max(warm[n] * numbers[n], opts.sample_time)
                        + (SETTLE + max(WARM_FOR, warm[n]) if warm[n] >= SETTLE_ABOVE else 0.0)
                        for n in fns)
        rounds = max(rounds, min(MAX_ROUNDS, int(ROUND_BUDGET / per_round)))
    res.rounds = rounds

    order = [n for n in IMPLS if n in fns]
    samples: dict[str, list[float]] = {n: [] for n in order}
    c0 = _cache_compiles(la) if "lazyarray" in fns else None
    for r in range(rounds):
        rot = order[r % len(order):] + order[: r % len(order)]  # alternate, rotate the start
        for name in rot:
            progress.step(f"round {r + 1}/{rounds}: {name}")
            try:
                if warm[name] >= SETTLE_ABOVE:
                    time.sleep(SETTLE)  # the previous engine's worker threads stop spinning
                    _warm_up(fns[name])  # and this one's are awake again (untimed)
                samples[name].append(_sample(fns[name], numbers[name]))
            except Exception as exc:  # noqa: BLE001
                res.impls[name].status = "error"
                res.impls[name].note = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                fns.pop(name)
                order.remove(name)
    if c0 is not None:
        c1 = _cache_compiles(la)
        res.la_compiles_while_timing = None if c1 is None else c1 - c0

    if "lazyarray" in fns and opts.explain:
        # la.explain compiles what it plans. It runs after every size of the workload has
        # been timed (see main), so the "1st call" column shows where a compile really
        # happens, not where explain forced it. Only the (unevaluated) graph is kept.
        try:
            la_in = tuple(la.asarray(a) for a in inputs)
            res.explain_target = wl.body(la, *la_in)
        except Exception as exc:  # noqa: BLE001
            res.la_kernels_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]

    t_numpy = statistics.median(samples["numpy"])
    for name, ss in samples.items():
        if not ss or name not in fns:
            continue
        ir = res.impls[name]
        ir.samples_s = ss
        ir.number = numbers[name]
        ir.median_s = statistics.median(ss)
        ir.ratio = ir.median_s / t_numpy
    del fns, inputs, ref
    gc.collect()
    return res


def _explain(res: CaseResult, la) -> None:
    """Fill la_kernels from la.explain(...) of the kept graph, then drop the graph."""
    target, res.explain_target = res.explain_target, None
    if target is None:
        return
    c0 = _cache_compiles(la)
    try:
        res.la_kernels = int(la.explain(target).num_kernels)
    except Exception as exc:  # noqa: BLE001
        res.la_kernels_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    c1 = _cache_compiles(la)
    if c0 is not None and c1 is not None:
        res.la_explain_compiles = c1 - c0


# --------------------------------------------------------------------------------------
# The machine, the options, the run
# --------------------------------------------------------------------------------------


def _machine_info(env: Env) -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "GOMP_SPINCOUNT": os.environ.get("GOMP_SPINCOUNT"),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
    }
    try:
        info["loadavg_start"] = list(os.getloadavg())
    except OSError:
        info["loadavg_start"] = None
    if env.la is not None:
        info["lazyarray"] = getattr(env.la, "__version__", "?")
    else:
        info["lazyarray"] = f"unavailable ({env.la_error})"
    if env.numba_ok:
        import numba

        info["numba"] = numba.__version__
        info["numba_threads"] = numba.get_num_threads()
        info["numba_threading_layer"] = numba.config.THREADING_LAYER
    else:
        info["numba"] = f"unavailable ({env.numba_error})"
    if env.ne is not None:
        info["numexpr"] = env.ne.__version__
        try:
            info["numexpr_threads"] = env.ne.get_num_threads()
        except Exception:  # noqa: BLE001
            pass
    else:
        info["numexpr"] = "not installed"
    info["jax"] = env.jax.__version__ if env.jax is not None else env.jax_error
    return info


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m lazyarray bench",
        description="Side-by-side benchmark of lazyarray against NumPy, numexpr, "
                    "jax.jit and hand-written Numba loops.")
    p.add_argument("--quick", action="store_true",
                   help="smallest size of each workload, 3 rounds, short samples (CI smoke)")
    p.add_argument("--sizes", choices=["small", "large", "all"], default=None,
                   help="which sizes: smallest, largest, or all (default all; small with --quick)")
    p.add_argument("--workloads", default=None,
                   help="comma-separated subset, e.g. W1,W2 (default all)")
    p.add_argument("--rounds", type=int, default=None,
                   help="alternating rounds per case (default: 7, 5 or 3 by call time, "
                        "more up to 15 where they fit in 8 s)")
    p.add_argument("--sample-time", type=float, default=None,
                   help="seconds per timing sample; short calls are repeated (default 0.02)")
    p.add_argument("--engines", default=",".join(IMPLS[1:]),
                   help="comma-separated columns besides numpy (default all of "
                        f"{','.join(IMPLS[1:])})")
    p.add_argument("--no-jax", action="store_true", help="do not import JAX even if installed")
    p.add_argument("--no-explain", dest="explain", action="store_false",
                   help="skip la.explain() kernel counts")
    p.add_argument("--json", metavar="FILE", help="write every measurement as JSON")
    p.add_argument("--plot", metavar="FILE",
                   help="bar chart of the ratios (matplotlib): FILE.png, FILE.svg, ...")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--corpus", action="store_true",
                   help="after the workloads, the program corpus table (NumPy against "
                        "lazyarray, docs/corpus.md): sizes 64K and 4M, or 64K with --quick")
    opts = p.parse_args(argv)
    if opts.sizes is None:
        opts.sizes = "small" if opts.quick else "all"
    if opts.sample_time is None:
        opts.sample_time = 0.005 if opts.quick else 0.02
    if opts.rounds is not None and opts.rounds < 1:
        p.error("--rounds must be at least 1")
    if opts.workloads:
        names = [w.strip().upper() for w in opts.workloads.split(",") if w.strip()]
        bad = [w for w in names if w not in WORKLOADS]
        if bad:
            p.error(f"unknown workload(s) {', '.join(bad)}; choose from {', '.join(WORKLOADS)}")
        opts.workloads = names
    else:
        opts.workloads = list(WORKLOADS)
    engines = [e.strip().lower() for e in opts.engines.split(",") if e.strip()]
    bad = [e for e in engines if e not in IMPLS[1:]]
    if bad:
        p.error(f"unknown engine(s) {', '.join(bad)}; choose from {', '.join(IMPLS[1:])}")
    opts.engines = set(engines)
    return opts


def main(argv: list[str] | None = None) -> int:
    """Run the side-by-side benchmark; returns the process exit status."""
    if argv is None:
        argv = sys.argv[1:]
    argv = list(argv)
    if argv and argv[0] == "bench":
        argv = argv[1:]
    try:
        opts = _parse(argv)
    except SystemExit as exc:
        return int(exc.code or 0)

    env = _load_env(use_jax=not opts.no_jax and "jax" in opts.engines)
    info = _machine_info(env)
    print(header(info))
    load = info.get("loadavg_start")
    if load and load[0] >= 0.5 * (os.cpu_count() or 1):
        print(f"WARNING   the machine is busy (load {load[0]:.2f} on {os.cpu_count()} CPUs):"
              " parallel timings, the numba and lazyarray columns above all, will be noisy")
    if env.la is None:
        print(f"NOTE      lazyarray could not be imported ({env.la_error}); its column is empty")
    print()

    cases: list[tuple[Workload, int]] = []
    for name in opts.workloads:
        wl = WORKLOADS[name]
        sizes = {"small": wl.sizes[:1], "large": wl.sizes[-1:], "all": wl.sizes}[opts.sizes]
        cases += [(wl, s) for s in sizes]

    progress = Progress(len(cases), enabled=not opts.quiet)
    results: list[CaseResult] = []
    compiles0 = _cache_compiles(env.la) if env.la is not None else None
    t_start = time.perf_counter()
    for wl, size in cases:
        progress.case(f"{wl.name} {wl.label(size)}")
        if (wl.needs and "lazyarray" in opts.engines and env.la is not None
                and not hasattr(env.la, wl.needs)):
            results.append(CaseResult(wl.name, size, wl.label(size),
                                      skipped=f"lazyarray has no {wl.needs}() yet"))
            continue
        results.append(run_case(wl, size, env, opts, progress))
        if env.la is not None and (wl, size) == [c for c in cases if c[0] is wl][-1]:
            progress.step("la.explain")
            for r in results:
                if r.workload == wl.name:
                    _explain(r, env.la)
    progress.done()
    elapsed = time.perf_counter() - t_start

    print(format_table(results, sorted(opts.engines, key=IMPLS.index)))
    print()
    print(LEGEND)

    # Problems, spelled out under the table.
    problems = []
    for r in results:
        for name, ir in r.impls.items():
            if ir.status in ("error", "mismatch"):
                problems.append(f"  {r.workload} {r.label} {name}: {ir.status}: {ir.note}")
        if r.la_kernels_error:
            problems.append(f"  {r.workload} {r.label} la.explain: {r.la_kernels_error}")
        if r.la_compiles_while_timing:
            problems.append(f"  {r.workload} {r.label} lazyarray compiled "
                            f"{r.la_compiles_while_timing} kernel(s) while being timed")
    notes = [f"  {r.workload}: {r.skipped}" for r in results if r.skipped]
    if notes:
        print("\nskipped:\n" + "\n".join(dict.fromkeys(notes)))
    if problems:
        print("\nproblems:\n" + "\n".join(problems))

    ratios = [r.impls["lazyarray"].ratio for r in results
              if not r.skipped and r.impls.get("lazyarray")
              and r.impls["lazyarray"].ratio is not None]
    summary = []
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        summary.append(f"lazyarray / numpy geometric mean over {len(ratios)} cases: {gm:.2f}")
    if env.la is not None:
        try:
            ci = dict(env.la.cache_info())
            if compiles0 is not None and "compiles" in ci:
                ci["compiles_this_run"] = int(ci["compiles"]) - compiles0
            info["la_cache_info"] = ci
            summary.append("la.cache_info() " + ", ".join(f"{k}={v}" for k, v in ci.items()))
        except Exception as exc:  # noqa: BLE001
            summary.append(f"la.cache_info() failed: {type(exc).__name__}: {exc}")
    try:
        info["loadavg_end"] = list(os.getloadavg())
        end_load = " ".join(f"{x:.2f}" for x in info["loadavg_end"])
    except OSError:
        end_load = "unknown"
    if env.numba_ok:
        try:
            import numba

            info["numba_threading_layer_used"] = numba.threading_layer()
        except Exception:  # noqa: BLE001 -- no parallel region has run
            pass
    layer = info.get("numba_threading_layer_used", "none used")
    summary.append(f"total {elapsed:.1f} s; load avg at the end {end_load};"
                   f" numba threading layer {layer}")
    print("\n" + "\n".join(summary))

    if opts.json:
        doc = json_document(info, vars(opts), results, elapsed)
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, default=str)
        print(f"wrote {opts.json}")
    if opts.plot:
        msg = plot(results, opts.plot)
        print(msg if msg else f"wrote {opts.plot}")

    bad_la = any(r.impls.get("lazyarray") and r.impls["lazyarray"].status in ("error", "mismatch")
                 for r in results)
    if opts.corpus:
        print("\nthe program corpus (python -m lazyarray.tools.corpus):")
        sys.stdout.flush()
        corpus_args = (["--sizes", "64K", "--repeat", "3"] if opts.quick
                       else ["--sizes", "64K,4M"]) + (["--quiet"] if opts.quiet else [])
        bad_la = corpus_runner.main(corpus_args) != 0 or bad_la
    return 1 if bad_la else 0


if __name__ == "__main__":
    sys.exit(main())
