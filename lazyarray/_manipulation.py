"""Shape and view functions: reshape, transpose, broadcast_to, expand_dims, squeeze, ..."""

from __future__ import annotations

import numpy as np

from lazyarray.array import Array, as_node
from lazyarray.graph import build


def _arr(a) -> Array:
    return a if isinstance(a, Array) else Array(as_node(a))


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Give a new shape to an array without changing its data (see numpy.reshape)."""
    if shape is None:
        shape = newshape
    return _arr(a).reshape(shape, order=order)


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
    return a.size if axis is None else a.shape[build.normalize_axis(axis, a.ndim)]


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
