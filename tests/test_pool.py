"""Large kernel results come from a pool of buffers, reused only when nothing refers to them."""

from __future__ import annotations

import gc
import threading

import numpy as np

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
