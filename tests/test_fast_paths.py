"""The fast paths give what the general paths (and NumPy) give.

Covered: the eager tier's cached float64 operands, its size invariant and its counter;
memoized typing plans and constants when building nodes; memoized view nodes; strided loads
passed to kernels as flat windows; prepared launches that rebuild operand views, and that
run on one thread after a pause where that was faster.
"""

from __future__ import annotations

import importlib
import math
import types

import numpy as np
import pytest

import lazyarray as la
from helpers import assert_like_numpy, fresh_launches

la_array = importlib.import_module("lazyarray.array")  # the module (la.array is a function)


@pytest.fixture(autouse=True)
def _eager_tier():
    """These tests look at the eager tier's own paths: float64 chains would otherwise be
    recorded by the trace tier (tests/test_trace_tier.py)."""
    with la.options(trace=False):
        yield


def _eager(a: np.ndarray):
    e = la.asarray(a) * 1  # an eager-tier value
    assert e._val is not None
    return e


@pytest.mark.parametrize("const", [1.5, -2.25, 1e300, 0.1, float("inf"), float("nan")])
def test_eager_float_operands_match_numpy(const):
    x = np.linspace(-3, 3, 7)
    e = _eager(x)
    for got, want in [(e * const, x * const), (const - e, const - x), (e / const, x / const),
                      (const / e, const / x), (e ** const, x ** const), (e + const, x + const)]:
        with np.errstate(all="ignore"):
            assert_like_numpy(got, want)


def test_eager_signed_zero_operands_keep_their_sign():
    x = np.array([1.0, -2.0, 3.0])
    e = _eager(x)
    for c in (0.0, -0.0, 0.0, -0.0):  # 0.0 == -0.0: never one cached operand
        got = np.asarray(e * c)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(x * c))


def test_eager_float_operands_keep_weak_scalar_dtypes():
    for dtype in (np.float32, np.float16, np.int32, np.complex64, np.int8):
        x = np.arange(1, 6, dtype=dtype)
        e = _eager(x) if dtype != np.int8 else la.asarray(x) + np.int8(0)
        assert_like_numpy(e * 1.1, x * 1.1)
        assert_like_numpy(2.5 - e, 2.5 - x)


def test_eager_zero_d_values_stay_numpy_scalars():
    s = _eager(np.arange(3.0))[1]
    r = s * 1.75
    assert isinstance(r._val, np.float64) and float(r) == 1.75


def test_cached_operands_are_bounded_and_read_only():
    e = _eager(np.ones(4))
    for k in range(600):
        e * (1.0 + k / 1024)
    assert len(la_array.F64_CONSTANTS) <= 512
    assert all(not c.flags.writeable for c in la_array.F64_CONSTANTS.values())


def test_eager_values_are_always_tiny():
    """A broadcast of tiny values can be big: it becomes a graph leaf, not an eager value,
    so later operators on it are not run op by op at NumPy's speed."""
    col, row = _eager(np.ones((3000, 1))), _eager(np.arange(3000.0)[None, :])
    big = col * row
    assert big._val is None and big.shape == (3000, 3000)
    np.testing.assert_array_equal(np.asarray(big)[5], np.arange(3000.0))


def test_eager_ops_are_counted():
    e = _eager(np.ones(4))
    la.reset_stats()
    e * 2.0 + 1
    la.sin(e)
    assert la.cache_info()["eager_ops"] == 3
    la.reset_stats()
    assert la.cache_info()["eager_ops"] == 0


def test_eager_value_handed_to_numpy_is_a_read_only_snapshot():
    e = _eager(np.arange(4.0))
    v = np.asarray(e)
    assert not v.flags.writeable
    e[1] = 100.0
    np.testing.assert_array_equal(v, [0, 1, 2, 3])
    np.testing.assert_array_equal(np.asarray(e), [0, 100, 2, 3])


def test_unary_ufunc_call_forms():
    e = _eager(np.arange(3.0))
    with pytest.raises(TypeError):
        la.sin()
    with pytest.raises(TypeError):
        la.add(e)
    out = la.zeros(3)
    la.sin(e, out=out)
    assert_like_numpy(out, np.sin(np.arange(3.0)))
    assert_like_numpy(la.sin(e, dtype=np.float32), np.sin(np.arange(3.0), dtype=np.float32))


