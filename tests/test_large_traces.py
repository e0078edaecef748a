"""Large traces (lazyarray/trace_tier.py, "large traces"): elementwise chains on large computed
float64 arrays and slicing views of them are recorded like tiny ones; the first evaluation of
a structure runs the lazy tier on the graph the trace stands for, and later evaluations replay
its fusion without building, lowering or planning a graph. Differential against NumPy on both
paths, with NumPy's view, mutation and warning semantics."""

import warnings
from collections import OrderedDict
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyarray as la
from lazyarray import engine
from lazyarray import trace_tier as trace
from lazyarray.runtime import executor
from tests.helpers import fresh_starts

pytestmark = pytest.mark.usefixtures(fresh_starts.__name__)

N = 40_000  # above the eager tier's 32,768 elements: a large trace
rng = np.random.default_rng(11)
X = rng.uniform(-1, 2, N)
G = rng.uniform(-1, 2, (210, 230))


def w8(xp, x):
    return xp.where(x > 0.5, x * 2, xp.clip(x, 0.1, 0.3))


def jacobi(xp, a):
    return 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])


def no_graph():
    """Fails the test if an evaluation builds and lowers a graph (a replay does neither)."""
    return mock.patch.object(engine, "_materialize", side_effect=AssertionError("graph built"))


def assert_same(got, want, rtol=0.0):
    """Values, dtype and shape as NumPy's: exact, or within `rtol` (compiled math functions
    may differ from NumPy's in the last bit, docs/semantics.md)."""
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


@pytest.mark.parametrize("body, data, rtol", [
    (w8, X, 0), (jacobi, G, 1e-15), (lambda xp, x: x > 0.5, X, 0),
    (lambda xp, x: xp.sin(x) * 3.0 - x / 7, X, 1e-15),
    (lambda xp, x: xp.maximum(x * 2.0 + 1.0, 0), X, 0),
    (lambda xp, x: xp.minimum(0.5, xp.subtract(1, x)), X, 0)],
    ids=["where_clip", "stencil", "compare", "sin", "relu_call", "reflected_calls"])
def test_recorded_then_replayed(body, data, rtol):
    x = la.asarray(data)
    y = body(la, x)
    assert y._tr is not None  # recorded, nothing built
    assert_same(y, body(np, data), rtol)  # the first evaluation: the lazy tier on its graph
    y = body(la, x)
    before = la.cache_info()
    walk = mock.patch.object(executor, "execute", side_effect=AssertionError("module walked"))
    with no_graph(), walk:
        got = np.asarray(y)  # the replay: one fusion of the parameters, run directly
    after = la.cache_info()
    assert after["materializations"] == before["materializations"] + 1
    assert after["trace_replays"] == before["trace_replays"] + 1
    assert after["kernels_launched"] == before["kernels_launched"] + 1
    assert_same(got, body(np, data), rtol)
    report = la.explain()  # the replay's report (built when asked): one kernel, a hit
    (k,) = report.kernels
    assert k.kind == "loop" and k.status == "hit" and k.source
    assert "got = np.asarray(y)" in report.forced_at and not report.planned
    assert report.seconds > 0 and report.num_kernels == 1
    assert la.explain() is report


def test_one_fusion_and_one_parameter_for_a_stencil():
    a = la.asarray(G)
    text = la.explain(jacobi(la, a)).hlo_after
    assert text.count("parameter(0)") == 2 and "parameter(1)" not in text  # one buffer
    assert text.count("slice(") == 5 and text.count("fusion(") == 1


def test_new_inputs_and_scalars_replay_the_right_program():
    for k in range(3):
        data = rng.uniform(-1, 2, N)
        x = la.asarray(data)
        for c in (2.0, 3.0, 2.0):
            assert_same(x * c + 1.0, data * c + 1.0)


def test_slices_are_part_of_the_structure():
    a = la.asarray(G)
    programs = [lambda xp, a: a[1:-1, 1:-1] + a[2:, 1:-1], lambda xp, a: a[1:-1, 1:-1] + a[:-2, 1:-1],
                lambda xp, a: a[1:-1, 1:-1] + a[1:-1, 2:], lambda xp, a: a[::2, 1:] - a[1::2, :-1]]
    for _ in range(2):
        for p in programs:
            assert_same(p(la, a), p(np, G))


