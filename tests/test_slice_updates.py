"""Slice updates in place: a write touches only its region when what still reads the old
version reads elsewhere (`runtime/buffers.hazard`, `_later_reads_elsewhere`), and copies
whenever a reader overlaps it. Values are checked against NumPy bit for bit; the counters
say which writes ran in place."""

import warnings

import numpy as np
import pytest

import lazyarray as la


def thomas(xp, a, b, c, d):
    """A tridiagonal solve along the last axis, as climate codes write it."""
    nz = a.shape[-1]
    cp, dp, x = xp.zeros_like(a), xp.zeros_like(a), xp.zeros_like(a)
    cp[..., 0] = c[..., 0] / b[..., 0]
    dp[..., 0] = d[..., 0] / b[..., 0]
    for k in range(1, nz):
        denom = b[..., k] - a[..., k] * cp[..., k - 1]
        cp[..., k] = c[..., k] / denom
        dp[..., k] = (d[..., k] - a[..., k] * dp[..., k - 1]) / denom
    x[..., -1] = dp[..., -1]
    for k in range(nz - 2, -1, -1):
        x[..., k] = dp[..., k] - cp[..., k] * x[..., k + 1]
    return x


@pytest.mark.parametrize("errors", ["ignore", "default"])
@pytest.mark.parametrize("shape", [(48, 40, 12), (200, 9)])
def test_tridiagonal_solve_copies_no_buffer(shape, errors):
    """Every slice update of the solve runs in place (the pending reader of column k - 1,
    and the kernel's own read of it, are outside column k); the three first writes fill new
    buffers from zeros; values are NumPy's. Under NumPy's default error state too: an update
    owing exact warnings re-reads only what lies outside the region it wrote."""
    r = np.random.default_rng(0)
    a, c, d = (r.uniform(-1, 1, shape) for _ in range(3))
    b = 4 + r.uniform(0, 1, shape)
    want = thomas(np, a, b, c, d)
    state = {"all": "ignore"} if errors == "ignore" else {  # NumPy's default error state
        "divide": "warn", "over": "warn", "invalid": "warn", "under": "ignore"}
    with la.options(eager_threshold=0), np.errstate(**state):
        before = la.cache_info()
        got = np.asarray(thomas(la, *map(la.asarray, (a, b, c, d))))
        after = la.cache_info()
    nz = shape[-1]
    assert got.tobytes() == want.tobytes()
    count = {k: after[k] - before[k] for k in ("updates_copied", "updates_in_place",
                                                "updates_filled")}
    assert count == {"updates_copied": 0, "updates_in_place": 3 * nz - 3, "updates_filled": 3}


@pytest.mark.parametrize("step", [1, -1, 2])
def test_overlapping_reader_still_sees_the_old_version(step):
    """A pending reader of a region that the write overlaps keeps the old values (the write
    copies); one reading a disjoint region (any step, reversed too) lets it run in place."""
    base = np.arange(60_000.0).reshape(200, 300)
    with la.options(eager_threshold=0), np.errstate(all="ignore"):
        x = la.asarray(base) * 1.0
        xn = base * 1.0
        overlap = x[:, 10:20:step] * 2.0 if step > 0 else x[:, 19:9:-1] * 2.0
        apart = x[:, 100:150:abs(step)] + 1.0
        x[:, 15] = -1.0
        got_over, got_apart = np.asarray(overlap), np.asarray(apart)
        xs = np.asarray(x)
    want_over = xn[:, 10:20:step] * 2.0 if step > 0 else xn[:, 19:9:-1] * 2.0
    xn2 = xn.copy()
    xn2[:, 15] = -1.0
    assert got_over.tobytes() == want_over.tobytes()
    assert got_apart.tobytes() == (xn[:, 100:150:abs(step)] + 1.0).tobytes()
    assert xs.tobytes() == xn2.tobytes()


