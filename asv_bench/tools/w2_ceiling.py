"""W2's kernel against the showcase's hand-written loop, without the Python around either:
nanoseconds per element and GB/s at sizes that fit in the caches and at 1e7, then, at 1e7,
the whole lazyarray call, its kernel called directly, and the loop, alternated.

    python asv_bench/tools/w2_ceiling.py [--rounds 40]     (from the repository root)

In the caches a loop runs at its compute ceiling: the loop's `s += t * t` is one chain of
dependent additions (it cannot be reordered, so it is not vectorized), lazyarray's sum keeps
several vector accumulators (`sum_step`). At 1e7 both read memory; what the whole call adds
to its kernel is the Python of a replay (`replay_split.py W2 1e7` splits it).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import lazyarray as la
from lazyarray.tools import workloads
from lazyarray.runtime import executor, launches


def _best(f, reps: int, rounds: int = 9) -> float:
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        ts.append((time.perf_counter() - t0) / reps)
    return min(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    wl = workloads.WORKLOADS["W2"]
    x, y = wl.inputs(10**7)
    lx, ly = la.asarray(x), la.asarray(y)
    call = lambda: np.asarray(wl.body(la, lx, ly))  # noqa: E731
    for _ in range(3):  # compile, remember the replay, prepare its launch
        call()
    (p,) = [p for layouts in launches.prepared.values() for p in layouts.values()]
    loop = workloads.numba_kernels()["W2"]

    def kernel_of(a, b):
        out = np.empty(1)
        parts = [np.empty(shape, dtype) for shape, _, dtype in p.partials]

        def run():
            for buf, (_, init, _) in zip(parts, p.partials, strict=True):
                buf.fill(init)
            p.kernel(out, *parts, a, b, a.size, *p.tail[1:])
        return run

    print(f"{'n':>10s} {'lazyarray kernel':>26s} {'loop':>26s}")
    for n in (2 * 10**4, 10**5, 10**7):
        a, b = x[:n].copy(), y[:n].copy()
        reps = max(1, 10**7 // n)
        t = [_best(kernel_of(a, b), reps), _best(loop(a, b), reps)]
        print(f"{n:10d} " + " ".join(f"{s / n * 1e9:8.3f} ns/elem {16 * n / s / 1e9:6.1f} GB/s"
                                     for s in t))
    ways = {"whole call": call, "its kernel": kernel_of(x, y), "loop": loop(x, y)}
    times = {k: [] for k in ways}
    for _ in range(args.rounds):
        for k, f in ways.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    for k, v in times.items():
        print(f"{k:12s} median {np.median(v) * 1e3:7.3f} ms  min {min(v) * 1e3:7.3f} ms  "
              f"/ loop {np.median(v) / np.median(times['loop']):.3f}")


if __name__ == "__main__":
    main()
