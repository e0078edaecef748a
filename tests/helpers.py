"""Comparison helpers and hypothesis strategies shared by the test suite.

NumPy is the oracle: ``assert_like_numpy(actual, expected)`` checks that a
lazyarray result has NumPy's shape, then NumPy's dtype (exactly), then NumPy's
values (exactly for bool/int, within a dtype-keyed tolerance for floats and
complexes, NaN == NaN, infinities must agree in sign).
"""

import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la

# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

BOOL = [np.dtype(np.bool_)]
SIGNED = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)]
UNSIGNED = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
INTS = SIGNED + UNSIGNED
FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]
COMPLEXES = [np.dtype(np.complex64), np.dtype(np.complex128)]
ALL_DTYPES = BOOL + INTS + FLOATS + COMPLEXES
NUMERIC_DTYPES = INTS + FLOATS + COMPLEXES


def dtype_id(dt):
    return np.dtype(dt).name


# --------------------------------------------------------------------------
# tolerances
# --------------------------------------------------------------------------

# (rtol, atol) per *result* dtype.  atol is only there to absorb rounding of
# subnormal results; it is far below anything a real discrepancy produces.
TOLERANCE = {
    np.dtype(np.float16): (2e-3, 1e-6),
    np.dtype(np.float32): (1e-5, 1e-35),
    np.dtype(np.float64): (1e-12, 1e-300),
    np.dtype(np.complex64): (1e-5, 1e-35),
    np.dtype(np.complex128): (1e-12, 1e-300),
}


def tolerance(dtype, rtol=None, atol=None):
    base_rtol, base_atol = TOLERANCE.get(np.dtype(dtype), (0.0, 0.0))
    return (base_rtol if rtol is None else rtol), (base_atol if atol is None else atol)


# --------------------------------------------------------------------------
# assert_like_numpy
# --------------------------------------------------------------------------


def _describe_mismatch(actual, expected, bad, what):
    idx = np.argwhere(bad) if bad.ndim else np.zeros((1, 0), dtype=int)
    lines = [f"{what}: {int(bad.sum())} of {bad.size} elements differ"]
    for i in idx[:8]:
        t = tuple(int(v) for v in i)
        lines.append(f"  at {t}: actual={actual[t]!r} expected={expected[t]!r}")
    if actual.size <= 64:
        lines.append(f"actual   = {actual!r}")
        lines.append(f"expected = {expected!r}")
    return "\n".join(lines)


def _compare_float(actual, expected, rtol, atol, what):
    a_nan, e_nan = np.isnan(actual), np.isnan(expected)
    bad = a_nan != e_nan
    assert not bad.any(), _describe_mismatch(actual, expected, bad, f"{what}: NaN positions")
    a_inf, e_inf = np.isinf(actual), np.isinf(expected)
    bad = (a_inf != e_inf) | (e_inf & (np.signbit(actual) != np.signbit(expected)))
    assert not bad.any(), _describe_mismatch(actual, expected, bad, f"{what}: inf positions/signs")
    fin = np.isfinite(expected)
    if rtol == 0 and atol == 0:
        bad = fin & (actual != expected)
    else:
        with np.errstate(all="ignore"):
            a = actual.astype(np.float64) if actual.dtype == np.float16 else actual
            e = expected.astype(np.float64) if expected.dtype == np.float16 else expected
            bad = fin & ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    assert not bad.any(), _describe_mismatch(
        actual, expected, bad, f"{what}: values (rtol={rtol}, atol={atol})"
    )


