"""Integer-array indexing functions over the `gather` opcode: take, take_along_axis, compress.

Each builds one lazy `gather` (see ops/indexing.py), so the result fuses with its consumers.
Index arrays already computed are bounds-checked when the call is made; lazily computed ones
when the value is computed. Only `compress` reads values at the call: its boolean condition
(the result's length depends on it).
"""

from __future__ import annotations

import numpy as np

from lazyarray.array import Array, numpy_fallback, as_node, eager_result, eager_values
from lazyarray.graph import build
from lazyarray.graph.node import Node, buffer
from lazyarray.ops.indexing import check_bounds, other_axes
from lazyarray.runtime import pool, threads


def _arr(a) -> Array:
    return a if isinstance(a, Array) else Array(as_node(a))


def _index_node(indices, func: str) -> Node:
    """Integer indices as a node: computed values as a buffer (checkable now), lazy as is."""
    if isinstance(indices, Array) and (not indices._storage.node.realized
                                       or indices._node.op == "buffer"):
        node = indices._node  # pending, or a computed array's own buffer (bounds remembered)
    else:
        v = np.asarray(indices)
        if v.size == 0 and v.dtype.kind not in "biu":
            v = v.astype(np.intp)
        node = buffer(np.array(v))
    if node.dtype.kind not in "iu":
        raise TypeError(f"Cannot cast array data from {node.dtype!r} to "
                        f"{np.dtype(np.intp)!r} according to the rule 'safe'")
    return node


def _wrapped(node: Node, n: int, mode: str) -> Node:
    """mode='wrap' / 'clip' indices (always in range afterwards), NumPy's rules."""
    if mode == "raise":
        return node
    if node.op == "buffer" and node.on_host:
        v = node.value.astype(np.intp)
        return buffer(np.asarray(v % n if mode == "wrap" else np.clip(v, 0, n - 1)))
    node = build.convert(node, np.dtype(np.intp))
    if mode == "wrap":
        return build.elementwise("remainder", node, n)
    return build.elementwise("clip", node, 0, n - 1)


def take(a, indices, axis=None, out=None, mode="raise"):
    """Elements of `a` at `indices` along `axis` (see numpy.take); lazy, one gather (of
    computed arrays below MID_EAGER_MAX elements, NumPy's call at once)."""
    if out is not None:
        return numpy_fallback(np.take, a, indices, axis=axis, out=out, mode=mode)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    values = eager_values((a, indices), mid=True)
    if values is not None and not (mode == "wrap" and 0 in np.shape(values[0])):
        return eager_result(np.take(*values, axis=axis, mode=mode), values)  # the eager tier
    arr = _arr(a)
    if axis is None:
        arr, axis = arr.ravel(), 0
    axis = build.normalize_axis(axis, arr.ndim)
    idx = _index_node(indices, "take")
    n = arr.shape[axis]
    shape = arr.shape[:axis] + idx.shape + arr.shape[axis + 1:]
    if 0 in shape or n == 0:
        return _empty_take(arr, axis, idx, shape, mode)
    idx = _wrapped(idx, n, mode)
    return Array(build.advanced_getitem(arr._node, (slice(None),) * axis + (idx,)))


def _empty_take(arr: Array, axis: int, idx: Node, shape: tuple, mode: str) -> Array:
    """`take` with an empty result or from an empty axis, by NumPy's rules: a non-empty
    result from an empty axis raises; otherwise mode 'raise' checks the indices once per
    element before `axis` (none: none checked), and the result is empty. (NumPy 2.4's
    mode='wrap' loops forever on an empty axis; here it gives the empty result, as 'clip'.)"""
    n = arr.shape[axis]
    if n == 0 and 0 not in shape:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    if mode == "raise" and 0 not in arr.shape[:axis] and 0 not in idx.shape:
        v = np.asarray(Array(idx)).reshape(-1)
        bad = np.flatnonzero((v < -n) | (v >= n))
        if bad.size:
            raise IndexError(f"index {v[bad[0]]} is out of bounds for axis {axis} with size {n}")
    return Array(buffer(np.empty(shape, arr.dtype)))


def take_along_axis(arr, indices, axis=-1):
    """`arr` read at `indices` along `axis`, other axes matched (see numpy.take_along_axis)."""
    a = _arr(arr)
    if axis is None:
        a, axis = a.ravel(), 0
        if np.ndim(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
    axis = build.normalize_axis(axis, a.ndim)
    dt = indices.dtype if hasattr(indices, "dtype") else np.asarray(indices).dtype
    if dt.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    idx = _index_node(indices, "take_along_axis")
    if len(idx.shape) != a.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    try:
        shape = list(np.broadcast_shapes(
            tuple(1 if d == axis else n for d, n in enumerate(a.shape)),
            tuple(1 if d == axis else n for d, n in enumerate(idx.shape))))
    except ValueError:  # NumPy indexes with one arange per other axis: its message
        keys = [idx.shape if d == axis else tuple(n if e == d else 1 for e in range(a.ndim))
                for d, n in enumerate(a.shape)]
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with "
                         "shapes " + "".join(str(k).replace(" ", "") + " " for k in keys)
                         ) from None
    shape[axis] = idx.shape[axis]
    shape = tuple(shape)
    if idx.op == "buffer" and idx.on_host and 0 not in shape:  # (an empty result reads
        check_bounds([idx.value], [axis], a.shape)  # nothing: NumPy checks nothing)
    operand = build.broadcast_to(a._node, tuple(a.shape[axis] if d == axis else n
                                                for d, n in enumerate(shape)))
    idx = build.broadcast_to(idx, shape)
    others = other_axes(a.ndim, (axis,))
    return Array(build.gather(operand, (idx,), (axis,), others, shape))


def compress(condition, a, axis=None, out=None):
    """Slices of `a` where `condition` is true (see numpy.compress). The condition is computed
    here (the length of the result depends on it); the selection is a lazy gather."""
    if out is not None:
        return numpy_fallback(np.compress, condition, a, axis=axis, out=out)
    if axis is not None:  # NumPy checks the axis first
        axis = build.normalize_axis(axis, _arr(a).ndim)
    cond = np.asarray(condition)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    (nz,) = threads.nonzero(cond if cond.dtype == bool else cond != 0, pool.empty)
    return take(a, nz, axis=axis)