def test_a_write_after_recording_does_not_reach_the_trace():
    data = X.copy()
    x = la.asarray(data)
    for _ in range(2):  # the second time, a replay
        y = x * 2.0 + 1.0
        z = x[10:] - 1.0
        x[:100] = 100.0  # NumPy computed y and z before this write
        x += 1.0
        want = data * 2.0 + 1.0
        assert_same(y, want)
        assert_same(z, data[10:] - 1.0)
        data[:100] = 100.0
        data += 1.0
        assert_same(x, data)


def test_a_traced_leaf_is_still_written_in_place():
    """The leaf trace a storage remembers (array._large_leaf) is dropped at a write: it
    refers to the old version, which the write would then have to copy."""
    data = X.copy()
    x = la.asarray(data)
    for _ in range(2):
        assert_same(x * 2.0, data * 2.0)  # (x's storage remembers its leaf trace)
        before = la.cache_info()
        x[:100] = 100.0
        data[:100] = 100.0
        assert_same(x, data)
        after = la.cache_info()
        assert after["updates_in_place"] == before["updates_in_place"] + 1
        assert after["updates_copied"] == before["updates_copied"]
        assert_same(x * 2.0, data * 2.0)  # the new version's leaf


@pytest.mark.parametrize("body", [lambda a: -(-(-(-a))), lambda a: -(-a)], ids=["neg_neg_twice", "neg_neg"])
def test_a_program_that_optimizes_to_its_leaf_replays(body):
    """The optimized module is the parameter itself (no kernel): replayed, its value is the
    leaf's, and writing into the result leaves the input as it was."""
    data = X.copy()
    x = la.asarray(data)
    for _ in range(3):  # recorded, then replayed
        y = body(x)
        assert_same(y, body(data))
        assert la.explain().num_kernels == 0
    y[:10] = -5.0
    assert_same(x, data)
    assert_same(y[:12], np.concatenate([np.full(10, -5.0), body(data)[10:12]]))


def test_sums_over_every_axis_of_one_structure_at_two_ranks():
    for shape in [(N,), (200, 210), (N,), (200, 210)]:  # `x * 2.0` names both: one memo each
        data = rng.uniform(-1, 2, shape)
        x = la.asarray(data)
        assert_same(la.sum(x * 2.0), np.sum(data * 2.0), 1e-13)
        assert_same((x * 2.0).sum(), (data * 2.0).sum(), 1e-13)


def test_a_large_trace_fuses_with_what_follows():
    x = la.asarray(G)
    y = la.exp(x * 0.5) - 1.0
    s = y.sum(axis=1)  # a reduction of it: the trace becomes its graph, one kernel
    report = la.explain(s)
    assert report.num_kernels == 1
    np.testing.assert_allclose(np.asarray(s), (np.exp(G * 0.5) - 1.0).sum(axis=1), rtol=1e-12)
    t = x * 2.0
    u = t[5:, ::3] + 1.0  # a view of a pending trace
    assert_same(u, (G * 2.0)[5:, ::3] + 1.0)
    v = x * 2.0
    assert_same(v + G[0], G * 2.0 + G[0])  # broadcasting: the lazy tier's


def test_sums_of_large_traces_and_leaves():
    x, g = la.asarray(X), la.asarray(G)
    programs = [lambda xp, x, g: xp.sqrt(xp.sum((x - 0.5) ** 2)),  # W2: one input fusion
                lambda xp, x, g: g.sum(), lambda xp, x, g: xp.sum(g[1:, ::2] * 2.0) / 3.0,
                lambda xp, x, g: xp.sum(x > 0.5), lambda xp, x, g: xp.sum(x, axis=0)]
    for k in range(3):  # recorded, then replayed
        for p in programs:
            got, want = p(la, x, g), p(np, X, G)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    s = la.sqrt(la.sum((x - 0.5) ** 2))
    assert s._tr is not None and s.shape == ()  # one trace: nothing built
    with no_graph():
        np.testing.assert_allclose(float(s), np.sqrt(np.sum((X - 0.5) ** 2)), rtol=1e-13)


def test_leaves_of_other_shapes_are_another_replay():
    """`A[:, :35]` has one shape over bases of 40 and 50 columns: the base's shape is part
    of what a replay is remembered by."""
    for _ in range(2):
        for cols in (40, 50, 40):
            m = rng.uniform(size=(1000, cols))
            a = la.asarray(m)
            assert_same(a[:, :35] * 2.0, m[:, :35] * 2.0)
            np.testing.assert_allclose(float(la.sum(a[:, 5:] + 1.0)), np.sum(m[:, 5:] + 1.0),
                                       rtol=1e-13)


