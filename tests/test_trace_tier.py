"""The trace tier (lazyarray/trace_tier.py): chains of tiny float64 operations are recorded, run on
NumPy, and once their structure recurs, run as one compiled loop. Differential against NumPy
on both paths; recording never changes what a program observes."""

import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from lazyarray import trace_tier as trace
from tests.helpers import assert_like_numpy, fresh_starts

pytestmark = pytest.mark.usefixtures(fresh_starts.__name__)


def steps(xp, x, n=25):
    """W9's loop: 4 operations per step."""
    for _ in range(n):
        x = xp.sin(x * 1.01 + 0.1) - 0.05
    return x


def kernel_runs() -> int:
    return la.cache_info()["trace_kernel_runs"]


def test_a_chain_is_recorded_not_computed():
    x = la.asarray(np.linspace(0, 1, 10))
    y = steps(la, x, 3)
    assert y._tr is not None and y._val is None
    assert y.shape == (10,) and y.dtype == np.float64 and y.ndim == 1 and len(y) == 10
    assert y._tr is not None  # shape, dtype and len did not compute it
    assert_like_numpy(y, steps(np, np.linspace(0, 1, 10), 3))
    assert y._tr is None  # computed once, then an ordinary value


def test_recurring_chain_is_compiled_once_and_matches_numpy():
    base = np.random.default_rng(0).random((4, 5))  # 2-d: the flat loop keeps the shape
    before = la.cache_info()
    for k in range(trace.PROMOTE + 5):
        if k == trace.PROMOTE:
            assert la.wait_compiles(60)  # built in the background meanwhile
        x = base + k
        assert_like_numpy(steps(la, la.asarray(x)), steps(np, x))
    after = la.cache_info()
    assert after["trace_kernel_runs"] - before["trace_kernel_runs"] >= 5  # the compiled loop
    assert after["trace_compiles"] - before["trace_compiles"] <= 1  # built once (or earlier)
    assert after["compiles"] == before["compiles"]  # the graph's kernels are counted apart
    prog = trace._PROGRAMS[steps(la, la.asarray(base))._tr[0]]
    assert prog.kernel is not None and len(prog.steps) == 100
    # one kernel of the lazy tier's compiler, no intermediate arrays (blocks of sin's
    # arguments and values only); cheap checks (one multiply-add per checked value, the
    # stored value's among them), no operand NaN tests (clean data never escalates)
    assert len(prog.kernel.entries) == 1 and prog.source.count("def kernel(") == 1
    assert "np.empty(n0" not in prog.source and prog.source.count("out0[u0] = ") == 1
    assert "chk = x250 * 0.0\n" in prog.source and "== x" not in prog.source
    assert not prog.kernel.entries[0].exact


def test_explain_plans_a_trace_without_computing_it():
    x = np.linspace(0, 1, 10)
    y = la.sin(la.asarray(x) * 2.0) + 1.0
    report = la.explain(y)
    assert y._tr is not None  # still pending
    text = str(report)
    assert "sine" in text and "multiply" in text and "add" in text
    assert_like_numpy(y, np.sin(x * 2.0) + 1.0)


def test_scalars_are_arguments_not_part_of_the_program():
    x = np.linspace(-1, 1, 7)
    a = la.asarray(x) * 3.0 + 2
    b = la.asarray(x) * -0.5 + 7
    assert a._tr[0] == b._tr[0]  # one structure
    assert_like_numpy(a, x * 3.0 + 2)
    assert_like_numpy(b, x * -0.5 + 7)


def test_reflected_operands_and_two_traces():
    x, y = np.linspace(1, 2, 6), np.linspace(-3, 3, 6)
    for k in range(trace.PROMOTE + 2):
        if k == trace.PROMOTE:
            la.wait_compiles(60)
        lx, ly = la.asarray(x), la.asarray(y)
        got = (1.5 - lx * 2) / (ly * ly + 4.0) + 2.0 / (lx + 1) - la.exp(ly * 0.1)
        assert_like_numpy(got, (1.5 - x * 2) / (y * y + 4.0) + 2.0 / (x + 1) - np.exp(y * 0.1))


def test_branches_of_one_chain_keep_their_own_scalars():
    x = np.arange(5.0)
    t = la.asarray(x) * 2.0
    a = t + 1.0  # appends to t's list of scalars
    b = t + 5.0  # must not see a's scalar
    c = a * 3.0
    assert_like_numpy(b, x * 2.0 + 5.0)
    assert_like_numpy(a, x * 2.0 + 1.0)
    assert_like_numpy(c, (x * 2.0 + 1.0) * 3.0)


def test_threads_extending_one_chain_keep_their_own_scalars():
    import threading

    x = np.arange(4.0)
    t = la.asarray(x) * 2.0
    errors = []

    def work(k):
        for i in range(300):
            c = float(k * 1000 + i)
            y = t + c
            if not np.array_equal(np.asarray(y), x * 2.0 + c):
                errors.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


def test_writes_after_recording_do_not_reach_the_trace():
    e = la.asarray(np.arange(4.0)) + 0.0
    e.max()  # computed: e holds a writeable eager value now
    assert e._tr is None and e._val.flags.writeable
    y = e * 2.0  # a trace with e's value as its leaf (made read-only)
    e[0] = 100.0  # a write into e after recording
    e += 1
    assert_like_numpy(y, np.arange(4.0) * 2.0)
    assert_like_numpy(e, np.array([101.0, 2.0, 3.0, 4.0]))


