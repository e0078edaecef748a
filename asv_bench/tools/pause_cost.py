"""What a pause costs the next parallel launch: OpenMP workers that went to sleep are woken.

    python asv_bench/tools/pause_cost.py
    GOMP_SPINCOUNT=1000 python asv_bench/tools/pause_cost.py     # another spin count
    OMP_PROC_BIND=true python asv_bench/tools/pause_cost.py      # workers bound to cores
    python asv_bench/tools/pause_cost.py --long                  # a long kernel after others

Per pause before each call (none, 0.1, 1, 10, 100 ms): the median µs of 40 calls of a bare
Numba `prange` loop (`out = x * 2 + 1` on 2**16 float64), its serial twin, NumPy's multiply,
and lazyarray's `x * 2 + 1` evaluated. docs/performance.md ("Known costs") quotes it.

--long: W2 at 1e7 (`sqrt(sum((x - y)**2))`, 5 ms) by lazyarray and by a hand-written Numba
loop, alternated 100 times: each lazyarray launch comes after a pause of its own (the loop
ran in between), so the replay's choice of one thread or both is tested where one thread
never pays (median, mean and 90th percentile ms; whether lazyarray ran any on one thread).
"""

import math
import statistics
import sys
import time

import lazyarray as la  # first: its GOMP_SPINCOUNT default applies unless one is set
import numba
import numpy as np


@numba.njit(parallel=True)
def parallel(x, out):
    for i in numba.prange(x.size):
        out[i] = x[i] * 2.0 + 1.0


@numba.njit
def serial(x, out):
    for i in range(x.size):
        out[i] = x[i] * 2.0 + 1.0


@numba.njit(parallel=True)
def distance(x, y):
    s = 0.0
    for i in numba.prange(x.size):
        t = x[i] - y[i]
        s += t * t
    return np.sqrt(s)


def long_kernel() -> None:
    from lazyarray.runtime import launches

    r = np.random.default_rng(0)
    x, y = r.standard_normal(10**7), r.standard_normal(10**7)
    lx, ly = la.asarray(x), la.asarray(y)
    calls = {"lazyarray": lambda: float(la.sqrt(la.sum((lx - ly) ** 2))),
             "numba loop": lambda: distance(x, y)}
    for f in calls.values():
        f()
    times = {k: [] for k in calls}
    for _ in range(100):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    (p,) = [p for layouts in launches.prepared.values() for p in layouts.values()
            if p.paused is not None and p.paused[2]]
    ones = "; none ran on one thread" if p.paused[1] == math.inf else (
        "; some ran on one thread (its last took %.2f ms)" % (p.paused[1] * 1e3))
    print("W2 at 1e7 after other work: " + "  ".join(
        f"{k} {statistics.median(v) * 1e3:.2f} / {statistics.mean(v) * 1e3:.2f} / "
        f"{sorted(v)[89] * 1e3:.2f} ms" for k, v in times.items()) + ones)


def main() -> None:
    x = np.random.default_rng(0).standard_normal(1 << 16)
    out, lx = np.empty_like(x), la.asarray(x)
    calls = {"prange": lambda: parallel(x, out), "serial": lambda: serial(x, out),
             "numpy": lambda: np.multiply(x, 2.0, out=out),
             "lazyarray": lambda: np.asarray(lx * 2.0 + 1.0)}
    for f in calls.values():
        for _ in range(20):
            f()
    print(f"threading layer {numba.threading_layer()}, {numba.get_num_threads()} threads")
    for pause in (0.0, 1e-4, 1e-3, 1e-2, 1e-1):
        times = {k: [] for k in calls}
        for _ in range(40):
            for k, f in calls.items():
                if pause:
                    time.sleep(pause)
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        print(f"pause {pause * 1e3:5.1f} ms: " + "  ".join(
            f"{k} {sorted(v)[len(v) // 2] * 1e6:6.0f} us" for k, v in times.items()))


if __name__ == "__main__":
    long_kernel() if "--long" in sys.argv[1:] else main()