def _compare_complex(actual, expected, rtol, atol, what):
    # A complex number with a NaN in either component is "NaN" (C99 Annex G
    # treats them alike); other components must agree exactly in their
    # inf pattern, and finite parts within rtol of the complex magnitude.
    a_nan = np.isnan(actual.real) | np.isnan(actual.imag)
    e_nan = np.isnan(expected.real) | np.isnan(expected.imag)
    bad = a_nan != e_nan
    assert not bad.any(), _describe_mismatch(actual, expected, bad, f"{what}: NaN positions")
    ok = ~e_nan
    for part in ("real", "imag"):
        ap, ep = getattr(actual, part), getattr(expected, part)
        a_inf, e_inf = np.isinf(ap), np.isinf(ep)
        bad = ok & ((a_inf != e_inf) | (e_inf & (np.signbit(ap) != np.signbit(ep))))
        assert not bad.any(), _describe_mismatch(
            actual, expected, bad, f"{what}: inf positions/signs of the {part} part"
        )
    with np.errstate(all="ignore"):
        a = np.where(np.isinf(actual.real), 0, actual.real) + 1j * np.where(
            np.isinf(actual.imag), 0, actual.imag
        )
        e = np.where(np.isinf(expected.real), 0, expected.real) + 1j * np.where(
            np.isinf(expected.imag), 0, expected.imag
        )
        a = np.where(ok, a, 0)
        e = np.where(ok, e, 0)
        if rtol == 0 and atol == 0:
            bad = a != e
        else:
            bad = ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    assert not bad.any(), _describe_mismatch(
        actual, expected, bad, f"{what}: values (rtol={rtol}, atol={atol})"
    )


def assert_like_numpy(actual, expected, rtol=None, atol=None, what="result"):
    """Assert that lazyarray's ``actual`` matches NumPy's ``expected``.

    ``actual`` is converted with ``np.asarray`` (which materializes a lazy
    array).  Checks, in order: shape, dtype (exactly), values.  Tuples (from
    multi-output ufuncs) are compared element by element.
    """
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple), f"{what}: expected a tuple, got {type(actual)}"
        assert len(actual) == len(expected), f"{what}: tuple length"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_like_numpy(a, e, rtol=rtol, atol=atol, what=f"{what}[{i}]")
        return
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (
        f"{what}: shape {actual.shape} != numpy's {expected.shape}"
    )
    assert actual.dtype == expected.dtype, (
        f"{what}: dtype {actual.dtype} != numpy's {expected.dtype}"
    )
    kind = expected.dtype.kind
    if kind in "biuSUV":
        bad = actual != expected
        assert not np.any(bad), _describe_mismatch(
            actual, expected, np.asarray(bad), f"{what}: values (exact)"
        )
    elif kind == "f":
        r, t = tolerance(expected.dtype, rtol, atol)
        _compare_float(actual, expected, r, t, what)
    elif kind == "c":
        r, t = tolerance(expected.dtype, rtol, atol)
        _compare_complex(actual, expected, r, t, what)
    else:  # pragma: no cover - not produced by the suite
        np.testing.assert_array_equal(actual, expected)


def assert_meta_like_numpy(actual, expected, what="result"):
    """Shape and dtype only -- never materializes ``actual``."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), what
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_meta_like_numpy(a, e, what=f"{what}[{i}]")
        return
    expected = np.asarray(expected)
    assert tuple(actual.shape) == expected.shape, (
        f"{what}: shape {actual.shape} != numpy's {expected.shape}"
    )
    assert np.dtype(actual.dtype) == expected.dtype, (
        f"{what}: dtype {actual.dtype} != numpy's {expected.dtype}"
    )


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

# Most specific first: AxisError is both a ValueError and an IndexError,
# UFuncTypeError is a TypeError, ...
_ERROR_CATEGORIES = (
    np.exceptions.AxisError,
    OverflowError,
    ZeroDivisionError,
    IndexError,
    TypeError,
    ValueError,
)


def error_category(exc):
    """The exception class lazyarray must raise where NumPy raised ``exc``."""
    for cat in _ERROR_CATEGORIES:
        if isinstance(exc, cat):
            return cat
    return type(exc)


def materializations():
    return la.cache_info()["materializations"]


def assert_raises_lazily(exc_type, build, what="operation"):
    """``build()`` -- which only *builds* lazy arrays -- must raise
    ``exc_type`` itself, without materializing anything first."""
    before = materializations()
    with pytest.raises(exc_type) as info:
        build()
    after = materializations()
    assert after == before, (
        f"{what}: raised {exc_type.__name__} only after materializing "
        f"({after - before} materializations); it must fail while building"
    )
    return info


def with_warnings(fn):
    """(fn(), the warnings it issued: every one recorded, none filtered)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, caught