def test_writing_into_a_pending_trace():
    y = la.asarray(np.arange(3.0)) * 2.0
    y[1] = -1.0
    y *= 3.0
    assert_like_numpy(y, np.array([0.0, -3.0, 12.0]))


def test_operations_the_tier_does_not_record_compute_the_trace():
    x = np.linspace(0.5, 1.5, 8)
    y = la.asarray(x) * 2.0 + 1.0
    assert_like_numpy(y.sum(), (x * 2.0 + 1.0).sum())
    assert_like_numpy(y > 2.5, x * 2.0 + 1.0 > 2.5)
    assert_like_numpy(y[2:5], (x * 2.0 + 1.0)[2:5])
    assert_like_numpy(la.where(y > 2.5, y, 0.0), np.where(x * 2 + 1 > 2.5, x * 2 + 1, 0.0))
    big = la.asarray(np.ones(100_000))
    assert_like_numpy((la.asarray(x) * 2.0)[:1] + big, (x * 2.0)[:1] + np.ones(100_000))


def test_broadcasting_and_other_dtypes_take_the_eager_tier():
    a, b = np.arange(3.0).reshape(3, 1), np.arange(4.0)
    assert_like_numpy(la.asarray(a) * 2.0 + la.asarray(b) * 3.0, a * 2.0 + b * 3.0)
    f = np.arange(4, dtype=np.float32)
    r = la.asarray(f) * 2.0 + 1
    assert r._tr is None
    assert_like_numpy(r, f * 2.0 + 1)
    i = np.arange(4)
    assert_like_numpy(la.asarray(i) * 2 + 1, i * 2 + 1)
    z = la.asarray(np.array(2.0)) * 3.0  # 0-d: a NumPy scalar on the eager tier
    assert z._tr is None
    assert_like_numpy(z, np.array(2.0) * 3.0)


def w8(xp, x):
    return xp.where(x > 0.5, x * 2, xp.clip(x, 0.1, 0.3))


def _bits(a) -> tuple:
    """Shape, dtype and bytes: equal exactly when two results are bit for bit the same."""
    a = np.asarray(a)
    return a.shape, a.dtype.str, a.tobytes()


def test_comparisons_where_and_clip_are_recorded_and_compiled():
    x = np.array([0.05, 0.2, 0.5, 0.6, -0.0, np.nan, np.inf, -np.inf, 1e308, 0.3])
    runs = kernel_runs()
    for k in range(trace.PROMOTE + 3):
        if k == trace.PROMOTE:
            assert la.wait_compiles(60)
        lx = la.asarray(x)
        g = lx > 0.5
        assert g._tr is not None and g.dtype == np.bool_ and g.shape == x.shape
        got = w8(la, lx)
        assert got._tr is not None and got.dtype == np.float64
        pid = got._tr[0]
        with np.errstate(over="ignore"):
            assert _bits(got) == _bits(w8(np, x))  # bit for bit, both paths
    prog = trace._PROGRAMS[pid]
    assert [op for op, _ in prog.steps] == ["greater", "multiply", "clip", "where"]
    assert prog.kernel is not None and kernel_runs() > runs
    assert_like_numpy(g, x > 0.5)  # a bool trace, computed: NumPy's bools


_MASKS = [  # masks made of comparisons, as NumPy code writes them
    lambda xp, a, b: (a > 0.5) & (b < 0.25),
    lambda xp, a, b: (a >= b) | (a != a),
    lambda xp, a, b: (a < 0.0) ^ (b <= 0.0),
    lambda xp, a, b: ~(a == b),
    lambda xp, a, b: xp.logical_and(a > 0.1, xp.logical_not(b > 0.9)),
    lambda xp, a, b: xp.logical_or(a < -0.5, b > 0.5),
    lambda xp, a, b: xp.logical_xor(a > b, b > 0.0),
    lambda xp, a, b: xp.invert(xp.bitwise_and(a > 0.0, xp.bitwise_or(b > 1.0, a < b))),
    lambda xp, a, b: xp.bitwise_xor(~(a > 0.0), xp.logical_not(b != b)),
]


@pytest.mark.parametrize("k", range(len(_MASKS)))
def test_masks_of_comparisons_are_recorded_and_compiled(k):
    """`&`, `|`, `^`, `~` and the logical ufuncs on bool traces record a bool trace, which
    `where` picks with: NumPy's bools on the recorded NumPy calls and in the compiled loop,
    NaN, signed zeros and infinities included."""
    x = np.array([0.05, 0.2, 0.5, 0.6, -0.0, np.nan, np.inf, -np.inf, 1e308, 0.3, -1.0, 0.0])
    y = x[::-1].copy()

    def program(xp, a, b):
        m = _MASKS[k](xp, a, b)
        return m, xp.where(m, a * 2.0, b - 1.0)

    runs = kernel_runs()
    for r in range(trace.PROMOTE + 3):
        if r == trace.PROMOTE:
            assert la.wait_compiles(60)
        got = program(la, la.asarray(x), la.asarray(y))
        assert all(g._tr is not None for g in got)
        with np.errstate(all="ignore"):
            for g, w in zip(got, program(np, x, y), strict=True):
                assert _bits(g) == _bits(w), (k, r)
    assert kernel_runs() > runs  # the last runs: the compiled loops


