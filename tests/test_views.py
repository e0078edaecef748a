"""NumPy view and mutation semantics while lazy: differential, including a stateful test that
drives random creations, views, writes, in-place ops and reads on NumPy and lazyarray side by
side and compares every array (values, dtype, shape, and which arrays share memory)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import lazyarray as la


def same(lazy, ref):
    got = np.asarray(lazy)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)


# ---- directed cases --------------------------------------------------------------------


@pytest.fixture(params=["interp", "compiled"])
def mode(request):
    compiled = {"backend": os.environ.get("LAZYARRAY_TEST_BACKEND", "cpu"), "eager_threshold": 0}
    opts = {"backend": "numpy"} if request.param == "interp" else compiled
    with la.options(**opts):
        yield request.param


def both(fn):
    ref = fn(np, np.arange(24.0).reshape(4, 6))
    got = fn(la, la.asarray(np.arange(24.0).reshape(4, 6)))
    for g, r in zip(got, ref, strict=True):
        same(g, r)


def test_write_through_views_is_seen_by_base_and_views(mode):
    def prog(xp, a):
        v = a[1:, ::2]
        t = a.T
        before = a * 1
        v[0, 1] = 100
        t[0] = -1
        a[2] += 7
        a[::-1][0, 0] = 9
        return a, v, t, before

    both(prog)


def test_reshape_views_and_copies_follow_numpy(mode):
    def prog(xp, a):
        r = a.reshape(24)  # a view (contiguous)
        r[5] = 55
        c = a.T.reshape(24)  # NumPy must copy here
        c[0] = -100
        f = a[:, ::2].ravel()  # a copy
        f[1] = 77
        return a, r, c, f

    both(prog)


def test_in_place_operators_and_out(mode):
    def prog(xp, a):
        b = a[1:3]
        b *= 2
        b -= 1
        xp.add(a, 1, out=a)
        xp.multiply(a[0], 3, out=a[0])
        s = a.sum(axis=0)
        return a, b, s

    both(prog)


def test_fill_copyto_put_putmask(mode):
    def prog(xp, a):
        a[0].fill(3)
        xp.copyto(a[1], 4.5)
        xp.copyto(a[2], a[3], where=a[3] > 20)
        xp.put(a, [0, 23], [-1, -2])
        xp.putmask(a, a == 4.5, 0)
        return (a,)

    both(prog)


def test_advanced_index_writes(mode):
    def prog(xp, a):
        a[[0, 0], [1, 1]] += 1  # repeated index: adds once, as NumPy does
        a[a > 20] = 0
        a[:, [0, 2]] = -a[:, [1, 3]]
        return (a,)

    both(prog)


def test_stencil_update_matches_numpy(mode):
    def prog(xp, _):
        g = xp.zeros((12, 10))
        g[0, :] = 1.0
        for _ in range(5):
            g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        return (g,)

    both(prog)


def test_recurrence_loop(mode):
    def prog(xp, _):
        a = xp.ones(30)
        b = xp.asarray(np.linspace(0, 1, 30)) if xp is la else np.linspace(0, 1, 30)
        for i in range(1, 30):
            a[i] = a[i - 1] * 0.9 + b[i]
        return (a,)

    both(prog)


def test_assignment_casting_and_errors():
    a = la.zeros(4, dtype=np.int64)
    a[1] = 2.7  # plain assignment truncates
    assert np.asarray(a).tolist() == [0, 2, 0, 0]
    with pytest.raises(TypeError):
        a += 1.5  # in-place ufunc: same_kind casting
    with pytest.raises(ValueError, match="broadcast"):
        a[:2] = [1, 2, 3]
    with pytest.raises(ValueError, match="read-only"):
        la.broadcast_to(a, (3, 4))[0, 0] = 1
    with pytest.raises(IndexError):
        a[10] = 1


def test_arrays_computed_before_a_write_keep_their_value():
    a = la.asarray(np.arange(5.0))
    b = a * 2  # pending
    c = a[1:]  # a view: sees writes
    d = np.asarray(a + 1)  # materialized
    a[:] = 0
    same(b, np.arange(5.0) * 2)
    same(c, np.zeros(4))
    np.testing.assert_array_equal(d, np.arange(5.0) + 1)


def test_entry_copy_isolates_numpy_source():
    src = np.arange(4.0)
    a = la.asarray(src)
    src[0] = 99
    assert np.asarray(a)[0] == 0


def test_base_flags_and_memory_sharing():
    a = la.asarray(np.zeros((4, 6)))
    v = a[1:, ::2]
    assert a.base is None and v.base is a
    assert la.shares_memory(a, v) and not la.shares_memory(a[0], a[1])
    assert la.may_share_memory(a[:, 0], a[:, 1])
    assert a.flags.c_contiguous and not v.flags.c_contiguous
    assert not la.broadcast_to(a[0], (3, 6)).flags.writeable
    assert not la.shares_memory(a, a.copy())


def test_update_runs_in_place_when_the_old_version_is_dead():
    with la.options(eager_threshold=0):
        g = la.zeros((64, 64))
        g[0, :] = 1.0
        for _ in range(3):
            g[1:-1, 1:-1] = 0.5 * g[1:-1, 1:-1] + g[1:-1, 1:-1] ** 2
        report = la.explain(g)
        # the first write copies the (constant) zeros; each later old version is dead and
        # read only where it is written: in place
        assert report.updates == ["copy", "in place", "in place", "in place"]


def test_stencil_update_builds_the_new_version_in_a_new_buffer():
    with la.options(eager_threshold=0):
        g = la.zeros((64, 64))
        g[0, :] = 1.0
        ref = np.zeros((64, 64))
        ref[0, :] = 1.0
        for _ in range(3):
            g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1])
            ref[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1])
        report = la.explain(g)
        # shifted reads of the old version (read after write): never in place
        assert report.updates == ["copy", "copy", "copy", "copy"]
        np.testing.assert_allclose(np.asarray(g), ref)


def test_update_copies_when_the_old_version_is_still_read():
    with la.options(eager_threshold=0):
        a = la.zeros(100)
        a[0] = 1.0
        held = np.asarray(a)  # the old version is now a buffer the user holds
        a[1] = 2.0
        report = la.explain(a)
        assert report.updates == ["copy"]
        assert np.asarray(a)[:3].tolist() == [1.0, 2.0, 0.0]
        assert held[:3].tolist() == [1.0, 0.0, 0.0]


def test_update_of_a_computed_array_nothing_else_holds_runs_in_place():
    with la.options(eager_threshold=0):
        a = la.zeros(100)
        a[0] = 1.0
        np.asarray(a)  # computed, then dropped: no one else can observe the old version
        a[1] = 2.0
        assert la.explain(a).updates == ["in place"]
        assert np.asarray(a)[:3].tolist() == [1.0, 2.0, 0.0]


# ---- stateful differential test --------------------------------------------------------

SHAPES = [(6,), (4, 5), (3, 4, 2)]
DTYPES = [np.float64, np.int64, np.float32]


def basic_index(shape):
    """A random basic index for `shape`: ints, slices (any step), Ellipsis, None."""
    parts = []
    for n in shape:
        ints = [st.integers(-n, n - 1)] if n else []
        parts.append(st.one_of(
            *ints,
            st.builds(slice, st.none() | st.integers(-n, n), st.none() | st.integers(-n, n),
                      st.none() | st.sampled_from([1, 2, -1, -2, 3])),
        ))
    return st.tuples(*parts).flatmap(
        lambda t: st.sampled_from([t, t[:1], (*t[:1], Ellipsis), (None, *t)]) if t else st.just(t))


class ViewsMachine(RuleBasedStateMachine):
    """Pairs (lazy, numpy) kept in lock step; every step checks all of them."""

    def __init__(self):
        super().__init__()
        self.pairs: list[tuple[la.ndarray, np.ndarray]] = []

    @rule(shape=st.sampled_from(SHAPES), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99))
    def create(self, shape, dtype, seed):
        ref = (np.random.default_rng(seed).integers(-9, 9, size=shape)).astype(dtype)
        self.pairs.append((la.asarray(ref), ref.copy()))

    @precondition(lambda self: self.pairs)
    @rule(data=st.data())
    def view(self, data):
        lz, ref = data.draw(st.sampled_from(self.pairs))
        if not isinstance(ref, np.ndarray):  # a NumPy scalar (one element read): a copy
            return
        kind = data.draw(st.sampled_from(["index", "T", "ravel", "reshape"]))
        if kind == "index":
            key = data.draw(basic_index(ref.shape))
            self.pairs.append((lz[key], ref[key]))
        elif kind == "T":
            self.pairs.append((lz.T, ref.T))
        elif kind == "ravel":
            self.pairs.append((lz.ravel(), ref.ravel()))
        elif ref.size % 2 == 0 and ref.size:
            self.pairs.append((lz.reshape(2, -1), ref.reshape(2, -1)))

    @precondition(lambda self: self.pairs)
    @rule(data=st.data(), value=st.integers(-5, 5))
    def write(self, data, value):
        lz, ref = data.draw(st.sampled_from(self.pairs))
        if not isinstance(ref, np.ndarray) or not ref.flags.writeable or ref.ndim == 0:
            return
        key = data.draw(basic_index(ref.shape))
        lz[key] = value
        ref[key] = value

    @precondition(lambda self: self.pairs)
    @rule(data=st.data(), op=st.sampled_from(["add", "mul", "sub"]), value=st.integers(-3, 3))
    def inplace(self, data, op, value):
        lz, ref = data.draw(st.sampled_from(self.pairs))
        if not isinstance(ref, np.ndarray) or not ref.flags.writeable:
            return
        if op == "add":
            lz += value
            ref += value
        elif op == "mul":
            lz *= value
            ref *= value
        else:
            lz -= value
            ref -= value

    @precondition(lambda self: len(self.pairs) >= 2)
    @rule(data=st.data())
    def assign_from_other(self, data):
        (lz, ref), (lz2, ref2) = data.draw(st.sampled_from(self.pairs)), data.draw(
            st.sampled_from(self.pairs))
        if not isinstance(ref, np.ndarray) or not ref.flags.writeable or ref.ndim == 0:
            return
        try:
            np.broadcast_shapes(ref2.shape, ref.shape)
            if np.broadcast_shapes(ref2.shape, ref.shape) != ref.shape:
                return
        except ValueError:
            return
        if not np.can_cast(ref2.dtype, ref.dtype, "same_kind"):
            return
        ref[...] = ref2
        lz[...] = lz2

    @precondition(lambda self: len(self.pairs) >= 2)
    @rule(data=st.data())
    def assign_expression(self, data):
        """A write whose value is computed (fused with the write), possibly from overlapping
        views of the written array."""
        (lz, ref), (lz2, ref2) = data.draw(st.sampled_from(self.pairs)), data.draw(
            st.sampled_from(self.pairs))
        if not isinstance(ref, np.ndarray) or not ref.flags.writeable or ref.ndim == 0:
            return
        if ref2.shape != ref.shape or not np.can_cast(ref2.dtype, ref.dtype, "same_kind"):
            return
        ref[...] = ref2 * 2 - ref
        lz[...] = lz2 * 2 - lz

    @precondition(lambda self: self.pairs)
    @rule(data=st.data())
    def compute(self, data):
        lz, ref = data.draw(st.sampled_from(self.pairs))
        self.pairs.append((lz * 2 - 1, ref * 2 - 1))

    @invariant()
    def all_arrays_agree(self):
        for lz, ref in self.pairs:
            same(lz, ref)
        arrays = [(a, r) for a, r in self.pairs if isinstance(r, np.ndarray)]
        for i, (a, ra) in enumerate(arrays):
            for b, rb in arrays[i + 1:]:
                assert la.shares_memory(a, b) == np.shares_memory(ra, rb)


ViewsMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=10,
                                          deadline=None)
TestViewsStateful = ViewsMachine.TestCase


class CompiledViewsMachine(ViewsMachine):
    """The same steps with every evaluation compiled: writes fuse with their values' kernels,
    run in place or on copies."""

    def __init__(self):
        super().__init__()
        self._options = la.options(eager_threshold=0)
        self._options.__enter__()

    def teardown(self):
        self._options.__exit__(None, None, None)


CompiledViewsMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=10,
                                                  deadline=None)
TestCompiledViewsStateful = CompiledViewsMachine.TestCase


# ---- .real / .imag of complex arrays: writable views, as in NumPy ---------------------------
PART_PROGRAMS = {
    "write_real_slice": lambda z: z.real.__setitem__(slice(1, 3), 7.0),
    "imul_imag_step": lambda z: z.imag.__setitem__(slice(None, None, 2), z.imag[::2] * 2),
    "assign_real": lambda z: setattr(z, "real", 0.5),
    "assign_imag_array": lambda z: setattr(z, "imag", z.real * 3),
    "view_of_part": lambda z: z.reshape(2, 3).imag.T.__setitem__(0, -1.0),
}


@pytest.mark.parametrize("mode", ["interp", "compiled", "eager"])
@pytest.mark.parametrize("name", list(PART_PROGRAMS))
def test_real_imag_are_writable_views(name, mode):
    ref = np.array([1 + 2j, np.inf + 3j, -4j, np.nan + 1j, 2.5 - 0j, -0.0 + 1e300j])
    opts = {"interp": {"backend": "numpy"}, "compiled": {"eager_threshold": 0},
            "eager": {}}[mode]
    with la.options(**opts):
        z, n = la.asarray(ref), ref.copy()
        r, i = z.real, z.imag  # views taken before the write see it
        nr, ni = n.real, n.imag
        with np.errstate(all="ignore"):
            PART_PROGRAMS[name](z)
            PART_PROGRAMS[name](n)
        for got, want in ((z, n), (r, nr), (i, ni)):
            got = np.asarray(got)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    assert not la.shares_memory(r, i) and la.shares_memory(z, r) and la.shares_memory(z, i)


def test_out_and_inplace_operators_on_parts():
    ref = np.array([1 + 2j, 3 - 1j, -2 + 0.5j])
    z, n = la.asarray(ref), ref.copy()
    la.add(z.real, 1, out=z.real)
    np.add(n.real, 1, out=n.real)
    zi = z.imag
    zi *= -2
    ni = n.imag
    ni *= -2
    np.testing.assert_array_equal(np.asarray(z), n)


def test_parts_of_real_arrays_and_read_only_parents():
    x = la.asarray(np.arange(3.0))
    assert x.real is x  # NumPy: the array itself
    assert not x.imag.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        x.imag[0] = 1.0
    z = la.broadcast_to(la.asarray(np.array([1 + 1j])), (3,))
    with pytest.raises(ValueError, match="read-only"):
        z.real[0] = 2.0


@pytest.mark.parametrize("mode", ["interp", "compiled", "eager"])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float32, np.uint8, np.int16])
def test_dtype_views_are_live_bitcasts(mode, dtype):
    ref = np.array([[1.5, -2.0, np.nan, 0.0], [1e300, -0.0, 7.25, 2.0 ** -1070]])
    opts = {"interp": {"backend": "numpy"}, "compiled": {"eager_threshold": 0},
            "eager": {}}[mode]
    with la.options(**opts):
        x, n = la.asarray(ref), ref.copy()
        v, nv = x.view(dtype), n.view(dtype)
        assert v.shape == nv.shape and v.dtype == nv.dtype
        x[0, 0] = 3.0  # seen through the dtype view
        n[0, 0] = 3.0
        np.testing.assert_array_equal(np.asarray(v), nv)
        v[1, :2] = 0  # and written through it
        nv[1, :2] = 0
        np.testing.assert_array_equal(np.asarray(x), n)
        np.testing.assert_array_equal(np.asarray(v[:, 1:] == v[:, 1:]), nv[:, 1:] == nv[:, 1:])
    with pytest.raises(ValueError, match="last axis must be contiguous"):
        x.T.view(np.float32)


@pytest.mark.parametrize("how", ["dtype_arg", "type_kw", "both", "lazy_ndarray"])
def test_views_as_ndarray_are_live_views(how):
    """`a.view(np.ndarray)` (a type where a dtype goes, as NumPy reads it), `view(type=...)`
    and `view(dtype, type)`: the same live view as NumPy's; another subclass is refused
    clearly, a type that is not an array type is NumPy's ValueError."""
    n = np.arange(6.0).reshape(2, 3)
    x = la.asarray(n.copy())
    call = {"dtype_arg": lambda a, nd: a.view(nd), "type_kw": lambda a, nd: a.view(type=nd),
            "both": lambda a, nd: a.view(np.int64, nd),
            "lazy_ndarray": lambda a, nd: a.view(la.ndarray if a is x else np.ndarray)}[how]
    v, nv = call(x, np.ndarray), call(n, np.ndarray)
    assert type(v) is la.ndarray and v.dtype == nv.dtype and v.shape == nv.shape
    assert v.base is not None and nv.base is not None
    v[0, 0] = 5 if v.dtype.kind == "i" else 5.0
    nv[0, 0] = 5 if nv.dtype.kind == "i" else 5.0
    np.testing.assert_array_equal(np.asarray(x), n)
    with pytest.raises(ValueError, match="sub-type of ndarray"):
        x.view(type=list)
    with pytest.raises(ValueError, match="sub-type of ndarray"):
        n.view(type=list)
    with pytest.raises(NotImplementedError, match="matrix"):
        x.view(np.matrix)


