"""Time the corpus programs with NumPy and lazyarray side by side, and check the answers.

Run it as ``python -m lazyarray.tools.corpus``::

    python -m lazyarray.tools.corpus                        # every program at 64K and 4M
    python -m lazyarray.tools.corpus --programs heat2d,syrk --sizes 64K --repeat 9
    python -m lazyarray.tools.corpus --sizes test --json corpus.json
    python -m lazyarray.tools.corpus --programs syrk --sizes 64K --repeat 11 --best

For each program and size, in one process: the inputs are made once (NumPy arrays); NumPy
runs the program first (its answer is the reference); lazyarray's first run is timed on
its own (it builds the graphs and runs on the interpreter what the kernel cache does not
hold yet, while a worker process compiles it; `lazyarray.wait_compiles` then waits for
those kernels and loads them); then
NumPy and lazyarray run alternately, the one to start swapping every repeat, and the medians
of these warm runs are reported (with ``--best``, the best of them). Every lazyarray run
ends with ``numpy.asarray`` of each output, so the work really happens. The answers of the
first and the last lazyarray run are compared with NumPy's: the same dtype and shape, equal
values for integer and boolean outputs, and for floating-point ones ``assert_allclose`` with
``rtol=1e-10`` and ``atol=1e-12`` times the largest magnitude of NumPy's output (a sum in
another order differs in its last bits, which an element near zero shows as a large relative
error).

A lazyarray run still going after ``--time-limit`` seconds (default 120) is stopped (a
``SIGALRM`` raises in the main thread) and the row says ``TIMEOUT``; the table goes on.

Exit status: 0 when every lazyarray answer matched NumPy's, 1 when one differed, raised or
ran out of time, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import signal
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy

import lazyarray
from lazyarray.tools.corpus import PROGRAMS

__all__ = ["Row", "TimeLimit", "compare", "main", "materialize", "run_case", "run_table",
           "time_limit"]

SEED = 0
RTOL = 1e-10
ATOL_SCALE = 1e-12
TIME_LIMIT = 120.0


class TimeLimit(BaseException):
    """A lazyarray run took longer than the time limit (a BaseException, as
    KeyboardInterrupt is, so that no ``except Exception`` on the way swallows it)."""


class time_limit:
    """Raise `TimeLimit` in the main thread after `seconds` (no limit where SIGALRM is not
    available, or off the main thread, or for ``seconds <= 0``)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = False

    def _fire(self, signum, frame):
        raise TimeLimit(f"still running after {self.seconds:g} s")

    def __enter__(self):
        if self.seconds <= 0 or not hasattr(signal, "setitimer"):
            return self
        try:
            self.old = signal.signal(signal.SIGALRM, self._fire)
        except ValueError:  # not the main thread
            return self
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)
        return False


@dataclass
class Row:
    """One program at one size: times in milliseconds, ratio = NumPy / lazyarray warm."""

    program: str
    size: str
    shape: str = ""
    numpy_ms: float | None = None
    first_ms: float | None = None
    warm_ms: float | None = None
    ratio: float | None = None
    correct: str = "?"
    note: str = ""
    first_compiles: int | None = None
    together_ms: float | None = None  # warm, every output computed by one `evaluate` first
    numpy_samples_ms: list = field(default_factory=list)
    lazyarray_samples_ms: list = field(default_factory=list)


def as_tuple(result: Any) -> tuple:
    """The outputs of a program as a tuple (a single output becomes a 1-tuple)."""
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def materialize(result: Any) -> tuple:
    """Every output as a NumPy array (for lazyarray: computed here)."""
    return tuple(numpy.asarray(o) for o in as_tuple(result))


def compare(got: tuple, want: tuple) -> str | None:
    """None when `got` matches NumPy's `want`, else what differs first."""
    if len(got) != len(want):
        return f"{len(got)} outputs, NumPy's program has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape} != NumPy's {w.shape}"
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype} != NumPy's {w.dtype}"
        if w.dtype.kind in "biuSUO":
            if not numpy.array_equal(g, w):
                bad = int(numpy.count_nonzero(g != w))
                return f"output {i}: {bad} of {w.size} elements differ"
            continue
        with numpy.errstate(all="ignore"):
            finite = numpy.abs(w[numpy.isfinite(w)])
            atol = ATOL_SCALE * float(finite.max()) if finite.size else 0.0
        try:
            numpy.testing.assert_allclose(g, w, rtol=RTOL, atol=atol, equal_nan=True)
        except AssertionError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            detail = "; ".join(ln for ln in lines if ln.startswith(("Mismatched", "Max")))
            return f"output {i}: {detail or 'values differ'}"
    return None


def _compiles() -> int | None:
    try:
        return int(lazyarray.cache_info().get("compiles"))
    except Exception:  # noqa: BLE001 -- a counter is a nicety, never a failure
        return None


def _timed(fn: Callable[[], tuple]) -> tuple[float, tuple]:
    gcold = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        if gcold:
            gc.enable()


