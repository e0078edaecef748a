"""Small matrix products, lazyarray against NumPy: as fused reductions (passes/products.py)
and, with --keep-dots, as the BLAS calls they were before.

    python asv_bench/tools/small_products.py
    python asv_bench/tools/small_products.py --keep-dots     # every product a library call

A of (10**6, 9) float64 (a design matrix with its intercept column), y of 10**6, beta of 9:
`A @ beta`, `A.T @ y`, the residual `((y - A @ beta) ** 2).sum()`, the Gram matrix `A.T @ A`
(which stays BLAS either way), and the least-squares program of
tests/test_realistic_programs.py on X of (10**6, 8). Each case alternates lazyarray and NumPy
(inputs converted once), medians of 15 calls in ms, and the ratio. docs/performance.md
("Small products as fused reductions") quotes it.
"""

import statistics
import sys
import time
from pathlib import Path

import lazyarray as la
import numpy as np
from lazyarray.passes import products

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from test_realistic_programs import linear_regression  # noqa: E402


def main() -> None:
    if "--keep-dots" in sys.argv[1:]:
        products.TINY_K = products.SMALL_OUT = -1  # (no product qualifies)
    r = np.random.default_rng(6)
    X, y, beta = r.standard_normal((10**6, 8)), r.standard_normal(10**6), r.standard_normal(9)
    A = np.hstack([np.ones((10**6, 1)), X])
    cases = {
        "A @ beta": lambda xp, A, y, b, X: np.asarray(A @ b),
        "A.T @ y": lambda xp, A, y, b, X: np.asarray(A.T @ y),
        "residual": lambda xp, A, y, b, X: float(((y - A @ b) ** 2).sum()),
        "A.T @ A": lambda xp, A, y, b, X: np.asarray(A.T @ A),
        "least squares": lambda xp, A, y, b, X: [np.asarray(v) for v in
                                                 linear_regression(xp, X, y)],
    }
    args = {np: (A, y, beta, X), la: tuple(la.asarray(v) for v in (A, y, beta, X))}
    print(f"products {'kept as BLAS calls' if products.TINY_K < 0 else 'as fused reductions'}")
    for name, f in cases.items():
        times = {np: [], la: []}
        for k in range(17):
            for xp in (np, la):
                t0 = time.perf_counter()
                f(xp, *args[xp])
                if k >= 2:  # (two warm-up rounds: compiles)
                    times[xp].append(time.perf_counter() - t0)
        n, lz = statistics.median(times[np]), statistics.median(times[la])
        print(f"{name:14s} numpy {n * 1e3:7.2f} ms  lazyarray {lz * 1e3:7.2f} ms  "
              f"ratio {lz / n:.2f}")


if __name__ == "__main__":
    main()
