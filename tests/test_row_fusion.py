"""Row fusion (passes/rows.py, codegen/rows.py): a reduction over trailing axes and the work
that reads it back through a broadcast run as one kernel over rows.

Every program is checked against NumPy (values, dtype, shape, warnings) and the fusion is
asserted from the optimized HLO and the kernel count."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from lazyarray.passes.rows import ROW_MAX, ROWS_MIN
from tests.helpers import assert_like_numpy

CPU = dict(backend="cpu", eager_threshold=0)


def softmax(xp, x, axis=-1):
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _kernels(*arrays) -> tuple[int, str]:
    rep = la.explain(*arrays)
    return rep.num_kernels, rep.hlo_after


def test_softmax_is_one_row_kernel():
    X = np.random.default_rng(0).standard_normal((300, 257))
    with la.options(**CPU):
        r = softmax(la, la.asarray(X))
        n, hlo = _kernels(r)
        assert n == 1 and "kind=row" in hlo
        got = np.asarray(r)
    assert_like_numpy(got, softmax(np, X))
    np.testing.assert_allclose(got, softmax(np, X), rtol=1e-14, atol=0)


def test_row_kernel_is_cached_and_shape_polymorphic():
    """One kernel signature for every row count and row length: later shapes hit the cache."""
    keys = []
    with la.options(**CPU):
        for shape in [(16, 10), (40, 33), (300, 7), (9, 1000)]:
            X = np.random.default_rng(1).random(shape)
            assert_like_numpy(np.asarray(softmax(la, la.asarray(X))), softmax(np, X))
            (k,) = la.explain().kernels
            keys.append((k.key, k.status))
    assert len({key for key, _ in keys}) == 1
    assert [status for _, status in keys[1:]] == ["hit"] * 3


def test_per_row_results_are_outputs_too():
    """The row max and the normalizer are results of their own: the kernel stores them per
    row, and they match NumPy's."""
    X = np.random.default_rng(2).random((50, 60))
    with la.options(**CPU):
        x = la.asarray(X)
        m = x.max(axis=1)
        e = la.exp(x - m[:, None])
        s = e.sum(axis=1)
        out = e / s[:, None]
        n, hlo = _kernels(m, s, out)
        assert n == 1 and "kind=row" in hlo
        la.evaluate(m, s, out)
        got = [np.asarray(a) for a in (m, s, out)]
    M = X.max(axis=1)
    E = np.exp(X - M[:, None])
    S = E.sum(axis=1)
    for g, w in zip(got, [M, S, E / S[:, None]]):
        assert_like_numpy(g, w)