def _shape_of(inputs: tuple) -> str:
    """The shape of the largest input array, and its element count."""
    arrays = [a for a in inputs if isinstance(a, numpy.ndarray)]
    if not arrays:
        return ""
    big = max(arrays, key=lambda a: a.size)
    n = big.size
    count = f"{n / 2**20:.3g}M" if n >= 2**20 else f"{n / 2**10:.3g}K" if n >= 2**10 else str(n)
    return f"{'x'.join(map(str, big.shape))} ({count})"


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def run_case(module, size: str, repeat: int, limit: float = TIME_LIMIT,
             together: bool = False, stat=statistics.median) -> Row:
    """Time one program at one size and check lazyarray's answers against NumPy's. With
    `together`, also time the warm run with its outputs computed by one `lazyarray.evaluate`
    before they are read (the table's runs read them one at a time, as a caller does).
    `stat` makes one time of the warm runs (the median; `min` for the best)."""
    name = module.__name__.rsplit(".", 1)[1]
    row = Row(name, size)
    inputs = module.make(module.SIZES[size], SEED)
    row.shape = _shape_of(inputs)

    def with_numpy():
        return materialize(module.run(numpy, *inputs))

    def with_lazyarray():
        with time_limit(limit):
            return materialize(module.run(lazyarray, *inputs))

    def with_lazyarray_together():
        with time_limit(limit):
            out = as_tuple(module.run(lazyarray, *inputs))
            lazyarray.evaluate(*[o for o in out if isinstance(o, lazyarray.ndarray)])
            return materialize(out)

    _, ref = _timed(with_numpy)  # the reference, and NumPy's warm-up
    c0 = _compiles()
    try:
        t, got = _timed(with_lazyarray)
    except TimeLimit as exc:
        row.correct, row.note = "TIMEOUT", f"lazyarray's first run {exc}"
        return row
    except Exception as exc:  # noqa: BLE001 -- shown in the table, never hidden
        row.correct, row.note = "ERROR", _error(exc)
        return row
    row.first_ms = t * 1e3
    c1 = _compiles()
    row.first_compiles = None if c0 is None or c1 is None else c1 - c0
    problem = compare(got, ref)
    del got
    lazyarray.wait_compiles(limit)  # the warm runs: with the kernels the worker built, loaded

    samples: dict[str, list[float]] = {"numpy": [], "lazyarray": [], "together": []}
    fns = {"numpy": with_numpy, "lazyarray": with_lazyarray, "together": with_lazyarray_together}
    engines = ("numpy", "lazyarray", "together") if together else ("numpy", "lazyarray")
    last = None
    for r in range(repeat):
        for engine in (engines if r % 2 == 0 else engines[::-1]):
            try:
                t, out = _timed(fns[engine])
            except TimeLimit as exc:
                row.correct, row.note = "TIMEOUT", f"a warm run {exc}"
                return row
            except Exception as exc:  # noqa: BLE001
                row.correct, row.note = "ERROR", _error(exc)
                return row
            samples[engine].append(t)
            if engine == "lazyarray":
                last = out
            del out
    if last is not None:
        problem = problem or compare(last, ref)
    row.numpy_samples_ms = [s * 1e3 for s in samples["numpy"]]
    row.lazyarray_samples_ms = [s * 1e3 for s in samples["lazyarray"]]
    row.numpy_ms = stat(row.numpy_samples_ms)
    row.warm_ms = stat(row.lazyarray_samples_ms)
    row.ratio = row.numpy_ms / row.warm_ms if row.warm_ms else None
    if together:
        row.together_ms = stat(samples["together"]) * 1e3
    row.correct = "ok" if problem is None else "DIFFERS"
    row.note = problem or ""
    return row


def geomeans(rows: list[Row]) -> dict[str, float]:
    """The geometric mean of the ratios per size (rows without a ratio left out)."""
    by_size: dict[str, list[float]] = {}
    for r in rows:
        if r.ratio:
            by_size.setdefault(r.size, []).append(r.ratio)
    return {s: math.exp(sum(map(math.log, v)) / len(v)) for s, v in by_size.items()}


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def format_table(rows: list[Row]) -> str:
    """The table: program, size, shape, the times, the ratio, and whether it is correct."""
    head = ("program", "size", "largest input", "NumPy ms", "la first ms", "la warm ms",
            "NumPy/la", "correct")
    body = [(r.program, r.size, r.shape, _ms(r.numpy_ms), _ms(r.first_ms), _ms(r.warm_ms),
             "-" if r.ratio is None else f"{r.ratio:.2f}", r.correct) for r in rows]
    if any(r.together_ms is not None for r in rows):  # one by one / together
        head = (*head[:7], "la together ms", "1-by-1/together", head[7])
        body = [(*b[:7], _ms(r.together_ms), "-" if not r.together_ms or r.warm_ms is None
                 else f"{r.warm_ms / r.together_ms:.2f}", b[7]) for b, r in zip(body, rows)]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    right = set(range(3, len(head) - 1))

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if i in right else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    out = [line(head), "|" + "|".join(("-" * (w + 1) + ":") if i in right else "-" * (w + 2)
                                      for i, w in enumerate(widths)) + "|"]
    out += [line(b) for b in body]
    for size, gm in geomeans(rows).items():
        out.append(f"geometric mean of NumPy/la at {size}: {gm:.2f}")
    notes = [f"  {r.program} {r.size}: {r.correct}: {r.note}" for r in rows if r.note]
    if notes:
        out.append("problems:")
        out += notes
    return "\n".join(out)


