"""The showcase's workloads W1..W9: one body each, written against an array namespace ``xp``,
with seeded inputs, the numexpr version where the expression can be written as a numexpr
string, and the hand-written Numba loop that is the runner's "ideal" column.

``WORKLOADS`` maps each name to its `Workload`: title, body, inputs, sizes and tolerances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["WORKLOADS", "Workload", "numba_kernels", "W9_STEPS",
           "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"]

# --------------------------------------------------------------------------------------
# The workloads: one body each, written against the array namespace ``xp``.
# --------------------------------------------------------------------------------------


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


W9_STEPS = 25  # 4 elementwise ops per step: 100 ops in all


def w9(xp, x):
    for _ in range(W9_STEPS):
        x = xp.sin(x * 1.01 + 0.1) - 0.05
    return x


# --------------------------------------------------------------------------------------
# Seeded inputs
# --------------------------------------------------------------------------------------


def _rng(name: str, size: int) -> np.random.Generator:
    return np.random.default_rng([int(name[1:]), int(size)])


def _in_w1(n):
    r = _rng("W1", n)
    return tuple(r.uniform(-1.0, 1.0, n) for _ in range(5))


def _in_w2(n):
    r = _rng("W2", n)
    return r.standard_normal(n), r.standard_normal(n)


def _in_w3(rows):
    return (_rng("W3", rows).standard_normal((rows, 1000)) * 3.0,)


def _in_w4(n):
    r = _rng("W4", n)
    return r.uniform(-3.0, 3.0, n), r.uniform(-3.0, 3.0, 1000)


def _in_w5(n):
    r = _rng("W5", n)
    return r.standard_normal((n, n)), r.standard_normal((n, n)), r.standard_normal(n)


def _in_w6(n):
    r = _rng("W6", n)
    return (r.standard_normal((n, 8)) * np.arange(1.0, 9.0) + np.arange(8.0),)


def _in_w7(n):
    return (_rng("W7", n).random((n, n)),)


def _in_w8(n):
    return (_rng("W8", n).random(n),)


def _in_w9(n):
    return (_rng("W9", n).random(n),)


# --------------------------------------------------------------------------------------
# numexpr versions (None: not expressible). ``partial`` ones let NumPy do reductions.
# --------------------------------------------------------------------------------------


def _w9_numexpr_string() -> str:
    s = "x"
    for _ in range(W9_STEPS):
        s = f"(sin({s} * 1.01 + 0.1) - 0.05)"
    return s


_W9_NE = _w9_numexpr_string()


def _ne_w1(ne, a, b, c, d, e):
    return ne.evaluate("a * b + c * d - sin(e)")


def _ne_w2(ne, x, y):
    return np.sqrt(ne.evaluate("sum((x - y) ** 2)"))


def _ne_w3(ne, x):  # partial: NumPy max / sum
    m = x.max(axis=1, keepdims=True)
    e = ne.evaluate("exp(x - m)")
    s = e.sum(axis=1, keepdims=True)
    return ne.evaluate("e / s")


def _ne_w4(ne, x, y):
    xc = x[:, None]
    yr = y[None, :]
    return ne.evaluate("sum(exp(-(xc - yr) ** 2), axis=1)")


def _ne_w6(ne, X):  # partial: NumPy mean / std
    m = X.mean(axis=0)
    s = X.std(axis=0)
    return ne.evaluate("(X - m) / s")


def _ne_w7(ne, A):
    c, w, e, s, n = A[1:-1, 1:-1], A[1:-1, :-2], A[1:-1, 2:], A[2:, 1:-1], A[:-2, 1:-1]
    return ne.evaluate("0.2 * ((((c + w) + e) + s) + n)")


def _ne_w8(ne, x):
    return ne.evaluate("where(x > 0.5, x * 2, where(x < 0.1, 0.1, where(x > 0.3, 0.3, x)))")


def _ne_w9(ne, x):
    return ne.evaluate(_W9_NE)


# --------------------------------------------------------------------------------------
# Hand-written Numba loops: the "ideal" column. Built on first use, AFTER lazyarray has
# been imported (lazyarray chooses Numba's threading settings before Numba loads).
# Each factory takes the NumPy inputs and returns a zero-argument callable; outputs are
# allocated by NumPy once and reused by every call.
# --------------------------------------------------------------------------------------

_NB: dict[str, Any] | None = None


def numba_kernels() -> dict[str, Any]:
    """Workload name -> factory of the ideal loop (compiled on the first call of the loop)."""
    global _NB
    if _NB is not None:
        return _NB
    from numba import njit, prange

    @njit(parallel=True)
    def k1(a, b, c, d, e, out):
        for i in prange(a.shape[0]):
            out[i] = a[i] * b[i] + c[i] * d[i] - np.sin(e[i])

    @njit(parallel=True)
    def k2(x, y):
        s = 0.0
        for i in prange(x.shape[0]):
            t = x[i] - y[i]
            s += t * t
        return np.sqrt(s)

    @njit(parallel=True)
    def k3(x, out):
        n, m = x.shape
        for i in prange(n):
            mx = x[i, 0]
            for j in range(1, m):
                mx = max(mx, x[i, j])
            s = 0.0
            for j in range(m):
                t = np.exp(x[i, j] - mx)
                out[i, j] = t
                s += t
            for j in range(m):
                out[i, j] = out[i, j] / s

    @njit(parallel=True)
    def k4(x, y, out):
        for i in prange(x.shape[0]):
            xi = x[i]
            acc = 0.0
            for j in range(y.shape[0]):
                d = xi - y[j]
                acc += np.exp(-(d * d))
            out[i] = acc

    @njit(parallel=True)
    def k5_bias_relu(C, bias):
        for i in prange(C.shape[0]):
            for j in range(C.shape[1]):
                v = C[i, j] + bias[j]
                C[i, j] = v if v > 0.0 else 0.0

    @njit(parallel=True)
    def k6(X, out):
        n, k = X.shape
        nch = max(1, min(n, 64))
        part = np.zeros((nch, k))
        for c in prange(nch):
            for i in range(c * n // nch, (c + 1) * n // nch):
                for j in range(k):
                    part[c, j] += X[i, j]
        mean = np.zeros(k)
        for c in range(nch):
            for j in range(k):
                mean[j] += part[c, j]
        for j in range(k):
            mean[j] /= n
        part2 = np.zeros((nch, k))
        for c in prange(nch):
            for i in range(c * n // nch, (c + 1) * n // nch):
                for j in range(k):
                    t = X[i, j] - mean[j]
                    part2[c, j] += t * t
        std = np.zeros(k)
        for c in range(nch):
            for j in range(k):
                std[j] += part2[c, j]
        for j in range(k):
            std[j] = np.sqrt(std[j] / n)
        for i in prange(n):
            for j in range(k):
                out[i, j] = (X[i, j] - mean[j]) / std[j]

    @njit(parallel=True)
    def k7(A, out):
        n, m = A.shape
        for i in prange(1, n - 1):
            for j in range(1, m - 1):
                out[i - 1, j - 1] = 0.2 * (
                    A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j]
                )

    @njit(parallel=True)
    def k8(x, out):
        for i in prange(x.shape[0]):
            v = x[i]
            if v > 0.5:
                out[i] = v * 2.0
            else:
                out[i] = min(max(v, 0.1), 0.3)

    # 10 elements: a parallel region would cost more than the work (PERFORMANCE.md),
    # so the ideal loop for W9 is serial.
    @njit
    def k9(x, out, steps):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(steps):
                v = np.sin(v * 1.01 + 0.1) - 0.05
            out[i] = v

    def f1(a, b, c, d, e):
        out = np.empty_like(a)
        return lambda: (k1(a, b, c, d, e, out), out)[1]

    def f2(x, y):
        return lambda: k2(x, y)

    def f3(x):
        out = np.empty_like(x)
        return lambda: (k3(x, out), out)[1]

    def f4(x, y):
        out = np.empty_like(x)
        return lambda: (k4(x, y, out), out)[1]

    def f5(A, B, bias):
        out = np.empty((A.shape[0], B.shape[1]))

        def run():
            np.matmul(A, B, out=out)
            k5_bias_relu(out, bias)
            return out

        return run

    def f6(X):
        out = np.empty_like(X)
        return lambda: (k6(X, out), out)[1]

    def f7(A):
        out = np.empty((A.shape[0] - 2, A.shape[1] - 2))
        return lambda: (k7(A, out), out)[1]

    def f8(x):
        out = np.empty_like(x)
        return lambda: (k8(x, out), out)[1]

    def f9(x):
        out = np.empty_like(x)
        return lambda: (k9(x, out, W9_STEPS), out)[1]

    _NB = {"W1": f1, "W2": f2, "W3": f3, "W4": f4, "W5": f5, "W6": f6, "W7": f7,
           "W8": f8, "W9": f9}
    return _NB


# --------------------------------------------------------------------------------------
# The table of workloads
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    body: Callable
    inputs: Callable[[int], tuple]
    sizes: tuple[int, ...]
    label: Callable[[int], str]
    numexpr: Callable | None = None
    numexpr_partial: bool = False
    rtol: float = 1e-7
    atol: float = 1e-10
    needs: str | None = None  # lazyarray attribute the workload needs


def _sci(n: int) -> str:
    e = int(round(math.log10(n)))
    return f"1e{e}" if 10**e == n else str(n)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload("W1", "a*b + c*d - sin(e)", w1, _in_w1, (10**3, 10**5, 10**7),
                 lambda n: f"n={_sci(n)}", _ne_w1),
        Workload("W2", "sqrt(sum((x-y)**2))", w2, _in_w2, (10**3, 10**5, 10**7),
                 lambda n: f"n={_sci(n)}", _ne_w2),
        Workload("W3", "row softmax of (rows, 1000)", w3, _in_w3, (100, 10_000),
                 lambda n: f"{n}x1000", _ne_w3, numexpr_partial=True),
        Workload("W4", "exp(-(x[:,None]-y[None,:])**2).sum(axis=1), y of 1000", w4, _in_w4,
                 (10**3, 10**4, 10**5), lambda n: f"n={_sci(n)}", _ne_w4),
        Workload("W5", "maximum(A@B + bias, 0)", w5, _in_w5, (256, 1024, 2048),
                 lambda n: f"{n}^2", None, needs="matmul", rtol=1e-6, atol=1e-8),
        Workload("W6", "(X - X.mean(axis=0)) / X.std(axis=0), X (n, 8)", w6, _in_w6,
                 (10**4, 10**6), lambda n: f"n={_sci(n)}", _ne_w6, numexpr_partial=True),
        Workload("W7", "5-point Jacobi step", w7, _in_w7, (256, 2048, 4096),
                 lambda n: f"{n}^2", _ne_w7),
        Workload("W8", "where(x>0.5, x*2, clip(x, 0.1, 0.3))", w8, _in_w8,
                 (10**3, 10**5, 10**7), lambda n: f"n={_sci(n)}", _ne_w8),
        Workload("W9", "100 chained elementwise ops on 10 elements", w9, _in_w9, (10,),
                 lambda n: f"n={n}", _ne_w9),
    ]
}