def run_numpy(np_call):
    """Run the oracle; return ("ok", value) or ("error", exception)."""
    try:
        return "ok", np_call()
    except Exception as exc:  # noqa: BLE001 - any NumPy error is the expectation
        return "error", exc


def check_against_numpy(np_call, la_call, rtol=None, atol=None, what="result"):
    """NumPy raises -> lazyarray raises the same kind while building;
    otherwise lazyarray's result is like NumPy's."""
    status, expected = run_numpy(np_call)
    if status == "error":
        assert_raises_lazily(error_category(expected), la_call, what=what)
        return None
    actual = la_call()
    assert_like_numpy(actual, expected, rtol=rtol, atol=atol, what=what)
    return expected


def to_la(x):
    """NumPy array/scalar -> lazy array; Python scalars stay as they are."""
    if isinstance(x, (np.ndarray, np.generic)):
        return la.asarray(x)
    return x


# --------------------------------------------------------------------------
# hypothesis strategies
# --------------------------------------------------------------------------


def float_elements(dtype, lo=-50.0, hi=50.0):
    """Finite floats in [lo, hi] (NaN/inf are covered by explicit tests)."""
    dtype = np.dtype(dtype)
    width = dtype.itemsize * 8
    lo, hi = float(dtype.type(lo)), float(dtype.type(hi))  # representable bounds
    return st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False)


def elements(dtype, lo=None, hi=None, float_range=(-50.0, 50.0)):
    """Elements for ``dtype``: full range for bool/ints unless bounded,
    bounded finite values for floats and complexes."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo_ = info.min if lo is None else max(int(lo), int(info.min))
        hi_ = info.max if hi is None else min(int(hi), int(info.max))
        return st.integers(lo_, hi_)
    if dtype.kind == "f":
        flo, fhi = float_range if lo is None else (lo, hi)
        return float_elements(dtype, flo, fhi)
    if dtype.kind == "c":
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        flo, fhi = float_range if lo is None else (lo, hi)
        flo, fhi = max(flo, -10.0), min(fhi, 10.0)
        return st.builds(complex, float_elements(part, flo, fhi), float_elements(part, flo, fhi))
    raise NotImplementedError(dtype)


def arrays(dtype, shape, **elem_kwargs):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, **elem_kwargs))


# Special floating values used by the NaN/inf tests.
def special_floats(dtype):
    dtype = np.dtype(dtype)
    fi = np.finfo(dtype)
    vals = [
        np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0,
        float(fi.tiny), float(fi.smallest_subnormal), float(fi.max), -float(fi.max),
        1e4, -7.25,
    ]
    return np.array(vals, dtype=dtype)


# --------------------------------------------------------------------------
# misc
# --------------------------------------------------------------------------


@pytest.fixture
def fresh_starts():
    """The operations that no longer start traces (`trace_tier.NO_START`) are learned per
    process, after SHORT_RUNS runs of a short program: a test module that asserts what
    records a trace takes this fixture (autouse) so that each test starts from none, and
    leaves what the rest of the suite learned as it was."""
    from lazyarray import trace_tier

    saved = set(trace_tier.NO_START)
    trace_tier.NO_START.clear()
    yield
    trace_tier.NO_START.clear()
    trace_tier.NO_START.update(saved)


@contextmanager
def fresh_launches():
    """Forget every prepared launch and large-trace replay before and after the block, so
    that launches planned inside it see the layout thresholds a test has patched."""
    from lazyarray import trace_tier
    from lazyarray.runtime import launches

    launches.prepared.clear()
    trace_tier._REPLAYS.clear()
    try:
        yield
    finally:
        launches.prepared.clear()
        trace_tier._REPLAYS.clear()


@contextmanager
def stats_delta():
    """``with stats_delta() as d: ...`` then ``d["compiles"]`` etc."""
    before = dict(la.cache_info())
    delta = {}
    yield delta
    after = la.cache_info()
    for k, v in after.items():
        if isinstance(v, (int, float)) and isinstance(before.get(k), (int, float)):
            delta[k] = v - before[k]


def fmt_call(name, *args, **kwargs):
    parts = [repr(a) if not isinstance(a, np.ndarray) else f"<{a.dtype}{list(a.shape)}>" for a in args]
    parts += [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"

