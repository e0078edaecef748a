"""Shape and view functions: reshape, transpose, broadcast_to, expand_dims, squeeze, ..."""

from __future__ import annotations

import math
import operator

import numpy as np

from lazyarray._creation import asarray
from lazyarray._funcs import where
from lazyarray.array import Array, numpy_fallback, as_node, eager_result, eager_values, in_order
from lazyarray.graph import build
from lazyarray.graph.node import Node, constant


def _arr(a) -> Array:
    return a if isinstance(a, Array) else Array(as_node(a))


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Give a new shape to an array without changing its data (see numpy.reshape)."""
    if shape is None:
        shape = newshape
    return _arr(a).reshape(shape, order=order, copy=copy)


def transpose(a, axes=None):
    """Permute the dimensions of an array (see numpy.transpose)."""
    return _arr(a).transpose(axes)


def permute_dims(a, axes=None):
    return transpose(a, axes)


def matrix_transpose(x):
    return _arr(x).mT


def swapaxes(a, axis1, axis2):
    """Interchange two axes of an array (see numpy.swapaxes)."""
    a = _arr(a)
    i, j = build.normalize_axis(axis1, a.ndim), build.normalize_axis(axis2, a.ndim)
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return a.transpose(perm)


def moveaxis(a, source, destination):
    """Move axes of an array to new positions (see numpy.moveaxis)."""
    a = _arr(a)
    src = build.normalize_axes(source, a.ndim)
    dst = build.normalize_axes(destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return a.transpose(order)


def broadcast_to(array, shape, subok=False):
    """Broadcast an array to a new shape (a read-only view in NumPy) (see numpy.broadcast_to)."""
    a = _arr(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    return a._view(build.broadcast_to, (shape,), np.broadcast_to(a._layout(), shape))


def broadcast_shapes(*shapes):
    return np.broadcast_shapes(*shapes)


def expand_dims(a, axis):
    """Insert new axes of length one at the positions `axis` (see numpy.expand_dims)."""
    a = _arr(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    norm = build.normalize_axes(axes, ndim)
    it = iter(a.shape)
    shape = tuple(1 if d in norm else next(it) for d in range(ndim))
    return a.reshape(shape)


def squeeze(a, axis=None):
    """Remove axes of length one (see numpy.squeeze)."""
    a = _arr(a)
    if axis is None:
        axes = tuple(d for d, n in enumerate(a.shape) if n == 1)
    else:
        axes = build.normalize_axes(axis, a.ndim)
        if any(a.shape[d] != 1 for d in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                             "one")
    if not axes:  # nothing to remove: NumPy returns the array itself
        return a
    return a.reshape(tuple(n for d, n in enumerate(a.shape) if d not in axes))


def ravel(a, order="C"):
    """A flattened array (see numpy.ravel)."""
    return _arr(a).ravel(order)


def shape(a):
    return _arr(a).shape if not isinstance(a, np.ndarray) else a.shape


def ndim(a):
    return _arr(a).ndim if not isinstance(a, np.ndarray) else a.ndim


def size(a, axis=None):
    a = _arr(a)
    if axis is None:
        return a.size
    if isinstance(axis, (tuple, list)):
        return math.prod(a.shape[i] for i in build.normalize_axes(axis, a.ndim))
    return a.shape[build.normalize_axis(axis, a.ndim)]


def atleast_1d(*arys):
    res = [a if _arr(a).ndim >= 1 else _arr(a).reshape(1) for a in map(_arr, arys)]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    res = []
    for a in map(_arr, arys):
        res.append(a.reshape((1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return res[0] if len(res) == 1 else tuple(res)


def atleast_3d(*arys):
    res = []
    for a in map(_arr, arys):
        if a.ndim == 0:
            a = a.reshape(1, 1, 1)
        elif a.ndim == 1:
            a = a.reshape(1, a.shape[0], 1)
        elif a.ndim == 2:
            a = a.reshape(a.shape + (1,))
        res.append(a)
    return res[0] if len(res) == 1 else tuple(res)


# ---- joining and splitting ---------------------------------------------------------------


def _place(base: Node, value: Node, starts: tuple[int, ...]) -> Node:
    """`base` with the box at `starts` (C order) replaced by `value`: an update node."""
    strides, step = [], 1
    for n in reversed(base.shape):
        strides.append(step)
        step *= n
    strides = tuple(reversed(strides))
    offset = sum(s * k for s, k in zip(starts, strides, strict=True))
    return Node("update", (base, value), base.shape, base.dtype,
                (("offset", offset), ("strides", strides)))


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join arrays along an existing axis (see numpy.concatenate).

    lazyarray notes: lazy -- a zero-filled result with each input written into place (the
    writes run in place on the one result buffer); of computed arrays below MID_EAGER_MAX
    elements each, NumPy's call at once.
    """
    values = eager_values(arrays, mid=True) if out is None \
        and isinstance(arrays, (list, tuple)) and arrays else None
    if values is not None:  # the eager tier
        return eager_result(np.concatenate(values, axis=axis, dtype=dtype, casting=casting),
                            values)
    arrs = [_arr(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrs, axis = [a.ravel() for a in arrs], 0
    if any(a.ndim == 0 for a in arrs):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ndim = arrs[0].ndim
    axis = build.normalize_axis(axis, ndim)
    for i, a in enumerate(arrs[1:], 1):
        if a.ndim != ndim:
            raise ValueError(
                "all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {ndim} dimension(s) and the array at index {i} has {a.ndim} "
                "dimension(s)")
        for d in range(ndim):
            if d != axis and a.shape[d] != arrs[0].shape[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size "
                    f"{arrs[0].shape[d]} and the array at index {i} has size {a.shape[d]}")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*(a.dtype for a in arrs))
    for a in arrs:
        if not np.can_cast(a.dtype, dt, casting=casting):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {dt!r} according to "
                            f"the rule {casting!r}")
    shape = list(arrs[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrs)
    node = build.broadcast_to(constant(np.zeros((), dt), dt), tuple(shape))
    start = 0
    for a in arrs:
        if a.shape[axis]:
            starts = tuple(start if d == axis else 0 for d in range(ndim))
            node = _place(node, build.convert(a._node, dt), starts)
        start += a.shape[axis]
    res = in_order(Array(node), "K", arrs)
    if out is not None:
        out._assign(res, casting=casting)
        return out
    return res


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """Join arrays along a new axis (see numpy.stack)."""
    arrs = [_arr(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to stack")
    if any(a.shape != arrs[0].shape for a in arrs):
        raise ValueError("all input arrays must have the same shape")
    axis = build.normalize_axis(axis, arrs[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrs], axis, out, dtype=dtype,
                       casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    axis = 0 if arrs and arrs[0].ndim == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], 2)


def column_stack(tup):
    arrs = [_arr(a) for a in tup]
    return concatenate([a.reshape(-1, 1) if a.ndim < 2 else a for a in arrs], 1)


row_stack = vstack


def array_split(ary, indices_or_sections, axis=0):
    """Split into sub-arrays that are views (see numpy.array_split)."""
    a = _arr(ary)
    axis = build.normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        bounds = [0]
        for k in range(sections):
            bounds.append(bounds[-1] + each + (k < extra))
    else:
        bounds = [0, *indices_or_sections, n]
    lead = (slice(None),) * axis
    return [a[(*lead, slice(lo, hi))] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sub-arrays that are views (see numpy.split)."""
    a = _arr(ary)
    if isinstance(indices_or_sections, (int, np.integer)):
        if a.shape[build.normalize_axis(axis, a.ndim)] % indices_or_sections:
            raise ValueError("array split does not result in an equal division")
    return array_split(a, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    a = _arr(ary)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(a, indices_or_sections, 1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    a = _arr(ary)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(a, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    a = _arr(ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(a, indices_or_sections, 2)


# ---- rearranging ---------------------------------------------------------------------------


def flip(m, axis=None):
    """Reverse the order of elements along the given axes: a view (see numpy.flip)."""
    a = _arr(m)
    axes = build.normalize_axes(axis, a.ndim)
    return a[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(a.ndim))]


def fliplr(m):
    a = _arr(m)
    if a.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(a, 1)


def flipud(m):
    a = _arr(m)
    if a.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(a, 0)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees in the plane of `axes`: a view (see numpy.rot90)."""
    a = _arr(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = build.normalize_axis(axes[0], a.ndim), build.normalize_axis(axes[1], a.ndim)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return a[...]
    if k == 2:
        return flip(flip(a, a0), a1)
    perm = list(range(a.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return flip(a, a1).transpose(perm) if k == 1 else flip(a.transpose(perm), a1)


def roll(a, shift, axis=None):
    """Roll elements along an axis (see numpy.roll)."""
    arr = _arr(a)
    if axis is None:
        return roll(arr.ravel(), shift, 0).reshape(arr.shape)
    axes = np.lib.array_utils.normalize_axis_tuple(axis, arr.ndim, allow_duplicate=True)
    shifts = np.asarray(shift) if not isinstance(shift, Array) else np.asarray(shift.tolist())
    pairs = np.broadcast(shifts, np.asarray(axes))  # ValueError when they do not broadcast
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total: dict[int, int] = {}
    for s, ax in pairs:
        total[int(ax)] = total.get(int(ax), 0) + int(s)
    out = arr
    for ax, s in total.items():
        n = out.shape[ax]
        if n == 0 or s % n == 0:
            continue
        s %= n
        lead = (slice(None),) * ax
        out = concatenate([out[(*lead, slice(n - s, None))], out[(*lead, slice(0, n - s))]], ax)
    return out if out is not arr else arr.copy()


# `tile` and `repeat` of a tiny computed array run NumPy's copy at once below this many
# result elements (4x NumPy's time for a (100, 1000) result as a lazy broadcast, which
# pays off only where a consumer fuses it away, as in a large product)
EAGER_COPY_LIMIT = 1 << 20


def tile(A, reps):
    """Repeat an array `reps` times along each axis (see numpy.tile)."""
    values = eager_values((A,))
    if values is not None and np.size(values[0]) * (
            reps if type(reps) is int else math.prod(np.ravel(reps))) \
            < EAGER_COPY_LIMIT:  # the eager tier: NumPy's copy (`repeat`)
        return eager_result(np.tile(values[0], reps), values)
    a = _arr(A)
    reps = tuple(operator.index(r) for r in (reps if np.ndim(reps) else (reps,)))
    nd = max(a.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - a.ndim) + a.shape
    inter = []
    for r, n in zip(reps, shape, strict=True):
        inter += [1, n]
    if all(r == 1 for r in reps):  # NumPy's copy, order "K"
        return a.reshape(shape).copy("K")
    grown = tuple(x for r, n in zip(reps, shape, strict=True) for x in (r, n))
    out = broadcast_to(a.reshape(tuple(inter)), grown)
    return Array(build.reshape(out._node, tuple(r * n for r, n in zip(reps, shape, strict=True))))


def repeat(a, repeats, axis=None):
    """Repeat each element (see numpy.repeat); per-element counts use NumPy."""
    values = eager_values((a,))
    if values is not None and isinstance(repeats, (int, np.integer)) \
            and np.size(values[0]) * max(int(repeats), 0) < EAGER_COPY_LIMIT:
        return eager_result(np.repeat(values[0], repeats, axis), values)  # the eager tier
    arr = _arr(a)
    if not isinstance(repeats, (int, np.integer)) and np.ndim(repeats) != 0:

        return numpy_fallback(np.repeat, arr, repeats, axis)
    r = int(repeats)
    if r < 0:
        raise ValueError("negative dimensions are not allowed")
    if axis is None:
        arr, axis = arr.ravel(), 0
    axis = build.normalize_axis(axis, arr.ndim)
    expanded = expand_dims(arr, axis + 1)
    shape = arr.shape[: axis + 1] + (r,) + arr.shape[axis + 1:]
    grown = broadcast_to(expanded, shape)
    out = arr.shape[:axis] + (arr.shape[axis] * r,) + arr.shape[axis + 1:]
    return Array(build.reshape(grown._node, out))


def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """n-th discrete difference along an axis (see numpy.diff); of a computed array below
    MID_EAGER_MAX elements, NumPy's call at once."""
    values = eager_values((a,), mid=True) if prepend is np._NoValue \
        and append is np._NoValue else None
    if values is not None and n > 0:  # the eager tier
        return eager_result(np.diff(values[0], n, axis), values)
    arr = _arr(a)
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if arr.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = build.normalize_axis(axis, arr.ndim)
    parts = []
    for extra in (prepend,):
        if extra is not np._NoValue:
            e = _arr(extra)
            if e.ndim == 0:
                e = broadcast_to(e, arr.shape[:axis] + (1,) + arr.shape[axis + 1:])
            parts.append(e)
    parts.append(arr)
    if append is not np._NoValue:
        e = _arr(append)
        if e.ndim == 0:
            e = broadcast_to(e, arr.shape[:axis] + (1,) + arr.shape[axis + 1:])
        parts.append(e)
    if len(parts) > 1:
        arr = concatenate(parts, axis)
    lead = (slice(None),) * axis
    for _ in range(n):
        hi, lo = arr[(*lead, slice(1, None))], arr[(*lead, slice(None, -1))]
        arr = (hi != lo) if arr.dtype == np.bool_ else hi - lo
    return arr


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (see numpy.pad): 'constant', 'edge', 'wrap', 'reflect' and 'symmetric'
    are lazy; other modes use NumPy."""

    a = _arr(array)
    if np.asarray(pad_width).dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.intp).reshape(-1, 2)
                             if np.ndim(pad_width) else np.asarray(pad_width),
                             (a.ndim, 2)) if a.ndim else np.zeros((0, 2), np.intp)
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    if mode == "constant":
        cv = np.broadcast_to(np.asarray(kwargs.get("constant_values", 0)), (a.ndim, 2))
        if a.ndim and widths.any() and (cv == cv.flat[0]).all():  # one value: one write
            shape = tuple(int(n + lo + hi) for n, (lo, hi) in zip(a.shape, widths, strict=True))
            base = _const(shape, cv.flat[0], a.dtype)._node
            return Array(_place(base, a._node, tuple(int(w) for w in widths[:, 0])))
        out = a
        for ax in range(a.ndim):
            lo, hi = int(widths[ax, 0]), int(widths[ax, 1])
            parts = []
            side = out.shape[:ax] + (0,) + out.shape[ax + 1:]
            if lo:
                parts.append(_const(side[:ax] + (lo,) + side[ax + 1:], cv[ax, 0], a.dtype))
            parts.append(out)
            if hi:
                parts.append(_const(side[:ax] + (hi,) + side[ax + 1:], cv[ax, 1], a.dtype))
            out = concatenate(parts, ax) if len(parts) > 1 else out
        return out if out is not a else a.copy()
    if mode not in ("edge", "wrap", "reflect", "symmetric") or kwargs.get("reflect_type",
                                                                            "even") != "even":
        return numpy_fallback(np.pad, a, pad_width, mode, **kwargs)
    out = a
    for ax in range(a.ndim):
        lo, hi = int(widths[ax, 0]), int(widths[ax, 1])
        n = out.shape[ax]
        limit = n - 1 if mode == "reflect" else n
        if (lo or hi) and (n == 0 or lo > limit or hi > limit):
            return numpy_fallback(np.pad, a, pad_width, mode, **kwargs)
        lead = (slice(None),) * ax

        def take(s, lead=lead):
            return out[(*lead, s)]

        if mode == "edge":
            left = broadcast_to(take(slice(0, 1)), out.shape[:ax] + (lo,) + out.shape[ax + 1:])
            right = broadcast_to(take(slice(n - 1, n)), out.shape[:ax] + (hi,) + out.shape[ax + 1:])
        elif mode == "wrap":
            left, right = take(slice(n - lo, n)), take(slice(0, hi))
        elif mode == "reflect":
            left = take(slice(lo, 0, -1))
            right = take(slice(n - 2, n - 2 - hi, -1))
        else:
            left = take(slice(lo - 1, None, -1) if lo else slice(0, 0))
            right = take(slice(n - 1, n - 1 - hi, -1))
        parts = ([left] if lo else []) + [out] + ([right] if hi else [])
        out = concatenate(parts, ax) if len(parts) > 1 else out
    return out if out is not a else a.copy()


def _const(shape, value, dtype) -> Array:
    with np.errstate(all="ignore"):
        v = np.asarray(value).astype(dtype)
    return Array(build.broadcast_to(constant(v, dtype), tuple(shape)))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonals as a read-only view (see numpy.diagonal)."""
    arr = _arr(a)
    if arr.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = build.normalize_axis(axis1, arr.ndim), build.normalize_axis(axis2, arr.ndim)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    proxy = np.diagonal(arr._layout(), offset, a1, a2)
    return arr._view(_diagonal_node, (offset, a1, a2), proxy)


def _diagonal_node(node: Node, offset: int, a1: int, a2: int) -> Node:
    """Diagonal as movement ops: move the two axes last, flatten them, take every (m+1)-th."""
    rest = [d for d in range(len(node.shape)) if d not in (a1, a2)]
    moved = build.transpose(node, (*rest, a1, a2))
    n, m = node.shape[a1], node.shape[a2]
    k = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    lead = tuple(node.shape[d] for d in rest)
    flat = build.reshape(moved, (*lead, n * m))
    start = offset if offset >= 0 else -offset * m
    stop = start + k * (m + 1) if k else start
    sl = tuple((0, s, 1) for s in lead) + ((start, stop, m + 1) if k else (0, 0, 1),)
    return build.slice_(flat, sl)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along diagonals (see numpy.trace)."""
    return diagonal(a, offset, axis1, axis2).sum(-1, dtype=dtype, out=out)


def diag(v, k=0):
    """Extract a diagonal, or build a diagonal array (see numpy.diag)."""
    a = _arr(v)
    if a.ndim == 2:
        return diagonal(a, k)
    if a.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = a.shape[0] + abs(k)
    flat_zero = Array(build.broadcast_to(constant(np.zeros((), a.dtype), a.dtype), (n * n,)))
    start = k if k >= 0 else -k * n
    node = Node("update", (flat_zero._node, a._node), (n * n,), a.dtype,
                (("offset", start), ("strides", (n + 1,))))
    return Array(build.reshape(node, (n, n)))


def _tri_mask(shape, k, upper):
    n, m = shape[-2], shape[-1]
    mask = np.tri(n, m, k - 1 if upper else k, dtype=bool)
    return ~mask if upper else mask


def triu(m, k=0):
    """Upper triangle: zero below the k-th diagonal (see numpy.triu)."""

    a = _arr(m)
    if a.ndim < 2:
        return _fallback_tri(np.triu, a, k)
    return where(_tri_mask(a.shape, k, True), a, np.zeros((), a.dtype))


def tril(m, k=0):
    """Lower triangle: zero above the k-th diagonal (see numpy.tril)."""

    a = _arr(m)
    if a.ndim < 2:
        return _fallback_tri(np.tril, a, k)
    return where(_tri_mask(a.shape, k, False), a, np.zeros((), a.dtype))


def _fallback_tri(f, a, k):

    return numpy_fallback(f, a, k)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors (see numpy.meshgrid); lazy broadcasts."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    arrs = [_arr(x).ravel() for x in xi]
    nd = len(arrs)
    out = []
    for i, x in enumerate(arrs):
        shape = [1] * nd
        shape[i] = x.shape[0]
        out.append(x.reshape(shape))
    if indexing == "xy" and nd > 1:
        for i in range(nd):
            shape = list(out[i].shape)
            shape[0], shape[1] = shape[1], shape[0]
            out[i] = out[i].reshape(shape)
    if not sparse:
        full = np.broadcast_shapes(*(o.shape for o in out))
        out = [broadcast_to(o, full) for o in out]
    return tuple(Array(o._node) if copy else o for o in out)


def broadcast_arrays(*args, subok=False):
    """Broadcast arrays against each other (see numpy.broadcast_arrays): an array already of
    the broadcast shape is returned as is, the others as read-only views (NumPy's are
    writeable with a DeprecationWarning on write; docs/semantics.md)."""
    arrs = [_arr(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrs))
    return tuple(a if a.shape == shape else broadcast_to(a, shape) for a in arrs)


def unstack(x, /, *, axis=0):
    """Split an array into a tuple of views along `axis` (see numpy.unstack)."""
    x = _arr(x)
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    x = moveaxis(x, axis, 0)  # (NumPy's errors for a bad axis)
    return tuple(x[i] for i in range(x.shape[0]))


def require(a, dtype=None, requirements=None, *, like=None):
    """An array satisfying `requirements` ("C", "F", "A", "W", "O", "E"): `a` itself when it
    already does, else a copy (see numpy.require)."""

    names = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F",
             "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W",
             "O": "O", "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E"}
    if requirements is None:
        reqs = set()
    elif isinstance(requirements, str):
        reqs = {names[requirements.upper()]}
    else:
        reqs = {names[r.upper()] for r in requirements}
    if "C" in reqs and "F" in reqs:
        raise ValueError("Cannot specify both C and Fortran contiguous.")
    a = asarray(a, dtype)
    flags = a.flags
    if ("C" in reqs and not flags.c_contiguous or "F" in reqs and not flags.f_contiguous
            or "W" in reqs and not flags.writeable or "O" in reqs and not flags.owndata):
        return a.copy("F" if "F" in reqs else "C" if "C" in reqs else "A")
    return a
