"""Fusion and the compile cache, asserted through the public API
(``la.explain``, ``la.cache_info``) -- never through timing."""

import numpy as np
import pytest

import lazyarray as la
from helpers import assert_like_numpy, stats_delta

COUNTERS = ("hits", "misses", "compiles", "kernels_launched", "interpreter_runs", "fallbacks",
            "materializations")


def _inputs(n, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    nps = [rng.standard_normal(s) for s in (shapes or [(n,)] * 5)]
    return nps, [la.asarray(a) for a in nps]


# --------------------------------------------------------------------------
# fusion
# --------------------------------------------------------------------------


def test_elementwise_expression_is_one_loop_kernel(compiled):
    (a, b, c, d, e), (x_a, x_b, x_c, x_d, x_e) = _inputs(1000)
    expr = x_a * x_b + x_c * x_d - la.sin(x_e)
    with stats_delta() as delta:
        rep = la.explain(expr)
    assert rep.num_kernels == 1, str(rep)
    text = str(rep)
    assert "fusion" in text and "kind=loop" in text, text
    assert delta["materializations"] == 0 and delta["kernels_launched"] == 0, (
        "explain must not materialize"
    )
    assert_like_numpy(expr, a * b + c * d - np.sin(e))


def test_reduction_with_its_producers_is_one_input_kernel(compiled):
    (p, q), (x, y) = _inputs(0, (10_000,), (10_000,))
    expr = la.sqrt(((x - y) ** 2).sum())
    rep = la.explain(expr)
    assert rep.num_kernels == 1, str(rep)
    assert "kind=input" in str(rep), str(rep)
    assert_like_numpy(expr, np.sqrt(((p - q) ** 2).sum()), rtol=1e-12)


def test_explain_report_fields(compiled):
    (a, b), (x, y) = _inputs(0, (50, 4), (4,))
    expr = la.exp(x - y).sum(axis=1) * 2
    rep = la.explain(expr)
    assert isinstance(rep.num_kernels, int) and rep.num_kernels >= 1
    assert isinstance(rep.hlo_before, str) and isinstance(rep.hlo_after, str)
    assert "parameter" in rep.hlo_before
    assert "fusion" in rep.hlo_after
    assert rep.hlo_before in str(rep) or "HLO" in str(rep)
    assert_like_numpy(expr, np.exp(a - b).sum(axis=1) * 2)


def test_explain_several_arrays_does_not_materialize(compiled):
    _, (x, y, z, _, _) = _inputs(64)
    e1, e2 = x * y + z, (x - z).max()
    with stats_delta() as delta:
        rep = la.explain(e1, e2)
    assert rep.num_kernels >= 1
    assert delta["materializations"] == 0
    assert delta["kernels_launched"] == 0


def test_evaluate_shared_inputs_runs_fewer_kernels(compiled):
    (a, b, c, _, _), (x, y, z, _, _) = _inputs(5000)

    def exprs():
        return la.sin(x) * y + z, la.cos(x) - y * z

    e1, e2 = exprs()
    joint = la.explain(e1, e2).num_kernels
    separate = la.explain(e1).num_kernels + la.explain(e2).num_kernels
    assert joint < separate, f"joint {joint} vs separate {separate}"

    with stats_delta() as d_joint:
        assert la.evaluate(e1, e2) is None
    f1, f2 = exprs()
    with stats_delta() as d_sep:
        np.asarray(f1)
        np.asarray(f2)
    assert d_joint["kernels_launched"] < d_sep["kernels_launched"], (d_joint, d_sep)
    assert_like_numpy(e1, np.sin(a) * b + c)
    assert_like_numpy(e2, np.cos(a) - b * c)
    assert_like_numpy(f1, np.sin(a) * b + c)


def test_evaluated_arrays_are_not_recomputed(compiled):
    (a, b, _, _, _), (x, y, _, _, _) = _inputs(300)
    e = la.tanh(x) * y
    la.evaluate(e)
    with stats_delta() as delta:
        r1 = np.asarray(e)
        r2 = np.asarray(e)
        repr(e)
    assert delta["kernels_launched"] == 0 and delta["interpreter_runs"] == 0, delta
    assert_like_numpy(r1, np.tanh(a) * b)
    assert_like_numpy(r2, np.tanh(a) * b)


# --------------------------------------------------------------------------
# the compile cache
# --------------------------------------------------------------------------


def _program(x, y, c1, c2):
    return la.sqrt(((x * c1 - y) ** 2).sum()) + c2, la.exp(x * c2) / (y * y + c1)


def test_same_program_other_size_and_constants_hits_the_cache(compiled):
    (a, b), (x, y) = _inputs(0, (1000,), (1000,), seed=1)
    r1 = _program(x, y, 2.0, 1.5)
    la.evaluate(*r1)  # compiles (or loads from disk) once
    (p, q), (u, v) = _inputs(0, (12_345,), (12_345,), seed=2)
    with stats_delta() as delta:
        r2 = _program(u, v, -3.5, 0.25)
        la.evaluate(*r2)
    assert delta["compiles"] == 0, delta
    assert delta["hits"] > 0, delta
    assert delta["kernels_launched"] > 0, delta
    assert_like_numpy(r2[0], np.sqrt(((p * -3.5 - q) ** 2).sum()) + 0.25, rtol=1e-12)
    assert_like_numpy(r2[1], np.exp(p * 0.25) / (q * q - 3.5))
    assert_like_numpy(r1[0], np.sqrt(((a * 2.0 - b) ** 2).sum()) + 1.5, rtol=1e-12)
    assert_like_numpy(r1[1], np.exp(a * 1.5) / (b * b + 2.0))


def test_loop_values_through_one_and_zero_compile_nothing(compiled):
    """The issue's `a*b + c*d*k - sin(e)` with k = 1.5, 2.0, then 1.0, 0.0, -0.0 (values a
    rewrite would have keyed on), and a time step `a + dt * b` through 1.0 and 0.0: one
    kernel each, whatever the values; NumPy's values."""
    r = np.random.default_rng(0)
    a, b, c, d, e = (r.uniform(-1, 1, 50_000) for _ in range(5))
    la_in = [la.asarray(v) for v in (a, b, c, d, e)]
    A, B, C, D, E = la_in
    np.asarray(A * B + C * D * 1.5 - la.sin(E))
    np.asarray(A + 0.5 * B)
    with stats_delta() as delta:
        for k in (2.0, 1.0, 0.0, -0.0, 1):
            got = np.asarray(A * B + C * D * k - la.sin(E))
            assert got.tobytes() == (a * b + c * d * k - np.sin(e)).tobytes()
        for dt in (1.0, 0.0, 0.25):
            got = np.asarray(A + dt * B)
            assert got.tobytes() == (a + dt * b).tobytes()
    assert delta["compiles"] == 0, delta


@pytest.mark.parametrize("constants", [(2, 1), (3, 1), (0.5, -7)], ids=str)
def test_scalar_constants_are_kernel_arguments(compiled, constants):
    """`x*5+4` and `x*c1+c2` share one kernel: once the serial (a thousand elements) and the
    parallel (a hundred thousand) forms of `x*5+4` are built, other constants compile
    nothing (with an empty kernel cache too, whatever ran before)."""
    c1, c2 = constants
    for n in (1000, 100_000):
        np.asarray(la.asarray(np.arange(float(n))) * 5.0 + 4.0)
    a = np.linspace(-1, 1, 100_000)
    with stats_delta() as delta:
        r = la.asarray(a) * float(c1) + float(c2)
        np.asarray(r)
    assert delta["compiles"] == 0, delta
    assert_like_numpy(r, a * float(c1) + float(c2))


def _plan_program(q, r, c):
    return ((q * c + r) % 7).sum(axis=0), (q == r).any()


def test_a_graph_evaluated_again_takes_its_plan(compiled):
    """The same structure on new data is neither lowered nor optimized again (`plan_hits`)
    and runs the same optimized HLO; another constant, shape, dtype or sharing of leaves is
    another plan. Every result matches NumPy."""
    rng = np.random.default_rng(3)

    def run(a, b, c):
        q = la.asarray(a)
        outs = _plan_program(q, q if b is a else la.asarray(b), c)
        with stats_delta() as delta:
            la.evaluate(*outs)
        want = _plan_program(a, b, c)
        for got, w in zip(outs, want):
            assert_like_numpy(got, w)
        return delta["plan_hits"], la.explain().hlo_after

    a, b = (rng.integers(-50, 50, (300, 40)) for _ in range(2))
    run(a, b, 3)
    hits, hlo = run(a + 1, b - 2, 3)
    assert hits == 1
    assert run(a[::-1].copy(), b, 3) == (1, hlo)
    others = [(a, b, 4), (a[:200], b[:200], 3), (a.astype(np.int32), b.astype(np.int32), 3),
              (a, a, 3), (a.T.copy(), b.T.copy(), 3)]
    for args in others:
        assert run(*args)[0] == 0, args


def test_plans_tell_a_zero_from_a_negative_zero(compiled):
    y = np.linspace(-1, 1, 50_001, dtype=np.float32)
    for c in (0.0, -0.0, 0.0, -0.0):
        got = np.asarray(la.asarray(y) * c + 1.5 * c)
        want = y * c + 1.5 * c
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_thousand_op_graph_builds_without_running_anything(compiled):
    a = np.linspace(0, 1, 257)
    x = la.asarray(a)
    before = dict(la.cache_info())
    y = x
    for i in range(500):
        y = y * 0.999 + 0.001 * (i % 3)
    after = dict(la.cache_info())
    for key in COUNTERS:
        assert after[key] == before[key], f"{key}: {before[key]} -> {after[key]}"
    assert y.shape == (257,) and y.dtype == np.float64
    expected = a
    for i in range(500):
        expected = expected * 0.999 + 0.001 * (i % 3)
    assert_like_numpy(y, expected, rtol=1e-10)


def _interpreted(delta):
    """Work done by the NumPy interpreter: graph runs, plus ops the
    interpreter tier evaluated eagerly (the optional ``eager_ops`` counter)."""
    return delta["interpreter_runs"] + delta.get("eager_ops", 0)


def test_interpreter_backend_runs_no_kernels():
    (a, b, _, _, _), (x, y, _, _, _) = _inputs(100)
    with la.options(backend="numpy"):
        with stats_delta() as delta:
            r = np.asarray(la.sin(x) + y)
    assert delta["kernels_launched"] == 0, delta
    assert _interpreted(delta) >= 1, delta
    assert_like_numpy(r, np.sin(a) + b)


def test_eager_threshold_routes_small_work_to_the_interpreter():
    (a, b, _, _, _), (x, y, _, _, _) = _inputs(100, seed=3)
    with la.options(backend="cpu", eager_threshold=10**9):
        with stats_delta() as small:
            r = np.asarray(la.cos(x) * y - 1)
    assert small["kernels_launched"] == 0 and _interpreted(small) >= 1, small
    with la.options(backend="cpu", eager_threshold=0):
        with stats_delta() as forced:
            r2 = np.asarray(la.cos(x) * y - 2)
    assert forced["kernels_launched"] >= 1, forced
    assert_like_numpy(r, np.cos(a) * b - 1)
    assert_like_numpy(r2, np.cos(a) * b - 2)


def test_reset_stats_and_cache_clear(compiled):
    _, (x, _, _, _, _) = _inputs(100, seed=4)
    np.asarray(la.arctan(x) * 3)
    la.reset_stats()
    info = la.cache_info()
    for key in COUNTERS:
        assert info[key] == 0, f"{key} after reset_stats: {info[key]}"
    la.cache_clear()
    info = la.cache_info()
    for key in COUNTERS:
        assert info[key] == 0, f"{key} after cache_clear: {info[key]}"
    np.asarray(la.arctan(x) * 3)
    info = la.cache_info()
    assert info["hits"] == 0 and info["misses"] >= 1, info   # the memory cache was emptied
    assert info["kernels_launched"] >= 1


# --------------------------------------------------------------------------
# every ufunc runs compiled (no silent interpreter fallback)
# --------------------------------------------------------------------------

UFUNCS = sorted(
    n for n in dir(np)
    if isinstance(getattr(np, n), np.ufunc) and n not in ("matmul", "matvec", "vecmat", "vecdot", "isnat")
)


def _first_accepted_dtype(name):
    ufunc = getattr(np, name)
    for dt in ("float64", "int64", "bool"):
        try:
            with np.errstate(all="ignore"):
                ufunc(*[np.ones(2, dt)] * ufunc.nin)
            return dt
        except TypeError:
            continue
    raise AssertionError(name)


@pytest.mark.parametrize("name", UFUNCS)
def test_every_ufunc_runs_as_a_compiled_kernel(compiled, name):
    ufunc = getattr(np, name)
    dt = _first_accepted_dtype(name)
    args = [(np.arange(1, 9) % 5 + 1).astype(dt) for _ in range(ufunc.nin)]
    with stats_delta() as delta:
        r = getattr(la, name)(*[la.asarray(a) for a in args])
        la.evaluate(*(r if isinstance(r, tuple) else (r,)))
    assert delta["fallbacks"] == 0, f"{name}({dt}) fell back to the interpreter"
    assert delta["kernels_launched"] >= 1, f"{name}({dt}) launched no kernel: {delta}"
    with np.errstate(all="ignore"):
        assert_like_numpy(r, ufunc(*args))


def test_dead_intermediate_buffer_takes_the_result(compiled):
    """Softmax over columns (axis 0: no row fusion) is several kernels: the last one writes
    into the dead exp(...) buffer instead of a new array (buffer donation), and the values are
    NumPy's. The arrays are large enough to come from the result pool: a pooled buffer is
    donated like one NumPy owns."""
    from lazyarray.runtime import pool

    X = np.random.default_rng(5).random((700, 300))  # 1.7 MB: pooled
    x = la.asarray(X)
    before = la.cache_info()["buffers_donated"]
    e = la.exp(x - x.max(axis=0, keepdims=True))
    got = np.asarray(e / e.sum(axis=0, keepdims=True))
    assert la.cache_info()["buffers_donated"] - before == 1
    assert pool.owns(got)
    ee = np.exp(X - X.max(axis=0, keepdims=True))
    np.testing.assert_allclose(got, ee / ee.sum(axis=0, keepdims=True), rtol=1e-13)


def test_no_donation_while_a_view_of_the_buffer_is_read_later(compiled):
    """exp(x) is read by one kernel at the same index (a donation candidate) and later through
    a transpose: its buffer must stay intact until that read."""
    X = np.random.default_rng(6).random((300, 200))
    x = la.asarray(X)
    e = la.exp(x)
    r1, r2, r3 = e * 2, e.T + 1, la.sin(e)
    la.evaluate(r1, r2, r3)
    E = np.exp(X)
    np.testing.assert_allclose(np.asarray(r1), E * 2, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(r2), E.T + 1, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(r3), np.sin(E), rtol=1e-14)


def test_arguments_and_results_are_never_donated(compiled):
    X = np.random.default_rng(7).random(50_000)
    x = la.asarray(X)
    y = la.exp(x)
    z = y * 3
    la.evaluate(y, z)  # y is a result: z must not overwrite it
    np.testing.assert_allclose(np.asarray(y), np.exp(X), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(z), np.exp(X) * 3, rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(x), X)  # nor an input
    w = la.exp(x) + 1
    np.asarray(w)
    np.testing.assert_array_equal(np.asarray(x), X)