# ---- building nodes --------------------------------------------------------------------


def test_memoized_typing_keeps_value_dependent_comparisons():
    with la.options(eager_threshold=0):
        x = la.asarray(np.arange(-3, 4, dtype=np.int8))
        n = np.arange(-3, 4, dtype=np.int8)
        for c in (300, 1, -300, 2, 300):  # out-of-range Python ints compare exactly
            assert_like_numpy(x < c, n < c)
            assert_like_numpy(x == c, n == c)


def test_memoized_typing_tells_scalar_kinds_apart():
    with la.options(eager_threshold=0):
        x32 = la.asarray(np.arange(4, dtype=np.float32))
        n32 = np.arange(4, dtype=np.float32)
        for c in (1, 1.0, True, np.float32(1), np.float64(1), np.int64(1), 1j):
            assert_like_numpy(x32 + c, n32 + c)
        i = la.asarray(np.arange(4, dtype=np.int16))
        ni = np.arange(4, dtype=np.int16)
        for c in (2, 2.0, True, np.int64(2), np.uint8(2)):
            assert_like_numpy(i * c, ni * c)
        with pytest.raises(OverflowError):
            i + 10**6  # a Python int out of range for int16: NumPy's error, not a cached plan


def test_memoized_constants_keep_signed_zeros_and_shapes():
    with la.options(eager_threshold=0):
        for shape in ((3,), (2, 2), (5,)):
            x = la.asarray(np.ones(shape))
            for c in (0.0, -0.0):
                got = np.asarray(x * c)
                assert got.shape == shape
                np.testing.assert_array_equal(np.signbit(got), np.signbit(np.ones(shape) * c))


# ---- views -----------------------------------------------------------------------------


def test_view_nodes_are_memoized_per_version():
    with la.options(eager_threshold=0):
        a = la.asarray(np.arange(10.0)) + 0
        v = a[2:8]
        assert v._node is v._node  # built once for this version of the storage
        first = v._node
        w = a[:4]
        w[3] = -1.0  # a write through another view: a new version
        assert v._node is not first
        np.testing.assert_array_equal(np.asarray(v), [2, -1, 4, 5, 6, 7])
        a[7] = 70.0
        np.testing.assert_array_equal(np.asarray(v), [2, -1, 4, 5, 6, 70])


# ---- launches --------------------------------------------------------------------------


def _stencil(xp, A):
    return 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])


def test_stencil_loads_are_flat_windows():
    A = np.random.default_rng(0).random((40, 50))
    with la.options(eager_threshold=0):
        r = _stencil(la, la.asarray(A))
        plan = la.explain(r)
        assert plan.num_kernels == 1
        assert "np.uint64(i0) * f0_0 + np.uint64(i1)" in plan.kernels[0].source
        assert_like_numpy(r, _stencil(np, A))


@pytest.mark.parametrize("make", [
    lambda A: A[::-1, 1:-1] + A[:, :-2],             # a negative stride: not flattened
    lambda A: A[1:, ::2] * 2 + A[:-1, 1::2],          # an inner stride of 2: not flattened
    lambda A: (A[1:-1, 1:-1] * A[2:, 2:]).sum(axis=1),  # a reduction over windows
    lambda A: (A[1:-1, 1:-1] - A[:-2, :-2]).max(axis=0),
    lambda A: A.reshape(4, 10, 12)[:, 1:, 2:] + 1,    # three dims
    lambda A: A[1:-1, 1:-1].T + A[2:, 2:].T,          # transposed windows
])
def test_strided_loads_match_numpy(make):
    A = np.random.default_rng(1).random((20, 24))
    with la.options(eager_threshold=0):
        assert_like_numpy(make(la.asarray(A)), make(A))


def test_prepared_launch_rebuilds_views_of_new_operands():
    """The second evaluation with the same layouts skips planning: its loads are views of
    the new operands, never of the first call's."""
    rng = np.random.default_rng(2)
    with la.options(eager_threshold=0):
        outs = []
        for _ in range(3):
            A = rng.random((30, 30))
            la.reset_stats()
            outs.append((np.asarray(_stencil(la, la.asarray(A))), _stencil(np, A)))
        info = la.cache_info()
        assert info["compiles"] == 0 and info["hits"] == 1
    for got, want in outs:
        np.testing.assert_allclose(got, want, rtol=1e-15)


