"""The compiler without a compiler: HLO text round trip, passes preserve meaning (checked on
the reference interpreter), fusion decisions read from the optimized HLO text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyarray as la
from lazyarray.graph.node import Node
from lazyarray.ir.interpret import interpret
from lazyarray.ir.lower import lower
from lazyarray.ir.text import parse_module, print_module
from lazyarray.passes import run_pipeline


def module_of(*arrays):
    return lower([a._node for a in arrays])


def _programs():
    x = la.asarray(np.linspace(-2, 2, 24).reshape(4, 6))
    y = la.asarray(np.arange(6, dtype=np.int32))
    return {
        "w1": (x * 2 + x * x - la.sin(x),),
        "w2": (la.sqrt(((x - y) ** 2).sum()),),
        "softmax": ((lambda e: e / e.sum(axis=1, keepdims=True))(la.exp(x - x.max(axis=1, keepdims=True))),),
        "views": ((x[::2, 1:-1].T * 3)[..., None] + 1.5,),
        "argmax": (x.argmax(axis=0), x.argmin()),
        "multi": (x.sum(axis=0), (x * x).sum(axis=0), x + 1),
        "where": (la.where(x > 0, x, y), la.clip(x, -1, 1)),
        "ints": ((y << 2) // 3 % 5, y.astype(np.uint8) - 1),
        "bool": ((x > 0).any(axis=1), ~(x < 1)),
        "complex": (la.exp(x * 1j).sum(axis=1),),
    }


with la.options(eager_threshold=0):  # graphs, not eagerly computed tiny results
    PROGRAMS = _programs()


@pytest.fixture(autouse=True)
def lazy_graphs():
    """Small arrays would otherwise run eagerly (the tiny tier): build graphs to inspect."""
    with la.options(eager_threshold=0):
        yield


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_text_round_trip(name):
    module, _ = module_of(*PROGRAMS[name])
    for m in (module, run_pipeline(module)):
        text = print_module(m)
        assert print_module(parse_module(text)) == text


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_pipeline_preserves_meaning(name):
    module, args = module_of(*PROGRAMS[name])
    before = interpret(module, args)
    after = interpret(run_pipeline(module), args)
    for a, b in zip(before, after, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=1e-12, equal_nan=True)


def test_w1_is_one_loop_fusion():
    rng = np.random.default_rng(0)
    a, b, c, d, e = (la.asarray(rng.random(100)) for _ in range(5))
    text = print_module(run_pipeline(module_of(a * b + c * d - la.sin(e))[0]))
    assert text.count("fusion(") == 1 and "kind=loop" in text


def test_w2_is_one_input_fusion_with_epilogue():
    x, y = la.asarray(np.ones(10)), la.asarray(np.zeros(10))
    text = print_module(run_pipeline(module_of(la.sqrt(((x - y) ** 2).sum()))[0]))
    assert text.count("fusion(") == 1 and "kind=input" in text and "sqrt" in text


def test_views_are_pushed_to_the_leaves():
    x = la.asarray(np.ones((4, 6)))
    text = print_module(run_pipeline(module_of((x * 2 + 1).T[1:])[0]))
    fused = text.split("ENTRY")[0]
    # the transpose and slice now read the parameter; arithmetic runs in the output's space
    assert "transpose(%0)" in fused and text.count("fusion(") == 1


def test_expensive_op_is_not_recomputed_under_a_broadcast():
    x, y = la.asarray(np.ones(5)), la.asarray(np.ones((3, 5)))
    m = run_pipeline(module_of(la.exp(x) * y)[0])
    text = print_module(m)
    # exp stays over 5 elements inside the fusion, read through a broadcast
    assert "f64[5] exponential" in text


def test_shared_inputs_multi_output_fusion():
    x = la.asarray(np.ones(50))
    text = print_module(run_pipeline(module_of(x.sum(), (x * x).sum())[0]))
    assert text.count("fusion(") == 1


def test_cse_and_simplification():
    """CSE merges the two `x * 1`; negate(negate(x)) is x; a multiply by a constant stays,
    whatever its value (constants are kernel parameters: no structure keyed on a value)."""
    x = la.asarray(np.ones(8))
    text = print_module(run_pipeline(module_of((x * 1) + (x * 1) + (-(-x)))[0]))
    assert text.count("multiply(") == 1 and "negate" not in text
    masked = [print_module(run_pipeline(module_of(x * k + 0.5)[0]), masked=True)
              for k in (1.0, 2.0, 0.0)]
    assert masked[0] == masked[1] == masked[2]


def test_constant_values_and_sizes_are_not_in_the_signature():
    def fused(expr):
        m = run_pipeline(module_of(expr)[0])
        return print_module(m, masked=True)

    a = la.asarray(np.ones(10))
    b = la.asarray(np.ones(1000))
    assert fused(a * 2 + 1) == fused(b * 3 + 7)
    assert fused(a * 2 + 1) != fused(a.astype(np.float32) * 2 + 1)


def test_building_computes_nothing():
    la.reset_stats()
    x = la.asarray(np.ones(100))
    for _ in range(1000):
        x = x * 1.0001 + 0.5
    info = la.cache_info()
    assert info["materializations"] == 0 and info["kernels_launched"] == 0
    assert x.shape == (100,) and x.dtype == np.float64


def test_long_chains_are_cut_and_deep_graphs_do_not_recurse():
    x = la.asarray(np.ones(4))
    for _ in range(20_000):
        x = x + 1.0
    np.testing.assert_array_equal(np.asarray(x), np.full(4, 20_001.0))


_ops = st.sampled_from(["add", "subtract", "multiply", "maximum", "sin", "abs", "sum0", "sum1",
                        "T", "slice", "max1k"])


@given(st.lists(_ops, min_size=1, max_size=12), st.integers(0, 2**31))
def test_random_graphs_optimized_equals_unoptimized(steps, seed):
    rng = np.random.default_rng(seed)
    vals = [la.asarray(rng.standard_normal((4, 4))), la.asarray(rng.standard_normal((4, 4)))]
    for s in steps:
        a, b = vals[-1], vals[-2]
        if s in ("add", "subtract", "multiply", "maximum"):
            r = getattr(la, s)(a, b) if a.shape == b.shape or True else a
        elif s == "sin":
            r = la.sin(a)
        elif s == "abs":
            r = abs(a)
        elif s == "sum0":
            r = a.sum(axis=0, keepdims=True) + b
        elif s == "sum1":
            r = a - a.sum(axis=-1, keepdims=True)
        elif s == "T":
            r = a.T
        elif s == "max1k":
            r = a.max(axis=1, keepdims=True) * b
        else:
            r = a[::-1] * 0.5
        vals.append(r)
    module, args = module_of(*vals[2:])
    before = interpret(module, args)
    after = interpret(run_pipeline(module), args)
    for x, y in zip(before, after, strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12)
    assert isinstance(vals[-1]._node, Node)


def _time_loop(z, steps):
    """A Monte Carlo pricer's loop (the corpus's `mc_option`): a spot multiplied by an exp
    per step, summed into a running total in place, then means and a standard deviation."""
    spot, running = z[0] * 0 + 100.0, z[0] * 0
    for t in range(steps):
        spot = spot * np.exp(0.01 + 0.2 * z[t]) if isinstance(z, np.ndarray) else \
            spot * la.exp(0.01 + 0.2 * z[t])
        running += spot
    european = np.maximum(spot - 105.0, 0.0)
    asian = np.maximum(running / steps - 105.0, 0.0)
    return european.mean(), asian.mean(), european.std()


def _fusions(module):
    """(roots, exps) of each fusion of an optimized module: how many values it stores, how
    many exponentials it computes."""
    return [(len(ins.value.outputs), sum(i.opcode == "exp" for i in ins.value.instrs))
            for ins in module.instrs if ins.opcode == "fusion"]


def test_a_time_loop_longer_than_a_kernel_stores_its_carried_values_not_its_exps():
    """64 steps of `spot = spot * exp(...)` and `running += spot` are longer than one
    kernel (MAX_FUSION). The chain is cut level by level, where only a few values cross,
    and the reductions read the two values they sum, not every step's spot: each exp is
    computed once, and a few values are stored. (Before: 60 kernel outputs, one per exp,
    and the chain recomputed by both reductions.)"""
    z = np.random.default_rng(0).standard_normal((64, 300))
    with la.options(eager_threshold=0):
        outs = _time_loop(la.asarray(z), 64)
        fused = run_pipeline(module_of(*outs)[0])
    stats = _fusions(fused)
    assert sum(e for _, e in stats) == 64  # every exp once
    assert sum(r for r, e in stats if e) <= 16  # stored by the kernels computing exps
    for got, want in zip(outs, _time_loop(z, 64), strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


@given(st.integers(2, 90), st.lists(st.sampled_from(["exp", "sin", "mul", "add", "sqrt"]),
                                    min_size=1, max_size=4),
       st.sampled_from(["sum", "mean_std", "last"]), st.integers(0, 2**31))
def test_random_time_loops_fused_equal_numpy(steps, body, finish, seed):
    """Carried values through loops of any length (cut into kernels anywhere), with
    expensive ops in the step and reductions read after: the fused module computes
    NumPy's values."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.1, 1.0, (steps, 40))

    def run(xp, z):
        s, acc = z[0] * 0 + 1.0, z[0] * 0
        for t in range(steps):
            v = z[t]
            for op in body:
                v = {"exp": lambda v: xp.exp(v * 0.1), "sin": xp.sin, "mul": lambda v: v * s,
                     "add": lambda v: v + acc * 1e-3, "sqrt": lambda v: xp.sqrt(abs(v))}[op](v)
            s = s * 0.5 + v * 0.5
            acc += s
        if finish == "sum":
            return (acc.sum(), s.sum())
        if finish == "mean_std":
            return (s.mean(), s.std(), (acc / steps).mean())
        return (s, acc)

    module, args = module_of(*run(la, la.asarray(z)))
    got = interpret(run_pipeline(module), args)  # (the reference interpreter: no compiles)
    for g, w in zip(got, run(np, z), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_an_assignment_whose_kernels_read_each_other_falls_back_to_the_plain_walk(monkeypatch):
    """Where the long-chain rules would make two kernels read each other (a cycle: no order
    to run them in), the pass takes the plain walk's groups, which never do: the program
    still computes NumPy's values."""
    from lazyarray.passes import fusion

    checked = []
    monkeypatch.setattr(fusion, "_acyclic", lambda groups: checked.append(groups) and False)
    z = np.random.default_rng(1).standard_normal((64, 50))
    with la.options(eager_threshold=0):
        module, args = module_of(*_time_loop(la.asarray(z), 64))
    fused = run_pipeline(module)
    assert checked  # (every walk with the rules was refused)
    # the plain walk: each value crossing a cut starts a kernel of its own, exps stored
    assert sum(r for r, e in _fusions(fused) if e) > 16
    for got, want in zip(interpret(fused, args), _time_loop(z, 64), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_long_chain_rules_never_need_the_fallback_on_time_loops():
    """On time loops of any length, both walks with the rules (`_assign` with the walk,
    then with the moves) give kernels that never read each other: the fallback to the
    plain walk (which stores every value a cut crosses) is not what runs them."""
    from lazyarray.passes import fusion

    rng = np.random.default_rng(2)
    for _ in range(20):
        steps = int(rng.integers(20, 80))
        z = rng.uniform(0.1, 1.0, (steps, 30))
        with la.options(eager_threshold=0):
            module, _ = module_of(*_time_loop(la.asarray(z), steps))
        users = module.users()
        walk = (fusion._by_height(module, users), fusion._expensive_cones(module))
        groups, moves = fusion._assign(module, users, walk)
        assert fusion._acyclic(groups) and moves
        again, _ = fusion._assign(module, users, walk, move=moves)
        assert fusion._acyclic(again)


def _particle_push(steps):
    """The corpus's `particles` push (bilinear gathers of two fields at wrapped cell
    indices, a kick, a drift, a periodic wrap) on lazy inputs, and the same on NumPy's."""
    from lazyarray.tools.corpus import particles

    inputs = particles.make(dict(particles=3000, grid=16, steps=steps), 0)
    with la.options(eager_threshold=0):
        lazy = [la.asarray(a) if isinstance(a, np.ndarray) else a for a in inputs]
        outs = particles.run(la, *lazy)[:4]
        module, args = module_of(*outs)
    return run_pipeline(module), args, particles.run(np, *inputs)[:4]


def _roots(fusion):
    return [fusion.value.instrs[o] for o in fusion.value.outputs]


def test_a_particle_push_is_one_kernel():
    """One step: the x and y updates (merged siblings) read the same wrapped cell indices and
    weights, stored by kernels of their own until those became one kernel's reads; now they
    are computed in it (`absorb_shared`): one kernel, nothing stored but the four results."""
    fused, args, want = _particle_push(1)
    fusions = [i for i in fused.instrs if i.opcode == "fusion"]
    assert len(fusions) == 1 and len(fusions[0].value.outputs) == 4
    for g, w in zip(interpret(fused, args), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_particle_steps_store_their_carried_values_not_their_gathers():
    """Five steps are longer than one kernel. Each step's kicked velocities and wrapped
    positions cross the cuts; the gathered field values are computed where they are read
    (before: kernels storing eight gathered arrays a step, and the cell indices)."""
    fused, args, want = _particle_push(5)
    fusions = [i for i in fused.instrs if i.opcode == "fusion"]
    stored = [r.opcode for f in fusions for r in _roots(f)]
    assert "gather" not in stored and len(stored) <= 5 * 4, stored
    assert sum(i.opcode == "gather" for f in fusions for i in f.value.instrs) == 5 * 8
    for g, w in zip(interpret(fused, args), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