def test_shifted_self_assignment_reads_before_it_writes():
    """`x[1:] = x[1:] - x[:-1]` reads the region it writes at other elements: a hazard, so
    the write goes to a new version (NumPy's values); `x[::2] = x[1::2]` reads elsewhere
    only: in place."""
    base = np.linspace(0, 1, 100_000)
    with la.options(eager_threshold=0), np.errstate(all="ignore"):
        x = la.asarray(base) * 1.0
        x[1:] = x[1:] - x[:-1]
        y = la.asarray(base) * 1.0
        before = la.cache_info()["updates_in_place"]
        y[::2] = y[1::2] * 3.0
        ys = np.asarray(y)
        inplace = la.cache_info()["updates_in_place"] - before
        xs = np.asarray(x)
    xn = base * 1.0
    xn[1:] = xn[1:] - xn[:-1]
    yn = base * 1.0
    yn[::2] = yn[1::2] * 3.0
    assert xs.tobytes() == xn.tobytes() and ys.tobytes() == yn.tobytes()
    assert inplace == 1


@pytest.mark.parametrize("order", ["x first", "y first"])
def test_a_buffer_shared_by_versions_keeps_what_older_readers_read(order):
    """In one evaluation: `x[:, 1] = ...` runs in place while `y`'s write still reads column 0
    of the version before; a later write into column 0 of `x` must then not overwrite that
    buffer in place before `y`'s write reads it (the older version's reader reads it there).
    Evaluated together, in either order."""
    a = np.arange(400.0)

    def prog(xp):
        x, y = xp.zeros((400, 300)), xp.zeros((400, 300))
        x[:, 0] = xp.asarray(a) + 1.0
        y[:, 0] = xp.asarray(a) + 2.0
        d = x[:, 0] * 3.0
        x[:, 1] = d + 1.0
        y[:, 1] = d * 2.0
        x[:, 0] = -5.0
        return x, y

    want = prog(np)
    with la.options(eager_threshold=0), np.errstate(all="ignore"):
        x, y = prog(la)
        la.evaluate(*((x, y) if order == "x first" else (y, x)))
        got = np.asarray(x), np.asarray(y)
    assert got[0].tobytes() == want[0].tobytes()
    assert got[1].tobytes() == want[1].tobytes()


