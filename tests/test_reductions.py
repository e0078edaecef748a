"""Differential tests of reductions: sum, prod, mean, min, max, amin, amax,
argmin, argmax, any, all, std, var -- as functions and as Array methods, with
axis None/int/negative/tuple, keepdims, dtype=, ddof; result dtypes; empty
and 0-d arrays; NaN propagation; first-occurrence ties for arg-reductions."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from helpers import (
    ALL_DTYPES,
    assert_like_numpy,
    assert_meta_like_numpy,
    check_against_numpy,
    dtype_id,
    elements,
    error_category,
    fresh_launches,
    run_numpy,
    tolerance,
)

REDUCTIONS = ["sum", "prod", "mean", "min", "max", "amin", "amax", "argmin", "argmax",
              "any", "all", "std", "var"]
# NumPy's ndarray has no .amin/.amax methods.
METHODS = [r for r in REDUCTIONS if r not in ("amin", "amax")]
ARG_REDUCTIONS = {"argmin", "argmax"}
SUM_LIKE = {"sum", "mean", "std", "var"}  # results that can lose accuracy to cancellation
HAS_DTYPE_ARG = {"sum", "prod", "mean", "std", "var"}
HAS_DDOF = {"std", "var"}

AXES_3D = [None, 0, 1, -1, (0, 2), (-1, -2), (0, 1, 2)]


def reduce_np(op, x, via="function", **kw):
    if via == "method":
        return getattr(x, op)(**kw)
    return getattr(np, op)(x, **kw)


def reduce_la(op, x, via="function", **kw):
    if via == "method":
        return getattr(x, op)(**kw)
    return getattr(la, op)(x, **kw)


def tolerances_for(op, x, result_dtype):
    """(rtol, atol) for comparing a reduction of ``x``.

    Sums in a different order differ by ~eps * sum(|x|), which is large
    relative to the result when it cancels: scale atol by the magnitudes.
    """
    result_dtype = np.dtype(result_dtype)
    if result_dtype.kind not in "fc":
        return None, None
    rtol, _ = tolerance(result_dtype)
    if op in SUM_LIKE and x.size:
        mags = np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
        mags = mags[np.isfinite(mags)]
        mag = float(mags.max()) if mags.size else 0.0
        scale = mag * (x.size if op == "sum" else 1.0)
        if op in ("std", "var"):
            scale = mag * mag if op == "var" else mag
        return rtol, rtol * max(scale, 1.0) * 8
    return rtol, None


def check_reduction(op, x_np, via="function", **kw):
    x_la = la.asarray(x_np)
    status, expected = run_numpy(lambda: reduce_np(op, x_np, via, **kw))
    if status == "error":
        # Let check_against_numpy produce the build-time-error assertion.
        check_against_numpy(lambda: reduce_np(op, x_np, via, **kw),
                            lambda: reduce_la(op, x_la, via, **kw), what=f"{op}({kw})")
        return
    rtol, atol = tolerances_for(op, x_np, np.asarray(expected).dtype)
    actual = reduce_la(op, x_la, via, **kw)
    assert_like_numpy(actual, expected, rtol=rtol, atol=atol, what=f"{via} {op}({kw})")


def shapes_3d():
    return hnp.array_shapes(min_dims=3, max_dims=3, min_side=2, max_side=4)


# --------------------------------------------------------------------------
# axes / keepdims / function vs method (float64)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", AXES_3D, ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("op", REDUCTIONS)
@given(data=st.data())
def test_reduction_axes_keepdims(mode, op, axis, data):
    x = data.draw(hnp.arrays(np.float64, shapes_3d(), elements=elements(np.float64, -10, 10)), label="x")
    keepdims = data.draw(st.booleans(), label="keepdims")
    via = data.draw(st.sampled_from(["function", "method"] if op in METHODS else ["function"]), label="via")
    check_reduction(op, x, via, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_nan_inf_propagation(mode, op, axis):
    """NaN propagates through sum/prod/mean/min/max/std/var; argmin/argmax
    return the first NaN; any/all treat NaN as True; inf - inf is NaN."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5))
    x[0, 1, 2] = np.nan
    x[2, 3, 0] = np.nan
    x[1, 0, 4] = np.inf
    x[1, 2, 4] = -np.inf
    x[2, 0, 0] = np.inf
    check_reduction(op, x, axis=axis)