def test_warnings_at_the_forcing_line_on_both_paths():
    z = la.asarray(np.zeros(N))
    with np.errstate(all="warn", under="ignore"):  # NumPy's default
        for _ in range(2):  # recorded, then replayed
            y = 1.0 / z
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                np.asarray(y)
            assert [(w.filename, str(w.message)) for w in got] == [
                (__file__, "divide by zero encountered in divide")]
        y = 1.0 / z
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(np.asarray(y)).all()


def test_the_error_state_at_evaluation_decides():
    z = la.asarray(np.zeros(N))
    np.asarray(1.0 / z + 1.0)
    np.asarray(1.0 / z + 1.0)  # remembered
    y = 1.0 / z + 1.0  # recorded under the default state
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide by zero"):
        np.asarray(y)


def test_warning_as_error_leaves_the_value_computed():
    z = la.asarray(np.zeros(N))
    for _ in range(2):
        with np.errstate(all="warn", under="ignore"):
            y = 1.0 / z
        with np.errstate(all="warn", under="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            with pytest.raises(RuntimeWarning, match="divide by zero"):
                np.asarray(y)
            got = np.asarray(y)  # computed already: no second evaluation, no warning
        assert np.isinf(got).all()


def test_other_options_at_evaluation_are_honoured():
    x = la.asarray(X)
    np.asarray(x * 3.0 - 1.0)
    np.asarray(x * 3.0 - 1.0)
    y = x * 3.0 - 1.0
    before = la.cache_info()["interpreter_runs"]
    with la.options(backend="numpy"):
        assert_same(y, X * 3.0 - 1.0)
    assert la.cache_info()["interpreter_runs"] == before + 1


def test_not_recorded():
    x = la.asarray(X)
    assert (x.astype(np.float32) * 2.0)._tr is None  # float32
    assert (la.asarray(G).T * 2.0)._tr is None  # a view that is not a slice
    assert (x[:100] * 2.0)._tr is None  # a small slice: the eager tier's
    with la.options(trace=False):
        assert (x * 2.0)._tr is None
    assert_same(la.asarray(G).T * 2.0, G.T * 2.0)


def test_a_pending_trace_is_planned_by_explain():
    x = la.asarray(X)
    y = w8(la, x)
    report = la.explain(y)
    assert report.num_kernels == 1 and y._tr is not None  # nothing computed


OPS = [("add", lambda xp, a, b: a + b), ("mul", lambda xp, a, b: a * b),
       ("sub_scalar", lambda xp, a, b: a - 0.25), ("sin", lambda xp, a, b: xp.sin(a)),
       ("max", lambda xp, a, b: xp.maximum(a, b)), ("div", lambda xp, a, b: a / 3.0),
       ("abs", lambda xp, a, b: abs(a)), ("square", lambda xp, a, b: a ** 2),
       ("rowmax", lambda xp, a, b: a - a.max(axis=-1, keepdims=True)),
       ("colmean", lambda xp, a, b: a / (abs(a.mean(axis=0)) + 1.0)),
       ("total", lambda xp, a, b: xp.tanh(a - b.sum() * 1e-4)),
       ("std", lambda xp, a, b: a * b.std(axis=-1, keepdims=True)),
       ("rsub", lambda xp, a, b: 1.5 - a), ("mul_int", lambda xp, a, b: a * 3),
       ("rdiv_int", lambda xp, a, b: 2 / (abs(a) + 1.0)), ("sub", lambda xp, a, b: a - b),
       ("sum_all", lambda xp, a, b: a - (b * 0.5).sum() * 1e-5),
       ("relu", lambda xp, a, b: xp.maximum(a, 0)), ("rfmin", lambda xp, a, b: xp.fmin(0.5, a)),
       ("bias", lambda xp, a, b: a * xp.asarray(VEC[:a.shape[-1]]) + 0.5),  # (tiny but at N)
       ("bias_first", lambda xp, a, b: xp.asarray(VEC[:a.shape[-1]]) - a),
       ("mask", lambda xp, a, b: xp.where((a > 0.5) & ~(b < -0.5), a, b)),
       ("mask_xor", lambda xp, a, b: xp.where(xp.logical_xor(a > b, b > 0), b, a * 0.5))]
VEC = rng.uniform(0.5, 1.5, N)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(OPS))), st.booleans()), min_size=1,
                max_size=5),
       st.sampled_from([(N,), (200, 210), (40, 30, 35)]), st.booleans())
