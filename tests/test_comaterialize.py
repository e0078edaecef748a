"""Co-materialization (lazyarray/graph/live.py): forcing one array computes, in the same
evaluation, the live pending arrays that share its work, so forcing outputs one by one does
the work of forcing them together. Values against NumPy; the work asserted by counters."""

import gc

import numpy as np
import pytest

import lazyarray as la
from tests.helpers import assert_like_numpy


def mixing(xp, a, b, c):
    """Three outputs sharing two temporaries no array holds (a mixing kernel's shape)."""
    slope = xp.tanh(a * 0.5 + b * 0.25)
    taper = xp.where(slope > 0.1, xp.exp(-slope * slope), 0.0)
    return taper * a + slope, taper * b - slope * 2.0, taper * c + slope * slope


@pytest.fixture
def inputs():
    r = np.random.default_rng(0)
    return [r.standard_normal(50_000).astype(np.float32) for _ in range(3)]


def _delta(before, name):
    return la.cache_info()[name] - before[name]


def _pending(x) -> bool:
    return x._st is not None and not x._st.node.realized


def test_forcing_one_output_computes_the_others_that_share_its_work(compiled, inputs):
    want = mixing(np, *inputs)
    ks = mixing(la, *(la.asarray(v) for v in inputs))
    assert all(_pending(k) for k in ks)
    before = la.cache_info()
    assert_like_numpy(ks[0], want[0])
    assert _delta(before, "co_materialized") == 2 and not any(_pending(k) for k in ks)
    launched = la.cache_info()["kernels_launched"]
    assert_like_numpy(ks[1], want[1])
    assert_like_numpy(ks[2], want[2])
    assert la.cache_info()["kernels_launched"] == launched  # computed already


def test_one_by_one_does_the_work_of_together(compiled, inputs):
    arrays = [la.asarray(v) for v in inputs]
    for _ in range(2):  # (the first round compiles)
        before = la.cache_info()
        for k in mixing(la, *arrays):
            np.asarray(k)
        one_by_one = _delta(before, "kernels_launched")
        before = la.cache_info()
        la.evaluate(*mixing(la, *arrays))
        together = _delta(before, "kernels_launched")
    assert one_by_one == together


def test_arrays_the_program_dropped_are_not_computed(compiled, inputs):
    k11, k13, k33 = mixing(la, *(la.asarray(v) for v in inputs))
    del k13
    gc.collect()
    before = la.cache_info()
    np.asarray(k11)
    assert _delta(before, "co_materialized") == 1 and not _pending(k33)


def test_arrays_sharing_only_inputs_or_views_are_left_pending(compiled, inputs):
    a, b, _ = (la.asarray(v) for v in inputs)
    other = a * 3.0 + b  # reads the same inputs; no work in common
    view_only = a[::2] + 1.0
    x = la.tanh(a * 0.5 + b * 0.25) * 2.0
    before = la.cache_info()
    np.asarray(x)
    assert _delta(before, "co_materialized") == 0 and _pending(other) and _pending(view_only)
    assert_like_numpy(other, inputs[0] * 3.0 + inputs[1])


def test_a_held_temporary_the_evaluation_computes_keeps_its_value(compiled, inputs):
    a, b, _ = (la.asarray(v) for v in inputs)
    slope = la.tanh(a * 0.5 + b * 0.25)
    k = slope * slope + 1.0
    before = la.cache_info()
    np.asarray(k)
    assert _delta(before, "co_materialized") == 1 and not _pending(slope)
    assert_like_numpy(slope, np.tanh(inputs[0] * 0.5 + inputs[1] * 0.25))


def test_partners_that_may_raise_wait_for_their_own_line(compiled):
    a = la.asarray(np.arange(1, 50_001, dtype=np.int64) % 7)
    shared = a * 3 + 1
    risky = shared ** (a - 3)  # negative exponents: NumPy raises at the line that reads it
    x = shared * 2
    before = la.cache_info()
    np.asarray(x)  # computes `shared` (held), not `risky`
    assert _delta(before, "co_materialized") == 1 and not _pending(shared) and _pending(risky)
    with pytest.raises(ValueError, match="negative integer powers"):
        np.asarray(risky)