_DTYPE_CALLS = [
    lambda xp, a, i: xp.sin(a, dtype=np.float32),
    lambda xp, a, i: xp.sin(i, dtype=np.float32),
    lambda xp, a, i: xp.sqrt(i, dtype=np.float16),
    lambda xp, a, i: xp.add(a, a, dtype=np.int32),      # float64 -> int32: same_kind refuses
    lambda xp, a, i: xp.add(i, 1.5, dtype=np.float32),
    lambda xp, a, i: xp.multiply(i, i, dtype=np.int8),
    lambda xp, a, i: xp.less(a, a, dtype=np.float32),  # no such loop
    lambda xp, a, i: xp.less(a, a, dtype=bool),
    lambda xp, a, i: xp.sin(a, dtype=np.int64),
]


@pytest.mark.parametrize("threshold", [None, 0], ids=["default-tiers", "compiled"])
@pytest.mark.parametrize("call", _DTYPE_CALLS)
def test_ufunc_dtype_argument_picks_the_loop_as_numpy(call, threshold):
    """`dtype=` fixes the loop's output type, and the loop is chosen for it (NumPy's
    signature), on every tier."""
    a, i = np.arange(1, 5.0), np.arange(4)
    try:
        want = call(np, a, i)
    except TypeError as exc:
        with la.options(eager_threshold=32768 if threshold is None else threshold):
            with pytest.raises(type(exc)):
                np.asarray(call(la, la.asarray(a), la.asarray(i)))
        return
    with la.options(eager_threshold=32768 if threshold is None else threshold):
        assert_like_numpy(call(la, la.asarray(a), la.asarray(i)), want)


@pytest.mark.parametrize("inplace", [True, False])
def test_write_kernels_store_into_a_flat_window(inplace):
    """A 2-d region write (the in-place Jacobi step) stores through unsigned flat indices,
    in place when the old version is dead, into a copy when something still reads it."""
    G = np.zeros((12, 14))
    G[0] = 1.0
    with la.options(eager_threshold=0):
        g = la.asarray(G) + 0
        keep = None if inplace else g + 0  # a pending reader of the old version
        g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        plan = la.explain(g)
        assert any("fo_0" in k.source and "out0[np.uint64(i0) * fo_0" in k.source
                   for k in plan.kernels)
        want = G.copy()
        want[1:-1, 1:-1] = 0.25 * (G[:-2, 1:-1] + G[2:, 1:-1] + G[1:-1, :-2] + G[1:-1, 2:])
        assert_like_numpy(g, want)
        if keep is not None:
            assert_like_numpy(keep, G)


def test_write_launches_planned_once_per_layout_stay_correct():
    """A loop writing the same region each step reuses the first step's launch plan (views
    rebuilt from each step's operands); two grids of one layout never mix."""
    rng = np.random.default_rng(3)
    grids = [rng.random((16, 18)) for _ in range(2)]

    def steps(xp, g, n):
        for _ in range(n):
            g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        return g

    with la.options(eager_threshold=0):
        for G in grids:
            want = steps(np, G.copy(), 5)
            got = steps(la, la.asarray(G), 5)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)


_CLIP_BOUNDS = [
    (np.array([0.1, 0.2, 0.3, 0.4, 0.5]), 0.6),      # NumPy array bounds
    (0.2, np.array([0.5, 0.6, 0.7, 0.8, 0.9])),
    (np.array([[0.1], [0.3]]), 0.7),                  # a bound that broadcasts the result up
    (None, np.float32(0.5)),
    (np.array(0.25), None),
]


