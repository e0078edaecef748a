"""The eager tier: tiny computed arrays are computed with NumPy at once, cheaply, and written
in place only when nothing else can see the old value (docs/performance.md)."""

from __future__ import annotations

import warnings

import sys

import numpy as np
import pytest

import lazyarray as la
from helpers import assert_like_numpy


def _buf(a) -> int:
    """Address of the data of the NumPy value behind a (storage-backed or eager) tiny Array
    (an int: holding the array itself would keep the old value alive)."""
    v = a._val if a._val is not None else a._st.node._host
    return v.__array_interface__["data"][0]


def test_eager_results_are_single_objects_until_shared():
    a = la.asarray(np.arange(6))  # integers: the eager tier (float64 chains are traced)
    b = a * 2 + 1
    assert b._st is None and isinstance(b._val, np.ndarray)  # no storage, no graph leaf
    assert b.shape == (6,) and b.dtype == np.int64 and b.ndim == 1 and b.size == 6
    assert b._st is None  # metadata did not create one
    v = b[1:]  # a view needs the storage
    assert b._st is not None and b._val is None
    np.testing.assert_array_equal(np.asarray(v), np.arange(6)[1:] * 2 + 1)


def test_zero_d_results_are_numpy_scalars_with_numpy_semantics():
    a = la.asarray(np.arange(5, dtype=np.int32))
    s = a[3] * 2
    n = np.arange(5, dtype=np.int32)[3] * 2
    assert isinstance(s, la.ndarray) and s.shape == () and s.dtype == n.dtype
    assert type(np.asarray(s)) is np.ndarray and np.asarray(s).shape == ()
    assert int(s) == int(n) and float(s / 4) == float(n / 4)
    with pytest.raises(TypeError):  # a NumPy scalar: no item assignment
        s[()] = 7
    with pytest.raises(TypeError):
        n[()] = 7
    assert int(s) == int(n)
    # NumPy's own warnings for scalar arithmetic (same category and text as NumPy)
    big = la.asarray(np.array([2**62], dtype=np.int64))[0]
    with warnings.catch_warnings(record=True) as got, np.errstate(over="warn"):
        warnings.simplefilter("always")
        r = big * 4
    with warnings.catch_warnings(record=True) as want, np.errstate(over="warn"):
        warnings.simplefilter("always")
        ref = np.array([2**62], dtype=np.int64)[0] * 4
    assert int(r) == int(ref)
    assert [str(w.message) for w in got] == [str(w.message) for w in want]


def test_write_into_dead_tiny_array_runs_in_place():
    a = la.zeros(8)
    before = _buf(a)
    a[3] = 2.5
    a[4:6] = la.asarray(np.array([1.0, 2.0])) * 3
    assert _buf(a) == before  # no copy: nothing else could see the old value
    np.testing.assert_array_equal(np.asarray(a), [0, 0, 0, 2.5, 3, 6, 0, 0])
    e = a * 1.0  # a trace (trace_tier.py) ...
    e.sum()  # ... computed by an operation that takes its value: an eager value, written in
    e_before = _buf(e)  # place too
    e[0] = 9
    assert _buf(e) == e_before and float(e[0]) == 9.0 and float(a[0]) == 0.0


@pytest.mark.parametrize("holder", ["copy", "numpy", "pending", "view"])
def test_write_copies_when_the_old_value_is_alive(holder):
    a = la.asarray(np.arange(8.0))
    ref = np.arange(8.0)
    if holder == "copy":
        with la.options(eager_threshold=0):  # a lazy copy: shares the graph leaf (a tiny
            kept, want = a.copy(), ref.copy()  # computed array's copy is NumPy's, at once)
    elif holder == "numpy":
        kept, want = np.asarray(a), ref.copy()  # a NumPy caller holds the buffer
    elif holder == "pending":
        with la.options(eager_threshold=0):
            kept, want = a[::2] * 2, ref[::2] * 2  # a pending graph reads the old version
    else:
        kept = a[2:]  # a view: must SEE the write, as in NumPy
        want = None
    before = _buf(a)
    a[3] = -1.0
    ref[3] = -1.0
    np.testing.assert_array_equal(np.asarray(a), ref)
    if want is None:
        np.testing.assert_array_equal(np.asarray(kept), ref[2:])
    else:
        assert _buf(a) != before
        np.testing.assert_array_equal(np.asarray(kept), want)


