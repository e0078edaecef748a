"""lazyarray.jit: trace once per signature, replay without building a graph; what cannot be
traced runs without jit, with a warning, and still gives NumPy's answers."""

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import given, note, settings

import lazyarray as la
from lazyarray import engine
from lazyarray.graph import node as node_mod
from lazyarray.runtime import executor
from test_programs import (code_line, compare, execute, perturbed_runs, plan, programs,
                           rounding_floors)

rng = np.random.default_rng(3)
A = rng.random((300, 4))
B = rng.random((300, 4))


@pytest.fixture
def counting(monkeypatch):
    """Counts graph nodes built (leaves apart) and lowerings while the test runs."""
    built = {"nodes": 0, "lowered": 0}
    init = node_mod.Node.__init__

    def counting_init(self, op, *args, **kw):
        if op not in ("buffer", "constant"):
            built["nodes"] += 1
        init(self, op, *args, **kw)

    monkeypatch.setattr(node_mod.Node, "__init__", counting_init)
    jit_mod = __import__("sys").modules["lazyarray.jit"]
    lower = jit_mod.lower

    def counting_lower(*a, **k):
        built["lowered"] += 1
        return lower(*a, **k)

    monkeypatch.setattr(jit_mod, "lower", counting_lower)
    return built


def test_matches_numpy_and_traces_once(compiled):
    @la.jit
    def f(a, x, y):
        return a * x + np.sin(y)

    for k in range(3):
        x, y = rng.random(1000), rng.random(1000)
        got = f(2.5, x, y)
        assert isinstance(got, la.Array)
        np.testing.assert_allclose(np.asarray(got), 2.5 * x + np.sin(y), rtol=1e-13)
    assert f.traces == 1
    f(3.5, x, y)  # a Python scalar is static: another trace
    assert f.traces == 2


def test_replay_builds_no_graph(compiled, counting):
    @la.jit
    def f(x, y):
        d = x - y
        return np.sqrt((d * d).sum(axis=1)), d.mean(axis=0)

    f(A, B)  # trace
    assert counting["nodes"] > 0 and counting["lowered"] == 1
    counting["nodes"] = 0
    before = la.cache_info()
    for _ in range(3):
        n, m = f(A + 1, B)
    after = la.cache_info()
    assert counting["nodes"] == 0 and counting["lowered"] == 1
    assert after["jit_replays"] - before["jit_replays"] == 3
    assert after["compiles"] == before["compiles"]
    d = (A + 1) - B
    np.testing.assert_allclose(np.asarray(n), np.sqrt((d * d).sum(axis=1)), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(m), d.mean(axis=0), rtol=1e-13)


def test_signature_dtype_shape_and_layout(compiled):
    @la.jit
    def f(x):
        return x * 2 + 1

    f(A)
    f(A.copy())
    assert f.traces == 1
    f(A.astype(np.float32))
    assert f.traces == 2
    assert f(A.astype(np.float32)).dtype == np.float32
    before = la.cache_info()["compiles"]
    got = f(rng.random((500, 4)))  # a new shape traces again, but compiles nothing
    assert f.traces == 3 and la.cache_info()["compiles"] == before
    assert got.shape == (500, 4)
    t = f(A.T)  # strides differ: a signature of its own, same answers
    np.testing.assert_array_equal(np.asarray(t), A.T * 2 + 1)
    assert f.traces == 4


def test_lazy_array_arguments_and_containers(compiled):
    @la.jit
    def f(xs, scale=1.0, *, opts):
        s = xs[0] + xs[1]
        return {"s": s * scale, "n": opts["n"], "pair": (s.max(), s.min())}

    xa = la.asarray(A) * 2  # pending: computed before the call
    out = f([xa, la.asarray(B)], 0.5, opts={"n": 3})
    expect = (A * 2 + B) * 0.5
    np.testing.assert_allclose(np.asarray(out["s"]), expect, rtol=1e-13)
    assert out["n"] == 3
    assert float(out["pair"][0]) == pytest.approx((A * 2 + B).max())
    out = f([xa, la.asarray(B)], 0.5, opts={"n": 3})
    assert f.traces == 1


