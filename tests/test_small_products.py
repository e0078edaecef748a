"""Small matrix products as fused multiply-sums (passes/products.py): a short contraction or a
small result is a reduction that fuses with what produces and reads it; NumPy's values,
dtypes and shapes either way, and larger products stay BLAS calls."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyarray as la
from lazyarray.passes import products

_DTYPES = [np.float64, np.float32, np.int64, np.int32]


def _operands(rng, dtype, m, k, n):
    """(a, b) of shapes (m, k) / (k,) and (k, n) / (k,) (m or n None: a vector)."""
    def make(shape):
        if np.dtype(dtype).kind == "f":
            return rng.standard_normal(shape).astype(dtype)
        return rng.integers(-1000, 1000, shape).astype(dtype)  # (int32 sums wrap as NumPy's)
    return (make((m, k) if m is not None else (k,)), make((k, n) if n is not None else (k,)))


def _check(got, want, scale=None):
    """`got` is NumPy's `want` in dtype and shape; exactly for integers, for floats to within
    a few roundings per term of `scale` (the products' sums of |a_i * b_i|, where the order of
    the additions differs from BLAS's), else of `want`."""
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        tol = 2e-5 if want.dtype == np.float32 else 1e-12
        bound = np.abs(want) if scale is None else scale
        with np.errstate(invalid="ignore"):
            close = np.abs(got.astype(np.float64) - want) <= tol * (bound + 1.0)
        assert np.all(close | (got == want) | (np.isnan(got) & np.isnan(want)))
    else:
        np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(_DTYPES), m=st.one_of(st.none(), st.integers(0, 40)),
       k=st.one_of(st.integers(0, 20), st.integers(300, 2000)),
       n=st.one_of(st.none(), st.integers(0, 40)), seed=st.integers(0, 2**16))
def test_products_match_numpy(compiled, dtype, m, k, n, seed):
    """Vector and matrix products of every kind the pass rewrites (and some it keeps) against
    NumPy, on arrays whose producer and consumer fuse with them."""
    a, b = _operands(np.random.default_rng(seed), dtype, m, k, n)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    _check((la.asarray(a) * 2) @ la.asarray(b) + 1, (a * 2) @ b + 1, 2 * scale)
    _check(la.asarray(a) @ la.asarray(b), a @ b, scale)


def _hlo(x):
    return la.explain(x).hlo_after


@pytest.mark.parametrize("case", ["matvec", "vecmat", "vdot", "outer-ish"])
def test_small_products_are_fused_reductions(compiled, case):
    """No dot is left: the product is a reduction fused with its producers and consumers,
    in one kernel."""
    rng = np.random.default_rng(0)
    A, y, beta = rng.standard_normal((5000, 9)), rng.standard_normal(5000), rng.standard_normal(9)
    la_A, la_y, la_beta = la.asarray(A), la.asarray(y), la.asarray(beta)
    if case == "matvec":  # K = 9: a reduction over the rows' 9 elements
        expr, want = la.exp(la_A) @ la_beta * 2.0, np.exp(A) @ beta * 2.0
    elif case == "vecmat":  # a result of 9: a reduction over 5000 rows
        expr, want = (la_A * 3.0).T @ la_y, (A * 3.0).T @ y
    elif case == "vdot":
        expr, want = la.sqrt(la_y) @ la_y, np.sqrt(y) @ y
    else:  # (5000, 3) @ (3, 4): K = 3
        expr, want = la_A[:, :3] @ la.asarray(A[:4, :3].T), A[:, :3] @ A[:4, :3].T
    hlo = _hlo(expr)
    assert " dot(" not in hlo and "reduce(" in hlo
    assert la.explain(expr).num_kernels == 1
    with np.errstate(invalid="ignore"):
        _check(expr, want)


def test_residual_of_a_matrix_vector_product_never_writes_the_product(compiled):
    """`((y - A @ beta) ** 2).sum()`: no product buffer for BLAS, no library call."""
    rng = np.random.default_rng(1)
    A, y, beta = rng.standard_normal((4000, 9)), rng.standard_normal(4000), rng.standard_normal(9)
    calls = la.cache_info()["library_calls"]
    expr = ((la.asarray(y) - la.asarray(A) @ la.asarray(beta)) ** 2).sum()
    assert " dot(" not in _hlo(expr)
    _check(expr, ((y - A @ beta) ** 2).sum())
    assert la.cache_info()["library_calls"] == calls


@pytest.mark.parametrize("shape", [(40, 17, 40), (5, 300, 5), (300, 300, 300)])
def test_larger_products_stay_blas(compiled, shape):
    """A contraction over TINY_K with a result over SMALL_OUT elements stays a library call."""
    m, k, n = shape
    assert k > products.TINY_K and m * n > products.SMALL_OUT
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    calls = la.cache_info()["library_calls"]
    expr = la.asarray(a) @ la.asarray(b)
    assert " dot(" in _hlo(expr)
    _check(expr, a @ b)
    assert la.cache_info()["library_calls"] > calls


@pytest.mark.parametrize("dtype", [np.float16, np.complex128, np.bool_])
def test_other_dtypes_stay_library_calls(compiled, dtype):
    """float16 (NumPy's own accumulation), complex and bool products are left to NumPy."""
    a = np.arange(12).reshape(4, 3).astype(dtype)
    b = np.arange(3).astype(dtype)
    expr = la.asarray(a) @ la.asarray(b)
    assert " dot(" in _hlo(expr)
    _check(expr, a @ b)


def test_integer_products_wrap_as_numpy(compiled):
    """int8 products overflow and wrap exactly as NumPy's matmul does, in any order."""
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (50, 12)).astype(np.int8)
    b = rng.integers(-128, 128, (12,)).astype(np.int8)
    _check(la.asarray(a) @ la.asarray(b), a @ b)
    _check(la.asarray(a).T @ la.asarray(a[:, 0]), a.T @ a[:, 0])


def test_empty_contraction_gives_zeros(compiled):
    a, b = np.ones((7, 0)), np.ones((0, 5))
    _check(la.asarray(a) @ la.asarray(b), a @ b)
    _check(la.asarray(np.ones(0)) @ la.asarray(np.ones(0)), np.ones(0) @ np.ones(0))


@pytest.mark.parametrize("case", ["overflow", "invalid", "vector"])
def test_non_finite_small_products_warn_as_numpy_does(compiled, case):
    """A rewritten product warns what NumPy's matmul warns, named `matmul`, at the user's
    line; the values are NumPy's."""
    import warnings

    if case == "overflow":
        a, b = np.full((300, 9), 1e200), np.full(9, 1e200)
    elif case == "invalid":
        a, b = np.full((300, 9), np.inf), np.zeros(9)
    else:
        a, b = np.full(400, 1e200), np.full(400, 1e200)
    with warnings.catch_warnings(record=True) as got, np.errstate(all="warn"):
        warnings.simplefilter("always")
        expr = la.asarray(a) @ la.asarray(b)
        value = np.asarray(expr)
    with warnings.catch_warnings(record=True) as want_w, np.errstate(all="warn"):
        warnings.simplefilter("always")
        want = a @ b
    assert " dot(" not in _hlo(expr)
    np.testing.assert_array_equal(value, want)
    assert sorted({str(w.message) for w in got}) == sorted({str(w.message) for w in want_w})
    assert got and all(w.filename == __file__ for w in got)
