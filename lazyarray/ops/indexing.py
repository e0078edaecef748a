"""Integer-array (advanced) indexing rules shared by the graph, the interpreter and the kernels.

`gather(operand, i_0, ..., i_{k-1})` with attributes `axes` (the operand axis each index
operand selects along) and `offset_dims` (for each other operand axis, in order, the result
dimension that walks it): every index operand already has the result's shape (broadcast), and

    result[p] = operand[j]   with  j[axes[t]] = wrap(i_t[p]),  j[other[m]] = p[offset_dims[m]]

where `wrap` adds the axis size to a negative index, and an index outside [-n, n) is NumPy's
IndexError. Result dimensions not in `offset_dims` are the broadcast index dimensions (and
`None` dimensions), read only through the index operands.
"""

from __future__ import annotations

import numpy as np


def other_axes(ndim: int, axes) -> tuple[int, ...]:
    """Operand axes not selected by an index operand, in order (those `offset_dims` place)."""
    return tuple(a for a in range(ndim) if a not in axes)


def out_of_bounds(values, axes, shape) -> IndexError | None:
    """NumPy's IndexError for the first out-of-range index, checking the index arrays in
    order and each in C order (as NumPy does), or None when every index is in range."""
    for v, a in zip(values, axes, strict=True):
        n = shape[a]
        v = np.asarray(v)
        if v.size == 0:
            continue
        if v.dtype != np.intp:  # NumPy casts index arrays to intp (same_kind: uint64 wraps)
            v = v.astype(np.intp)
        bad = (v < -n) | (v >= n)
        if bad.any():
            first = int(v.reshape(-1)[int(np.argmax(bad.reshape(-1)))])
            return IndexError(f"index {first} is out of bounds for axis {a} with size {n}")
    return None


def check_bounds(values, axes, shape) -> None:
    err = out_of_bounds(values, axes, shape)
    if err is not None:
        raise err


def gather_ref(data: np.ndarray, indices: list, axes, offset_dims, shape) -> np.ndarray:
    """The reference semantics, with NumPy indexing (bounds checked as NumPy does)."""
    check_bounds(indices, axes, data.shape)
    rank = len(shape)
    key = []
    m = 0
    for a in range(data.ndim):
        if a in axes:
            key.append(np.asarray(indices[axes.index(a)]).astype(np.intp, copy=False))
        else:
            placed = [1] * rank
            placed[offset_dims[m]] = data.shape[a]
            key.append(np.arange(data.shape[a]).reshape(placed))
            m += 1
    out = data[tuple(key)]
    return np.asarray(np.broadcast_to(out, shape) if out.shape != tuple(shape) else out)