def _warned(xp, a):
    """Updates that divide by zero: one reads only outside its region (in place), one reads
    its own region (`+=`, copied: its exact warnings need the old values)."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cp = xp.zeros(a.shape)
        cp[..., 0] = 1.0
        for k in range(1, a.shape[-1]):
            cp[..., k] = 1.0 / (a[..., k] * cp[..., k - 1])
            cp[..., k] += cp[..., k] * a[..., k]
        out = np.asarray(cp)
    return out, {str(w.message) for w in caught}


def test_updates_in_place_under_warn_give_numpys_warnings():
    a = np.ones((40, 40, 8))
    a[..., 3] = 0.0
    a[5, 5, 6] = -0.0
    with np.errstate(divide="warn", under="ignore"):
        want, want_warned = _warned(np, a)
    with la.options(eager_threshold=0), np.errstate(divide="warn", under="ignore"):
        before = la.cache_info()
        got, warned = _warned(la, la.asarray(a))
        after = la.cache_info()
    assert got.tobytes() == want.tobytes()
    assert warned == want_warned and want_warned
    assert after["updates_in_place"] - before["updates_in_place"] >= 7


def test_self_reading_update_runs_in_place_and_warns_as_numpy():
    """`x[r] *= s` reads the very elements it writes: in place under NumPy's default error
    state too (the region's old values are kept aside, not the buffer copied); a launch
    that flags re-reads them and warns exactly as NumPy does, values NumPy's."""
    base = np.linspace(1.0, 2.0, 90_000).reshape(300, 300)
    base[7, 40] = 1e300
    for scale, warns in ((3.0, set()), (1e10, {"overflow encountered in multiply"})):
        with np.errstate(over="warn", under="ignore"):
            want, want_warned = _self_reading(np, base, scale)
        with la.options(eager_threshold=0), np.errstate(over="warn", under="ignore"):
            before = la.cache_info()
            got, warned = _self_reading(la, base, scale)
            after = la.cache_info()
        assert got.tobytes() == want.tobytes()
        assert warned == want_warned == warns
        assert after["updates_copied"] - before["updates_copied"] == 0
        assert after["updates_in_place"] - before["updates_in_place"] >= 2
        assert (after["fp_rechecks"] - before["fp_rechecks"] > 0) == bool(warns)


def _self_reading(xp, base, scale):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = xp.asarray(base) * 1.0
        x[:, 10:200] *= scale
        x[5:, :] += x[5:, :] * 0.5
        out = np.asarray(x)
    return out, {str(w.message) for w in caught}


def test_row_segment_loop_writes_numpys_way_into_the_buffer():
    """A loop writing one small row segment per step into a computed 64K array runs NumPy's
    setitem into the array's own buffer (`eager_writes`), no pending update, no kernel;
    values bit for bit NumPy's."""
    from lazyarray.tools.corpus import syrk  # (PolyBench's syrk, loops over rows and k)

    r = np.random.default_rng(1)
    c, a = r.random((256, 256)), r.random((256, 4))
    want = syrk.run(np, c, a)
    before = la.cache_info()
    got = syrk.run(la, c, la.asarray(a))
    assert got._st.node.op == "buffer"  # nothing pending
    after = la.cache_info()
    assert np.asarray(got).tobytes() == want.tobytes()
    assert after["eager_writes"] - before["eager_writes"] == 256 * 5
    assert after["kernels_launched"] - before["kernels_launched"] == 0
    assert after["updates_fused"] - before["updates_fused"] == 0


def test_row_sweep_over_a_fill_its_first_value_read_writes_in_place():
    """Gauss-Seidel by rows into `zeros_like`: the first row's value reads the fill before
    any write, which evaluates the fill as a broadcast of its constant (a view nothing may
    write); the write then gives the storage a private buffer, once, and every row after is
    NumPy's setitem into it (`eager_writes`), not a pending update per row."""
    from lazyarray.tools.corpus import gauss_seidel

    f, sweeps = gauss_seidel.make(gauss_seidel.SIZES["64K"], 3)
    want_u, want_r = gauss_seidel.run(np, f, sweeps)
    before = la.cache_info()
    u, r = gauss_seidel.run(la, f, sweeps)
    after = la.cache_info()
    assert np.asarray(u).tobytes() == want_u.tobytes()
    np.testing.assert_allclose(float(r), want_r, rtol=1e-12)
    assert after["eager_writes"] - before["eager_writes"] == 254 * sweeps
    for counter in ("updates_fused", "updates_in_place", "updates_copied"):
        assert after[counter] - before[counter] == 0, counter


def test_region_write_keeps_what_earlier_readers_read():
    """A small write into a computed array goes in place only when nothing else sees the
    version it replaces: a pending expression, a view's pending expression, a NumPy array
    handed out keep the old values, as in NumPy's order of operations."""
    base = np.arange(40_000.0).reshape(200, 200)
    x, xn = la.array(base), base.copy()
    pending = x * 2.0  # reads the version before the write
    row = x[3]
    pending_row = row[:5] + 1.0
    x[3, :5] = -1.0
    xn_pending, xn_row = xn * 2.0, xn[3, :5] + 1.0
    xn[3, :5] = -1.0
    assert np.array_equal(np.asarray(pending), xn_pending)
    assert np.array_equal(np.asarray(pending_row), xn_row)
    assert np.array_equal(np.asarray(row[:6]), xn[3, :6])  # the view sees the write
    held = np.asarray(x)  # (a read-only NumPy view of the current version)
    copy_before = held.copy()
    x[4, :3] = 7.0
    assert np.array_equal(held, copy_before)
    xn[4, :3] = 7.0
    assert np.array_equal(np.asarray(x), xn)
    x[5, :4] = x[5, :4]  # NumPy writes what is there
    x[6, 1:5] = x[6, :4]  # overlapping: NumPy reads before it writes
    xn[6, 1:5] = xn[6, :4]
    assert np.array_equal(np.asarray(x), xn)


def test_element_loop_computes_each_value_at_its_write():
    """`cov[i, j] = np.sum(x[:, i] * x[:, j])` over a pending `x` (`x -= mean`): each write
    computes its small value at once, as NumPy does at that line (the first one computing
    `x` with it), so the loop never grows one graph of all its iterations; a constant fill
    (`zeros`) gets its buffer at the first write. Values NumPy's, warnings at the write."""
    data = np.random.default_rng(2).random((2048, 24))

    def cov(xp, d):
        x = xp.array(d)
        x -= x.mean(axis=0)
        out = xp.zeros((24, 40_000)) if xp is la else np.zeros((24, 40_000))
        for i in range(24):
            for j in range(i, 24):
                out[i, j] = xp.sum(x[:, i] * x[:, j]) / (len(d) - 1)
        return out

    want = cov(np, data)
    before = la.cache_info()
    got = cov(la, data)
    assert got._st.node.op == "buffer"
    after = la.cache_info()
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-17)  # (sums: rounding)
    assert after["eager_writes"] - before["eager_writes"] == 24 * 25 // 2
    assert after["materializations"] - before["materializations"] <= 2
    out = la.zeros((200, 200))
    value = 1.0 / (la.asarray(np.zeros((300, 1000))) * 2.0).sum(axis=1)[:3]  # pending
    assert value._st is not None and value._st.node.op != "buffer"
    with np.errstate(divide="warn"), pytest.warns(RuntimeWarning, match="divide by zero"):
        out[3, 4:7] = value
    assert value._st.node.op == "buffer" and np.isinf(np.asarray(out)[3, 4:7]).all()


