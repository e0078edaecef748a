"""Large kernel results come from a pool of buffers, reused only when nothing refers to them."""

from __future__ import annotations

import gc
import threading
import warnings

import numpy as np
import pytest

import lazyarray as la
from lazyarray.runtime import pool

N = 400_000  # 3.2 MB of float64: pooled


def _buffer(a) -> np.ndarray:
    v = np.asarray(a)
    return v.base if v.base is not None else v


def test_a_dead_result_buffer_is_reused(compiled):
    x = la.asarray(np.arange(N, dtype=np.float64))
    y = la.sin(x) * 2
    first = _buffer(y)
    assert first.nbytes >= pool.MIN_BYTES and id(first) in pool._pool
    first_id = id(first)  # the pool keeps it alive: the id stays its own
    del y, first
    gc.collect()
    z = la.cos(x) + 1  # same size: the idle buffer again
    assert id(_buffer(z)) == first_id
    np.testing.assert_allclose(np.asarray(z), np.cos(np.arange(N)) + 1, rtol=1e-14)


def test_a_live_result_is_never_overwritten(compiled):
    x = la.asarray(np.arange(N, dtype=np.float64))
    keep = [la.sqrt(x) + k for k in range(6)]
    views = [np.asarray(a)[::7] for a in keep]  # views keep their buffers busy too
    more = [la.sqrt(x) * k for k in range(6)]
    la.evaluate(*more)
    ref = np.sqrt(np.arange(N))
    for k, (a, v) in enumerate(zip(keep, views)):
        np.testing.assert_array_equal(np.asarray(a), ref + k)
        np.testing.assert_array_equal(v, (ref + k)[::7])
    for k, a in enumerate(more):
        np.testing.assert_array_equal(np.asarray(a), ref * k)
    bufs = {id(_buffer(a)) for a in keep + more}
    assert len(bufs) == 12  # twelve live results, twelve buffers


