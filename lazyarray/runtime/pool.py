"""Large result buffers, reused once nothing refers to them any more.

A fresh large NumPy array is fresh memory from the OS: every page faults on its first write,
which costs a memory-bound kernel about as much as the writing itself. So kernel results of
at least `MIN_BYTES` come from a pool of byte buffers: a result is a view of one, and a
buffer whose only references are the pool's own (no result, no view of it is alive) is handed
out again for the next result of the same size. At most `MAX_BYTES` are kept; beyond that the
oldest buffers leave the pool (their live results keep them as ordinary arrays).

NumPy data entering a graph is copied (`copy`): a large copy goes into a pooled buffer too,
written by all of Numba's threads when the source is contiguous.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
from lazyarray.runtime import threads
from lazyarray.storage import strided_view

MIN_BYTES = 1 << 18  # smaller arrays stay with malloc (docs/performance.md: where it trims)
MAX_BYTES = 512 << 20

_by_size: dict[int, list[np.ndarray]] = {}  # nbytes -> the pooled uint8 buffers of that size
_pool: dict[int, int] = {}  # id of each pooled buffer -> its nbytes, oldest first (the one
#                             reference the pool holds is `_by_size`'s: `engine._refs` counts it)
_held = 0  # bytes in the pool
_lock = threading.Lock()


def _idle_refs() -> int:
    """sys.getrefcount of a pooled buffer nothing else refers to, as `_take` sees it (counts
    differ between Python versions)."""
    probe = [np.empty(1, np.uint8)]
    for buf in probe:
        return sys.getrefcount(buf)
    raise AssertionError


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array, from the pool when it is large."""
    global _held
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    with _lock:
        buf = _take(nbytes)
        if buf is None:
            buf = np.empty(nbytes, np.uint8)
            _pool[id(buf)] = nbytes
            _by_size.setdefault(nbytes, []).append(buf)
            _held += nbytes
            while _held > MAX_BYTES and len(_pool) > 1:
                _evict_oldest()
    return buf.view(dtype).reshape(shape)


def _take(nbytes: int) -> np.ndarray | None:
    for buf in _by_size.get(nbytes, ()):
        if sys.getrefcount(buf) == _IDLE:
            return buf
    return None


def _evict_oldest() -> None:
    """Let the oldest buffer go (its live results keep it as an ordinary array)."""
    global _held
    oldest = next(iter(_pool))
    nbytes = _pool.pop(oldest)
    same = [b for b in _by_size.pop(nbytes) if id(b) != oldest]
    if same:
        _by_size[nbytes] = same
    _held -= nbytes


_IDLE = _idle_refs()


def owns(a: np.ndarray) -> bool:
    """Is `a` the one whole-buffer view of a pooled buffer (as good as owning its data)?"""
    base = a.base
    return (base is not None and base.nbytes == a.nbytes and a.flags.c_contiguous
            and base.dtype == np.uint8 and base.ndim == 1 and id(base) in _pool)


def sole(a: np.ndarray) -> bool:
    """Is `a` the one whole-buffer view of a pooled buffer, and its only holder (writing the
    buffer can change no other array: a NumPy view of `a` would hold the buffer too)?"""
    base = a.base
    return owns(a) and sys.getrefcount(base) == _IDLE + 1  # + this frame's `base`


def clear() -> None:
    global _held
    with _lock:
        _pool.clear()
        _by_size.clear()
        _held = 0


def copy(a: np.ndarray, dtype=None) -> np.ndarray:
    """A C-contiguous copy of the NumPy array `a` that nothing else holds (as
    ``np.array(a, dtype, copy=True, order="C")``): a large one goes into a pooled buffer, and a
    contiguous one of one native dtype is copied by all threads."""
    if type(a) is not np.ndarray or a.nbytes < MIN_BYTES:
        return np.array(a, dtype=dtype, copy=True, order="C")
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    if not (a.dtype.isnative and dtype.isnative and dtype.kind in "biufc"):
        return np.array(a, dtype=dtype, copy=True, order="C")
    out = empty(a.shape, dtype)
    if dtype == a.dtype and a.flags.c_contiguous:
        threads.copy_contiguous(out, a)
    else:  # a cast or a strided source: NumPy's loop (the pooled pages still fault no more)
        np.copyto(out, a, casting="unsafe")
    return out


def place(out: np.ndarray, value: np.ndarray, offset: int, strides) -> np.ndarray:
    """`out` (C-contiguous) with `value` written into the region `offset + sum(i_k *
    strides_k)` of its flat elements; a large region of the same dtype is copied by all
    threads when both are contiguous (`copy`) or made of contiguous rows (a column block).
    A value that may overlap the region (`a[1:] = a[:-1]` in place) takes NumPy's
    assignment, which handles the overlap (the byte loops assume none)."""

    view = strided_view(out.reshape(-1), offset, value.shape, strides)
    if (type(value) is np.ndarray and value.nbytes >= MIN_BYTES and value.dtype == out.dtype
            and value.dtype.isnative and value.dtype.kind in "biufc"
            and not np.may_share_memory(view, value)):
        if view.flags.c_contiguous and value.flags.c_contiguous:
            threads.copy_contiguous(view, value)
            return out
        if threads.copy_rows(view, value):
            return out
    view[...] = value
    return out