def test_numpy_scalars_are_dynamic_and_keep_their_dtype(compiled):
    @la.jit
    def f(x, s):
        return x * s

    x = A.astype(np.float32)
    for s in (np.float64(2.0), np.float64(3.0)):
        got = f(x, s)
        want = x * s
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert f.traces == 1
    assert f(x, 2.0).dtype == np.float32  # a Python float is weak, as in NumPy


def test_float_statics_by_bits(compiled):
    @la.jit
    def f(x, c):
        return x / c

    x = np.array([1.0, -1.0, 0.0] * 20)
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in (0.0, -0.0, float("nan"), float("nan")):
            np.testing.assert_array_equal(np.asarray(f(x, c)), x / c)
    assert f.traces == 3  # nan is one signature; 0.0 and -0.0 are two


def test_empty_zero_d_and_broadcast(mode):
    @la.jit
    def f(x, y):
        return (x + y).sum(axis=-1), x * 2

    for x, y in [(np.zeros((0, 3)), np.ones(3)), (np.array(2.0), np.array(3.0)),
                 (rng.random((5, 1)), rng.random((1, 7)))]:
        s, d = f(x, y)
        np.testing.assert_allclose(np.asarray(s), (x + y).sum(axis=-1))
        np.testing.assert_array_equal(np.asarray(d), x * 2)
        assert s.shape == (x + y).sum(axis=-1).shape and d.shape == x.shape


def test_closure_constants_and_returned_arguments(compiled):
    w = la.asarray(rng.random(4))

    @la.jit
    def f(x):
        return x, x @ w, np.arange(3)

    same, y, r = f(la.asarray(A))
    np.testing.assert_allclose(np.asarray(y), A @ np.asarray(w))
    np.testing.assert_array_equal(np.asarray(r), np.arange(3))
    xa = la.asarray(A)
    assert f(xa)[0] is xa  # an argument returned as is is that argument


def test_static_argnums(compiled):
    @la.jit(static_argnums=1)
    def f(x, axis):
        return x.sum(axis=axis)

    np.testing.assert_allclose(np.asarray(f(A, 0)), A.sum(axis=0))
    np.testing.assert_allclose(np.asarray(f(A, 1)), A.sum(axis=1))
    assert f.traces == 2
    with pytest.raises(TypeError, match="not hashable"):
        f(A, [0])


def test_unhashable_non_array_argument_is_a_clear_error(compiled):
    @la.jit
    def f(x, cfg):
        return x

    with pytest.raises(TypeError, match="neither an array nor hashable"):
        f(A, {1, 2}.__class__)  # a class is hashable: fine
        f(A, object.__new__(type("U", (), {"__hash__": None})))


