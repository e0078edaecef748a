"""Moments fusion (passes/moments.py, codegen/moments.py): a sum over leading axes and the
squared deviations from the mean it gives (var, std) run as one kernel reading X once.

Every program is checked against NumPy (values, dtype, shape, warnings); the fusion is
asserted from the optimized HLO and the kernel count."""

import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from lazyarray.passes.moments import MAX_COLS
from lazyarray.codegen import layout
from tests.helpers import assert_like_numpy, assert_meta_like_numpy, with_warnings

CPU = dict(backend="cpu", eager_threshold=0)


def _plan(*arrays) -> tuple[int, str]:
    rep = la.explain(*arrays)
    return rep.num_kernels, rep.hlo_after


def w6(xp, X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def test_standardizing_columns_is_two_kernels():
    """W6: mean and std in one moments kernel, then the elementwise pass."""
    X = np.random.default_rng(0).standard_normal((5000, 8)) * 3 + 7
    with la.options(**CPU):
        r = w6(la, la.asarray(X))
        n, hlo = _plan(r)
        assert n == 2 and hlo.count("kind=moments") == 1, hlo
        got = np.asarray(r)
    assert_meta_like_numpy(got, w6(np, X))  # (x - mean: absolute rounding near zero)
    np.testing.assert_allclose(got, w6(np, X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn,shape", [
    (lambda x: x.std(axis=0), (3000, 5)),
    (lambda x: x.var(axis=0, ddof=1), (3000, 5)),
    (lambda x: x.std(axis=0, keepdims=True), (3000, 5)),
    (lambda x: x.var(axis=(0, 1)), (40, 70, 6)),
    (lambda x: x.std(axis=0), (50, 7, 9)),
    (lambda x: x.std(axis=-2), (4000, 2)),
], ids=["std", "var-ddof1", "std-keepdims", "var-two-axes", "std-3d", "negative-axis"])
def test_var_and_std_are_one_kernel(fn, shape):
    X = np.random.default_rng(1).standard_normal(shape) + 100.0
    with la.options(**CPU):
        r = fn(la.asarray(X))
        n, hlo = _plan(r)
        assert n == 1 and "kind=moments" in hlo, hlo
        got = np.asarray(r)
    assert_like_numpy(got, fn(X))
    np.testing.assert_allclose(got, fn(X), rtol=1e-12)


def test_mean_and_std_as_results_of_one_evaluation():
    X = np.random.default_rng(2).random((4000, 12))
    with la.options(**CPU):
        x = la.asarray(X)
        m, s, v = x.mean(axis=0), x.std(axis=0), x.var(axis=0)
        n, hlo = _plan(m, s, v)
        assert "kind=moments" in hlo and n == 1, hlo
        la.evaluate(m, s, v)
        got = [np.asarray(a) for a in (m, s, v)]
    for g, w in zip(got, [X.mean(axis=0), X.std(axis=0), X.var(axis=0)]):
        assert_like_numpy(g, w)


def test_views_and_float32():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((900, 20))
    with la.options(**CPU):
        for X in (base[::3, 2:9], base[:, ::2], base.astype(np.float32)):
            r = la.asarray(X).std(axis=0)
            n, hlo = _plan(r)
            assert n == 1 and "kind=moments" in hlo, hlo
            got = np.asarray(r)
            assert_like_numpy(got, X.std(axis=0))
            np.testing.assert_allclose(got, X.std(axis=0),
                                       rtol=1e-5 if X.dtype == np.float32 else 1e-12)


def test_accurate_when_the_mean_dwarfs_the_spread():
    """Deviations from each block's own mean: no cancellation where sum(x**2) - n*mean**2
    would lose every digit."""
    rng = np.random.default_rng(4)
    X = 1e9 + rng.standard_normal((200_000, 3))
    with la.options(**CPU):
        got = np.asarray(la.asarray(X).std(axis=0))
    want = np.sqrt(((X - X.mean(axis=0)) ** 2).mean(axis=0))
    np.testing.assert_allclose(got, want, rtol=1e-9)
    np.testing.assert_allclose(got, X.std(axis=0), rtol=1e-9)


@pytest.mark.parametrize("shape,axis", [((500, 1), 0), ((5000,), 0), ((40, 300), 1),
                                        ((30, MAX_COLS + 1), 0)])
def test_shapes_that_keep_two_kernels(shape, axis):
    """A full reduction, a reduction over the last axis (row fusion's), and more kept
    elements than MAX_COLS keep separate kernels."""
    X = np.random.default_rng(5).random(shape)
    with la.options(**CPU):
        r = la.asarray(X).std(axis=axis)
        assert "kind=moments" not in _plan(r)[1]
        assert_like_numpy(np.asarray(r), X.std(axis=axis))


def test_other_squared_terms_are_not_mistaken_for_a_variance():
    """The deviations must be from a result of the same sum of the same array over the
    same axes: squares of other differences keep their own kernels (and NumPy's values)."""
    rng = np.random.default_rng(6)
    X, Y = rng.random((600, 4)), rng.random((600, 4))
    with la.options(**CPU):
        x, y = la.asarray(X), la.asarray(Y)
        cases = [
            (((x - y.mean(axis=0)) ** 2).sum(axis=0),
             ((X - Y.mean(axis=0)) ** 2).sum(axis=0)),
            (((x - x.max(axis=0)) ** 2).sum(axis=0),
             ((X - X.max(axis=0)) ** 2).sum(axis=0)),
            (((x[1:] - x[1:].mean(axis=0)) * (x[:-1] - x[1:].mean(axis=0))).sum(axis=0),
             ((X[1:] - X[1:].mean(axis=0)) * (X[:-1] - X[1:].mean(axis=0))).sum(axis=0)),
        ]
        for r, want in cases:
            assert "kind=moments" not in _plan(r)[1]
            assert_like_numpy(np.asarray(r), want)
        # a square of the deviations from another value computed from the sum still is
        # one: the identity holds for any subtracted value
        r = ((x - x.sum(axis=0) / 3.0) ** 2).sum(axis=0)
        assert "kind=moments" in _plan(r)[1]
        assert_like_numpy(np.asarray(r), ((X - X.sum(axis=0) / 3.0) ** 2).sum(axis=0))


def test_results_do_not_depend_on_the_thread_count():
    X = np.random.default_rng(7).standard_normal((300_000, 6))
    threads = numba.get_num_threads()
    with la.options(**CPU):
        x = la.asarray(X)
        a = np.asarray(x.var(axis=0)).copy()
        numba.set_num_threads(1)
        try:
            b = np.asarray(la.asarray(X).var(axis=0))
        finally:
            numba.set_num_threads(threads)
    assert np.array_equal(a, b)


def test_kernel_is_cached_and_shape_polymorphic():
    """One kernel for every row count and kept size (blocks are launch arguments)."""
    keys = []
    with la.options(**CPU):
        for shape in [(100, 3), (5000, 8), (70_000, 2), (3, 200)]:
            X = np.random.default_rng(8).random(shape)
            assert_like_numpy(np.asarray(la.asarray(X).var(axis=0)), X.var(axis=0))
            (k,) = la.explain().kernels
            keys.append((k.key, k.status))
    assert len({key for key, _ in keys}) == 1
    assert [status for _, status in keys[1:]] == ["hit"] * 3


def test_empty_rows_match_numpy():
    X = np.zeros((0, 5))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = X.var(axis=0)
        with la.options(**CPU):
            got = np.asarray(la.asarray(X).var(axis=0))
    assert_like_numpy(got, want)


@pytest.mark.parametrize("poison", ["nan", "inf", "-inf", "huge"])
def test_nan_inf_and_overflow_warn_as_numpy(poison):
    X = np.random.default_rng(9).random((2000, 4))
    X[700, 1] = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "huge": 1e300}[poison]
    if poison == "huge":
        X[701, 1] = -1e300
    with np.errstate(all="warn"):
        want, want_w = with_warnings(lambda: w6(np, X))
        with la.options(**CPU):
            r = w6(la, la.asarray(X))
            assert "kind=moments" in _plan(r)[1]
            got, got_w = with_warnings(lambda: np.asarray(r))
    assert_meta_like_numpy(got, want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert {str(w.message) for w in got_w} == {str(w.message) for w in want_w}
    assert all(w.filename == __file__ for w in got_w)


def test_blocks_of_one_row_and_a_ragged_last_block(monkeypatch):
    """Block boundaries anywhere: rows per block from 1 up, a last block of any length,
    lanes that are not a multiple of 64."""
    rng = np.random.default_rng(10)
    with la.options(**CPU):
        for block in (1, 7, 64, 1000):
            monkeypatch.setattr(layout, "MOMENT_BLOCK", block)
            for shape in [(37, 3), (129, 5), (64, 64), (10, 100)]:
                X = rng.standard_normal(shape) * 10 + 2
                assert_like_numpy(np.asarray(la.asarray(X).std(axis=0)), X.std(axis=0))


@st.composite
def moment_programs(draw):
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    ndim = draw(st.integers(2, 3))
    k = draw(st.integers(1, ndim - 1))
    # rows: at least two (of one, simplify leaves no broadcast to recognize, nothing to gain);
    # kept: 2..MAX_COLS elements
    lead = draw(st.lists(st.integers(1, 40), min_size=k, max_size=k).filter(
        lambda d: int(np.prod(d)) >= 2))
    kept = draw(st.lists(st.integers(1, 12), min_size=ndim - k, max_size=ndim - k).filter(
        lambda d: int(np.prod(d)) >= 2))
    shape = (*lead, *kept)
    loc = draw(st.sampled_from([0.0, 1e3, -5e5]))
    elems = st.floats(-8, 8, width=32 if dtype == np.float32 else 64)
    x = draw(hnp.arrays(dtype, shape, elements=elems)) + dtype(loc)
    how = draw(st.sampled_from(["var", "std", "w6", "mean+std"]))
    return x, tuple(range(k)), how, draw(st.integers(0, 1)), draw(st.booleans())


def run_moments(xp, x, axes, how, ddof, keepdims):
    if how == "w6":
        return [(x - x.mean(axis=axes, keepdims=True)) / (x.std(axis=axes, keepdims=True) + 1)]
    if how == "mean+std":
        return [x.mean(axis=axes, keepdims=keepdims), x.std(axis=axes, ddof=ddof,
                                                            keepdims=keepdims)]
    return [getattr(x, how)(axis=axes, ddof=ddof, keepdims=keepdims)]


@pytest.mark.heavy
@settings(max_examples=40, deadline=None)
@given(moment_programs())
def test_generated_moment_programs_match_numpy(prog):
    x, axes, how, ddof, keepdims = prog
    with np.errstate(all="ignore"):
        want = run_moments(np, x, axes, how, ddof, keepdims)
    with la.options(**CPU), np.errstate(all="ignore"):
        outs = run_moments(la, la.asarray(x), axes, how, ddof, keepdims)
        hlo = _plan(*outs)[1]
        assert "kind=moments" in hlo, hlo
        la.evaluate(*outs)
        got = [np.asarray(o) for o in outs]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if x.dtype == np.float32:  # float32 sums accumulate in float64 here, not in NumPy
            rtol, atol = 1e-3, 1e-3 * (1 + abs(float(x.ravel()[0])))
        else:
            rtol, atol = 1e-9, 1e-9 * (1 + abs(float(x.ravel()[0])))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