_ROUNDING = ("floor", "ceil", "trunc", "rint", "sign", "fabs", "copysign")  # exact, quiet
_MATH = ("power", "arctan2", "hypot", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg")


@pytest.mark.parametrize("name", _ROUNDING + _MATH)
def test_rounding_and_more_math_are_recorded(name):
    """floor, ceil, trunc, rint, sign, fabs and copysign (NumPy's bits), power (`x ** 3`),
    arctan2, hypot, the inverse hyperbolic functions and the angle conversions (within the
    kernels' documented ulps) record on the trace tier and compile into its loop, at tiny
    and large sizes, with NumPy's warnings at the forcing line (0 ** -1, arccosh(0.5))."""
    f = getattr(np, name)
    x = np.array([-0.0, 0.0, 0.5, -1.5, 2.5, np.nan, np.inf, -np.inf, 1e308, -2.0, 3.0, 0.7])
    y = x[::-1].copy()

    def program(xp, a, b):
        g = getattr(xp, name)
        r = g(a * 1.0, b * 1.0) if f.nin == 2 else g(a * 1.0)
        if name == "power":
            r = r + (a * 1.0) ** 3 - xp.power(2.0, b * 0.5)
        return r * 2.0 - 0.25  # long enough to be compiled (trace.SHORT)

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        want = program(np, x, y)
    messages = sorted({str(w.message) for w in rec})
    exact, runs = name in _ROUNDING, kernel_runs()
    for k in range(trace.PROMOTE + 3):
        if k == trace.PROMOTE:
            assert la.wait_compiles(120)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            got = program(la, la.asarray(x), la.asarray(y))
            pid = got._tr[0]
            value = np.asarray(got)
        assert sorted({str(w.message) for w in rec}) == messages, (name, k)
        if exact:
            assert _bits(value) == _bits(want), (name, k)
        else:
            assert value.dtype == want.dtype and value.shape == want.shape
            np.testing.assert_allclose(value, want, rtol=1e-14, atol=1e-12)
    assert trace._PROGRAMS[pid].kernel is not None and kernel_runs() > runs
    big = np.linspace(-3.0, 3.0, 1 << 17)
    with np.errstate(all="ignore"):
        want = program(np, big, big[::-1])
        for _ in range(2):  # on the graph, then replayed
            got = program(la, la.asarray(big), la.asarray(big[::-1].copy()))
            assert got._tr is not None
            if exact:
                assert _bits(got) == _bits(want)
            else:
                value = np.asarray(got)
                assert value.dtype == want.dtype and value.shape == want.shape
                np.testing.assert_allclose(value, want, rtol=1e-14, atol=1e-12)


def test_logical_operations_record_only_bool_traces():
    """A logical operation on a float64 trace or a computed float64 array is not recorded:
    NumPy's call decides (`logical_not` of floats is their truth; `&` of floats raises
    NumPy's TypeError at the line, at any size)."""
    x = np.array([0.0, -0.0, 1.5, np.nan, -2.0])
    lx = la.asarray(x)
    for a, ref in ((lx, x), (lx * 1.0, x * 1.0)):
        assert_like_numpy(la.logical_not(a), np.logical_not(ref))
        assert_like_numpy(la.logical_and(a, a > 0), np.logical_and(ref, ref > 0))
        with pytest.raises(TypeError):
            a & (a > 0)
        with pytest.raises(TypeError):
            ~a
    big = np.linspace(-1, 1, 1 << 17)
    lbig = la.asarray(big)
    with pytest.raises(TypeError):
        (lbig * 2.0) | (lbig > 0)
    assert_like_numpy(la.logical_xor(lbig * 2.0, lbig > 0), np.logical_xor(big * 2.0, big > 0))
    m = (lbig > 0) & (lbig < 0.5)
    assert m._tr is not None
    assert_like_numpy(m, (big > 0) & (big < 0.5))


_PAIRS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin",
          "greater", "less_equal", "equal", "not_equal")


@pytest.mark.parametrize("name", _PAIRS)
def test_two_argument_ufunc_calls_record_as_operators_do(name):
    """`np.maximum(x * 2.0, 0)` records as `x * 2.0 + 0` does: a scalar on either side (a
    Python int too) or another trace; bit for bit NumPy's on both paths (the recorded NumPy
    calls, then the compiled loop), signed zeros, NaN and infinities included."""
    x = np.array([-0.0, 0.0, 0.5, -1.5, np.nan, np.inf, -np.inf, 1e308, -2.0, 3.0])
    y = x[::-1].copy()

    def program(xp, a, b, form):
        f = getattr(xp, name)
        a, b = a * 1.0, b * 1.0
        r = (f(a, 0.0), f(-0.0, a), f(a, 2), f(3, a), f(a, b))[form]
        r = xp.where(r, a, 0.5) if r.dtype == bool else r
        return r * 2.0 - 0.25  # long enough to be compiled (trace.SHORT)

    runs = kernel_runs()
    for k in range(trace.PROMOTE + 3):
        if k == trace.PROMOTE:
            assert la.wait_compiles(60)
        for form in range(5):
            got = program(la, la.asarray(x), la.asarray(y), form)
            assert got._tr is not None, (name, form)
            with np.errstate(all="ignore"):
                want = program(np, x, y, form)
                assert got.dtype == want.dtype and got.shape == want.shape
                assert _bits(got) == _bits(want), (name, form, k)
    assert kernel_runs() >= runs + 3 * 5  # the last runs: compiled loops