def test_inplace_operators_on_dead_small_arrays_run_in_place():
    """`x += dx` on a small computed array nothing else sees: NumPy's in-place ufunc into
    its buffer (one counted eager write), for a storage's buffer and an eager value alike."""
    x, s = la.zeros(1000), la.full(1000, 2.0)
    x += s  # (a fill: its first write gives it a buffer)
    e = s * 3 + 1  # an eager value or a trace; computed by the write below
    e += s
    for a, want in ((x, np.full(1000, 2.0)), (e, np.full(1000, 9.0))):
        before, writes = _buf(a), la.cache_info()["eager_writes"]
        for k in range(4):
            a *= 1.5
            a -= 1
            want = want * 1.5 - 1
        assert _buf(a) == before  # no copy
        assert la.cache_info()["eager_writes"] == writes + 8
        assert_like_numpy(a, want)
    i = la.arange(10)
    i //= 3
    i <<= 2
    assert_like_numpy(i, (np.arange(10) // 3) << 2)


@pytest.mark.parametrize("holder", ["copy", "numpy", "pending", "trace", "view"])
def test_inplace_operator_copies_when_the_old_value_is_alive(holder):
    a = la.asarray(np.arange(8.0)) * 1.0
    a.sum()  # (computed)
    ref = np.arange(8.0)
    if holder == "copy":
        with la.options(eager_threshold=0):
            kept, want = a.copy(), ref.copy()
    elif holder == "numpy":
        kept, want = np.asarray(a), ref.copy()
    elif holder == "pending":
        with la.options(eager_threshold=0):
            kept, want = a[::2] * 2, ref[::2] * 2
    elif holder == "trace":
        kept, want = a * 2.0 + 1.0, ref * 2 + 1  # (a pending trace over the old value)
    else:
        kept, want = a[2:], None  # a view must SEE the write, as in NumPy
    a += 10.0
    ref += 10.0
    np.testing.assert_array_equal(np.asarray(a), ref)
    np.testing.assert_array_equal(np.asarray(kept), ref[2:] if want is None else want)


def test_inplace_operator_on_a_numpy_scalar_rebinds_it():
    """`s += 1` on a NumPy scalar (a 0-d result, here with a storage: it was a graph leaf)
    makes a new scalar; another name for the old one keeps its value, as in NumPy."""
    big = la.asarray(np.arange(100_000.0))
    s = la.asarray(np.arange(4.0)).sum()
    np.asarray(big + s)  # (s becomes a leaf of a graph: it gets a storage)
    t = s
    s += 1.0
    assert float(t) == 6.0 and float(s) == 7.0 and t is not s


def test_inplace_operator_errors_are_numpys():
    i = la.arange(4)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        i += 1.5
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        i += la.arange(3)
    b = la.asarray(np.array([True, False]))
    with pytest.raises(TypeError):
        b -= True  # (NumPy: boolean subtract is not supported)
    assert_like_numpy(i, np.arange(4))


def test_rows_of_a_computed_matrix_are_views_by_an_int_key():
    m = la.asarray(np.arange(12.0).reshape(3, 4))
    r = m[1]
    assert r.base is m and r.shape == (4,)
    m[1, 2] = -1.0
    assert_like_numpy(r, np.array([4.0, 5.0, -1.0, 7.0]))
    with pytest.raises(IndexError):
        m[3]
    assert_like_numpy(m[-1], np.arange(12.0).reshape(3, 4)[-1])


def test_a_view_written_back_to_its_own_place_is_numpys_no_op():
    """`a[k] += x` ends with `a[k] = <that view>`: nothing to write, for every key form of a
    slicing view (slices, ints, one Ellipsis); a read-only array still refuses it."""
    ref = np.arange(60.0).reshape(3, 4, 5)
    a = la.asarray(ref) * 1.0
    ref = ref * 1.0
    for key in ((1, slice(1, 3)), (Ellipsis, 2), (0, Ellipsis, slice(None, None, 2)),
                slice(1, None), 2):
        a[key] += 1.5
        ref[key] += 1.5
        a[key] = a[key]
        v = a[key]
        a[...] = a * 2.0  # (a new version: the view reads it)
        ref[...] = ref * 2.0
        a[key] = v
        assert_like_numpy(a, ref)
    r = la.broadcast_to(la.asarray(np.arange(4.0)), (2, 4))
    with pytest.raises(ValueError, match="read-only"):
        r[0, 1:] = r[0, 1:]


def test_read_only_arrays_stay_read_only_on_the_eager_path():
    a = la.asarray(np.arange(4.0))
    with pytest.raises(ValueError, match="read-only"):
        la.broadcast_to(a, (2, 4))[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(a)[0] = 1.0  # the buffer handed out is read-only
    c = la.asarray(np.arange(4.0) + 1j)
    c.real[0] = 5.0  # .real of a complex array is a writable view, as in NumPy
    assert complex(c[0]) == 5 + 1j
    with pytest.raises(ValueError, match="read-only"):
        la.asarray(np.arange(4.0)).imag[0] = 1.0  # of a real array: read-only zeros


def test_element_loop_matches_numpy_and_bounded_work():
    def prog(xp):
        a = xp.zeros(50)
        b = xp.asarray(np.linspace(0, 1, 50))
        for i in range(1, 50):
            a[i] = a[i - 1] * 0.9 + b[i]
        return a

    la.reset_stats()
    np.testing.assert_allclose(np.asarray(prog(la)), prog(np), rtol=0, atol=0)
    info = la.cache_info()
    assert info["compiles"] == 0 and info["eager_ops"] >= 98


def test_eager_tier_off_under_jit_tracing_and_threshold_zero():
    a = la.asarray(np.arange(4.0))
    with la.options(eager_threshold=0):
        b = a * 2
        assert b._val is None and b._st.node.op != "buffer"  # recorded, not computed
        b2 = la.sin(a)
        assert b2._val is None
    np.testing.assert_array_equal(np.asarray(b), np.arange(4.0) * 2)
    c = a * 3.0
    np.asarray(c)  # an eager value now: lazy too under a lower threshold
    e = la.asarray(np.arange(4.0))  # so is a tiny asarray
    assert c._val is not None and e._val is not None
    with la.options(eager_threshold=0):
        for d in (c * 2, c + e, e ** 2, la.sqrt(c), -e, c > 1.0):
            assert d._val is None and d._tr is None and d._st.node.op != "buffer"
        with la.options(eager_threshold=8):  # nested, still lower than TINY: 4 elements
            assert (c * 2)._st is None  # are below it (a trace, no graph node)
        assert (c * 2)._st is not None
    assert (c * 2)._st is None and sys.modules["lazyarray.config"].LOWERED[0] == 0
    np.testing.assert_array_equal(np.asarray(c * 2 + a), np.arange(4.0) * 7)


def test_a_0d_eager_value_is_handed_out_as_a_fresh_array():
    s = la.sum(la.asarray(np.arange(4.0)) * 2.0)  # a NumPy scalar on the eager tier
    v = np.asarray(s)
    assert v.shape == () and v.dtype == np.float64 and float(v) == 12.0
    v[()] = -1.0  # the caller's own array, as np.asarray(np.float64(12.0)) is in NumPy
    assert float(s) == 12.0 and float(np.asarray(s)) == 12.0
    r = la.sqrt(s)  # a ufunc of a 0-d eager value: NumPy's scalar call, now
    assert type(r._val) is np.float64 and float(r) == np.sqrt(12.0)
    with la.options(eager_threshold=0):  # ... unless the threshold says lazy
        r = la.sqrt(s)
        assert r._val is None and r._st.node.op != "buffer"
    assert float(r) == np.sqrt(12.0)


_EAGER_FUNCS = {
    "argmax": lambda xp, x, i, m: xp.argmax(x),
    "argmin axis": lambda xp, x, i, m: xp.argmin(m, axis=1, keepdims=True),
    "cumsum": lambda xp, x, i, m: xp.cumsum(m),
    "cumprod axis int": lambda xp, x, i, m: xp.cumprod(i.reshape(5, 8), axis=0, dtype=np.int32),
    "take": lambda xp, x, i, m: xp.take(x, i, mode="wrap"),
    "take axis": lambda xp, x, i, m: xp.take(m, i[:3] % 6, axis=1),
    "concatenate": lambda xp, x, i, m: xp.concatenate([x, i, x[:3]]),
    "concatenate axis": lambda xp, x, i, m: xp.concatenate((m, m * 2), axis=-1),
    "astype": lambda xp, x, i, m: x.astype(np.float32),
    "astype int": lambda xp, x, i, m: (x * 100).astype(np.int16),
    "matmul": lambda xp, x, i, m: m @ m.T,
    "matvec": lambda xp, x, i, m: xp.matmul(m, x[:6]),
    "dot": lambda xp, x, i, m: xp.dot(x, x),
    "round": lambda xp, x, i, m: xp.round(x * 10, 1),
    "sort": lambda xp, x, i, m: xp.sort(m, axis=0),
    "argsort": lambda xp, x, i, m: xp.argsort(i, kind="stable"),
    "searchsorted": lambda xp, x, i, m: xp.searchsorted(xp.sort(x), x[:5]),
    "median": lambda xp, x, i, m: xp.median(m, axis=0),
    "percentile": lambda xp, x, i, m: xp.percentile(x, [10, 90]),
    "quantile axis": lambda xp, x, i, m: xp.quantile(m, 0.25, axis=1, keepdims=True),
    "percentile weights": lambda xp, x, i, m: xp.percentile(x, [10, 90], weights=x + 1,
                                                           method="inverted_cdf"),
    "quantile lazy q": lambda xp, x, i, m: xp.quantile(x, xp.asarray(np.array([0.2, 0.7]))),
    "isclose": lambda xp, x, i, m: xp.isclose(m, m.T, equal_nan=True),
    "count_nonzero": lambda xp, x, i, m: xp.count_nonzero(i > 3),
    "count_nonzero axis": lambda xp, x, i, m: xp.count_nonzero(m > 0, axis=0),
    "norm": lambda xp, x, i, m: xp.linalg.norm(x),
    "norm axis": lambda xp, x, i, m: xp.linalg.norm(m, 1, axis=0),
    "copy of a view": lambda xp, x, i, m: m.T.copy(),
    "tile": lambda xp, x, i, m: xp.tile(m, (3, 1, 2)),
    "repeat": lambda xp, x, i, m: xp.repeat(m, 4, axis=1),
    "repeat flat": lambda xp, x, i, m: xp.repeat(i, 3),
    "histogram": lambda xp, x, i, m: xp.histogram(x, bins=7, weights=x * 2)[0],
    "histogram edges": lambda xp, x, i, m: xp.histogram(i, bins=5, range=(-20, 20))[1],
    "diff": lambda xp, x, i, m: xp.diff(m, 2, axis=0),
    "diff bool": lambda xp, x, i, m: xp.diff(i > 0),
}


# on the lazy tier these are counted fallbacks (NumPy's call on computed values, at once)
_LAZY_FALLBACKS = {"percentile weights", "quantile lazy q"}


@pytest.mark.parametrize("name", list(_EAGER_FUNCS))
def test_functions_of_tiny_computed_arrays_run_numpy_now(name):
    """Beyond operators: argmax, scans, take, concatenate, astype, products, round and the
    library calls (sort, ...) of tiny computed arrays are NumPy's call at once (no graph, no
    evaluation), with NumPy's values, dtypes and shapes, in memory of their own."""
    rng = np.random.default_rng(0)
    x, i, m = rng.random(40), rng.integers(-50, 50, 40), rng.standard_normal((6, 6))
    m[2, 3] = np.nan
    f = _EAGER_FUNCS[name]
    lx, li, lm = (la.asarray(v) for v in (x, i, m))
    la.reset_stats()
    got = f(la, lx, li, lm)
    assert la.cache_info()["materializations"] == 0, name  # nothing deferred
    want = f(np, x, i, m)
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    np.testing.assert_array_equal(np.asarray(got), want)
    for inp in (lx, li, lm):  # a result of its own, never an input's memory
        assert not np.shares_memory(np.asarray(got), np.asarray(inp))
    with la.options(eager_threshold=0):  # ... unless the threshold says lazy
        lazy = f(la, lx, li, lm)
        if name not in _LAZY_FALLBACKS:
            assert lazy._val is None and lazy._st.node.op != "buffer", name
    np.testing.assert_allclose(np.asarray(lazy), want, rtol=1e-15)  # (norm: BLAS's order)


def test_eager_functions_raise_numpys_errors_at_the_call():
    x = la.asarray(np.arange(5.0))
    with pytest.raises(IndexError):
        la.take(x, la.asarray(np.array([7])))
    with pytest.raises(ValueError):
        la.concatenate([x, la.asarray(np.ones((2, 2)))])
    with pytest.raises(ValueError):
        la.matmul(x, la.asarray(np.ones(4)))
    with pytest.raises(np.exceptions.AxisError):
        la.argmax(x, axis=1)


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", "any", "all", "mean", "argmax",
                                "argmin"])
def test_whole_reductions_of_computed_arrays_below_the_limit_run_numpy_now(op):
    """A reduction over all axes of a computed array (no view, nothing pending) of fewer than
    WHOLE_EAGER_MAX elements is NumPy's, at once; a larger one, a view's, one along an
    axis, or one under eager_threshold=0 is deferred. The values are NumPy's either way."""
    from lazyarray._reductions import WHOLE_EAGER_MAX

    rng = np.random.default_rng(1)
    x = rng.standard_normal((WHOLE_EAGER_MAX // 4, 3))
    x[7, 1] = np.nan if op in ("argmax", "argmin") else x[7, 1]
    lx = la.asarray(x)
    la.reset_stats()
    got = getattr(lx, op)()
    assert got._val is not None and la.cache_info()["materializations"] == 0
    np.testing.assert_array_equal(np.asarray(got), getattr(x, op)())
    for lazy in (getattr(lx[1:], op)(), getattr(lx, op)(axis=0),
                 getattr(la.asarray(np.ones((WHOLE_EAGER_MAX, 1))), op)()):
        assert lazy._val is None
    with la.options(eager_threshold=0):
        assert getattr(lx, op)()._val is None


def _pending(x) -> bool:
    return x._val is None and (x._st is None or x._st.node.op != "buffer")


@pytest.mark.parametrize("shapes", [((100_000,), (100_000,)), ((100, 1000), (1000,)),
                                    ((1000, 100), (100, 7)), ((12,), (12, 5)),
                                    ((300, 300), (300, 300)), ((1_000_000,), (1_000_000,)),
                                    ((1000, 1000), (1000,)), ((3, 400_000), (400_000, 2))])
@pytest.mark.parametrize("fn", ["matmul", "dot"])
def test_products_of_computed_arrays_below_the_limit_run_numpy_now(shapes, fn):
    """A matrix or vector product of two computed whole arrays (no view, nothing pending) with
    fewer than EAGER_PRODUCT_MAX results, and fewer elements each or at most
    EAGER_PRODUCT_WORK multiply-adds, is NumPy's call at once: its bits, nothing left to
    compute."""
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s) for s in shapes)
    la.reset_stats()
    got = getattr(la, fn)(la.asarray(a), la.asarray(b))
    assert not _pending(got)
    assert_like_numpy(got, getattr(np, fn)(a, b))
    np.testing.assert_array_equal(np.asarray(got), getattr(np, fn)(a, b))  # (the same call)
    assert la.cache_info()["materializations"] == 0


@pytest.mark.parametrize("fn", ["matmul", "dot"])
def test_other_products_stay_deferred(fn):
    """A product with an operand of EAGER_PRODUCT_MAX elements or more and more than
    EAGER_PRODUCT_WORK multiply-adds, or with EAGER_PRODUCT_MAX results, a pending
    operand's, or one under eager_threshold=0 is deferred (NumPy's values within rounding: a
    small one is a fused multiply-sum)."""
    from lazyarray._products import EAGER_PRODUCT_MAX, EAGER_PRODUCT_WORK

    rng = np.random.default_rng(3)
    M, v = rng.standard_normal((100, 1000)), rng.standard_normal(1000)
    k = EAGER_PRODUCT_MAX  # (2, k) @ (k, 17): fewer results, more multiply-adds than the limit
    w, h = rng.standard_normal((2, k)), rng.standard_normal((k, EAGER_PRODUCT_WORK // k // 2 + 1))
    c, r = rng.standard_normal((EAGER_PRODUCT_MAX // 256, 1)), rng.standard_normal((1, 256))
    lM, lv, lw, lh, lc, lr = map(la.asarray, (M, v, w, h, c, r))
    cases = [(lw, lh, w, h), (lc, lr, c, r), (lM + 1.0, lv, M + 1.0, v),
             (lM[1:] * 2.0, lv, M[1:] * 2.0, v)]
    for la_a, la_b, a, b in cases:
        got = getattr(la, fn)(la_a, la_b)
        assert _pending(got)
        np.testing.assert_allclose(np.asarray(got), getattr(np, fn)(a, b), rtol=1e-9,
                                   atol=1e-9)
    with la.options(eager_threshold=0):
        assert _pending(getattr(la, fn)(lM, lv))
        assert _pending(getattr(la, fn)(lM[1:], lv))


@pytest.mark.parametrize("fn", ["matmul", "dot"])
def test_products_of_slicing_views_of_computed_arrays_run_now(fn):
    """`lower[i, :i] @ x[:i]` in a triangular solve's loop: a slicing view of a computed
    array is an operand of NumPy's product at once, under the same size rules as a whole
    array (NumPy's own call: its bits, no evaluation)."""
    rng = np.random.default_rng(4)
    M, X = rng.standard_normal((300, 300)), rng.standard_normal((300, 64))
    lM, lX = la.asarray(M), la.asarray(X)
    before = la.cache_info()["materializations"]
    for i in (1, 17, 299):
        got = getattr(la, fn)(lM[i, :i], lX[:i])
        assert not _pending(got)
        assert np.asarray(got).tobytes() == getattr(np, fn)(M[i, :i], X[:i]).tobytes()
    got = getattr(la, fn)(lM[1:, ::2], lX[::2])
    assert not _pending(got)
    np.testing.assert_array_equal(np.asarray(got), getattr(np, fn)(M[1:, ::2], X[::2]))
    assert la.cache_info()["materializations"] == before


def test_eager_product_errors_are_numpys():
    """A mismatched product on the eager tier raises NumPy's error at the call."""
    a, b = np.ones((3, 4)), np.ones((5, 2))
    for fn in ("matmul", "dot"):
        with pytest.raises(ValueError) as want:
            getattr(np, fn)(a, b)
        with pytest.raises(ValueError) as got:
            getattr(la, fn)(la.asarray(a), la.asarray(b))
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("shape,ord", [((100_000,), None), ((100_000,), 1), ((300, 300), "fro"),
                                       ((300, 300), np.inf), ((300, 300), None)])
def test_whole_norms_of_computed_arrays_below_the_limit_run_numpy_now(shape, ord):
    """np.linalg.norm over all axes of a computed array below WHOLE_EAGER_MAX elements is
    NumPy's, at once (its bits), as a whole reduction is; a larger array's is deferred."""
    from lazyarray._reductions import WHOLE_EAGER_MAX

    x = np.random.default_rng(4).standard_normal(shape)
    got = la.linalg.norm(la.asarray(x), ord)
    assert not _pending(got)
    np.testing.assert_array_equal(np.asarray(got), np.linalg.norm(x, ord))
    big = np.random.default_rng(5).standard_normal(WHOLE_EAGER_MAX)
    lazy = la.linalg.norm(la.asarray(big), 1)  # (ord None: a dot, as a product, below)
    assert _pending(lazy)
    np.testing.assert_allclose(np.asarray(lazy), np.linalg.norm(big, 1), rtol=1e-12)


def test_whole_two_norms_up_to_the_product_limit_run_numpy_now():
    """NumPy's whole 2-norm (ord None) is a dot: of a computed array of at most
    EAGER_PRODUCT_WORK elements it is NumPy's call at once, as the product would be (its
    bits); of a larger one, deferred."""
    from lazyarray._products import EAGER_PRODUCT_WORK

    rng = np.random.default_rng(6)
    for x in (rng.standard_normal((1000, 1000)), rng.standard_normal(EAGER_PRODUCT_WORK)):
        got = la.linalg.norm(la.asarray(x))
        assert not _pending(got)
        np.testing.assert_array_equal(np.asarray(got), np.linalg.norm(x))
    big = rng.standard_normal(EAGER_PRODUCT_WORK + 1)
    lazy = la.linalg.norm(la.asarray(big))
    assert _pending(lazy)
    np.testing.assert_allclose(np.asarray(lazy), np.linalg.norm(big), rtol=1e-12)


_MID_FUNCTIONS = {
    "concatenate": lambda xp, a, b: xp.concatenate([a, b]),
    "diff": lambda xp, a, b: xp.diff(a),
    "take": lambda xp, a, b: xp.take(a, b),
    "astype": lambda xp, a, b: a.astype(np.float32),
}


@pytest.mark.parametrize("name", sorted(_MID_FUNCTIONS))
def test_copying_functions_of_mid_sized_computed_arrays_run_numpy_now(name):
    """concatenate, diff, take and astype of computed whole arrays below MID_EAGER_MAX
    elements are NumPy's calls at once (the lazy tier's fixed cost was most of their time);
    at MID_EAGER_MAX elements, of a view, of a pending operand or under a lowered
    eager_threshold they are deferred. NumPy's values, dtypes and shapes either way."""
    from lazyarray.array import MID_EAGER_MAX, TINY

    f = _MID_FUNCTIONS[name]
    rng = np.random.default_rng(6)
    for n, eager in ((TINY, True), (MID_EAGER_MAX - 1, True), (MID_EAGER_MAX, False)):
        a, b = rng.standard_normal(n), rng.integers(-n, n, n)
        got = f(la, la.asarray(a), la.asarray(b))
        assert _pending(got) is not eager
        assert_like_numpy(got, f(np, a, b))
    a, b = rng.standard_normal(TINY * 2), rng.integers(0, TINY, TINY * 2)
    la_a, la_b = la.asarray(a), la.asarray(b)
    for lazy, want in ((f(la, la_a[1:], la_b[1:]), f(np, a[1:], b[1:])),
                       (f(la, la_a * 2.0, la_b), f(np, a * 2.0, b))):
        assert _pending(lazy)
        assert_like_numpy(lazy, want)
    with la.options(eager_threshold=1000):
        assert _pending(f(la, la_a, la_b))


def test_gathers_from_mid_sized_computed_arrays_run_numpy_now():
    """Indexing a computed whole array below MID_EAGER_MAX elements by computed integer
    arrays below it is NumPy's gather at once (its values, and its IndexError at the line);
    a boolean mask, a larger array, a view or a pending index stays lazy."""
    from lazyarray.array import MID_EAGER_MAX

    rng = np.random.default_rng(8)
    n = 100_000
    x, M = rng.standard_normal(n), rng.standard_normal((300, 400))
    idx = rng.integers(-n, n, n)
    lx, lM, lidx = la.asarray(x), la.asarray(M), la.asarray(idx)
    for got, want in ((lx[lidx], x[idx]), (lx[idx.reshape(200, 500)], x[idx.reshape(200, 500)]),
                      (lM[idx[:50] % 300, 1:], M[idx[:50] % 300, 1:]),
                      (lM[:, la.asarray(idx[:60] % 400)], M[:, idx[:60] % 400]),
                      (lx[[3, -1, 0]], x[[3, -1, 0]])):
        assert not _pending(got)
        assert_like_numpy(got, want)
    with pytest.raises(IndexError, match="out of bounds"):
        lx[la.asarray(np.full(n, n))]
    big = rng.standard_normal(MID_EAGER_MAX)
    for lazy, want in ((lx[lidx > 0], x[idx > 0]), (lx[la.asarray(idx > 0)], x[idx > 0]),
                       (la.asarray(big)[lidx], big[idx]), (lx[1:][lidx % (n - 1)],
                                                          x[1:][idx % (n - 1)]),
                       (lx[lidx % 7], x[idx % 7])):
        assert _pending(lazy)
        assert_like_numpy(lazy, want)


def test_a_view_of_a_computed_scalar_is_a_computed_array_as_numpys():
    """NumPy's reshape (index, transpose, broadcast) of a scalar is a new array, made at that
    line. `(-v).reshape((-1, 1))` of a 0-d `v` was a pending view of the computed scalar, so
    writing it into an array evaluated it (found by the program fuzzer: a write may not
    evaluate). Now computed at once: the write evaluates nothing, and values, dtypes and
    shapes are NumPy's."""
    for value in (np.array(0.5), np.array(-3), np.array(2 - 1j), np.array(True)):
        flip = np.invert if value.dtype == bool else np.negative  # (a scalar result each)
        s, ls = flip(value), flip(la.asarray(value))
        for view in (lambda a: a.reshape((-1, 1)), lambda a: a[None], lambda a: a[...],
                     lambda a: a.T, lambda a: a.reshape(1, 1, 1).transpose(2, 0, 1)):
            got = view(ls)
            assert not _pending(got)
            assert_like_numpy(got, np.asarray(view(s)))
        target = la.asarray(np.zeros((2, 1), value.dtype))
        before = la.cache_info()["materializations"]
        target[0:1] = ls.reshape((-1, 1))
        assert la.cache_info()["materializations"] == before
        want = np.zeros((2, 1), value.dtype)
        want[0:1] = np.asarray(s).reshape((-1, 1))
        assert_like_numpy(target, want)
    wide = la.broadcast_to(la.negative(la.asarray(np.array(1.5))), (3, 4))
    assert_like_numpy(wide, np.full((3, 4), -1.5))