def test_small_views_of_a_large_computed_array_run_on_the_eager_tier():
    """A few elements of a large computed array (`M[5]`, `x[:10]`, one element, a diagonal)
    are read by NumPy at once, no kernel; values, dtypes and view semantics stay NumPy's
    when the base is written afterwards, through itself or through a view."""
    M = np.arange(1_000_000, dtype=np.float64).reshape(1000, 1000) / 7
    ref = M.copy()
    a = la.asarray(M)
    np.asarray(a)
    before = la.cache_info()
    row, s, e = a[5], a[5] * 2, a[5, 5]
    tot, mx = a[:, 3].max(), la.trace(a)
    head, d = a[3, :4] + 0, la.diagonal(a)[:5] * 1
    after = la.cache_info()
    assert after["kernels_launched"] == before["kernels_launched"]
    assert after["eager_ops"] > before["eager_ops"]
    same(s, ref[5] * 2)
    same(e, ref[5, 5])
    same(tot, ref[:, 3].max())
    same(mx, np.trace(ref))
    same(head, ref[3, :4])
    same(d, np.diagonal(ref)[:5])
    view = la.real(a[7, :10])  # a view of a, as np.real of a float array is
    a[5, 0] = 100.0
    ref[5, 0] = 100.0
    view[0] = -7.0  # writes a[7, 0]
    ref[7, 0] = -7.0
    a[3, :] = -1.0
    ref[3, :] = -1.0
    same(a, ref)
    same(row, ref[5])  # the view sees the write
    same(s, M[5] * 2)  # values computed before it do not
    same(head, M[3, :4])
    same(e, M[5, 5])
    with pytest.raises(IndexError, match="out of bounds"):
        a[5, 1000]


@pytest.mark.parametrize("n", [12, 120_000])
def test_setting_shape_is_numpys_in_place_reshape(n):
    """`a.shape = ...` as NumPy: the array takes the shape over the same memory (earlier views
    still see writes through it; an owner stays the owner); a view whose reshape would copy
    raises NumPy's AttributeError; a bad size NumPy's ValueError."""
    def prog(xp):
        out = []
        a = xp.arange(float(n))
        v = a[2:6]
        a.shape = (3, -1)
        a[1, 1] = -7.0
        out += [a.shape, a.base is None, bool(a.flags.owndata), np.asarray(v).copy()]
        for view, shape in ((a.T, (n,)), (a[:, 1:3], (-1,)), (a, (5, 7))):
            try:
                view.shape = shape
                out.append(("ok", view.shape))
            except Exception as e:  # noqa: BLE001 (the type is compared with NumPy's)
                out.append(type(e).__name__)
        d = a[1]
        d.shape = (2, -1)
        d[0, 0] = 100.0
        a.shape = -1
        out += [a.shape, np.asarray(a).copy(), float(a.sum())]
        return out

    want, got = prog(np), prog(la)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        if isinstance(w, np.ndarray):
            assert w.tobytes() == g.tobytes()
        else:
            assert w == g