def test_threads_never_share_a_buffer(compiled):
    x = la.asarray(np.linspace(0, 1, N))
    ref = np.linspace(0, 1, N)
    errors = []

    def work(k):
        try:
            for i in range(15):
                r = np.asarray(la.exp(x) * (k + i))
                if not np.allclose(r, np.exp(ref) * (k + i), rtol=1e-14):
                    errors.append((k, i))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_the_pool_is_bounded():
    assert pool.MAX_BYTES >= pool.MIN_BYTES
    a = pool.empty((pool.MAX_BYTES // 8 + 1,), np.float64)  # alone beyond the budget
    assert a.shape == (pool.MAX_BYTES // 8 + 1,)
    assert pool._held == sum(pool._pool.values()) <= pool.MAX_BYTES + a.nbytes
    del a
    small = pool.empty((10,), np.float64)
    assert small.flags.owndata  # small arrays are plain NumPy arrays


def test_eviction_keeps_the_size_index_consistent(monkeypatch):
    """The oldest buffers leave first, from both the pool and its per-size lists; the pool's
    byte count stays the sum of what it holds."""
    pool.clear()
    monkeypatch.setattr(pool, "MAX_BYTES", 8 * pool.MIN_BYTES)
    live = []
    for k in range(40):
        n = pool.MIN_BYTES // 8 * (1 + k % 3)  # three sizes, several buffers each
        live.append(pool.empty((n,), np.float64))
        live[-1][:] = k
        held = [b for same in pool._by_size.values() for b in same]
        assert sum(b.nbytes for b in held) == pool._held <= pool.MAX_BYTES + live[-1].nbytes
        assert sorted(map(id, held)) == sorted(pool._pool)
        assert all(pool._pool[id(b)] == b.nbytes for b in held)
    for k, a in enumerate(live):  # evicted or not, every live result keeps its values
        assert (a == k).all()
    del live, held
    gc.collect()
    again = pool.empty((pool.MIN_BYTES // 8,), np.float64)  # an idle buffer of that size
    assert pool.owns(again)
    pool.clear()


# NumPy data entering a graph is copied (`pool.copy`): large copies into pooled buffers.

def _entry_sources():
    r = np.random.default_rng(7)
    big = r.standard_normal(N)
    grid = r.standard_normal((600, 700))
    odd = r.integers(-100, 100, N * 8 + 3).astype(np.int8)  # a byte count not a multiple of 8
    special = big.copy()
    special[:4] = [np.nan, np.inf, -np.inf, 3e12]
    return {
        "float64": (big, None),
        "2-d": (grid, None),
        "int8, odd bytes": (odd, None),
        "complex128": (big + 1j * big[::-1], None),
        "bool": (big > 0, None),
        "fortran order": (np.asfortranarray(grid), None),
        "strided": (big[::3], None),
        "reversed": (big[::-1], None),
        "transposed": (grid.T, None),
        "cast, NaN to int32": (special, np.int32),
        "cast, float32 up": (big.astype(np.float32), np.float64),
        "cast, complex down": (big + 1j, np.float64),
        "big-endian": (big.astype(">f8"), None),
        "empty": (np.empty((0, 500_000)), None),
        "small": (big[:10], None),
    }


_ENTRY = _entry_sources()


@pytest.mark.parametrize("name", list(_ENTRY))
def test_an_entry_copy_is_numpys_copy(name):
    """Same values, dtype, shape and warnings as np.array(x, dtype, copy=True, order="C"),
    C-contiguous, sharing no memory with the source; pooled when large and native."""
    src, dtype = _ENTRY[name]
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        ref = np.array(src, dtype=dtype, copy=True, order="C")
    with warnings.catch_warnings(record=True) as got_w:
        warnings.simplefilter("always")
        got = pool.copy(src, dtype)
    assert [(w.category, str(w.message)) for w in got_w] == [
        (w.category, str(w.message)) for w in want]
    assert got.dtype == ref.dtype and got.shape == ref.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, ref, strict=True)
    assert not np.shares_memory(got, src)
    large = src.nbytes >= pool.MIN_BYTES and got.dtype.isnative and src.dtype.isnative
    assert pool.owns(got) == large


def test_asarray_copies_large_numpy_data_into_the_pool(compiled):
    src = np.arange(N, dtype=np.float64)
    a = la.asarray(src)
    mixed = la.ones(N) + src  # a NumPy operand of an operator is copied the same way
    first = _buffer(a)
    assert id(first) in pool._pool
    first_id = id(first)
    del first
    src[:] = -1  # never seen by the graphs built from it
    np.testing.assert_array_equal(np.asarray(a), np.arange(N))
    np.testing.assert_array_equal(np.asarray(mixed), np.arange(N) + 1)
    del a, mixed
    gc.collect()
    b = la.asarray(src)  # the dead copy's buffer again: no fresh pages
    assert id(_buffer(b)) == first_id
    np.testing.assert_array_equal(np.asarray(b), -np.ones(N))


@pytest.mark.parametrize("make", ["asarray", "kernel result"])
def test_an_eager_write_goes_in_place_into_a_pooled_buffer_only_its_array_holds(compiled, make):
    src = np.arange(N, dtype=np.float64)
    a = la.asarray(src) if make == "asarray" else la.asarray(src[::-1]) * -1 + (N - 1)
    np.asarray(a)  # computed (the NumPy array taken here is dropped at once)
    before = id(_buffer(a))
    a[[0, 5]] = 7.0  # advanced-index write: NumPy's setitem on the current version
    assert id(_buffer(a)) == before  # no copy: nothing else could see the old version
    held = np.asarray(a)  # a NumPy array taken from it keeps the old version alive
    a[[1]] = 9.0
    assert id(_buffer(a)) != before
    assert held[1] == 1.0 and held[0] == 7.0
    ref = np.arange(N, dtype=np.float64)
    ref[[0, 5]], ref[1] = 7.0, 9.0
    np.testing.assert_array_equal(np.asarray(a), ref)


def test_array_keeps_the_layout_of_a_source_as_numpy_does(compiled):
    """`la.array` copies as np.array (order "K"): a Fortran-ordered source hands out a
    Fortran-ordered array; a C-ordered one a pooled copy."""
    grid = np.arange(N, dtype=np.float64).reshape(400, 1000)
    fortran = np.asfortranarray(grid)
    got = np.asarray(la.array(fortran))
    assert got.flags.f_contiguous == np.array(fortran).flags.f_contiguous == True  # noqa: E712
    np.testing.assert_array_equal(got, grid)
    assert pool.owns(np.asarray(la.array(grid)))


# ---- writes that tile their base: no fill, copies on all threads ---------------------------

_BIG = (300, 200)  # 480 KB of float64: copied by the parallel loops


def _joined(xp, a, b, how):
    return {
        "concatenate": lambda: xp.concatenate([a, b]),
        "concatenate axis 1": lambda: xp.concatenate([a, b], axis=1),
        "concatenate axis -1 of 3-d": lambda: xp.concatenate(
            [a.reshape(30, 10, 200), b.reshape(30, 10, 200)], axis=-1),
        "stack axis 1": lambda: xp.stack([a, b], axis=1),
        "block": lambda: xp.block([[a, b], [b, a]]),
        "hstack of views": lambda: xp.hstack([a[::2], b[1::2, ::-1]]),
        "roll axis 1": lambda: xp.roll(a, 7, axis=1),
        "roll flat": lambda: xp.roll(a, -3),
        "pad": lambda: xp.pad(a, ((2, 3), (4, 1))),
        "pad value": lambda: xp.pad(a, 2, constant_values=-1.5),
        "empty part": lambda: xp.concatenate([a[:0], b, a[:, :0].reshape(0, 200)]),
        "int cast": lambda: xp.concatenate([a.astype(np.int32), b.astype(np.int16)], axis=1),
    }[how]()


@pytest.mark.parametrize("how", ["concatenate", "concatenate axis 1", "concatenate axis -1 of 3-d",
                                 "stack axis 1", "block", "hstack of views", "roll axis 1",
                                 "roll flat", "pad", "pad value", "empty part", "int cast"])
def test_joins_match_numpy_and_leave_no_fill(compiled, how):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(_BIG), rng.standard_normal(_BIG)
    want = _joined(np, a, b, how)
    got = _joined(la, la.asarray(a), la.asarray(b), how)
    report = la.explain(got)
    out = np.asarray(got)
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)
    if how in ("pad", "pad value"):  # one write into the constant: its border copied
        assert report.updates == ["copy"]
    else:  # the first write of the chain leaves its buffer unfilled, the rest go in place
        assert report.updates[0] == "new" and set(report.updates[1:]) <= {"in place", "new"}


def test_a_chain_whose_later_write_reads_the_new_version_fills_it_first(compiled):
    """`a[5:] = a[:5] * 2` reads the first write's result outside its region: the chain does
    not tile the base unread, so the zeros are copied (a fill left out would read garbage)."""
    a = la.zeros(2 * N)
    a[:N] = 1.0
    a[N:] = a[:N] * 2 + a[N:]
    report = la.explain(a)
    assert "new" not in report.updates
    want = np.concatenate([np.ones(N), np.full(N, 2.0)])
    np.testing.assert_array_equal(np.asarray(a), want)


def test_covering_updates_needs_disjoint_boxes():
    """Two writes of the same half do not tile the base even though their sizes add up."""
    from lazyarray.runtime.buffers import _tiles

    assert _tiles([[(0, 1, 2), (0, 1, 3)], [(2, 1, 2), (0, 1, 3)]], (4, 3))
    assert not _tiles([[(0, 1, 2), (0, 1, 3)], [(0, 1, 2), (0, 1, 3)]], (4, 3))
    assert not _tiles([[(0, 1, 2), (0, 1, 3)]], (4, 3))
    assert _tiles([[(0, 1, 4), (0, 1, 1)], [(0, 1, 4), (1, 1, 2)]], (4, 3))


@pytest.mark.parametrize("layout", ["rows", "3-d merged", "single row", "reversed rows",
                                    "strided rows", "overlapping", "0-size"])
def test_copy_rows_copies_exactly_the_layouts_it_takes(layout):
    from lazyarray.runtime import threads

    rng = np.random.default_rng(3)
    big = rng.integers(0, 1 << 30, (40, 6, 50)).astype(np.int64)
    src, region, taken = {
        "rows": (big[:, 0, :], lambda d: d[:, 0, 10:60], True),
        "3-d merged": (big, lambda d: d[:, :, 5:55], True),
        "single row": (big[:1, 0, :], lambda d: d[:1, 0, :50], True),
        "reversed rows": (big[::-1, 0, :], lambda d: d[:, 0, :50], False),
        "strided rows": (big[:, 0, ::2], lambda d: d[:, 0, :25], False),
        "overlapping": (big[:, 0, :],
                        lambda d: np.lib.stride_tricks.as_strided(d, (40, 50), (8, 8)), False),
        "0-size": (big[:0, 0, :], lambda d: d[:0, 0, :50], False),
    }[layout]
    dst_base = np.zeros((40, 6, 80), np.int64)
    done = threads.copy_rows(region(dst_base), src)
    if threads.thread_controls() is None:  # (the workqueue layer: NumPy copies instead)
        assert not done
        return
    assert done == taken
    want = np.zeros_like(dst_base)
    if taken:
        region(want)[...] = src
    np.testing.assert_array_equal(dst_base, want)  # the region, and nothing outside it


def test_fused_writes_that_tile_a_new_array_leave_it_unfilled(compiled):
    x, y = np.linspace(-1, 1, N), np.arange(N, dtype=np.float64)
    a = la.zeros(2 * N)
    a[:N] = la.asarray(x) * 2
    a[N:] = la.sqrt(la.asarray(y)) + 1
    report = la.explain(a)
    assert report.updates == ["new", "in place"] and report.num_kernels == 2
    np.testing.assert_array_equal(np.asarray(a), np.concatenate([x * 2, np.sqrt(y) + 1]))


def test_fallbacks_read_computed_arrays_in_place_and_never_write_them():
    """A NumPy function run on a computed array gets a writeable alias of its memory (NumPy's
    C functions copy read-only inputs first); the array keeps its values, and what the
    function hands back never aliases it."""
    k = np.random.default_rng(5).integers(0, 50, N)
    a = la.asarray(k)
    np.asarray(a)
    np.testing.assert_array_equal(np.asarray(la.bincount(a)), np.bincount(k))
    before = la.cache_info()["fallbacks"]
    parts = (la.trim_zeros(a),)
    assert la.cache_info()["fallbacks"] == before + 1  # (NumPy's trim_zeros: a view of its input)
    assert not any(np.shares_memory(np.asarray(p), np.asarray(a)) for p in parts)
    mutated = la.asarray(k.copy())
    np.asarray(mutated)
    la.random.default_rng(0).shuffle(mutated)  # a function that writes its argument: a copy
    assert sorted(np.asarray(mutated).tolist()) == sorted(k.tolist())
    np.testing.assert_array_equal(np.asarray(a), k)
    assert not np.asarray(a).flags.writeable


@pytest.mark.parametrize("shift", ["right", "left", "columns"])
def test_placing_a_value_over_itself_copies_through_a_buffer(shift):
    """`pool.place` of a value that overlaps its own destination region (a shift of the same
    buffer, as an in-place `a[1:] = a[:-1]` would be) gives NumPy's assignment's result."""
    base = np.arange(2 * N, dtype=np.float64)
    want = base.copy()
    flat = base.reshape(-1)
    if shift == "right":
        value, offset, strides = flat[:-1], 1, (1,)
        want[1:] = want[:-1]
    elif shift == "left":
        value, offset, strides = flat[1:], 0, (1,)
        want[:-1] = want[1:]
    else:
        rows = base.reshape(800, 1000)
        value, offset, strides = rows[:, :-1], 1, (1000, 1)
        want.reshape(800, 1000)[:, 1:] = want.reshape(800, 1000)[:, :-1]
    pool.place(base, value, offset, strides)
    np.testing.assert_array_equal(base, want)
