"""Whole realistic NumPy programs, written once against a module `np`, run unchanged with
NumPy and with lazyarray (`import lazyarray as np`), on both tiers; results must match."""

from __future__ import annotations

import numpy
import pytest

import lazyarray


def kmeans_step(np, X, C):
    """One Lloyd iteration: assign points to the nearest centre, move centres to the means."""
    d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    labels = d2.argmin(axis=1)
    onehot = (labels[:, None] == np.arange(C.shape[0])[None, :]).astype(X.dtype)
    counts = onehot.sum(axis=0)
    sums = onehot.T @ X
    newC = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], C)
    inertia = d2.min(axis=1).sum()
    return newC, labels, inertia


def heat_equation(np, u0, steps=30, alpha=0.2):
    """Explicit finite differences of the 2-d heat equation, updated in place."""
    u = np.array(u0, dtype=float)
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] += alpha * lap
    return u


def monte_carlo_pi(np, n=200_000, seed=7):
    """Estimate pi from uniform points in the unit square (NumPy's own random stream)."""
    rng = np.random.default_rng(seed)
    xy = rng.random((n, 2))
    inside = (xy ** 2).sum(axis=1) <= 1.0
    return 4.0 * inside.mean(), inside.std()


def linear_regression(np, X, y):
    """Least squares by the normal equations, with an intercept column, and the R^2."""
    A = np.hstack([np.ones((X.shape[0], 1)), X])
    beta = np.linalg.solve(A.T @ A, A.T @ y)
    resid = y - A @ beta
    r2 = 1.0 - (resid ** 2).sum() / ((y - y.mean()) ** 2).sum()
    return beta, r2


def image_filter(np, img):
    """3x3 box blur with edge padding, then a Sobel gradient magnitude, clipped to [0, 1]."""
    p = np.pad(img, 1, mode="edge")
    blur = sum(p[i:i + img.shape[0], j:j + img.shape[1]] for i in range(3) for j in range(3)) / 9
    q = np.pad(blur, 1, mode="reflect")
    gx = (q[1:-1, 2:] - q[1:-1, :-2]) * 2 + (q[:-2, 2:] - q[:-2, :-2]) + (q[2:, 2:] - q[2:, :-2])
    gy = (q[2:, 1:-1] - q[:-2, 1:-1]) * 2 + (q[2:, :-2] - q[:-2, :-2]) + (q[2:, 2:] - q[:-2, 2:])
    return np.clip(np.sqrt(gx ** 2 + gy ** 2), 0.0, 1.0)


def normalize_softmax(np, logits, temperature=0.7):
    """Standardize features, then a temperature softmax per row, and its entropy."""
    z = (logits - logits.mean(axis=0)) / (logits.std(axis=0) + 1e-12)
    e = np.exp((z - z.max(axis=1, keepdims=True)) / temperature)
    p = e / e.sum(axis=1, keepdims=True)
    ent = -(p * np.log(p + 1e-300)).sum(axis=1)
    return p, ent


def _inputs():
    r = numpy.random.default_rng(2026)
    return {
        "kmeans_step": (r.standard_normal((3000, 4)), r.standard_normal((5, 4))),
        "heat_equation": (r.random((96, 80)),),
        "monte_carlo_pi": (),
        "linear_regression": (r.standard_normal((5000, 3)), r.standard_normal(5000)),
        "image_filter": (r.random((120, 90)),),
        "normalize_softmax": (r.standard_normal((2000, 10)) * 3,),
    }


PROGRAMS = [kmeans_step, heat_equation, monte_carlo_pi, linear_regression, image_filter,
            normalize_softmax]


def _flat(res):
    return res if isinstance(res, tuple) else (res,)


@pytest.mark.parametrize("tier", ["compiled", "interpreter"])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__)
def test_program_runs_unchanged_and_matches_numpy(program, tier):
    args = _inputs()[program.__name__]
    want = _flat(program(numpy, *args))
    opts = {"eager_threshold": 0} if tier == "compiled" else {"backend": "numpy"}
    with lazyarray.options(**opts):
        got = _flat(program(lazyarray, *(lazyarray.asarray(a) for a in args)))
        got = [numpy.asarray(g) for g in got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = numpy.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind in "biu":
            numpy.testing.assert_array_equal(g, w)
        else:
            numpy.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_programs_fuse_on_the_compiled_tier():
    """The elementwise-heavy programs compile to few kernels, not one per operation."""
    r = numpy.random.default_rng(1)
    img = lazyarray.asarray(r.random((120, 90)))
    with lazyarray.options(eager_threshold=0):
        out = image_filter(lazyarray, img)
        report = lazyarray.explain(out)
    assert len(report.kernels) <= 4, report
    logits = lazyarray.asarray(r.standard_normal((2000, 10)))
    with lazyarray.options(eager_threshold=0):
        p, ent = normalize_softmax(lazyarray, logits)
        report = lazyarray.explain(p, ent)
    # ~25 operations: column mean and variance, row max and sum, the two outputs (8 today;
    # row fusion would merge the row reductions with their consumers)
    assert len(report.kernels) <= 8, report
