"""Time per call of about forty common NumPy functions and idioms, NumPy against lazyarray,
side by side in one process (the functions beyond the operators: index functions, sorts,
scans, products, order statistics, creation).

    python asv_bench/tools/numpy_functions.py [N] [NAME,NAME,...]

N elements (default 10^6; an (N / 1000, 1000) matrix `M`, a 1000-vector `v`, random
indices `idx` and integers `q` in [0, 100)); medians of 7 calls after two warm ones
(lazyarray's after `la.wait_compiles()`); lazyarray's time includes `np.asarray` of the
result. At 10^3 the eager tier answers, at
10^5 and 10^6 the lazy tier (docs/performance.md, "The eager threshold", "nonzero on all
threads"). NumPy's BLAS calls (`dot1d`, `M@v`, `x @ x`, `norm`) leave OpenBLAS's workers
spinning for about 0.1 s, which slows the lazyarray call timed right after them
(docs/performance.md, "Known costs").
"""

import sys
import warnings

import numpy as np
from math_speed import median_time  # (this directory: run as a script)

import lazyarray as la


def main(n: int, selected) -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    x, y = rng.random(n), rng.random(n)
    idx, q = rng.integers(0, n, n), rng.integers(0, 100, n)
    M = rng.random((n // 1000, 1000)) if n >= 1000 else rng.random((1, n))
    v = rng.random(1000)
    args_n = (x, y, idx, q, M, v)
    args_l = tuple(la.asarray(a) for a in args_n)
    for name, f in CASES.items():
        if selected and name not in selected:
            continue
        tn = median_time(lambda: f(np, *args_n))
        np.asarray(f(la, *args_l))
        la.wait_compiles()  # (the steady state: no kernel still building in the background)
        tl = median_time(lambda: np.asarray(f(la, *args_l)))
        print(f"{name:14} numpy {tn * 1e6:9.1f} us  lazyarray {tl * 1e6:9.1f} us  {tl / tn:5.2f}")


CASES = {
    "x[x>0.5]": lambda m, x, y, idx, q, M, v: x[x > 0.5],
    "where(x>.5)": lambda m, x, y, idx, q, M, v: m.where(x > 0.5)[0],
    "nonzero": lambda m, x, y, idx, q, M, v: m.nonzero(x > 0.5)[0],
    "x[idx]": lambda m, x, y, idx, q, M, v: x[idx],
    "take": lambda m, x, y, idx, q, M, v: m.take(x, idx),
    "argmax": lambda m, x, y, idx, q, M, v: m.argmax(x),
    "argmin": lambda m, x, y, idx, q, M, v: m.argmin(x),
    "dot1d": lambda m, x, y, idx, q, M, v: m.dot(x, y),
    "M@v": lambda m, x, y, idx, q, M, v: M @ v,
    "sort": lambda m, x, y, idx, q, M, v: m.sort(x),
    "argsort": lambda m, x, y, idx, q, M, v: m.argsort(x),
    "unique q": lambda m, x, y, idx, q, M, v: m.unique(q),
    "cumsum": lambda m, x, y, idx, q, M, v: m.cumsum(x),
    "diff": lambda m, x, y, idx, q, M, v: m.diff(x),
    "concat": lambda m, x, y, idx, q, M, v: m.concatenate([x, y]),
    "M.sum(1)": lambda m, x, y, idx, q, M, v: M.sum(axis=1),
    "M.sum(0)": lambda m, x, y, idx, q, M, v: M.sum(axis=0),
    "M.T.copy": lambda m, x, y, idx, q, M, v: M.T.copy(),
    "mean": lambda m, x, y, idx, q, M, v: m.mean(x),
    "std": lambda m, x, y, idx, q, M, v: m.std(x),
    "median": lambda m, x, y, idx, q, M, v: m.median(x),
    "percentile": lambda m, x, y, idx, q, M, v: m.percentile(x, 90),
    "clip": lambda m, x, y, idx, q, M, v: m.clip(x, 0.2, 0.8),
    "round": lambda m, x, y, idx, q, M, v: m.round(x, 2),
    "astype f32": lambda m, x, y, idx, q, M, v: x.astype(m.float32),
    "bincount": lambda m, x, y, idx, q, M, v: m.bincount(q),
    "searchsorted": lambda m, x, y, idx, q, M, v: m.searchsorted(v, x),
    "histogram": lambda m, x, y, idx, q, M, v: m.histogram(x, bins=50)[0],
    "isclose": lambda m, x, y, idx, q, M, v: m.isclose(x, y),
    "allclose": lambda m, x, y, idx, q, M, v: m.allclose(x, y),
    "count_nonzero": lambda m, x, y, idx, q, M, v: m.count_nonzero(x > 0.5),
    "x[::2]*2": lambda m, x, y, idx, q, M, v: x[::2] * 2,
    "outer small": lambda m, x, y, idx, q, M, v: m.outer(v, v),
    "tile": lambda m, x, y, idx, q, M, v: m.tile(v, 100),
    "repeat": lambda m, x, y, idx, q, M, v: m.repeat(v, 100),
    "linspace+sin": lambda m, x, y, idx, q, M, v: m.sin(m.linspace(0, 1, x.shape[0])),
    "arange*2": lambda m, x, y, idx, q, M, v: m.arange(x.shape[0]) * 2,
    "max-min": lambda m, x, y, idx, q, M, v: x.max() - x.min(),
    "x @ x": lambda m, x, y, idx, q, M, v: x @ x,
    "norm": lambda m, x, y, idx, q, M, v: m.linalg.norm(x),
    "cumprod": lambda m, x, y, idx, q, M, v: m.cumprod(x[:1000] + 0.5),
    "logical": lambda m, x, y, idx, q, M, v: m.logical_and(x > 0.2, y < 0.4).sum(),
    "band where": lambda m, x, y, idx, q, M, v: m.where((x > 0.2) & ~(x > 0.4), x, 0.0),
    "mask": lambda m, x, y, idx, q, M, v: (x > 0.2) | (y < 0.4),
    "abs diff": lambda m, x, y, idx, q, M, v: m.abs(x - y).max(),
}


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000,
         sys.argv[2].split(",") if len(sys.argv) > 2 else None)