def run_table(programs: list[str], sizes: list[str], repeat: int, progress: bool = True,
              limit: float = TIME_LIMIT, together: bool = False,
              stat=statistics.median) -> list[Row]:
    """Every program at every size it has (a program without a size is left out)."""
    rows = []
    t0 = time.perf_counter()
    for name in programs:
        module = PROGRAMS[name]
        for size in sizes:
            if size not in module.SIZES:
                continue
            if progress:
                sys.stderr.write(f"  {time.perf_counter() - t0:6.1f} s  {name} {size} ...\n")
                sys.stderr.flush()
            rows.append(run_case(module, size, repeat, limit, together, stat))
            gc.collect()
    return rows


def _machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "numpy": numpy.__version__,
                            "lazyarray": getattr(lazyarray, "__version__", "?"),
                            "cpu_count": os.cpu_count(), "platform": platform.platform()}
    try:
        info["loadavg"] = list(os.getloadavg())
    except OSError:
        pass
    return info


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m lazyarray.tools.corpus",
        description="NumPy programs written as scientists write them, timed with NumPy and "
                    "with lazyarray side by side; lazyarray's answers checked against NumPy's.")
    p.add_argument("--programs", default=None,
                   help=f"comma-separated subset (default all: {','.join(PROGRAMS)})")
    p.add_argument("--sizes", default="64K,4M", help="comma-separated size labels "
                   "(64K, 4M, test; default 64K,4M)")
    p.add_argument("--repeat", type=int, default=5,
                   help="warm runs of each engine, alternated (default 5)")
    p.add_argument("--best", action="store_true",
                   help="report the best of the warm runs, not their median (steadier for "
                        "comparing two trees: the best of 11 moves 1-2 %%, the median of 5 "
                        "about 5 %%)")
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT, metavar="S",
                   help="stop a lazyarray run after S seconds and report TIMEOUT "
                        f"(default {TIME_LIMIT:g}; 0: no limit)")
    p.add_argument("--json", metavar="FILE", help="write the rows and the machine as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--together", action="store_true",
                   help="also time warm runs whose outputs one `lazyarray.evaluate` computes "
                        "before they are read (columns: la together ms, 1-by-1/together)")
    opts = p.parse_args(argv)
    names = ([s.strip() for s in opts.programs.split(",") if s.strip()]
             if opts.programs else list(PROGRAMS))
    bad = [s for s in names if s not in PROGRAMS]
    if bad:
        p.error(f"unknown program(s) {', '.join(bad)}; choose from {', '.join(PROGRAMS)}")
    opts.programs = names
    opts.sizes = [s.strip() for s in opts.sizes.split(",") if s.strip()]
    known = {s for m in PROGRAMS.values() for s in m.SIZES}
    bad = [s for s in opts.sizes if s not in known]
    if bad:
        p.error(f"unknown size(s) {', '.join(bad)}; choose from {', '.join(sorted(known))}")
    if opts.repeat < 1:
        p.error("--repeat must be at least 1")
    return opts


def main(argv: list[str] | None = None) -> int:
    """Run the corpus table; returns the process exit status."""
    try:
        opts = _parse(sys.argv[1:] if argv is None else list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    info = _machine()
    print(f"corpus: {len(opts.programs)} programs, sizes {','.join(opts.sizes)}, "
          f"{'best of ' * opts.best}{opts.repeat} warm runs each; numpy {info['numpy']}, "
          f"lazyarray {info['lazyarray']}, "
          f"{info['cpu_count']} CPUs, load {info.get('loadavg', ['?'])[0]}")
    t0 = time.perf_counter()
    rows = run_table(opts.programs, opts.sizes, opts.repeat, progress=not opts.quiet,
                     limit=opts.time_limit, together=opts.together,
                     stat=min if opts.best else statistics.median)
    print(format_table(rows))
    try:
        info["loadavg_end"] = list(os.getloadavg())
    except OSError:
        pass
    print(f"total {time.perf_counter() - t0:.1f} s; "
          f"load at the end {info.get('loadavg_end', ['?'])[0]}")
    if opts.json:
        doc = {"machine": info, "options": vars(opts), "rows": [asdict(r) for r in rows],
               "geomean": geomeans(rows)}
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {opts.json}")
    return 0 if all(r.correct == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