def test_python_control_flow_falls_back_with_a_warning(compiled):
    @la.jit
    def f(x):
        if x.sum() > 0:
            return x * 2
        return -x

    with pytest.warns(la.JitWarning, match="cannot trace"):
        got = f(A)
    np.testing.assert_array_equal(np.asarray(got), A * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per signature
        np.testing.assert_array_equal(np.asarray(f(-A)), A)


def test_writing_an_argument_falls_back_and_keeps_numpy_semantics(compiled):
    @la.jit
    def f(x):
        x[0] = 0.0
        return x + 1

    xa = la.asarray(A)
    with pytest.warns(la.JitWarning, match="writes into an argument"):
        got = f(xa)
    want = A.copy()
    want[0] = 0.0
    np.testing.assert_array_equal(np.asarray(xa), want)  # the caller sees the write
    np.testing.assert_array_equal(np.asarray(got), want + 1)


def test_writing_an_outside_array_falls_back(compiled):
    sink = la.zeros((300, 4))

    @la.jit
    def f(x):
        sink[...] = x
        return x * 2

    with pytest.warns(la.JitWarning):
        f(A)
    np.testing.assert_array_equal(np.asarray(sink), A)


def test_local_writes_are_traced(compiled):
    @la.jit
    def f(x):
        out = np.zeros_like(x)
        out[1:] = x[:-1] * 2
        return out

    for _ in range(2):
        x = rng.random((50, 3))
        want = np.zeros_like(x)
        want[1:] = x[:-1] * 2
        np.testing.assert_array_equal(np.asarray(f(x)), want)
    assert f.traces == 1


def test_errstate_raise_runs_numpy_loops(compiled):
    @la.jit
    def f(x):
        return 1.0 / x

    f(np.ones(10))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        f(np.zeros(10))


def test_numpy_backend_runs_without_jit():
    @la.jit
    def f(x):
        return x + 1

    with la.options(backend="numpy"):
        np.testing.assert_array_equal(np.asarray(f(A)), A + 1)
    assert f.traces == 0


def test_value_errors_surface_on_replay(compiled):
    @la.jit
    def f(x, y):
        return x ** y

    x = np.arange(40, dtype=np.int64)
    f(x, np.ones(40, np.int64))
    with pytest.raises(ValueError, match="negative"):
        f(x, -np.ones(40, np.int64))


@pytest.mark.heavy
@settings(max_examples=max(10, settings().max_examples // 3))
@given(program=programs())
def test_random_programs_jitted(program):
    """Whole random programs as jitted functions: the trace and two replays (new values)
    against NumPy."""
    instrs, _ = plan(program)
    n_in = len(program.inputs)
    lines = [f"v{i} = <{a.dtype}{list(a.shape)}>" for i, a in enumerate(program.inputs)]
    lines += [code_line(n_in + k, ins) for k, ins in enumerate(instrs)]
    note("program:\n" + "\n".join(lines))

    @la.jit
    def run(*inputs):
        vals = list(inputs)
        for ins in instrs:
            vals.append(execute(la, ins, vals))
        return vals

    with la.options(eager_threshold=0), np.errstate(all="ignore"):
        for shift in (0, 1, 2):
            inputs = [a + np.asarray(shift).astype(a.dtype) for a in program.inputs]
            again = dataclasses.replace(program, inputs=inputs)
            _, expected = plan(again)
            alts = perturbed_runs(again, instrs)
            floors = rounding_floors(n_in, instrs, expected)
            got = run(*inputs)
            for k, (g, e) in enumerate(zip(got, expected)):
                compare(k, lines[k], g, e, [alt[k] for alt in alts], floors[k])
    assert run.traces <= 1


def test_plain_jit_executor_memo_is_bounded():
    assert executor.PREPARED_LAYOUTS >= 1 and executor.PREPARED_COMPUTATIONS >= 1
    assert engine.STRICT_ERRSTATE


def test_a_view_of_a_scalar_result_is_not_baked_into_the_trace(compiled):
    """A view of a computed scalar is computed at once outside `jit` (NumPy's reshape of a
    scalar is a new array); inside a trace the scalar stands for an input, so its view stays
    a node: each call sees its own argument (found by the random jitted programs)."""
    @la.jit
    def f(x, i, v):
        return np.transpose(-x), (-x).reshape((-1, 1)) + v, np.transpose(i), i[None]

    for value in (0.0, 1.0, -2.5):
        x, i, v = np.array(value), np.array(int(value * 2)), rng.random((1, 3))
        t, r, ti, ii = f(x, i, v)
        np.testing.assert_array_equal(np.asarray(t), np.transpose(-x))
        np.testing.assert_array_equal(np.asarray(r), (-x).reshape((-1, 1)) + v)
        np.testing.assert_array_equal(np.asarray(ti), i)
        np.testing.assert_array_equal(np.asarray(ii), i[None])
    assert f.traces == 1