def test_two_argument_ufunc_calls_on_other_operands_are_ufunc_calls():
    """Only an Array with an Array or a Python float or int takes the operator's paths:
    NumPy arrays, lists, bools, keywords and int arrays keep the ufunc's own; large arrays
    (large traces) and bad operands get NumPy's values and errors either way."""
    x = np.linspace(-1, 1, 6)
    lx = la.asarray(x)
    assert_like_numpy(la.maximum(lx * 1.0, np.zeros(6)), np.maximum(x, np.zeros(6)))
    assert_like_numpy(la.maximum(lx * 1.0, [0.0] * 6), np.maximum(x, [0.0] * 6))
    assert_like_numpy(la.maximum(lx * 1.0, True), np.maximum(x, True))
    assert_like_numpy(la.maximum(lx * 1.0, 0.0, dtype=np.float32),
                      np.maximum(x, 0.0, dtype=np.float32))
    assert_like_numpy(la.add(1.5, lx * 2.0), np.add(1.5, x * 2.0))
    ints = la.asarray(np.arange(6))
    assert_like_numpy(la.maximum(ints, 2), np.maximum(np.arange(6), 2))  # int64: not traced
    assert_like_numpy(la.maximum(ints, 2.5), np.maximum(np.arange(6), 2.5))
    big = np.linspace(-1, 1, 1 << 17)
    lbig = la.asarray(big)
    assert_like_numpy(la.maximum(lbig * 2.0 + 1.0, 0), np.maximum(big * 2.0 + 1.0, 0))
    assert_like_numpy(la.minimum(0.5, lbig), np.minimum(0.5, big))
    with pytest.raises(TypeError):
        la.maximum(lx * 1.0, "a")
    with pytest.raises(ValueError):
        la.maximum(lx * 1.0, la.asarray(np.ones(4)))


def test_where_and_clip_record_only_what_numpy_types_as_float64():
    x = np.linspace(-1, 1, 6)
    lx = la.asarray(x)
    r = la.where(lx > 0, 1, 2)  # Python ints: NumPy gives int64
    assert r._tr is None
    assert_like_numpy(r, np.where(x > 0, 1, 2))
    for lo, hi in ((0.0, 1.0), (-0.5, -0.0), (np.nan, 1.0)):  # zero or NaN bounds: NumPy's loop
        assert la.clip(lx * 1.0, lo, hi)._tr is None
        assert _bits(la.clip(lx * 1.0, lo, hi)) == _bits(np.clip(x * 1.0, lo, hi))
    m = la.where(lx > 0, lx * 3.0, 0.25)
    assert m._tr is not None
    assert_like_numpy(m, np.where(x > 0, x * 3.0, 0.25))
    assert_like_numpy(la.where(lx > 0), np.where(x > 0))  # one argument: nonzero


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 127, 128, 129, 255, 256, 1000, 1001, 2048, 2049,
                               20000])  # (a total keeps <= _h.SCRATCH values on its stack)