# --------------------------------------------------------------------------
# result dtypes
# --------------------------------------------------------------------------


def _meta_problems(op, x_np, **kw):
    x_la = la.asarray(x_np)
    status, expected = run_numpy(lambda: getattr(np, op)(x_np, **kw))
    label = f"{op}({x_np.dtype}{list(x_np.shape)}, {kw})"
    try:
        got = getattr(la, op)(x_la, **kw)
    except Exception as exc:  # noqa: BLE001
        if status == "error" and isinstance(exc, error_category(expected)):
            return []
        return [f"{label}: numpy {'ok' if status == 'ok' else repr(expected)}, lazyarray raised {exc!r}"]
    if status == "error":
        return [f"{label}: numpy raises {expected!r}; lazyarray built a {got.dtype} result"]
    try:
        assert_meta_like_numpy(got, expected, what=label)
    except AssertionError as exc:
        return [str(exc)]
    return []


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_result_dtype_and_shape_all_dtypes(op):
    """Every dtype x axis x keepdims (x dtype= / ddof): the result's dtype and
    shape are NumPy's (sum of int8 is int64, mean of int is float64, std of
    complex is float64, ...), or the same error; nothing is materialized."""
    before = la.cache_info()["materializations"]
    problems = []
    for dt in ALL_DTYPES:
        x = np.ones((2, 3, 4), dtype=dt)
        for axis in [None, 0, -1, (0, 2), 3, (0, 0)]:
            for keepdims in (False, True):
                problems += _meta_problems(op, x, axis=axis, keepdims=keepdims)
        if op in HAS_DTYPE_ARG:
            for out_dt in ["int8", "uint16", "int64", "float32", "float64", "complex64", "bool"]:
                problems += _meta_problems(op, x, axis=1, dtype=out_dt)
        if op in HAS_DDOF:
            problems += _meta_problems(op, x, axis=-1, ddof=1)
    assert not problems, "\n".join(problems[:40]) + f"\n({len(problems)} problems)"
    assert la.cache_info()["materializations"] == before


VALUE_DTYPES = [np.dtype(t) for t in ("bool", "int8", "uint8", "int64", "uint64", "float32", "complex128")]


def _elements_for(op, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and op in ("mean", "std", "var"):
        # float accumulation of huge ints loses bits in an order-dependent way
        return elements(dtype, -1000, 1000)
    return elements(dtype, -10, 10) if dtype.kind in "fc" else elements(dtype)


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", REDUCTIONS)
@given(data=st.data())
def test_reduction_values_per_dtype(mode, op, dtype, data):
    """Values (incl. integer wrap-around of sum/prod, lexicographic complex
    min/max, bool sums) for each input dtype, full reduction and last axis."""
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=6), label="shape")
    x = data.draw(hnp.arrays(dtype, shape, elements=_elements_for(op, dtype)), label="x")
    axis = data.draw(st.sampled_from([None, -1]), label="axis")
    check_reduction(op, x, axis=axis)


# --------------------------------------------------------------------------
# dtype= and ddof
# --------------------------------------------------------------------------

DTYPE_ARG_CASES = [
    ("sum", "int8", "int8"),        # accumulates (and wraps) in int8
    ("sum", "uint8", "uint8"),
    ("sum", "int32", "float32"),
    ("sum", "float32", "float64"),
    ("sum", "bool", "int16"),
    ("sum", "float64", "complex128"),
    ("prod", "int16", "int16"),
    ("prod", "uint8", "float64"),
    ("mean", "int16", "float32"),
    ("mean", "float32", "float64"),
    ("mean", "int64", "float64"),
    ("std", "int8", "float32"),
    ("var", "float32", "float64"),
    ("var", "complex64", "complex128"),
]