def test_no_partners_under_raising_error_states(compiled, inputs):
    ks = mixing(la, *(la.asarray(v) for v in inputs))
    before = la.cache_info()
    with np.errstate(all="raise"):
        np.asarray(ks[0])
    assert _delta(before, "co_materialized") == 0 and _pending(ks[1])


def test_writes_after_a_partner_was_computed_keep_numpys_versions(compiled, inputs):
    a_np, b_np, c_np = (v.copy() for v in inputs)
    a, b, c = (la.asarray(v) for v in inputs)
    ks = mixing(la, a, b, c)
    want = mixing(np, a_np, b_np, c_np)
    np.asarray(ks[0])  # computes ks[1] and ks[2] with it
    a[:100] = 7.0
    a_np[:100] = 7.0
    assert_like_numpy(ks[1], want[1])
    assert_like_numpy(ks[2], want[2])
    assert_like_numpy(mixing(la, a, b, c)[0], mixing(np, a_np, b_np, c_np)[0])




@pytest.mark.parametrize("turn", [0, 30, 62, 63])
def test_partners_come_oldest_first_wherever_the_ring_stands(turn):
    """Live partners are named oldest first, whatever slots of the ring of remembered
    storages they landed in: their order is part of the plan's key, and partners in slots
    that wrapped around the ring's end gave the same program a second plan."""
    from lazyarray.graph import live
    from lazyarray.graph.node import toposort

    x = la.asarray(np.random.default_rng(5).standard_normal(70_000).astype(np.float32))
    with la.options(eager_threshold=0):  # (float32: no trace tier, one graph of nodes)
        while live._next() % live.MAX_LIVE != turn:  # (the slot the next storage takes)
            pass
        t = x * x
        s = la.sqrt(t)
        y = s * 2.0 - 1.0
        nodes = [a._storage.node for a in (t, s, y)]
        live.remember(t._storage)  # (remembered again, in this order, from slot `turn` on)
        live.remember(s._storage)
        assert live.partners(toposort([nodes[2]]), [nodes[2]]) == nodes[:2]


def shallow_water(xp, h0, steps):
    """A staggered-grid time loop: three arrays updated in place per step, each step's
    temporaries (more than the ring of live arrays holds over the loop) no array keeps."""
    h = xp.array(h0)
    u, v = xp.zeros((h.shape[0], h.shape[1] + 1)), xp.zeros((h.shape[0] + 1, h.shape[1]))
    for _ in range(steps):
        u[:, 1:-1] -= 0.3 * (h[:, 1:] - h[:, :-1])
        v[1:-1, :] -= 0.3 * (h[1:, :] - h[:-1, :])
        h -= 0.2 * ((u[:, 1:] - u[:, :-1]) + (v[1:, :] - v[:-1, :]))
    return h, u, v, h.sum()


def test_arrays_written_in_a_long_loop_stay_partners(compiled):
    """Arrays written at every step of a loop whose temporaries outnumber the ring (the
    ring's entry of a written array is renewed at each write): forcing h, u, v and h.sum()
    one by one launches the kernels of forcing them together."""
    h0 = np.random.default_rng(1).standard_normal((300, 300))
    want = shallow_water(np, h0, 12)
    for _ in range(2):  # (the first round compiles)
        before = la.cache_info()
        got = shallow_water(la, h0, 12)
        for g, w in zip(got, want):
            assert_like_numpy(g, w)
        one_by_one = _delta(before, "kernels_launched")
        before = la.cache_info()
        la.evaluate(*shallow_water(la, h0, 12))
        together = _delta(before, "kernels_launched")
    assert one_by_one == together