@pytest.mark.parametrize("threshold", [None, 0], ids=["default-tiers", "compiled"])
@pytest.mark.parametrize("lo, hi", _CLIP_BOUNDS)
@pytest.mark.parametrize("lazy_bounds", [False, True])
def test_clip_with_array_bounds(lo, hi, lazy_bounds, threshold):
    x = np.linspace(0, 1, 5)
    want = np.clip(x, lo, hi)
    wrap = (lambda b: la.asarray(b) if isinstance(b, np.ndarray) else b) if lazy_bounds \
        else (lambda b: b)
    with la.options(eager_threshold=32768 if threshold is None else threshold):
        assert_like_numpy(la.clip(la.asarray(x), wrap(lo), wrap(hi)), want)
        assert_like_numpy(la.asarray(x).clip(wrap(lo), wrap(hi)), want)


def _paused_launch():
    """A stand-in prepared launch for `dispatch.replay_dispatcher`: its two ways are names."""
    return types.SimpleNamespace(near_blas=False, kernel="parallel", one="one",
                                 paused=[math.inf, math.inf, 0])


def _picks_after_pauses(p, one: float, parallel: float) -> list[str]:
    """The ways 3 * EXPLORE_EVERY launches of `p`, each after a pause, take, where each
    way's launch takes the given seconds."""
    from lazyarray.runtime import dispatch

    picks = []
    for _ in range(3 * dispatch.EXPLORE_EVERY):
        way, t0 = dispatch.replay_dispatcher(p)
        assert t0 is not None
        picks.append(way)
        p.paused[way == "one"] = one if way == "one" else parallel
    return picks


def test_replay_after_a_pause_takes_the_way_that_was_faster(monkeypatch):
    """A replay of a parallel launch right after another parallel launch runs in parallel.
    After a pause (PAUSE_S: the OpenMP workers may sleep) it runs in parallel the first
    time, on one thread the next, then the way whose last time after a pause was shorter,
    the other way again every EXPLORE_EVERY-th time."""
    from lazyarray.runtime import dispatch

    p = _paused_launch()
    monkeypatch.setattr(dispatch, "_workers_done", math.inf)  # (just now, and then some)
    assert dispatch.replay_dispatcher(p) == ("parallel", None)
    monkeypatch.setattr(dispatch, "_workers_done", -math.inf)
    picks = _picks_after_pauses(p, one=1e-4, parallel=2e-4)  # one thread: faster
    assert picks[:2] == ["parallel", "one"]
    assert [k + 1 for k, w in enumerate(picks) if w == "parallel"] == [
        1, *range(dispatch.EXPLORE_EVERY, 3 * dispatch.EXPLORE_EVERY + 1,
                  dispatch.EXPLORE_EVERY)]


def test_long_replay_after_a_pause_stays_parallel(monkeypatch):
    """A launch that took PAUSE_LONG_S or more in parallel after a pause runs in parallel
    after every later pause: waking the workers is a small part of it (W2 at 1e7, 4.8 ms in
    parallel, ran on one thread every 16th launch, 5.3-5.5 ms, or for runs of launches on a
    noisy machine). When a parallel launch after a pause is short again, one thread is
    tried again."""
    from lazyarray.runtime import dispatch

    p = _paused_launch()
    monkeypatch.setattr(dispatch, "_workers_done", -math.inf)
    picks = _picks_after_pauses(p, one=dispatch.PAUSE_LONG_S * 1.5,
                                parallel=dispatch.PAUSE_LONG_S)
    assert picks == ["parallel"] * len(picks) and p.paused[1] == math.inf
    p.paused[0] = dispatch.PAUSE_LONG_S / 2
    assert dispatch.replay_dispatcher(p)[0] == "one"


def test_replays_after_pauses_match_numpy_on_one_thread_and_in_parallel(monkeypatch):
    """Every replay counted as after a pause: the kernel runs both ways (timed), with
    NumPy's values each time (under Numba's workqueue layer, which has no one-thread run,
    always in parallel)."""
    from lazyarray.backends import numba_cpu
    from lazyarray.runtime import blas, dispatch, executor, launches

    monkeypatch.setattr(dispatch, "PAUSE_S", 0.0)
    monkeypatch.setattr(dispatch, "PAUSE_LONG_S", math.inf)  # (a slow machine: still both)
    monkeypatch.setattr(blas, "SPIN_S", 0.0)  # (no product's workers spinning either)
    x = np.random.default_rng(3).standard_normal(dispatch.PARALLEL_MIN * 2)
    lx = la.asarray(x)
    with fresh_launches(), la.options(eager_threshold=0):
        for _ in range(6):
            assert np.array_equal(np.asarray(la.sqrt(lx * lx) * 2.0 - 1.0),
                                  np.sqrt(x * x) * 2.0 - 1.0)
        (p,) = [p for layouts in launches.prepared.values() for p in layouts.values()]
        if numba_cpu._thread_controls() is None:
            assert p.one is None and p.paused[2] == 0
        else:
            assert p.paused[2] == 5  # the replays
            assert 0 < p.paused[0] < math.inf and 0 < p.paused[1] < math.inf