def test_layer_norm_with_bias_and_a_per_row_scale():
    """Loads of every kind: the (rows, elements) input through a transpose, a vector repeated
    on every row, a per-row vector from outside, scalars."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((64, 48)).T  # not C-contiguous
    b = rng.standard_normal(64)
    g = rng.standard_normal(48)

    def ln(xp, x, b, g):
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        return (x - mu) / xp.sqrt(var + 1e-5) * g[:, None] + b

    with la.options(**CPU):
        r = ln(la, la.asarray(X), la.asarray(b), la.asarray(g))
        n, hlo = _kernels(r)
        assert n == 1 and "kind=row" in hlo
        got = np.asarray(r)
    np.testing.assert_allclose(got, ln(np, X, b, g), rtol=1e-12, atol=1e-12)
    assert got.dtype == np.float64 and got.shape == X.shape


def test_strided_rows_and_three_dims():
    rng = np.random.default_rng(4)
    X = rng.random((6, 10, 40))[:, :, ::3]  # unit stride nowhere
    with la.options(**CPU):
        x = la.asarray(X)
        a = softmax(la, x)  # rows = 6*10 along the last axis
        c = x - x.sum(axis=(1, 2), keepdims=True)  # 6 rows: below ROWS_MIN, not row-fused
        n, hlo = _kernels(a)
        assert n == 1 and "kind=row" in hlo
        assert "kind=row" not in _kernels(c)[1]
        la.evaluate(a, c)
        got_a, got_c = np.asarray(a), np.asarray(c)
    np.testing.assert_allclose(got_a, softmax(np, X), rtol=1e-14)
    np.testing.assert_allclose(got_c, X - X.sum(axis=(1, 2), keepdims=True), rtol=1e-13)
    X4 = rng.random((4, 5, 6, 7))
    with la.options(**CPU):
        x4 = la.asarray(X4)
        r = x4 / x4.sum(axis=(2, 3), keepdims=True)  # 20 rows of 42
        assert "kind=row" in _kernels(r)[1]
        np.testing.assert_allclose(np.asarray(r), X4 / X4.sum(axis=(2, 3), keepdims=True),
                                   rtol=1e-14)


@pytest.mark.parametrize("shape,axis", [((ROWS_MIN - 1, 50), 1), ((40, 30), 0),
                                        ((10, ROW_MAX + 1), 1)])
def test_shapes_that_keep_separate_kernels(shape, axis):
    X = np.random.default_rng(5).random(shape)
    with la.options(**CPU):
        r = softmax(la, la.asarray(X), axis=axis)
        n, hlo = _kernels(r)
        assert "kind=row" not in hlo and n > 1
        np.testing.assert_allclose(np.asarray(r), softmax(np, X, axis=axis), rtol=1e-13)


def test_nan_inf_and_warnings_match_numpy():
    X = np.random.default_rng(6).random((20, 30))
    X[1, 3] = np.nan
    X[2, :] = np.inf  # inf - inf: invalid value in subtract
    X[3, 5] = -np.inf
    with np.errstate(all="warn"):
        with warnings.catch_warnings(record=True) as want_w:
            warnings.simplefilter("always")
            want = softmax(np, X)
        with la.options(**CPU), warnings.catch_warnings(record=True) as got_w:
            warnings.simplefilter("always")
            r = softmax(la, la.asarray(X))
            assert "kind=row" in _kernels(r)[1]
            got = np.asarray(r)
    assert_like_numpy(got, want)
    assert sorted({str(w.message) for w in got_w}) == sorted({str(w.message) for w in want_w})
    assert all(w.filename == __file__ for w in got_w)


def test_overflow_in_the_row_sum_warns_as_numpy():
    """The kernel counts a sum that is not finite; the fusion is then rerun on NumPy's loops,
    so the warning is NumPy's own ("overflow encountered in reduce")."""
    X = np.random.default_rng(7).random((12, 40))
    X[4] = 1e308
    with np.errstate(all="warn"):
        with warnings.catch_warnings(record=True) as want_w:
            warnings.simplefilter("always")
            want = X / X.sum(axis=1, keepdims=True)
        with la.options(**CPU), warnings.catch_warnings(record=True) as got_w:
            warnings.simplefilter("always")
            x = la.asarray(X)
            r = x / x.sum(axis=1, keepdims=True)
            assert "kind=row" in _kernels(r)[1]
            got = np.asarray(r)
    assert_like_numpy(got, want)
    assert {str(w.message) for w in got_w} == {str(w.message) for w in want_w} != set()


def test_errstate_raise_runs_numpy_and_raises_at_the_user():
    """Under errstate "raise" evaluations run on NumPy's loops (only they raise mid-loop);
    the row program still raises NumPy's FloatingPointError."""
    X = np.full((10, 10), 800.0)
    with la.options(**CPU), np.errstate(over="raise"):
        x = la.asarray(X)
        r = la.exp(x - x.min(axis=1, keepdims=True) + 800) / x.sum(axis=1, keepdims=True)
        with pytest.raises(FloatingPointError, match="overflow"):
            np.asarray(r)