def test_generated_programs_match_numpy(steps, shape, view):
    """Random chains over two large arrays (or slicing views of them), with reductions
    broadcast back, each evaluated twice: on its graph and replayed."""
    a = rng.uniform(-2, 2, shape)
    b = rng.uniform(-2, 2, shape)
    la_a, la_b = la.asarray(a), la.asarray(b)
    if view:  # slicing views of the computed arrays
        a, b, la_a, la_b = a[1:], b[:-1], la_a[1:], la_b[:-1]

    def program(xp, x, y):
        for k, swap in steps:
            x = OPS[k][1](xp, *((y, x) if swap else (x, y)))
        return x

    want = program(np, a, b)
    for _ in range(2):
        got = np.asarray(program(la, la_a, la_b))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# the steps whose values are NumPy's bits (no sum, no transcendental function): a count of
# a comparison of their result is exact
EXACT_OPS = [op for op in OPS if op[0] not in ("sin", "colmean", "total", "std", "sum_all")]
COUNTS = [lambda xp, c, ax, kd: xp.sum(c, axis=ax, keepdims=kd),
          lambda xp, c, ax, kd: xp.count_nonzero(c, axis=ax, keepdims=kd),
          lambda xp, c, ax, kd: xp.any(c, axis=ax, keepdims=kd),
          lambda xp, c, ax, kd: c.all(axis=ax, keepdims=kd)]


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(range(len(EXACT_OPS))), st.booleans()), min_size=1,
                max_size=4),
       st.sampled_from([(N,), (200, 210), (40, 30, 35)]), st.sampled_from(range(len(COUNTS))),
       st.sampled_from([None, 0, -1]), st.booleans(), st.sampled_from([-1.0, 0.0, 0.5, 3.0]),
       st.sampled_from(range(3)))
def test_generated_counts_match_numpy(steps, shape, count, axis, keepdims, t, mask):
    """Random exact chains over two large arrays ending in a comparison (or a mask made of
    comparisons) and its count, any or all over an axis, evaluated on the graph then
    replayed: NumPy's values, dtype and shape exactly."""
    a, b = rng.uniform(-2, 2, shape), rng.uniform(-2, 2, shape)
    a[..., ::5] = np.nan  # (a NaN compares false)

    def program(xp, x, y):
        for k, swap in steps:
            x = EXACT_OPS[k][1](xp, *((y, x) if swap else (x, y)))
        c = (x > t, (x > t) | (y != y), ~(x > t) ^ (y > 0))[mask]
        return COUNTS[count](xp, c, axis, keepdims)

    want = np.asarray(program(np, a, b))
    for _ in range(2):
        got = np.asarray(program(la, la.asarray(a), la.asarray(b)))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_jit_on_large_arrays():
    @la.jit
    def f(a, b):
        return la.where(a > 0.5, a * 2.0, b[1:] - 1.0)

    for _ in range(3):  # traced, then replayed on new inputs
        a, b = rng.uniform(size=N), rng.uniform(size=N + 1)
        assert_same(f(a, b), np.where(a > 0.5, a * 2.0, b[1:] - 1.0))


def test_sliding_windows_stay_correct_past_the_view_budget(monkeypatch):
    monkeypatch.setattr(trace, "MAX_VIEWS", len(trace._VIEWS) + 3)
    x = la.asarray(X)
    for k in range(6):  # three new windows on the trace tier, three on the lazy tier
        y = x[k + 1000:k + 34000] * 2.0
        assert (y._tr is not None) == (k < 3)
        assert_same(y, X[k + 1000:k + 34000] * 2.0)