@pytest.mark.parametrize("op, in_dtype, dtype", DTYPE_ARG_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("axis", [None, 1], ids=lambda a: f"axis={a}")
def test_reduction_dtype_argument(mode, op, in_dtype, dtype, axis):
    rng = np.random.default_rng(3)
    in_dt = np.dtype(in_dtype)
    if in_dt.kind in "iu":
        info = np.iinfo(in_dt)
        x = rng.integers(max(info.min, -100), min(info.max, 100), size=(5, 40), endpoint=True).astype(in_dt)
    elif in_dt.kind == "b":
        x = rng.random((5, 40)) < 0.5
    elif in_dt.kind == "c":
        x = (rng.standard_normal((5, 40)) + 1j * rng.standard_normal((5, 40))).astype(in_dt)
    else:
        x = (rng.standard_normal((5, 40)) * 10).astype(in_dt)
    for via in (["function", "method"] if op in METHODS else ["function"]):
        check_reduction(op, x, via, axis=axis, dtype=dtype)


@pytest.mark.parametrize("ddof", [0, 1, 2, 5, 7])
@pytest.mark.parametrize("op", ["std", "var"])
@pytest.mark.parametrize("axis", [None, -1, (0, 1)], ids=lambda a: f"axis={a}")
def test_ddof(mode, op, ddof, axis):
    """ddof up to and past the number of elements (NumPy: inf/nan with a
    RuntimeWarning, not an error)."""
    x = np.random.default_rng(5).standard_normal((2, 5)) * 3 + 1
    for via in ("function", "method"):
        check_reduction(op, x, via, axis=axis, ddof=ddof)


def test_var_is_numerically_stable(mode):
    """NumPy's two-pass variance is exact here; E[x^2] - E[x]^2 is not."""
    x = 1e9 + np.array([0.0, 1.0, 2.0, 3.0])
    assert_like_numpy(la.var(la.asarray(x)), np.var(x), rtol=1e-6)
    assert_like_numpy(la.asarray(x).std(), x.std(), rtol=1e-6)


# --------------------------------------------------------------------------
# empty and 0-d arrays
# --------------------------------------------------------------------------

EMPTY_CASES = [((0,), None), ((0,), 0), ((3, 0), None), ((3, 0), 0), ((3, 0), 1), ((0, 4), -1),
               ((0, 4), (0, 1))]


@pytest.mark.parametrize("shape, axis", EMPTY_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_of_empty(mode, op, shape, axis):
    """sum -> 0, prod -> 1, any -> False, all -> True, mean/std/var -> NaN;
    min/max/argmin/argmax over a zero-length axis -> ValueError at build."""
    x = np.zeros(shape, dtype=np.float64)
    check_reduction(op, x, axis=axis)
    check_reduction(op, x, axis=axis, keepdims=True)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_of_0d(mode, op):
    x = np.array(2.5)
    check_reduction(op, x)
    check_reduction(op, x, axis=())  # argmin/argmax: TypeError, as in NumPy
    # NumPy quirk: ufunc-based reductions (sum, min, argmax, any, ...) accept
    # axis=0/-1 on a 0-d array; mean/std/var raise AxisError.
    check_reduction(op, x, axis=0)
    check_reduction(op, x, axis=-1)


def test_reduction_of_empty_int_min_is_value_error():
    x = la.asarray(np.zeros((0,), np.int32))
    before = la.cache_info()["materializations"]
    for op in ("min", "max", "amin", "amax", "argmin", "argmax"):
        with pytest.raises(ValueError):
            getattr(la, op)(x)
    with pytest.raises(ValueError):
        x.max()
    assert la.cache_info()["materializations"] == before


# --------------------------------------------------------------------------
# ties, large arrays (parallel/chunked reductions)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("op", ["argmin", "argmax"])
@given(data=st.data())
def test_arg_reduction_ties_pick_first(mode, op, axis, data):
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=30), label="shape")
    x = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 2)), label="x")
    check_reduction(op, x, axis=axis)
    check_reduction(op, x, via="method", axis=axis, keepdims=True)