def test_a_gather_keeps_its_own_kernel():
    """A loop reading an index table (a gather) is not row-fused (its reads are not per row);
    the rest still is, and the values are NumPy's."""
    X = np.random.default_rng(8).random((30, 20))
    idx = np.arange(20)[::-1].copy()
    with la.options(**CPU):
        x = la.asarray(X)
        r = x[:, idx] - x.max(axis=1, keepdims=True)  # the gather sits in the consumer
        assert "kind=row" not in _kernels(r)[1]
        g = x[:, idx] * 2  # the gather's own kernel, then the row kernel
        s = g - g.max(axis=1, keepdims=True)
        n, hlo = _kernels(s)
        assert n == 2 and "kind=row" in hlo
        la.evaluate(r, s)
    assert_like_numpy(np.asarray(r), X[:, idx] - X.max(axis=1, keepdims=True))
    G = X[:, idx] * 2
    assert_like_numpy(np.asarray(s), G - G.max(axis=1, keepdims=True))


# -- generated row programs ----------------------------------------------------------------

REDUCTIONS = ["sum", "max", "min", "mean"]
# Well-conditioned steps: sums add in a different order than NumPy's (last-bit differences),
# so a step must not blow those up (exp of a huge difference, division by a sum that cancels
# to rounding noise would compare noise with noise)
COMBINE = {
    "sub": lambda xp, v, r: v - r,
    "div": lambda xp, v, r: v / (abs(r) + 1),
    "exp": lambda xp, v, r: xp.exp(xp.tanh(v - r) * 3),
    "sq": lambda xp, v, r: (v - r) ** 2,
    "where": lambda xp, v, r: xp.where(v > r, v, r),
    "mul": lambda xp, v, r: v * r + 1,
}


@st.composite
def row_programs(draw):
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
    ndim = draw(st.integers(2, 3))
    shape = tuple(draw(st.lists(st.integers(1, 12), min_size=ndim, max_size=ndim)))
    k = draw(st.integers(1, ndim - 1))
    rows = int(np.prod(shape[:k]))
    if rows < ROWS_MIN:
        shape = (shape[0] * ROWS_MIN,) + shape[1:]
    if dtype == np.int64:
        elems = st.integers(-20, 20)
    else:
        elems = st.floats(-4, 4, width=32 if dtype == np.float32 else 64)
    x = draw(hnp.arrays(dtype, shape, elements=elems))
    steps = [(draw(st.sampled_from(REDUCTIONS)), draw(st.sampled_from(sorted(COMBINE))),
              draw(st.booleans()), draw(st.booleans())) for _ in range(draw(st.integers(1, 3)))]
    return x, k, steps


def run_program(xp, x, k, steps):
    axes = tuple(range(k, x.ndim))
    v, outs = x, []
    for red, comb, keepdims, keep_out in steps:
        r = getattr(v, red)(axis=axes, keepdims=keepdims)
        if keep_out:
            outs.append(r)
        if not keepdims:
            r = r.reshape(r.shape + (1,) * len(axes))
        v = COMBINE[comb](xp, v, r)
    return [v, *outs]


@settings(max_examples=40, deadline=None)
@given(row_programs())
def test_generated_row_programs_match_numpy(prog):
    x, k, steps = prog
    with np.errstate(all="ignore"):
        want = run_program(np, x, k, steps)
    with la.options(**CPU), np.errstate(all="ignore"):
        outs = run_program(la, la.asarray(x), k, steps)
        n, hlo = _kernels(*outs)
        if np.prod(x.shape[k:]) > 1:  # rows of one element are left to the plain kernels
            assert "kind=row" in hlo, hlo
            assert n == 1
        la.evaluate(*outs)
        got = [np.asarray(o) for o in outs]
    for g, w in zip(got, want):
        rtol = 1e-4 if w.dtype == np.float32 else 1e-9
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1.0, float(
            np.nanmax(np.abs(w), initial=0.0)) if np.isfinite(w).all() else 1.0))
