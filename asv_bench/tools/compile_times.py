"""First-call (compile) and run times of kernels with big math, in one fresh process.

    LAZYARRAY_CACHE_DIR=$(mktemp -d) python asv_bench/tools/compile_times.py   (repo root)

Point the disk cache at an empty directory, or the kernels load from it. Each line's first
call compiles its kernel (the first `power`, `arccosh`, ... also compiles that function once
for the process); then the median of 7 calls. 10^6 float64 elements, the default tiers.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import lazyarray as la

CASES = {
    "x * 2 + 1": lambda a, b, c: a * 2 + 1,
    "a ** b": lambda a, b, c: a ** b,
    "(a ** b) * 2 + 1": lambda a, b, c: (a ** b) * 2 + 1,
    "a ** b - a": lambda a, b, c: a ** b - a,
    "arccosh(c)": lambda a, b, c: la.arccosh(c),
    "arccosh(c) + c": lambda a, b, c: la.arccosh(c) + c,
    "arctan2(a, b)": lambda a, b, c: la.arctan2(a, b),
    "tanh(b) * a": lambda a, b, c: la.tanh(b) * a,
    "expm1(b) / a": lambda a, b, c: la.expm1(b) / a,
}


def main() -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(14)
    n = 10 ** 6
    args = (la.asarray(rng.uniform(0.1, 5, n)), la.asarray(rng.uniform(-3, 3, n)),
            la.asarray(rng.uniform(1, 50, n)))
    for label, f in CASES.items():
        t0 = time.perf_counter()
        np.asarray(f(*args))
        first = time.perf_counter() - t0
        runs = []
        for _ in range(7):
            t0 = time.perf_counter()
            np.asarray(f(*args))
            runs.append(time.perf_counter() - t0)
        print(f"{label:20s} first call {first:6.2f} s   then {np.median(runs) * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()