def test_sum_of_a_trace_is_numpys_sum_bit_for_bit(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    y = rng.standard_normal(n)
    for k in range(trace.PROMOTE + 2):
        if k == trace.PROMOTE:
            assert la.wait_compiles(60)
        lx, ly = la.asarray(x), la.asarray(y)
        t = (lx - ly) ** 2 * 0.5
        got = la.sum(t)  # t is held: one loop computes it and sums it (force_sum)
        assert got._tr is None and _bits(got) == _bits(np.sum((x - y) ** 2 * 0.5))
        assert t._tr is None  # the loop stored the values it summed: t is computed, once
        assert _bits(t) == _bits((x - y) ** 2 * 0.5)
        got = la.sum((lx - ly) ** 2 * 0.5)  # a temporary: its sum is a pending total
        assert got._tr is not None and got.shape == () and got.dtype == np.float64
        assert _bits(got) == _bits(np.sum((x - y) ** 2 * 0.5))
        assert _bits((lx * 1.5).sum()) == _bits((x * 1.5).sum())
        assert _bits(la.sqrt(la.sum(lx * lx))) == _bits(np.sqrt(np.sum(x * x)))
    if n:
        assert trace._PROGRAMS[((lx - ly) ** 2 * 0.5)._tr[0]].sum_kernel is not None
        assert trace._PROGRAMS[la.sum((lx - ly) ** 2 * 0.5)._tr[0]].kernel is not None


def test_a_total_goes_on_through_one_argument_ufuncs_and_is_forced_by_anything_else():
    x = np.linspace(-1.0, 2.0, 50)
    y = np.cos(x)

    def total(xp, a, b):  # a pending total: W2's sqrt of a sum, a log-sum-exp's tail
        return xp.sqrt(xp.sum((a - b) ** 2)), xp.log(xp.sum(xp.exp(a * 1.0)))

    for k in range(trace.PROMOTE + 2):
        if k == trace.PROMOTE:
            assert la.wait_compiles(60)
        lx = la.asarray(x)
        for got, want in zip(total(la, lx, la.asarray(y)), total(np, x, y)):
            assert got._tr is not None and trace._KINDS[got._tr[0]] == 2
            assert got.shape == () and got.ndim == 0 and got.dtype == np.float64
            assert _bits(got) == _bits(want)
        ws = np.sum(x * 2.0)
        # what a total does not record computes it first, as NumPy's scalar would
        assert_like_numpy(la.sum(lx * 2.0) * 3.0, ws * 3.0)
        assert_like_numpy(la.sum(lx * 2.0) > 0.5, ws > 0.5)
        assert_like_numpy(la.maximum(la.sum(lx * 2.0), 0.0), np.maximum(ws, 0.0))
        assert_like_numpy(la.sum(lx * 2.0) + la.asarray(x), ws + x)
        assert_like_numpy(la.sum(la.sum(lx * 2.0)), np.sum(ws))
        assert_like_numpy(la.sum(lx * 2.0).astype(np.float32), ws.astype(np.float32))
        assert float(la.sum(lx * 2.0)) == float(ws) and la.sum(lx * 2.0).item() == ws.item()
        assert repr(la.sum(lx * 2.0)) == repr(ws)  # NumPy's scalar: np.float64(50.0)
        u = la.sum(lx * 2.0)
        u += 1.0
        assert_like_numpy(u, ws + 1.0)
        v = la.sqrt(la.sum(lx * 2.0 + 5.0))
        la.evaluate(v)
        assert v._tr is None
        assert _bits(v) == _bits(np.sqrt(np.sum(x * 2.0 + 5.0)))
    plan = la.explain(la.sqrt(la.sum(la.asarray(x) * 2.0)))  # (outside an assert: pytest's
    assert "reduce" in plan.hlo_before  # rewriting holds the temporaries)
    with la.options(eager_threshold=8):  # forced as a large trace: its graph on the lazy tier
        r = la.sqrt(la.sum(la.asarray(x) * 2.0 + 5.0))
    with la.options(eager_threshold=8):
        assert_like_numpy(r, np.sqrt(np.sum(x * 2.0 + 5.0)))


def test_a_sum_of_the_longest_program_runs_as_its_own_loop():
    x = np.linspace(0, 1, 300)
    y, ly = x, la.asarray(x)
    while ly._tr is None or trace._SIZES[ly._tr[0]] < trace.MAX_OPS:
        y, ly = y * 0.999, ly * 0.999
    assert trace._SIZES[ly._tr[0]] == trace.MAX_OPS  # no room for the total
    s = la.sum(ly)
    assert s._tr is None and ly._tr is None  # summed by force_sum: ly holds its values
    assert _bits(s) == _bits(np.sum(y)) and _bits(ly) == _bits(y)


def test_sum_of_negative_zeros_is_positive_zero_as_in_numpy():
    z = np.full(300, -0.0)
    for k in range(trace.PROMOTE + 2):
        if k == trace.PROMOTE:
            assert la.wait_compiles(60)
        assert _bits(la.sum(la.asarray(z) * 1.0)) == _bits(np.sum(z * 1.0))  # +0.0


@np.errstate(divide="warn", over="warn", invalid="warn", under="ignore")
def test_sum_of_a_trace_warns_like_numpy():
    x = np.full(50, 1e306)
    for k in range(trace.PROMOTE + 2):
        if k == trace.PROMOTE:
            assert la.wait_compiles(60)
        got = la.sum(la.asarray(x) * 4.0)  # each element finite: the sum overflows...
        with pytest.warns(RuntimeWarning, match="overflow encountered in reduce"):
            assert float(got) == np.inf  # ...when its value is needed, as on the lazy tier
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a NaN element: a NaN sum, no flag
            assert np.isnan(float(la.sum(la.asarray(np.array([np.nan, 1.0, 2.0])) * 1.0)))
        with pytest.warns(RuntimeWarning, match="invalid value encountered in reduce"):
            assert np.isnan(float(la.sum(la.asarray(np.array([np.inf, -np.inf])) * 1.0)))
        with pytest.warns(RuntimeWarning, match="invalid value encountered in sqrt"):
            got = la.sqrt(la.sum(la.asarray(np.array([1.0, 2.0])) * -1.0))
            assert np.isnan(float(got))
        with pytest.warns(RuntimeWarning, match="divide by zero encountered in log"):
            assert float(la.log(la.sum(la.asarray(np.zeros(3)) * 1.0))) == -np.inf
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        la.sum(la.asarray(x) * 4.0)


_FLAGGED = [  # programs whose flags show in a later step's value, or only in the step's own
    lambda xp, x: xp.sin(x * 1e300 * 1e10) - 0.05,  # overflow, then sin(inf): the last value
    lambda xp, x: xp.exp(-(x / 0.0)) + 1.0,  # divide by zero, hidden by exp(-inf) = 0
    lambda xp, x: 1.0 / (x * 1e300 * 1e10) + 1.0,  # overflow in a denominator: 1 / inf = 0
    lambda xp, x: xp.sqrt(xp.sum(xp.log(x * 0.0) + 1.0)),  # log(0) in a total: the sum, -inf
    lambda xp, x: xp.sum(xp.absolute(x - x * 1e300 * 1e10)),  # a quiet step after the flag
]


@pytest.mark.parametrize("k", range(len(_FLAGGED)))
@np.errstate(divide="warn", over="warn", invalid="warn", under="ignore")
def test_flags_behind_later_steps_warn_like_numpy(k):
    """The kernel tests each stored value and checks exactly where one is not finite:
    each flag is still found behind later steps, its warnings as NumPy's."""
    x = np.linspace(0.5, 2.0, 40)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        ref = _FLAGGED[k](np, x)
    assert want
    for j in range(trace.PROMOTE + 2):
        if j == trace.PROMOTE:
            assert la.wait_compiles(60)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            v = np.asarray(_FLAGGED[k](la, la.asarray(x)))
        assert sorted(str(w.message) for w in got) == sorted(str(w.message) for w in want)
        assert _bits(v) == _bits(ref)
    r = _FLAGGED[k](la, la.asarray(x))
    assert la.wait_compiles(60)
    prog = trace._program(r._tr[0])
    kernel = prog.kernel if prog.kernel is not None else prog.sum_kernel[0]
    assert kernel is not None  # (the checks above ran it: 4+ ops)
    # its flags escalated the fusion: rebuilt with the exact checks, which still warn
    assert any(e.exact for e in kernel.entries)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        v = np.asarray(_FLAGGED[k](la, la.asarray(x)))
    assert sorted(str(w.message) for w in got) == sorted(str(w.message) for w in want)
    assert _bits(v) == _bits(ref)


def test_trace_kernels_are_the_lazy_tiers_kernels():
    """A compiled trace runs kernels of the lazy tier's compiler (one code generator, one
    kernel cache), with cheap flag checks (one multiply-add per checked value, counted where
    their sum is NaN), and a total's sum in NumPy's pairwise order. A flagged launch has its
    fusions rebuilt with the exact checks (`test_flags_behind_later_steps_warn_like_numpy`
    runs those)."""
    from lazyarray.runtime import kernels

    x = np.linspace(0.5, 2.0, 40)
    programs = [lambda xp, v: xp.sin(v * 1.01 + 0.1) - 0.05,
                lambda xp, v: xp.sqrt(xp.sum((v - v * 2.0) ** 2)),
                lambda xp, v: xp.exp(v * 2.0) + xp.sin(v / v),
                lambda xp, v: 1.0 / (v * 3.0) + v * 0.5]
    for fn in programs:
        for k in range(trace.PROMOTE + 1):
            if k == trace.PROMOTE:
                assert la.wait_compiles(60)
            assert _bits(fn(la, la.asarray(x))) == _bits(fn(np, x))
        prog = trace._program(fn(la, la.asarray(x))._tr[0])
        assert prog.kernel is not None
        cached = {id(e) for e in kernels.cache.values()}
        assert all(id(e) in cached for e in prog.kernel.entries)
        src = prog.source
        assert src.count("def kernel(") == len(prog.kernel.entries) == 1
        assert ("_h.pairwise_sum(vals, 0, n0)" in src) == (prog.total >= 0)
        if prog.total < 0:
            checks = [line.strip() for line in src.splitlines() if "chk != chk" in line]
            assert checks and set(checks) <= {"fpp |= chk != chk", "fpe += chk != chk"}
            assert "== x" not in src  # (no operand NaN tests: see `codegen.body._cheap`)


_SMALL_STACK = """
import threading, numpy as np, lazyarray as la
from lazyarray import trace_tier as trace
from lazyarray.backends.numba_scalar import SCRATCH
out, ran = [], []
for n in (SCRATCH, SCRATCH + 1):  # the values on the kernel's stack, then on the heap
    x, y = np.linspace(0.0, 1.0, n), np.linspace(2.0, 1.0, n)
    for _ in range(trace.PROMOTE + 1):
        np.asarray(la.sqrt(la.sum((la.asarray(x) - la.asarray(y)) ** 2)))
    assert la.wait_compiles(120)
    def work():
        for _ in range(3):
            v = la.sqrt(la.sum((la.asarray(x) - la.asarray(y)) ** 2))
            out.append(bool(float(np.asarray(v)) == np.sqrt(np.sum((x - y) ** 2))))
    threading.stack_size(32768)  # Python's smallest thread stack
    t = threading.Thread(target=work)
    before = la.cache_info()["trace_kernel_runs"]
    t.start()
    t.join()
    ran.append(la.cache_info()["trace_kernel_runs"] - before)
print(out, ran)
"""


def test_a_totals_stack_scratch_fits_the_smallest_thread_stack():
    """`_h.scratch` stays small enough for a thread started with Python's smallest stack
    (32 KiB: with 4,096 values, 32 KiB of scratch, this process crashed)."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _SMALL_STACK], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["[True,", *["True,"] * 4, "True]", "[3,", "3]"]  # compiled


def test_pairwise_sum_is_numpys_order():
    import numba

    from lazyarray.backends.numba_scalar import pairwise_sum

    total = numba.njit(lambda a: 0.0 + pairwise_sum(a, 0, a.size))
    rng = np.random.default_rng(7)
    for n in [*range(300), 1023, 1024, 1025, 65537, 300_001]:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-10, 10, n)
        assert _bits(total(a)) == _bits(np.add.reduce(a)), n


def test_starts_from_one_leaf_do_not_grow_its_list_of_scalars():
    lx = la.asarray(np.arange(4.0))
    for k in range(200):
        np.asarray(lx * float(k) + 1.0)
        np.asarray(la.clip(lx, -1.5, float(k) + 0.5))
    leaf = lx._val  # (a tiny asarray is an eager value)
    memo = sys.modules["lazyarray.array"]._LEAVES.get(id(leaf))
    assert memo is not None and len(memo[1][2]) == 0


def test_python_ints_beyond_float64_precision_are_not_recorded():
    x = np.arange(3.0)
    r = la.asarray(x) * 2 ** 60
    assert r._tr is None
    assert_like_numpy(r, x * 2 ** 60)
    with pytest.raises(OverflowError):
        la.asarray(x) * 10 ** 400


def test_long_chains_are_cut_into_programs_of_bounded_size():
    x = np.linspace(0, 1, 9)
    y, ly = x, la.asarray(x)
    for _ in range(3 * trace.MAX_OPS):
        y, ly = y * 0.999 + 0.001, ly * 0.999 + 0.001
    assert trace._SIZES[ly._tr[0]] <= trace.MAX_OPS
    assert_like_numpy(ly, y)


WARN = {"divide": "warn", "over": "warn", "invalid": "warn", "under": "ignore"}  # NumPy's default


@np.errstate(**WARN)
def test_warnings_are_issued_where_the_value_is_needed():
    x = la.asarray(np.array([1.0, 0.0, -1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x / 0.0 + 1.0  # recorded: nothing computed, nothing reported
    with pytest.warns(RuntimeWarning, match="divide by zero") as rec:
        v = np.asarray(y)
    assert rec[0].filename == __file__
    np.testing.assert_array_equal(v, np.array([1.0, 0.0, -1.0]) / 0.0 + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = x / 0.0 + 1.0  # recorded under "ignore": runs under it, wherever it is computed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(np.asarray(z), v)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = x / 0.0 + 1.0
    with np.errstate(divide="ignore"):
        w = z * 2.0  # under another state than the trace's: the trace is computed first
    assert z._tr is None and w._tr is None
    np.testing.assert_array_equal(np.asarray(w), v * 2.0)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        x / 0.0 + 1.0


@np.errstate(**WARN)
def test_compiled_programs_recheck_on_numpy():
    x = np.linspace(1, 2, 5)
    for _ in range(trace.PROMOTE + 2):
        np.asarray(la.exp(la.asarray(x) * 2.0) * 0.5 + 1.0 - 0.25)
    assert la.wait_compiles(60)
    before = la.cache_info()["fp_rechecks"]
    got = la.exp(la.asarray(x) * 1000.0) * 0.5 + 1.0 - 0.25
    with pytest.warns(RuntimeWarning, match="overflow"):
        np.asarray(got)
    assert la.cache_info()["fp_rechecks"] == before + 1
    with np.errstate(over="ignore"):
        assert_like_numpy(got, np.exp(x * 1000.0) * 0.5 + 1.0 - 0.25)
    huge = np.array([1e300, -1e22, 3.0, 1e6, np.nan])  # sin's slow path: NumPy's values
    for _ in range(trace.PROMOTE + 2):
        np.asarray(la.sin(la.asarray(huge) * 1.0 + 0.0) * 1.0 - 0.0)
    assert la.wait_compiles(60)
    r = la.sin(la.asarray(huge) * 1.0 + 0.0) * 1.0 - 0.0
    np.testing.assert_array_equal(np.asarray(r), np.sin(huge * 1.0 + 0.0) * 1.0 - 0.0)


def test_short_programs_stop_starting_traces():
    x = np.arange(6.0)
    for _ in range(trace.SHORT_RUNS + 1):
        np.asarray(la.asarray(x) - 7.25)
    pid = trace._KEYS[("subtract", trace.LEAF, trace.SCALAR)]
    assert pid in trace.NO_START
    y = la.asarray(x) - 7.25
    assert y._tr is None  # the eager tier: NumPy at once
    assert_like_numpy(y, x - 7.25)
    assert trace._PROGRAMS[pid].kernel is None  # never compiled


def test_the_option_turns_the_tier_off():
    with la.options(trace=False):
        y = la.asarray(np.arange(3.0)) * 2.0 + 1.0
    assert y._tr is None
    assert_like_numpy(y, np.arange(3.0) * 2.0 + 1.0)


def _write(xp, a, b, s):
    a = a * 1.0  # NumPy: a copy (never the test's input); lazyarray: a trace, computed by the write
    a[(0,) * a.ndim] = s
    return a


_OPS = [  # (name, f(xp, a, b, scalar or None)): recorded ones, then ones that compute a trace
    ("add", lambda xp, a, b, s: a + (b if s is None else s)),
    ("sub", lambda xp, a, b, s: a - (b if s is None else s)),
    ("mul", lambda xp, a, b, s: a * (b if s is None else s)),
    ("div", lambda xp, a, b, s: a / (b if s is None else s)),
    ("rsub", lambda xp, a, b, s: (b if s is None else s) - a),
    ("rdiv", lambda xp, a, b, s: (b if s is None else s) / a),
    ("maximum", lambda xp, a, b, s: xp.maximum(a, b)),
    # two-argument ufuncs called as functions, with a scalar on either side
    ("minimum_s", lambda xp, a, b, s: xp.minimum(a, b if s is None else s)),
    ("fmax_rs", lambda xp, a, b, s: xp.fmax(b if s is None else s, a)),
    ("subtract_rs", lambda xp, a, b, s: xp.subtract(b if s is None else s, a)),
    ("less_s", lambda xp, a, b, s: xp.where(xp.less(a, b if s is None else s), a, b)),
    *((u, (lambda u: lambda xp, a, b, s: getattr(xp, u)(a))(u))
      for u in ("sin", "cos", "exp", "log", "sqrt", "tanh", "absolute", "negative", "square")),
    ("sum", lambda xp, a, b, s: a + a.sum()),  # a reduction (of a 1-d trace: fused), 0-d
    # the sum of a temporary (of a 1-d trace: a pending total), one-argument ufuncs on it
    ("total", lambda xp, a, b, s: a - xp.log1p(xp.sqrt(xp.abs(xp.sum(a * b))))),
    ("where", lambda xp, a, b, s: xp.where(a > b, a, b)),  # a bool trace, then where
    ("where_scalar", lambda xp, a, b, s: xp.where(a <= (0.5 if s is None else s), a, 1.5)),
    ("clip", lambda xp, a, b, s: xp.clip(a, -2.5, 0.75 if s is None or s != s else float(s))),
    ("eq_ne", lambda xp, a, b, s: xp.where((a == b) != (a < 1.0), b, a)),  # bool on bool: eager
    ("mask", lambda xp, a, b, s: xp.where((a > b) | ~(a < (0.5 if s is None else s)), a, b)),
    ("logical", lambda xp, a, b, s: xp.where(xp.logical_xor(a >= 0.0, b != b) & (b > a), b, a)),
    ("reversed", lambda xp, a, b, s: a[::-1] + 1.0),  # a view of a trace
    ("write", _write),  # a write into a trace
]


@st.composite
def programs(draw):
    """A random program over two float64 inputs: binary operations on the other chain or a
    scalar, unary ufuncs, and operations the trace tier does not record (reductions,
    comparisons, views, writes) in between."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=5))
    floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
    xs = [draw(hnp.arrays(np.float64, shape, elements=floats)) for _ in range(2)]
    ops = draw(st.lists(st.tuples(st.sampled_from(range(len(_OPS))),
                                  st.one_of(floats, st.integers(-5, 5), st.just(None))),
                        min_size=1, max_size=12))
    return xs, ops


def run_program(xp, xs, ops):
    a, b = (xp.asarray(x) for x in xs)
    for k, s in ops:
        if _OPS[k][0] == "write" and s is None:
            s = 2.5
        a = _OPS[k][1](xp, a, b, s)
        a, b = b, a
    return a, b


def _warned(xp, xs, ops):
    """The program's results, computed, and the RuntimeWarning messages it issued."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = run_program(xp, xs, ops)
        for v in out:
            np.asarray(v)
    return out, sorted({str(w.message) for w in rec if issubclass(w.category, RuntimeWarning)})


def check_program(prog, runs):
    """Values, dtypes and shapes as NumPy's, and the same warnings (under NumPy's default
    error state) whether the program runs on NumPy's calls or, in the last run, on its
    compiled loop (exact checks behind each stored value's test)."""
    xs, ops = prog
    with np.errstate(**WARN):
        want, messages = _warned(np, xs, ops)
        for k in range(runs):
            if k and k == runs - 1:
                la.wait_compiles(60)  # the last run takes the loop built meanwhile, if any
            got, seen = _warned(la, xs, ops)
            for g, w in zip(got, want):
                assert_like_numpy(g, w)
            assert seen == messages


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_programs_match_numpy(prog):
    check_program(prog, 2)  # recorded, run on NumPy


@pytest.mark.slow
@pytest.mark.heavy
@settings(max_examples=300, deadline=None)
@given(programs())
def test_random_programs_match_numpy_compiled(prog):
    check_program(prog, trace.PROMOTE + 1)  # the last runs take the compiled loop


def test_a_program_of_several_kernels_runs_at_every_size(monkeypatch):
    """A program the passes split into several kernels (here by a tiny MAX_FUSION) passes its
    intermediates between them in their own dtypes (a mask is bool) and at each run's size,
    not the size it was compiled at."""
    from lazyarray.passes import fusion

    monkeypatch.setattr(fusion, "MAX_FUSION", 3)

    def prog(xp, x):
        m = (x * 2.0 + 1.0) > 1.5
        return xp.where(m, xp.sin(x * 3.0) - 0.5, x * 0.25) * 1.5 + 0.1

    for n in (40, 7, 300, 1):
        x = np.linspace(0.0, 1.0, n)
        for k in range(trace.PROMOTE + 2):
            if k == trace.PROMOTE:
                assert la.wait_compiles(120)
            got, want = prog(la, la.asarray(x)), prog(np, x)
            assert _bits(got) == _bits(want)
            assert_like_numpy(got, want)
        prog_ = trace._program(prog(la, la.asarray(x))._tr[0])
        assert prog_.kernel is not None and len(prog_.kernel.entries) > 1