def _reduction_input(dtype: str, run: int, n: int) -> np.ndarray:
    """Run `run`'s values: new ones each time, a NaN in the third float run, an inf in the
    fourth (a stale partial from the run before would change the answer)."""
    rng = np.random.default_rng(run)
    if dtype == "bool":
        return rng.random(n) < (0.0, 1.0, 0.5, 0.999, 0.001)[run]
    if dtype in ("int64", "uint64"):
        return rng.integers(0, 2**40, n).astype(dtype)
    x = (rng.standard_normal(n) * 10.0 ** run).astype(dtype)
    if run == 2:
        x[n // 3] = np.nan
    if run == 3:
        x[-1] = np.inf
    return x


@pytest.mark.parametrize("dtype,op", [("float64", "sum"), ("float64", "max"),
                                      ("float32", "sum"), ("float64", "min"),
                                      ("int64", "sum"), ("uint64", "sum"),
                                      ("bool", "any"), ("bool", "all")])
def test_replayed_reductions_refill_the_partials_they_keep(dtype, op):
    """A replayed reduction keeps its small partials buffers for its next launch and fills
    them with the start value again: every run on new values (NaN, inf) gives NumPy's answer,
    and no compile after the first launch (the start values a replay passes as Python numbers
    type as the NumPy scalars did; a float32 one stays a NumPy scalar)."""
    from lazyarray.runtime import dispatch, executor, launches

    n = dispatch.PARALLEL_MIN * 2
    with fresh_launches(), la.options(eager_threshold=0):
        spare = before = None
        for run in range(5):
            x = _reduction_input(dtype, run, n)
            assert_like_numpy(getattr(la, op)(la.asarray(x)), getattr(np, op)(x))
            (p,) = [p for layouts in launches.prepared.values() for p in layouts.values()]
            assert p.partials and p.keep and len(p.spare) == (run > 0)  # (the first: planned)
            if run > 1:
                assert all(a is b for a, b in zip(p.spare[0], spare, strict=True))
            spare = p.spare[0] if run else None
            before = la.cache_info()["compiles"] if before is None else before
        assert la.cache_info()["compiles"] == before
        assert not any(type(v) in (np.float64, np.int64, np.bool_) for v in p.tail)


@pytest.mark.parametrize("program", [
    lambda xp, x: x - x.mean(),
    lambda xp, x: x.std(),
    lambda xp, x: xp.exp(x - x.max()) / xp.exp(x - x.max()).sum(),
    lambda xp, x: (x - x.min()) / (x.max() - x.min()),
    lambda xp, x: x[::2] * x[3]])
def test_replays_read_the_scalars_other_kernels_computed(program):
    """A fusion that reads a value an earlier kernel of the evaluation computed (a mean, a
    maximum) or an element of an operand is replayed as a prepared launch that reads that
    value again at each launch: new values every run, NumPy's answers, no compile after the
    first evaluation and no launch planned afresh."""
    from lazyarray.runtime import dispatch, executor, launches

    n = dispatch.PARALLEL_MIN * 2
    with fresh_launches(), la.options(eager_threshold=0):
        before = None
        for run in range(5):
            x = np.random.default_rng(run).standard_normal(n) * (run + 1) + run
            got, want = program(la, la.asarray(x)), program(np, x)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
            if run == 1:
                before = (la.cache_info()["compiles"], la.cache_info()["misses"])
        assert (la.cache_info()["compiles"], la.cache_info()["misses"]) == before
        reads = [p.reads for layouts in launches.prepared.values() for p in layouts.values()]
        assert any(reads)
