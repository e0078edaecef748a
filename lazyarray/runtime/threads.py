"""Memory kernels on all threads: copies, `nonzero` and `arange`, for the buffer pool and
for graph building. Numba compiles them (cached on disk); NumPy does the small cases and
any case where Numba's threading layer cannot be entered from several threads.

Importing this module loads Numba: the pool and graph building import it on first use.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numpy.lib.stride_tricks import as_strided


@functools.cache
def thread_controls():
    """Numba's per-thread get/set of the thread count (the C functions behind
    `numba.get_num_threads`/`set_num_threads`: a fifth of their cost, without the checks),
    or None when the threading layer is not safe to enter from several threads."""
    from numba.np.ufunc import parallel

    parallel._launch_threads()
    if numba.threading_layer() not in ("omp", "tbb"):
        return None
    return parallel._get_num_threads, parallel._set_num_threads



def copy_contiguous(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src for two C-contiguous arrays of one shape and dtype (`runtime.pool.copy`), by a
    byte loop on all threads (NumPy's copy under the workqueue layer: see `one_thread`)."""
    if thread_controls() is None:
        np.copyto(dst, src)
    else:
        _copy_bytes(src.reshape(-1).view(np.uint8), dst.reshape(-1).view(np.uint8))


@numba.njit(parallel=True, nogil=True, cache=True)
def _copy_bytes(src, dst):
    for i in numba.prange(src.size):
        dst[i] = src[i]


def copy_rows(dst: np.ndarray, src: np.ndarray) -> bool:
    """dst[...] = src for two arrays of one shape and dtype whose rows (last axis) are
    contiguous and whose other axes merge into one of positive stride (a column block of a
    C-ordered array: `concatenate(axis=1)`, `roll`, `block`): each row's bytes on all
    threads. False, copying nothing, for any other layout."""
    if thread_controls() is None or src.ndim < 2:
        return False
    rows = [_row_layout(a) for a in (src, dst)]
    if None in rows:
        return False
    (s_stride, s_flat), (d_stride, d_flat) = rows
    _copy_row_bytes(s_flat, s_stride, d_flat, d_stride, math.prod(src.shape[:-1]),
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


@numba.njit(parallel=True, nogil=True, cache=True)
def _copy_row_bytes(src, s_row, dst, d_row, rows, width):
    for r in numba.prange(rows):
        a, b = np.uint64(r * s_row), np.uint64(r * d_row)
        for k in range(np.uint64(width)):
            dst[b + k] = src[a + k]


NONZERO_MIN = 1 << 16  # mask elements below which `nonzero` is NumPy's (one thread)
NONZERO_CHUNK = 1 << 14  # mask elements per chunk of `nonzero`, at least
SPARSE = 64  # a chunk with fewer true elements than 1 in SPARSE: a branch per element


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
            or thread_controls() is None):
        return np.array(np.nonzero(mask), dtype=np.int64).reshape(mask.ndim, -1)
    flat = mask.reshape(-1).view(np.uint8)
    nch = -(-flat.size // max(NONZERO_CHUNK, -(-flat.size // 4096)))
    size = -(-flat.size // nch // 8) * 8  # (whole words of 8 elements: `_fill_flat`)
    nch = -(-flat.size // size)
    starts = np.zeros(nch + 1, np.int64)
    _chunk_counts(flat, size, starts[1:])
    np.cumsum(starts, out=starts)
    out = empty((mask.ndim, int(starts[-1])), np.int64)
    if mask.ndim == 1:
        _fill_flat(flat, flat[:flat.size // 8 * 8].view(np.uint64), size, starts, out[0])
    else:
        _fill_indices(flat, np.array(mask.shape, np.int64), size, starts, out)
    return out


@numba.njit(parallel=True, nogil=True, cache=True)
def _chunk_counts(flat, size, counts):
    # (unsigned indices, here and below: no negative-index wraparound test, which kept LLVM
    # from vectorizing the count)
    for c in numba.prange(counts.size):
        n = 0
        for i in range(np.uint64(c * size), np.uint64(min(c * size + size, flat.size))):
            n += flat[i] != 0
        counts[c] = n


@numba.njit(inline="always")
def _last_true(flat, lo, hi):
    last = hi - 1
    while last >= lo and flat[np.uint64(last)] == 0:
        last -= 1
    return last


@numba.njit(parallel=True, nogil=True, cache=True)
def _fill_flat(flat, words, size, starts, out):
    for c in numba.prange(starts.size - 1):
        lo = c * size
        pos = np.uint64(starts[c])
        found = starts[c + 1] - starts[c]
        hi = min(lo + size, flat.size)
        if found * SPARSE < hi - lo:  # few: a branch per 8 elements (`words`), rarely taken
            for k in range(lo // 8, hi // 8):
                if words[np.uint64(k)]:
                    for i in range(8 * k, 8 * k + 8):
                        if flat[np.uint64(i)]:
                            out[pos] = i
                            pos += np.uint64(1)
            for i in range(hi // 8 * 8, hi):
                if flat[np.uint64(i)]:
                    out[pos] = i
                    pos += np.uint64(1)
        elif found:
            for i in range(lo, _last_true(flat, lo, hi) + 1):
                out[pos] = i
                pos += np.uint64(flat[np.uint64(i)] != 0)


@numba.njit(parallel=True, nogil=True, cache=True)
def _fill_indices(flat, shape, size, starts, out):
    """`_fill_flat` for a mask of 2 or more axes: out[d] the indices along axis d. The index
    along the last axis counts up with the element, the others move when it wraps."""
    nd = shape.size
    last = nd - 1
    width = shape[last]
    for c in numba.prange(starts.size - 1):
        lo = c * size
        pos = np.uint64(starts[c])
        found = starts[c + 1] - starts[c]
        hi = min(lo + size, flat.size)
        if found:
            at = np.empty(nd, np.int64)  # the N-d index of element lo
            rest = lo
            for d in range(last, -1, -1):
                at[d] = rest % shape[d]
                rest //= shape[d]
            j = at[last]
            row = at[0]
            end = hi if found * SPARSE < hi - lo else _last_true(flat, lo, hi) + 1
            for i in range(lo, end):
                t = flat[np.uint64(i)] != 0
                if found * SPARSE >= hi - lo or t:
                    if nd == 2:
                        out[0, pos] = row
                    else:
                        for d in range(last):
                            out[d, pos] = at[d]
                    out[last, pos] = j
                    pos += np.uint64(t)
                j += 1
                if j == width:
                    j = 0
                    d = last - 1
                    at[d] += 1
                    while at[d] == shape[d] and d > 0:
                        at[d] = 0
                        d -= 1
                        at[d] += 1
                    row = at[0]


def arange_int64(start: int, stop: int, step: int, empty=np.empty) -> np.ndarray | None:
    """np.arange(start, stop, step) of Python ints (int64), filled by all threads into a
    buffer from `empty` (the runtime passes its pool's, whose pages fault only once where
    NumPy's fresh array faults every time); None where NumPy should do it (small, a zero
    step, values beyond 2**52, or no thread controls)."""
    if step == 0 or thread_controls() is None or max(abs(start), abs(stop)) >= 1 << 52:
        return None
    n = len(range(start, stop, step))
    if n < ARANGE_MIN:
        return None
    out = empty((n,), np.int64)
    _fill_range(out, start, step)
    return out


ARANGE_MIN = 1 << 16  # elements below which `arange` is NumPy's


@numba.njit(parallel=True, nogil=True, cache=True)
def _fill_range(out, start, step):
    for i in numba.prange(out.size):
        out[i] = start + i * step