def _flat_arg_cases(dtype, rng):
    """1-d arrays for argmin/argmax over a whole array (two passes: the extreme, then its
    first index): the dtype's extremes, ties, NaNs anywhere, signed zeros, all-inf."""
    n = 3001
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        tied = x.copy()
        tied[[5, 900, 2000]], tied[[7, 1500]] = info.max, info.min
        return [x, np.full(n, info.min, dtype), np.full(n, info.max, dtype), tied]
    x = rng.standard_normal(n).astype(dtype)
    nans, first_nan, zeros = x.copy(), x.copy(), np.zeros(n, dtype)
    nans[[1700, 40, 2999]] = np.nan
    first_nan[0] = np.nan
    zeros[[3, 77, 2500]] = -0.0
    return [x, nans, first_nan, zeros, -zeros, np.full(n, -np.inf, dtype),
            np.full(n, np.inf, dtype), np.full(n, np.nan, dtype)]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64", "float32", "float64"])
@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_flat_arg_reductions_find_numpys_index(mode, op, dtype):
    rng = np.random.default_rng(sum(map(ord, op + dtype)))
    for x in _flat_arg_cases(dtype, rng):
        check_reduction(op, x)
        check_reduction(op, x[:3000].reshape(3, 1000, 1)[:, ::3])  # a strided view, flattened