def test_small_write_into_a_pending_array_stays_lazy_and_right():
    """A small write into an array whose value is a pending expression (not a fill) stays a
    lazy update; readers of either version see NumPy's values."""
    a = np.random.default_rng(3).random((300, 300))
    u = la.asarray(a) * 2.0
    un = a * 2.0
    older = u[1:3] + 0.0
    small = (la.asarray(a) * 3.0)[0, :3]  # pending: a write into pending `u` leaves it so
    u[0, 3:6] = small
    assert small._storage.node.op != "buffer"
    u[1, :3] = -1.0
    u[2, 5:9] += u[2, :4]
    olderes = un[1:3] + 0.0
    un[0, 3:6] = (a * 3.0)[0, :3]
    un[1, :3] = -1.0
    un[2, 5:9] += un[2, :4]
    assert np.array_equal(np.asarray(older), olderes)
    assert np.array_equal(np.asarray(u), un)


def _largest_kernel(report) -> int:
    """Instructions in the largest fused computation of an evaluation's optimized module."""
    return max((len(i.value.instrs) for i in report.after.instrs if i.opcode == "fusion"),
               default=0)


@pytest.mark.parametrize("steps", [3, 9])
def test_time_steps_reading_slices_of_the_last_step_copy_no_step_into_the_next(steps):
    """Shallow-water steps (`u[:, 1:-1] -= c * (h[:, 1:] - h[:, :-1])`, the same for `v`,
    then `h -= ...` from both): a slice of the last step's `h` read by several kernels reads
    it computed once, so no kernel grows with the number of steps and the velocity updates
    run in place (before, each step's `h` was copied into every later kernel through its
    slices, and every update copied its whole array). Values are NumPy's."""
    from lazyarray.tools.corpus import shallow_water as sw

    h0, _ = sw.make({"n": 24, "steps": steps}, 0)
    want = sw.run(np, h0, steps)
    with la.options(eager_threshold=0):  # (24 x 24: lazy, as at any size)
        got = sw.run(la, la.asarray(h0), steps)
        sizes = _largest_kernel(la.explain(*got[:3]))
        la.reset_stats()
        la.evaluate(*got)
    info = la.cache_info()
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-15)
    assert sizes <= 40, sizes  # (38 at 3 steps and at 9; before: 62 and 206)
    assert info["updates_copied"] <= 6 and info["updates_in_place"] >= 2 * steps - 4, info