def softmax(xp, x):
    e = xp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def standardize(xp, x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def layer_norm(xp, x):
    m = x.mean(axis=-1, keepdims=True)
    return (x - m) / xp.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("body, kernels", [(softmax, 1), (standardize, 2), (layer_norm, 1)],
                         ids=["softmax", "standardize", "layer_norm"])
def test_reductions_and_broadcasting_replay(body, kernels):
    """Reductions over some axes broadcast back: one trace, then one replayed module (W3's
    row kernel, W6's column statistics: mean and std in one moments kernel, then the
    elementwise one)."""
    x = la.asarray(G)
    y = body(la, x)
    assert y._tr is not None
    assert la.explain(y).num_kernels == kernels
    # (x - mean cancels: an absolute tolerance for the summation order, values are O(1))
    np.testing.assert_allclose(np.asarray(y), body(np, G), rtol=1e-12, atol=1e-12)
    y = body(la, x)
    before = la.cache_info()["kernels_launched"]
    walk = mock.patch.object(executor, "execute", side_effect=AssertionError("module walked"))
    with no_graph(), walk:  # each fusion's prepared launch (executor.execute_lean)
        np.testing.assert_allclose(np.asarray(y), body(np, G), rtol=1e-12, atol=1e-12)
    assert la.cache_info()["kernels_launched"] == before + kernels
    report = la.explain()  # built when asked: each kernel a hit, at this test's line
    assert [k.status for k in report.kernels] == ["hit"] * kernels
    assert [k.name for k in report.kernels] == [f"fusion.{k}" for k in range(kernels)]
    assert "np.asarray(y)" in report.forced_at and report.seconds > 0


def test_replays_of_other_modules_walk_them(monkeypatch):
    """A module the lean path does not take (here: none is, by patching) is executed in
    order; values, the report and warnings as on the lean path."""
    monkeypatch.setattr(executor, "_LEAN_OPS", frozenset())
    monkeypatch.setattr(executor, "_lean", {})
    x = la.asarray(G)
    for _ in range(2):
        y = standardize(la, x)
        np.testing.assert_allclose(np.asarray(y), standardize(np, G), rtol=1e-12, atol=1e-12)
    y = standardize(la, x)
    with no_graph():  # a replay, walked
        np.testing.assert_allclose(np.asarray(y), standardize(np, G), rtol=1e-12, atol=1e-12)
    # (mean and std: one moments kernel)
    assert [k.status for k in la.explain().kernels] == ["hit"] * 2
    z = la.asarray(np.zeros(N))
    with np.errstate(all="warn", under="ignore"):
        for _ in range(3):
            y = (z - z.mean()) / z.std()  # 0 / 0
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                np.asarray(y)
            assert [(w.filename, str(w.message)) for w in got] == [
                (__file__, "invalid value encountered in divide")]


def test_a_flagged_replay_of_several_kernels_warns_at_the_forcing_line():
    z = np.zeros((210, 230))
    z[3, 4] = 1.0
    x = la.asarray(z)
    with np.errstate(all="warn", under="ignore"):
        for _ in range(3):  # recorded, then replayed (two kernels)
            y = (x - x.mean(axis=0)) / x.std(axis=0)  # columns of zeros: 0 / 0
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                value = np.asarray(y)
            assert [(w.filename, str(w.message)) for w in got] == [
                (__file__, "invalid value encountered in divide")]
            with np.errstate(all="ignore"):
                want = (z - z.mean(axis=0)) / z.std(axis=0)
            # (the same NaNs; the std from one read of x rounds as another summation order)
            np.testing.assert_allclose(value, want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("call", [
    lambda xp, a: a.sum(axis=(0, 2)), lambda xp, a: a.max(axis=-1, keepdims=True),
    lambda xp, a: xp.min(a, axis=1), lambda xp, a: a.mean(axis=(-1, 0)),
    lambda xp, a: a.var(axis=1, ddof=1), lambda xp, a: a.std(keepdims=True),
    lambda xp, a: a.std(axis=2, ddof=1.5), lambda xp, a: a.mean(axis=0, keepdims=True) - a,
    lambda xp, a: xp.sum(a[:, 1:] * 2.0, axis=1) / a[:, 0, :].max(),
    lambda xp, a: xp.sum(a.sum(), axis=0), lambda xp, a: xp.max(a.max() * 2.0, axis=-1)])
def test_reductions_of_large_traces_match_numpy(call):
    data = rng.uniform(-2, 2, (30, 40, 50))
    a = la.asarray(data)
    for _ in range(2):
        got, want = call(la, a), call(np, data)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


COMPARED = rng.uniform(-2, 2, (30, 40, 50))
COMPARED[::3, 1, ::7] = np.nan


@pytest.mark.parametrize("call", [
    lambda xp, a: xp.count_nonzero(a > 0.5), lambda xp, a: (a <= 0.0).sum(),
    lambda xp, a: xp.sum(a != a, axis=(0, -1)), lambda xp, a: (a > 1.0).sum(axis=1, keepdims=True),
    lambda xp, a: xp.count_nonzero(a < -1.5, axis=-1), lambda xp, a: (a == a).all(),
    lambda xp, a: xp.any(a > 1.99, axis=0), lambda xp, a: (a * 2.0 >= 3.9).any(),
    lambda xp, a: xp.all(a[:, 1:] > -3.0, axis=(1, 2), keepdims=True),
    lambda xp, a: xp.count_nonzero((a > 0.2) & (a < 0.4)),
    lambda xp, a: xp.logical_or(a < -1.0, a != a).sum(axis=-1),
    lambda xp, a: (~(a > 0.0) ^ (a[::-1] > 0.0)).any(axis=1),
    lambda xp, a: (a > 0.5).any(axis=0) & (a < 0.0).all(axis=0),
    lambda xp, a: ((a > 0.5).any(axis=2, keepdims=True) | (a > 1.9)).sum(axis=1),
    lambda xp, a: ((a[1:] > 0.0) & (a[:-1] <= 0.0)).sum()],
    ids=["count_nonzero", "sum", "sum_nan_axes", "sum_keepdims", "count_axis", "all",
         "any_axis", "any_chain", "all_view_keepdims", "mask_count", "logical_or_axis",
         "xor_invert_any", "mask_of_reductions", "mask_broadcast", "sign_changes"])
def test_counts_any_and_all_of_comparisons_replay(call):
    """np.sum, count_nonzero, any and all of a large comparison trace are traces too (an
    np.intp count, bool any/all): recorded, then replayed without a graph, NumPy's values,
    dtypes and shapes (NaN compares false; `a != a` counts the NaNs)."""
    a = la.asarray(COMPARED)
    want = call(np, COMPARED)
    got = call(la, a)
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    assert_same(got, np.asarray(want))
    got = call(la, a)
    with no_graph():
        assert_same(got, np.asarray(want))


def test_a_count_is_one_kernel_and_stays_a_count():
    """(x > 0.5).sum() is one fusion of the comparison and an integer sum; an operation on
    the count (another kind: not recorded) computes it first, as NumPy's scalar would be."""
    x = la.asarray(X)
    c = la.count_nonzero(x > 0.5)
    assert c._tr is not None and c.dtype == np.intp
    report = la.explain(c)
    assert report.num_kernels == 1 and "s64[] reduce(" in report.hlo_after
    assert np.asarray(c) == np.count_nonzero(X > 0.5)
    frac = (x > 0.5).sum() / N
    assert_same(frac, np.asarray((X > 0.5).sum() / N))
    mixed = la.where(x > 0.0, x, 1.0).sum() + (x > 0.0).sum()  # (two kinds: the lazy tier's)
    assert_same(mixed, np.asarray(np.where(X > 0.0, X, 1.0).sum() + (X > 0.0).sum()), 1e-15)
    assert la.any(x > 10.0).dtype == np.bool_ and not bool(la.any(x > 10.0))
    band = la.count_nonzero((x > 0.2) & ~(x > 0.4))  # a mask of comparisons: one fusion too
    assert band._tr is not None and la.explain(band).num_kernels == 1
    assert np.asarray(band) == np.count_nonzero((X > 0.2) & ~(X > 0.4))


STACK = rng.uniform(-2, 2, (4096, 4, 4))  # a large trace reduced to a tiny shape
T4, BIAS, COL, ROW = (rng.uniform(-2, 2, s) for s in ((4, 4), 230, (210, 1), (1, 230)))
# name: (program, recorded as one large trace; None: either, as a tiny operation on `t` is a
# pending program or a computed array depending on what the process ran before, `_NO_START`)
MIXED = {
    "tiny_first": (lambda xp, a, g, t, b, c, r: t + a.sum(axis=0), True),
    "tiny_program_first": (lambda xp, a, g, t, b, c, r: xp.sin(t) - a.max(axis=0), None),
    "tiny_first_reduced": (lambda xp, a, g, t, b, c, r: (t * 2.0 + a.sum(axis=0)).sum(axis=1),
                           None),
    "tiny_first_subtracted": (lambda xp, a, g, t, b, c, r: (t - a.sum(axis=0)).sum(axis=1),
                              False),
    "large_first_reduced": (lambda xp, a, g, t, b, c, r: (a.sum(axis=0) + t).sum(axis=0), True),
    "large_first_kept": (lambda xp, a, g, t, b, c, r:
                         (a.max(axis=0) * t).max(axis=1, keepdims=True), True),
    "tiny_program_second": (lambda xp, a, g, t, b, c, r: a.sum(axis=0) + t * 2.0, None),
    "where_large_condition": (lambda xp, a, g, t, b, c, r:
                              xp.where(a.max(axis=0) > 1.9, t, 0.0), True),
    "where_tiny_condition": (lambda xp, a, g, t, b, c, r:
                             xp.where(t > 0.5, a.max(axis=0), t), False),
    "bias_relu": (lambda xp, a, g, t, b, c, r: xp.maximum(g + b, 0), True),
    "column_and_row": (lambda xp, a, g, t, b, c, r: g * c - r, True),
    "bias_reduced": (lambda xp, a, g, t, b, c, r: (g - b).sum(axis=0) + b, True),
    "bias_view": (lambda xp, a, g, t, b, c, r: g[1:] * b, True),
    "bias_first": (lambda xp, a, g, t, b, c, r: b + g, True),  # (added the other way round)
    "gamma_first": (lambda xp, a, g, t, b, c, r: b * (g - 0.5) + r, True),
    "tiny_first_not_commutative": (lambda xp, a, g, t, b, c, r: b - g, False),
    "layer_norm": (lambda xp, a, g, t, b, c, r: (g - g.mean(axis=-1, keepdims=True))
                   / g.std(axis=-1, keepdims=True) * b + r, True),
}


@pytest.mark.parametrize("name", list(MIXED))
def test_large_traces_with_tiny_operands(name):
    """A large trace and a tiny computed array (or a tiny pending program), of the same shape
    (a reduction's result) or broadcasting (a bias, a column, layer norm's gamma and beta),
    in either order: NumPy's values, dtype and shape (a tiny trace first and a large one of
    its shape used to fail at evaluation). A large trace takes a tiny computed array as its
    whole array and stays one trace, replayed without a graph (the array first: an addition
    or a multiplication, recorded the other way round); the other mixes go to the lazy
    tier."""
    program, recorded = MIXED[name]
    args = (STACK, G, T4, BIAS, COL, ROW)
    lazy = [la.asarray(v) for v in args]
    want = program(np, *args)
    for k in range(3):
        got = program(la, *lazy)
        assert recorded is None or (got._tr is not None) is recorded
        assert got.dtype == want.dtype and got.shape == want.shape
        if recorded and k == 2:
            with no_graph():
                value = np.asarray(got)
        else:
            value = np.asarray(got)
        np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-11)


def test_a_write_into_a_tiny_operand_after_recording_does_not_reach_the_trace():
    """`g + b` records `b` (tiny, computed) as a whole leaf; writing into `b` before the
    value is needed leaves the sum as NumPy computed it at the `+`, and `b` as written."""
    g = la.asarray(G)
    for _ in range(3):  # recorded and evaluated, then replayed
        b = la.asarray(BIAS)
        s = g + b
        assert s._tr is not None
        b[0] = 100.0
        b += 1.0
        np.testing.assert_array_equal(np.asarray(s), G + BIAS)
        np.testing.assert_array_equal(np.asarray(b), np.r_[101.0, BIAS[1:] + 1.0])


def test_reduction_and_broadcast_errors_at_the_call():
    a = la.asarray(np.zeros((0, 40_000)))
    b = la.asarray(G)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        a.max(axis=0)
    with pytest.raises(np.exceptions.AxisError):
        b.sum(axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        b.max(axis=(1, -1))
    with pytest.raises(ValueError, match="could not be broadcast"):
        b * 2.0 + la.asarray(np.zeros((230, 210)))
    assert np.asarray(a.sum(axis=0)).shape == (40_000,)


def test_degrees_of_freedom_warn_as_numpy():
    data = rng.uniform(size=(2, 40_000))
    a = la.asarray(data)
    with np.errstate(all="warn"), warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        v = np.asarray(a.var(axis=0, ddof=2))
        want = np.var(data, axis=0, ddof=2)
    assert np.isinf(v).all() and np.isinf(want).all()
    assert got  # NumPy's warning (the lazy tier's path, not the trace's)


def test_signed_zero_and_nan_scalars_are_other_programs():
    """0.0 == -0.0 as dict keys, but x * -0.0 flips signs: a replay is remembered by the
    scalars' signs too."""
    data = X - 0.5
    x = la.asarray(data)
    for _ in range(2):
        for c in (0.0, -0.0, np.nan, 2.0):
            got = np.asarray(x * c - 0.0)
            want = data * c - 0.0
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_a_tiny_trace_computed_under_a_lower_threshold():
    small = rng.uniform(size=(20, 30))
    s = la.asarray(small)
    for _ in range(3):
        y = s * 2.0 + 1.0  # recorded tiny (flat leaves), computed by the lazy tier
        with la.options(eager_threshold=0):
            assert_same(y, small * 2.0 + 1.0)


def test_one_array_twice_is_another_program_than_two():
    """`x * x` lowers to one parameter: a later `x * y` must not replay it."""
    other = rng.uniform(size=N)
    x, y = la.asarray(X), la.asarray(other)
    for _ in range(2):
        assert_same(x * x, X * X)
        assert_same(x * y, X * other)
        assert_same(y * x, other * X)
        assert_same(la.where(x > 0.5, y * 2.0, x * 2.0), np.where(X > 0.5, other * 2.0, X * 2.0))
        assert_same(la.where(x > 0.5, x * 2.0, x * 2.0), np.where(X > 0.5, X * 2.0, X * 2.0))


def _pair_products(xp, d, pairs):
    return [float(xp.sum(d[:, i] * d[:, j]) / (d.shape[0] - 1)) for i, j in pairs]


def test_a_loop_over_column_pairs_replays_each_pair_on_its_next_pass(monkeypatch):
    """Each pair of columns is a structure of its own (the views are part of it); a second
    pass over the pairs replays every one, and a table over its bound forgets the least
    recently used structure only (a cleared table made each pass evaluate afresh)."""
    data = rng.uniform(-1, 1, (N, 5))
    d = la.asarray(data)
    pairs = [(i, j) for i in range(4) for j in range(i, 4)]  # 10 structures
    default = trace.MAX_REPLAYS
    monkeypatch.setattr(trace, "MAX_REPLAYS", 6)
    trace._REPLAYS.clear()
    want = _pair_products(np, data, pairs)
    np.testing.assert_allclose(_pair_products(la, d, pairs), want, rtol=1e-12)
    assert len(trace._REPLAYS) == 6  # the last six pairs' structures
    before = la.cache_info()["trace_replays"]
    np.testing.assert_allclose(_pair_products(la, d, pairs[-6:]), want[-6:], rtol=1e-12)
    assert la.cache_info()["trace_replays"] == before + 6
    # under the default bound, every pair of a pass replays on the next one
    monkeypatch.setattr(trace, "MAX_REPLAYS", default)
    _pair_products(la, d, pairs)
    before = la.cache_info()["trace_replays"]
    got = _pair_products(la, d, pairs)
    assert la.cache_info()["trace_replays"] == before + len(pairs)
    np.testing.assert_allclose(got, want, rtol=1e-12)


class EvictedAfterLookUp(OrderedDict):
    """A least-recently-used table whose entry another thread evicts right after a look-up
    found it (between the look-up and its being marked used)."""

    def get(self, key, default=None):
        value = super().get(key, default)
        self.pop(key, None)
        return value


def test_a_replay_another_thread_evicts_right_after_its_look_up_still_runs(monkeypatch):
    """The replay table is shared by threads: an entry found by one may be evicted by
    another before the first marks it used; the first still replays what it found."""
    x = la.asarray(X)
    np.asarray(w8(la, x))  # remembered
    monkeypatch.setattr(trace, "_REPLAYS", EvictedAfterLookUp(trace._REPLAYS))
    before = la.cache_info()["trace_replays"]
    assert_same(np.asarray(w8(la, x)), w8(np, X))
    assert la.cache_info()["trace_replays"] == before + 1


def test_a_plan_another_thread_evicts_right_after_its_look_up_is_still_used(monkeypatch):
    from lazyarray import passes

    module = la.explain(la.sin(la.asarray(X)) * 2.0 + 1.0).before
    planned = passes.optimize(module)  # (remembered)
    monkeypatch.setattr(passes, "_plans", EvictedAfterLookUp(passes._plans))
    assert passes.optimize(module) is planned
