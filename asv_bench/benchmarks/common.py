"""Shared pieces of the asv benchmarks: workload bodies, seeded data factories, engines.

Nothing here runs lazyarray code at import time: asv imports the benchmark modules in a
server process and forks one child per benchmark, and an OpenMP thread pool started
before a fork does not survive it.

The workload bodies are repeated here (not imported from ``lazyarray.tools.workloads``) so the
benchmarks stay the same when asv measures older or newer commits of the package.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np

try:
    import lazyarray as la
except ImportError:  # an uninstalled checkout: benchmark the tree asv_bench/ lives in
    _root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    if os.path.isfile(os.path.join(_root, "lazyarray", "__init__.py")):
        sys.path.insert(0, _root)
    try:
        import lazyarray as la
    except ImportError:
        la = None


# ---------------------------------------------------------------- workload bodies


def w1(xp, a, b, c, d, e):
    return a * b + c * d - xp.sin(e)


def w2(xp, x, y):
    return xp.sqrt(xp.sum((x - y) ** 2))


def w3(xp, x):
    e = xp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def w4(xp, x, y):
    return xp.exp(-((x[:, None] - y[None, :]) ** 2)).sum(axis=1)


def w5(xp, A, B, bias):
    return xp.maximum(A @ B + bias, 0)


def w6(xp, X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def w7(xp, A):
    return 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])


def w8(xp, x):
    return xp.where(x > 0.5, x * 2, xp.clip(x, 0.1, 0.3))


def w9(xp, x):
    for _ in range(25):  # 4 ops a step: 100 elementwise ops
        x = xp.sin(x * 1.01 + 0.1) - 0.05
    return x


BODIES = {"W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6, "W7": w7,
          "W8": w8, "W9": w9}

# Sizes as in the showcase runner (python -m lazyarray bench).
SIZES = {
    "W1": [10**3, 10**5, 10**7],
    "W2": [10**3, 10**5, 10**7],
    "W3": [100, 10_000],                 # rows of a (rows, 1000) matrix
    "W4": [10**3, 10**4, 10**5],         # len(x); y has 1000 elements
    "W5": [256, 1024, 2048],             # square matrices
    "W6": [10**4, 10**6],                # rows of an (n, 8) matrix
    "W7": [256, 2048, 4096],             # square grid
    "W8": [10**3, 10**5, 10**7],
    "W9": [10],
}

# Two small sizes per workload for the track_* (compile/kernels) benchmarks.
SMALL_SIZES = {"W1": (1000, 3000), "W2": (1000, 3000), "W3": (10, 30), "W4": (100, 300),
               "W5": (64, 96), "W6": (1000, 3000), "W7": (64, 96), "W8": (1000, 3000),
               "W9": (10, 30)}

ENGINES = ["numpy", "lazyarray"]


# ---------------------------------------------------------------- seeded data


@functools.lru_cache(maxsize=4)
def data(workload: str, size: int) -> tuple:
    """Seeded NumPy inputs of a workload (read-only, cached per process)."""
    r = np.random.default_rng([int(workload[1:]), int(size)])
    n = size
    if workload == "W1":
        out = tuple(r.uniform(-1.0, 1.0, n) for _ in range(5))
    elif workload == "W2":
        out = (r.standard_normal(n), r.standard_normal(n))
    elif workload == "W3":
        out = (r.standard_normal((n, 1000)) * 3.0,)
    elif workload == "W4":
        out = (r.uniform(-3.0, 3.0, n), r.uniform(-3.0, 3.0, 1000))
    elif workload == "W5":
        out = (r.standard_normal((n, n)), r.standard_normal((n, n)), r.standard_normal(n))
    elif workload == "W6":
        out = (r.standard_normal((n, 8)) * np.arange(1.0, 9.0) + np.arange(8.0),)
    elif workload == "W7":
        out = (r.random((n, n)),)
    elif workload in ("W8", "W9"):
        out = (r.random(n),)
    else:
        raise KeyError(workload)
    for a in out:
        a.flags.writeable = False
    return out


@functools.lru_cache(maxsize=4)
def vector(n: int, seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).random(n)
    a.flags.writeable = False
    return a


# ---------------------------------------------------------------- engines


def require_lazyarray(*attrs: str):
    """The lazyarray module, or NotImplementedError (asv then skips the benchmark)."""
    if la is None:
        raise NotImplementedError("lazyarray is not importable")
    missing = [a for a in attrs if not hasattr(la, a)]
    if missing:
        raise NotImplementedError(f"lazyarray has no {', '.join(missing)}")
    return la


def needs_for(workload: str) -> tuple[str, ...]:
    return ("matmul",) if workload == "W5" else ()


def prepare(workload: str, size: int, engine: str):
    """(xp, inputs) for one engine; lazyarray inputs are converted once, untimed."""
    args = data(workload, size)
    if engine == "numpy":
        return np, args
    if engine == "lazyarray":
        lz = require_lazyarray("asarray", *needs_for(workload))
        return lz, tuple(lz.asarray(a) for a in args)
    raise NotImplementedError(engine)


def run(workload: str, xp, args):
    """One evaluation, materialized (np.asarray forces lazyarray to compute)."""
    return np.asarray(BODIES[workload](xp, *args))


class compiled_path:
    """``la.options(eager_threshold=0)`` held open from setup to teardown (asv has no
    ``with`` around a benchmark), so even tiny inputs take the compiled-kernel path."""

    def __init__(self, lz, **more):
        self._ctx = lz.options(eager_threshold=0, **more)

    def __enter__(self):
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def close(self):
        self._ctx.__exit__(None, None, None)


class held_options(compiled_path):
    """``la.options(**opts)`` held open from setup to teardown."""

    def __init__(self, lz, **opts):
        self._ctx = lz.options(**opts)
