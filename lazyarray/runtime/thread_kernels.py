"""The Numba kernels behind `runtime.threads`: byte copies, `nonzero`'s two passes and
`arange`'s fill, each a `prange` loop over all threads (compiled on first use, cached on
disk). Importing this module loads Numba."""

from __future__ import annotations

import numba
import numpy as np

SPARSE = 64  # a chunk with fewer true elements than 1 in SPARSE: a branch per element


@numba.njit(parallel=True, nogil=True, cache=True)
def copy_bytes(src, dst):
    for i in numba.prange(src.size):
        dst[i] = src[i]


@numba.njit(parallel=True, nogil=True, cache=True)
def copy_row_bytes(src, s_row, dst, d_row, rows, width):
    for r in numba.prange(rows):
        a, b = np.uint64(r * s_row), np.uint64(r * d_row)
        for k in range(np.uint64(width)):
            dst[b + k] = src[a + k]


@numba.njit(parallel=True, nogil=True, cache=True)
def chunk_counts(flat, size, counts):
    # (unsigned indices, here and below: no negative-index wraparound test, which kept LLVM
    # from vectorizing the count)
    for c in numba.prange(counts.size):
        n = 0
        for i in range(np.uint64(c * size), np.uint64(min(c * size + size, flat.size))):
            n += flat[i] != 0
        counts[c] = n


@numba.njit(inline="always")
def last_true(flat, lo, hi):
    last = hi - 1
    while last >= lo and flat[np.uint64(last)] == 0:
        last -= 1
    return last


@numba.njit(parallel=True, nogil=True, cache=True)
def fill_flat(flat, words, size, starts, out):
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
            for i in range(lo, last_true(flat, lo, hi) + 1):
                out[pos] = i
                pos += np.uint64(flat[np.uint64(i)] != 0)


@numba.njit(parallel=True, nogil=True, cache=True)
def fill_indices(flat, shape, size, starts, out):
    """`fill_flat` for a mask of 2 or more axes: out[d] the indices along axis d. The index
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
            end = hi if found * SPARSE < hi - lo else last_true(flat, lo, hi) + 1
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


@numba.njit(parallel=True, nogil=True, cache=True)
def fill_range(out, start, step):
    for i in numba.prange(out.size):
        out[i] = start + i * step
