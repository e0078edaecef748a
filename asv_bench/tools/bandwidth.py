"""The machine's memory bandwidth as hand-written Numba loops reach it: a STREAM-like triad
(`a = b + s*c`, 24 bytes per element counted) and a two-array read (the showcase's own W2
loop, `sqrt(sum((x - y)**2))`, 16 bytes).

    python asv_bench/tools/bandwidth.py [--n 10000000] [--rounds 30]   (from the repository root)

The floors docs/performance.md compares W2, W7 and W8 with.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit, prange

from lazyarray.tools import workloads


@njit(parallel=True)
def triad(a, b, c, s):
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    n = args.n
    a, b, c = np.empty(n), np.random.rand(n), np.random.rand(n)
    cases = {"triad": (lambda: triad(a, b, c, 3.0), 24 * n),
             "two-array read": (workloads.numba_kernels()["W2"](b, c), 16 * n)}
    for name, (f, nbytes) in cases.items():
        f()
        ts = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        print(f"{name:15s} median {np.median(ts) * 1e3:7.2f} ms -> "
              f"{nbytes / np.median(ts) / 1e9:5.1f} GB/s (best {nbytes / min(ts) / 1e9:5.1f})")


if __name__ == "__main__":
    main()