@pytest.mark.parametrize("dtype", ["int16", "uint32", "int64", "float32", "float64"])
@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_flat_arg_reductions_across_chunks(compiled, op, dtype):
    """A whole 1-d array's argmin/argmax over several chunks of ARG_CHUNK (each chunk's
    extreme in parallel, then the first chunk holding the overall one): the extreme in the
    first, a middle or the last chunk, on a chunk's first or last element, tied across
    chunks (the first chunk's wins), a NaN in a chunk after the extreme, and fused with
    the work that computes the values."""
    from lazyarray.codegen.cpu import ARG_CHUNK

    rng = np.random.default_rng(sum(map(ord, op + dtype)))
    n = 3 * ARG_CHUNK + 123
    dt = np.dtype(dtype)
    base = (rng.integers(10, 100, n) if dt.kind in "iu" else rng.random(n) + 10).astype(dt)
    top, bottom = (dt.type(120), dt.type(1)) if dt.kind in "iu" else (dt.type(50), dt.type(1))
    cases = []
    for at in (0, ARG_CHUNK - 1, ARG_CHUNK, 2 * ARG_CHUNK + 5, n - 1):
        x = base.copy()
        x[at] = top if op == "argmax" else bottom
        cases.append(x)
    tied = base.copy()
    tied[[ARG_CHUNK + 3, 2 * ARG_CHUNK, n - 2]] = top if op == "argmax" else bottom
    cases.append(tied)
    if dt.kind == "f":
        nan = tied.copy()
        nan[[2 * ARG_CHUNK + 9, n - 1]] = np.nan
        cases += [nan, np.full(n, -np.inf, dt), np.full(n, np.nan, dt)]
    for x in cases:
        check_reduction(op, x)
        assert_like_numpy(getattr(la.asarray(x) * 2, op)(), getattr(x * 2, op)(),
                          what=f"{op} of x * 2")


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "uint64", "float32", "float64"])
@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_row_arg_reductions_in_lanes_find_numpys_index(mode, op, dtype):
    """argmin/argmax along the last axis of rows of 16 or more run in 16 lanes merged at the
    end: every row length around the lane count, each case of `_flat_arg_cases` (extremes,
    ties, NaNs in any lane, signed zeros, infinities) cut into rows, a 3-d array, and along
    a strided axis (the one-pass scan)."""
    rng = np.random.default_rng(sum(map(ord, op + dtype)) + 1)
    for x in _flat_arg_cases(dtype, rng):
        for width in (16, 17, 31, 32, 33, 250):
            rows = x[: (len(x) // width) * width].reshape(-1, width)
            check_reduction(op, rows, axis=1)
            check_reduction(op, rows[:, ::-1], axis=-1)
        check_reduction(op, x[:3000].reshape(3, 20, 50), axis=2)
        check_reduction(op, x[:3000].reshape(100, 30), axis=0)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_large_reductions(mode, op):
    """Large enough to be split across threads/chunks: partial results must
    combine exactly like NumPy's (first index for ties, NaN-free sums close)."""
    rng = np.random.default_rng(11)
    x = rng.integers(-5, 6, size=(301, 1001)).astype(np.float64)  # integer-valued: sums exact
    x[150, 500] = 50.0  # unique max
    x[7, 3] = 50.0      # ... tied: argmax picks the first
    x[200, 999] = -50.0
    for axis in (None, 0, 1):
        check_reduction(op, x, axis=axis)
    flat = x.ravel()
    check_reduction(op, flat)
    if op in ("sum", "any", "all", "min", "max", "argmin", "argmax"):
        xi = rng.integers(-(2**62), 2**62, size=200_003, dtype=np.int64)  # wraps, exact
        check_reduction(op, xi)
    if op in ("any", "all"):
        b = np.zeros(300_001, bool)
        b[-1] = True
        check_reduction(op, b)
        check_reduction(op, ~b)


@pytest.mark.parametrize("shape, axis", [((1,), None), ((63,), None), ((64,), 0), ((65,), -1),
                                         ((130, 7), 0), ((7, 130), 1), ((3, 129, 5), (0, 1)),
                                         ((200_000,), None), ((5, 64 * 3 + 5), -1)])
def test_reductions_over_vectorized_blocks(compiled, shape, axis):
    """A reduction whose body has exp runs in blocks of 64 lanes: every size around the
    block edges, chunked and per-row, against NumPy."""
    x = np.random.default_rng(9).uniform(-3, 3, shape)
    got = la.exp(la.asarray(x) * 0.5).sum(axis=axis)
    want = np.exp(x * 0.5).sum(axis=axis)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    m = la.max(la.exp(la.asarray(x)), axis=axis)  # exp is within an ulp of NumPy's
    np.testing.assert_allclose(np.asarray(m), np.exp(x).max(axis=axis), rtol=5e-16)


@pytest.mark.parametrize("math", ["numpy", "fast"])
@pytest.mark.parametrize("m", [1, 63, 64, 65, 257, 1000])
def test_vectorized_block_sum_order(compiled, m, math):
    """The documented order of a row sum of sin (BLOCK lanes: NumPy's loop is called a block
    at a time, as lazyarray's own sin has its fix-up pass of huge arguments): element q into
    lane q mod L, the lanes halved (lane j + lane j + w, w = L/2 ... 1), then added to 0: bit
    for bit, so it does not depend on the thread count. L is CALL_BLOCK (256) where the
    kernel calls NumPy's loop, BLOCK (64) for lazyarray's own sin."""
    from lazyarray.codegen import body, cpu
    lanes_n = cpu.CALL_BLOCK if math == "numpy" else body.BLOCK
    x = np.random.default_rng(3).uniform(-3, 3, (37, m))
    with la.options(math=math):
        v = np.asarray(la.sin(la.asarray(x)))  # the same sin values as the fused kernel's
        got = np.asarray(la.sin(la.asarray(x)).sum(axis=1))
    lanes = np.zeros((37, lanes_n))
    for q in range(0, m, lanes_n):
        blk = v[:, q:q + lanes_n]
        lanes[:, :blk.shape[1]] = lanes[:, :blk.shape[1]] + blk
    w = lanes_n // 2
    while w:
        lanes[:, :w] = lanes[:, :w] + lanes[:, w:2 * w]
        w //= 2
    assert np.array_equal(got, 0.0 + lanes[:, 0])


def _each_thread_count(f):
    """f() with Numba's full thread count, then with one thread."""
    import numba
    threads = numba.get_num_threads()
    a = f()
    numba.set_num_threads(1)
    try:
        return a, f()
    finally:
        numba.set_num_threads(threads)


@pytest.mark.parametrize("shape, axis", [((1_000_003,), None), ((301, 1999), 1),
                                         ((3, 200_001), None), ((50_000, 7), -1)])
@pytest.mark.parametrize("op", ["sum", "max", "min", "exp_sum", "exp_max"])
def test_vector_lane_reductions(compiled, shape, axis, op):
    """Float sums, max and min accumulate in vector lanes LLVM picks (`vector_combine`): the
    kernel says so; the result does not depend on the thread count (bit for bit); a sum is
    within 16 ulps of sum(|x|) of the exact sum (math.fsum); max and min equal NumPy's.
    With exp: lazyarray's own exp vectorizes with the lanes (`math="fast"`); NumPy's loop
    (the default) runs in blocks, and its reductions keep the other promises."""
    if op.startswith("exp"):
        with la.options(math="fast"):
            _vector_lane_reduction(shape, axis, op)
        _vector_lane_reduction(shape, axis, op, lanes=False)
    else:
        _vector_lane_reduction(shape, axis, op)


def _vector_lane_reduction(shape, axis, op, lanes=True):
    x = np.random.default_rng(11).uniform(-3, 3, shape)
    fn = op.split("_")[-1]
    ref = np.asarray(la.exp(la.asarray(x))) if op.startswith("exp") else x  # the kernel's exp

    def expr():
        a = la.asarray(x)
        return getattr(la.exp(a) if op.startswith("exp") else a, fn)(axis=axis)

    steps = {"sum": "_h.sum_step(", "max": "_h.max_step(", "min": "_h.min_step("}
    if lanes:
        assert any(steps[fn] in k.source for k in la.explain(expr()).kernels)
    else:
        assert any("_h.numpy_block_exp(" in k.source for k in la.explain(expr()).kernels)
    a, b = _each_thread_count(lambda: np.asarray(expr()).copy())
    assert np.array_equal(a, b)
    want = getattr(ref, fn)(axis=axis)
    assert a.dtype == want.dtype and a.shape == want.shape
    if fn == "sum":
        rows = ref.reshape(1, -1) if axis is None else np.moveaxis(ref, axis, -1)
        exact = np.array([math.fsum(r) for r in rows.reshape(-1, rows.shape[-1])])
        ulps = np.abs(a.reshape(-1) - exact) / np.spacing(np.abs(rows).sum(axis=-1).reshape(-1))
        assert ulps.max() <= 16, ulps.max()  # (NumPy's pairwise sum: 1; one chain: 24)
    else:
        assert np.array_equal(a, want)


@pytest.fixture
def prefetching(compiled, monkeypatch):
    """Every chunked 1-d reduction prefetches (`Spec.prefetch`, the threshold at 0), on
    fresh launches."""
    from lazyarray.codegen import layout
    monkeypatch.setattr(layout, "PREFETCH_MIN_BYTES", 0)
    with fresh_launches():
        yield


@pytest.mark.parametrize("n", [1, 7, 255, 256, 257, 1023, 1024, 1025, 1279, 1281, 5000, 200_003])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_prefetching_reductions(prefetching, n, dtype):
    """With prefetches (blocks of PREFETCH_BLOCK, lines PREFETCH_AHEAD further, kept below
    the end): sums, max and min of 1-d arrays, contiguous and strided, as NumPy's; the
    kernels say they prefetch."""
    rng = np.random.default_rng(n)
    base = rng.uniform(-2, 2, 2 * n + 3).astype(dtype)
    for x in (base[:n], base[1::2][:n], base[::-2][:n]):
        a = la.asarray(x)
        expr = (a - 0.5) ** 2
        if n > 1:  # (one element is a scalar load: no loop)
            assert "_h.prefetch(a0, pq)" in la.explain(expr.sum()).kernels[0].source
        got = np.asarray(expr.sum())
        want = ((x - dtype(0.5)) ** 2).sum()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 1e-5)
        assert np.asarray(a.max()) == x.max() and np.asarray(a.min()) == x.min()
    y = base[:n].copy()
    y[n // 2] = np.nan
    assert np.isnan(np.asarray(la.asarray(y).sum())) and np.isnan(np.asarray(la.asarray(y).max()))


def test_prefetch_only_for_large_inputs(compiled, monkeypatch):
    """`Spec.prefetch` from PREFETCH_MIN_BYTES of array loads on (16 MiB, as on an Intel
    CPU): not below."""
    from lazyarray.codegen import layout
    monkeypatch.setattr(layout, "PREFETCH_MIN_BYTES", 16 << 20)
    small = la.asarray(np.ones(1000))
    assert "_h.prefetch" not in la.explain((small * 2).sum()).kernels[0].source
    n = layout.PREFETCH_MIN_BYTES // 8
    big = la.asarray(np.ones(n))
    src = la.explain((big * 2).sum()).kernels[0].source
    assert "_h.prefetch(a0, pq)" in src
    assert float(np.asarray((big * 2).sum())) == 2.0 * n


def test_prefetch_by_cpu(monkeypatch):
    """Left to the CPU, the threshold is 16 MiB, or never on AMD's Zen cores."""
    import llvmlite.binding as llvm

    from lazyarray.codegen import layout
    for cpu, want in (("skylake-avx512", 16 << 20), ("znver3", 1 << 62), ("znver5", 1 << 62)):
        monkeypatch.setattr(layout, "PREFETCH_MIN_BYTES", None)
        monkeypatch.setattr(llvm, "get_host_cpu_name", lambda cpu=cpu: cpu)
        assert layout.prefetch_min_bytes() == want == layout.PREFETCH_MIN_BYTES


def test_vector_lane_reductions_nan_inf(compiled):
    """NaN and inf come out of the vector lanes as from NumPy, wherever they sit."""
    for n in (1, 7, 64, 1001, 300_007):
        for pos in {0, n // 2, n - 1}:
            for bad in (np.nan, np.inf, -np.inf):
                x = np.random.default_rng(n).uniform(-1, 1, n)
                x[pos] = bad
                for fn in ("sum", "max", "min"):
                    got, want = np.asarray(getattr(la.asarray(x), fn)()), getattr(x, fn)()
                    assert np.array_equal(got, want, equal_nan=True), (n, pos, bad, fn)
    y = np.full(1000, 1.0)
    y[3], y[900] = np.inf, -np.inf
    assert np.isnan(np.asarray(la.asarray(y).sum()))


@pytest.mark.parametrize("shape", [(1000, 8), (100_003, 3), (37, 5), (1000, 16), (100, 1000),
                                   (5000, 300), (31, 2000)])
def test_column_sum_row_lanes_order(compiled, shape):
    """The documented order of a column sum (`X.sum(axis=0)`): fixed chunks of at least
    CHUNK_ROWS rows, row i of chunk c into partial row lanes*c + (i - start of c) mod lanes
    (4 lanes for rows narrower than LANES_BELOW, else 1), then the partial rows added in
    order: bit for bit, so it does not depend on the thread count."""
    from lazyarray.codegen.body import LANES_BELOW, ROW_LANES
    from lazyarray.runtime.buffers import _nchunks

    x = np.random.default_rng(4).uniform(-3, 3, shape)
    got = np.asarray(la.asarray(x).sum(axis=0))
    n, k = shape
    chunks = _nchunks(shape, (k,))
    assert chunks == max(1, min(64, n // 32))
    lanes = ROW_LANES if k < LANES_BELOW else 1
    part = np.zeros((chunks * lanes, k))
    for c in range(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        for i in range(lo, hi):
            r = c * lanes + (i - lo) % lanes
            part[r] = part[r] + x[i]
    want = part[0]
    for r in range(1, len(part)):
        want = want + part[r]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("n", [4, 200_000])
@pytest.mark.parametrize("case", ["where_all", "where_axis0", "mean_axis1", "where_ddof_out"])
def test_var_std_with_where_and_mean_are_numpys(fn, n, case):
    """`where=` and `mean=` (NumPy's own, run as a counted fallback): std is the root of the
    masked variance, not the variance (found by NumPy's docstring examples), and `out=`,
    `ddof` and `keepdims` are passed on."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, n))
    w = np.array([[True], [True], [False]])
    la_a = la.asarray(a)
    if case == "where_all":
        got, want = getattr(la, fn)(la_a, where=w), getattr(np, fn)(a, where=w)
    elif case == "where_axis0":
        got, want = getattr(la, fn)(la_a, axis=0, where=w), getattr(np, fn)(a, axis=0, where=w)
    elif case == "mean_axis1":
        m = a.mean(axis=1, keepdims=True)
        got = getattr(la, fn)(la_a, axis=1, mean=la.asarray(m), keepdims=True)
        want = getattr(np, fn)(a, axis=1, mean=m, keepdims=True)
    else:
        out = la.zeros(n)
        got = getattr(la, fn)(la_a, axis=0, where=w, ddof=1, out=out)
        assert got is out
        want = getattr(np, fn)(a, axis=0, where=w, ddof=1)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    assert np.asarray(got).shape == np.shape(want)