def _writes(la_x, np_x, key, value):
    """`x[key] = value` on both: (NumPy's exception type or None, the eager writes it took,
    the warning categories of each)."""
    before = la.cache_info()["eager_writes"]
    errors, caught = [], []
    for x in (la_x, np_x):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                x[key] = value if x is np_x or not isinstance(value, np.ndarray) \
                    else la.asarray(value) * 1  # (a computed value of lazyarray's)
                errors.append(None)
            except Exception as exc:  # noqa: BLE001 - NumPy's type is the expectation
                errors.append(type(exc))
        caught.append(sorted(m.category.__name__ for m in w))
    assert errors[0] == errors[1], errors
    return errors[0], la.cache_info()["eager_writes"] - before, caught


@pytest.mark.parametrize("key", [(3, slice(1, -1)), 3, slice(2, 5), (2, 4),
                                 (-1, slice(None, None, -2)), (slice(1, 3), slice(0, 7, 3))])
def test_a_small_write_into_a_computed_array_is_numpys_setitem_in_place(key):
    """The short path of a loop's row or element write (`u[i, 1:-1] = row`, `x[i] = v`):
    NumPy's setitem into the buffer of a computed array whose version nothing observes,
    with NumPy's values; a view taken before sees it; a pending reader keeps the old values."""
    rng = np.random.default_rng(3)
    base = rng.random((8, 9))
    value = np.asarray(rng.random((8, 9))[key]) * 10
    x, ref = la.asarray(base) + 0.0, base + 0.0
    np.asarray(x)  # (computed)
    view = x[1:, ::2]
    err, eager, _ = _writes(x, ref, key, value)
    assert err is None and eager == 1
    np.testing.assert_array_equal(np.asarray(x), ref)
    np.testing.assert_array_equal(np.asarray(view), ref[1:, ::2])
    pending, expected = x * 2.0, ref * 2.0  # (reads this version)
    err, eager, _ = _writes(x, ref, key, value + 1.0)
    assert err is None and eager == 0  # (the version is read: not written in place)
    np.testing.assert_array_equal(np.asarray(pending), expected)
    np.testing.assert_array_equal(np.asarray(x), ref)


@pytest.mark.parametrize("case", ["read-only", "bad index", "bad shape", "nan into ints",
                                  "float into ints", "complex into floats"])
def test_a_small_write_raises_and_casts_as_numpy(case):
    """The short path's errors and casts are NumPy's: a read-only array, an index out of
    bounds, a shape that does not broadcast, NaN into an integer array raise NumPy's
    exception type; a float into ints truncates; a complex into floats drops the imaginary
    part, with NumPy's warning."""
    dtype = np.int64 if "ints" in case else np.float64
    ref = np.arange(20, dtype=dtype).reshape(4, 5)
    x = la.asarray(ref) + 0
    np.asarray(x)
    ref = ref + 0
    key, value = (1, slice(0, 3)), np.array([7.0, 8.0, 9.0])
    if case == "read-only":
        x.setflags(write=False)
        ref.setflags(write=False)
    elif case == "bad index":
        key = (9, slice(0, 3))
    elif case == "bad shape":
        value = np.array([1.0, 2.0])
    elif case == "nan into ints":
        value, key = np.nan, (1, 2)
    elif case == "float into ints":
        value = np.array([7.9, -8.9, 9.5])
    elif case == "complex into floats":
        value = np.array([1 + 2j, 3 - 1j, 0.5j])
    err, _, (la_warned, np_warned) = _writes(x, ref, key, value)
    assert (err is None) == (case in ("float into ints", "complex into floats")), err
    assert la_warned == np_warned
    if err is None:
        np.testing.assert_array_equal(np.asarray(x), ref)
