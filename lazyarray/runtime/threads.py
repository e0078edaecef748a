"""Memory kernels on all threads: copies, `nonzero` and `arange`, for the buffer pool and
for graph building. Numba compiles them (cached on disk); NumPy does the small cases and
any case where Numba's threading layer cannot be entered from several threads.

Importing this module is cheap: the kernels (`thread_kernels.py`) load Numba on first use.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np
from numpy.lib.stride_tricks import as_strided


@functools.cache
def _kernels():
    """The kernels module: importing it loads Numba, so the first call does (not the package's
    import)."""
    from lazyarray.runtime import thread_kernels

    return thread_kernels


@functools.cache
def thread_controls():
    """Numba's per-thread get/set of the thread count (the C functions behind
    `numba.get_num_threads`/`set_num_threads`: a fifth of their cost, without the checks),
    or None when the threading layer is not safe to enter from several threads, or Numba is
    not installed (a machine running only the xla backend)."""
    try:
        import numba
        from numba.np.ufunc import parallel
    except ImportError:
        return None

    parallel._launch_threads()
    if numba.threading_layer() not in ("omp", "tbb"):
        return None
    return parallel._get_num_threads, parallel._set_num_threads


def _threaded() -> bool:
    """May the memory kernels run? Only once Numba is loaded (by a kernel): loading it for a
    copy would cost a first run about half a second, more than any copy saves (NumPy's
    loops do the work until then); and only where `thread_controls` allows."""
    return "numba" in sys.modules and thread_controls() is not None


def copy_contiguous(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src for two C-contiguous arrays of one shape and dtype (`runtime.pool.copy`), by a
    byte loop on all threads (NumPy's copy under the workqueue layer: see `one_thread`)."""
    if not _threaded():
        np.copyto(dst, src)
    else:
        _kernels().copy_bytes(src.reshape(-1).view(np.uint8), dst.reshape(-1).view(np.uint8))


def copy_rows(dst: np.ndarray, src: np.ndarray) -> bool:
    """dst[...] = src for two arrays of one shape and dtype whose rows (last axis) are
    contiguous and whose other axes merge into one of positive stride (a column block of a
    C-ordered array: `concatenate(axis=1)`, `roll`, `block`): each row's bytes on all
    threads. False, copying nothing, for any other layout."""
    if not _threaded() or src.ndim < 2:
        return False
    rows = [_row_layout(a) for a in (src, dst)]
    if None in rows:
        return False
    (s_stride, s_flat), (d_stride, d_flat) = rows
    _kernels().copy_row_bytes(s_flat, s_stride, d_flat, d_stride, math.prod(src.shape[:-1]),
                    src.shape[-1] * src.itemsize)
    return True


def _row_layout(a: np.ndarray):
    """(byte stride between rows, the bytes from the first row's start to the last row's
    end as a flat uint8 array) when `a`'s rows are contiguous and its leading axes merge
    into one of a stride no shorter than a row; else None."""
    item, st, shape = a.itemsize, a.strides, a.shape
    width = shape[-1] * item
    if 0 in shape or (st[-1] != item and shape[-1] > 1):
        return None
    lead = [(n, s) for n, s in zip(shape[:-1], st[:-1], strict=True) if n > 1]
    if any(s0 != s1 * n1 for (_, s0), (n1, s1) in zip(lead, lead[1:])):
        return None
    row = lead[-1][1] if lead else width
    if row < width:
        return None
    span = (math.prod(shape[:-1]) - 1) * row + width
    first = as_strided(a, (shape[-1],), (item,))  # the first row, as a plain array
    return row, as_strided(first.view(np.uint8), (span,), (1,))


NONZERO_MIN = 1 << 16  # mask elements below which `nonzero` is NumPy's (one thread)
NONZERO_CHUNK = 1 << 14  # mask elements per chunk of `nonzero`, at least


def nonzero(mask: np.ndarray, empty=np.empty) -> np.ndarray:
    """np.nonzero(mask) for a boolean array of one or more axes, as one (mask.ndim, count)
    int64 array (from `empty`: the runtime passes its buffer pool's): row d the indices
    along axis d of its true elements, in C order. A large
    C-contiguous mask runs on all threads in two passes over chunks of its flat elements:
    each chunk's count, then (from the running sum of the counts, where its indices start)
    each chunk writes its indices, branch-free: every element's index is written at the
    chunk's next position, which advances past true ones only, up to the chunk's last true
    element (so no write lands in a neighbour's range)."""
    if (mask.size < max(NONZERO_MIN, 1) or mask.ndim == 0 or not mask.flags.c_contiguous
            or not _threaded()):
        return np.array(np.nonzero(mask), dtype=np.int64).reshape(mask.ndim, -1)
    flat = mask.reshape(-1).view(np.uint8)
    nch = -(-flat.size // max(NONZERO_CHUNK, -(-flat.size // 4096)))
    size = -(-flat.size // nch // 8) * 8  # (whole words of 8 elements: `_fill_flat`)
    nch = -(-flat.size // size)
    starts = np.zeros(nch + 1, np.int64)
    _kernels().chunk_counts(flat, size, starts[1:])
    np.cumsum(starts, out=starts)
    out = empty((mask.ndim, int(starts[-1])), np.int64)
    if mask.ndim == 1:
        _kernels().fill_flat(flat, flat[:flat.size // 8 * 8].view(np.uint64), size, starts, out[0])
    else:
        _kernels().fill_indices(flat, np.array(mask.shape, np.int64), size, starts, out)
    return out


def arange_int64(start: int, stop: int, step: int, empty=np.empty) -> np.ndarray | None:
    """np.arange(start, stop, step) of Python ints (int64), filled by all threads into a
    buffer from `empty` (the runtime passes its pool's, whose pages fault only once where
    NumPy's fresh array faults every time); None where NumPy should do it (small, a zero
    step, values beyond 2**52, or no thread controls)."""
    if step == 0 or not _threaded() or max(abs(start), abs(stop)) >= 1 << 52:
        return None
    n = len(range(start, stop, step))
    if n < ARANGE_MIN:
        return None
    out = empty((n,), np.int64)
    _kernels().fill_range(out, start, step)
    return out


ARANGE_MIN = 1 << 16  # elements below which `arange` is NumPy's

