"""Products: matmul and dot as library calls in the graph (BLAS through NumPy), so the
elementwise work around them still fuses; outer and inner as lazy compositions."""

from __future__ import annotations

import operator

import numpy as np

from lazyarray.array import Array, _fallback, as_node, eager_result, eager_values, wrap
from lazyarray.graph import build
from lazyarray.graph.node import Node
from lazyarray.ops.dtypes import ufunc_loop


def _matmul_node(a: Node, b: Node) -> Node:
    if not a.shape or not b.shape:
        which = 0 if not a.shape else 1
        raise ValueError(f"matmul: Input operand {which} does not have enough dimensions (has 0, "
                         "gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    ta, tb, out_dtype = ufunc_loop(np.matmul, (a.dtype, b.dtype))
    sa = a.shape if len(a.shape) > 1 else (1, a.shape[0])
    sb = b.shape if len(b.shape) > 1 else (b.shape[0], 1)
    if sa[-1] != sb[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n?,k),(k,m?)->(n?,m?) (size {sb[-2]} is different from {sa[-1]})")
    batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    shape = batch + (sa[-2],) * (len(a.shape) > 1) + (sb[-1],) * (len(b.shape) > 1)
    return Node("dot", (build.convert(a, ta), build.convert(b, tb)), shape, out_dtype)


def matmul(x1, x2, /, out=None, *, dtype=None, casting="same_kind", **kwargs):
    """Matrix product of two arrays (see numpy.matmul).

    lazyarray notes: a library call (NumPy's BLAS) inside the graph; the elementwise work that
    produces its operands, and consumes its result, still fuses around it.
    """
    if dtype is not None or kwargs:
        return _fallback(np.matmul, x1, x2, out=out, dtype=dtype, casting=casting, **kwargs)
    values = eager_values((x1, x2)) if out is None else None
    if values is not None:  # the eager tier
        return eager_result(np.matmul(*values), values)
    res = wrap(_matmul_node(as_node(x1), as_node(x2)))
    if out is not None:
        out._assign(res, casting=casting)
        return out
    return res


def dot(a, b, out=None):
    """Dot product of two arrays (see numpy.dot): matmul for 1-D and 2-D, a product for
    scalars; N-D arguments use NumPy."""
    values = eager_values((a, b)) if out is None else None
    if values is not None:  # the eager tier
        return eager_result(np.dot(*values), values)
    na, nb = np.ndim(a) if not isinstance(a, Array) else a.ndim, \
        np.ndim(b) if not isinstance(b, Array) else b.ndim
    if na == 0 or nb == 0:
        res = Array(as_node(a)) * Array(as_node(b))
    elif na <= 2 and nb <= 2:
        res = wrap(_matmul_node(as_node(a), as_node(b)))
    else:
        return _fallback(np.dot, a, b, out=out)
    if out is not None:
        out._assign(res, casting="no")
        return out
    return res


def vdot(a, b, /):
    """Dot product of flattened arrays, conjugating the first (see numpy.vdot)."""
    a, b = Array(as_node(a)).ravel(), Array(as_node(b)).ravel()
    if a.dtype.kind == "c":
        a = a.conj()
    return dot(a, b)


def inner(a, b, /):
    """Inner product over the last axes (see numpy.inner)."""
    a, b = Array(as_node(a)), Array(as_node(b))
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim <= 2 and a.ndim <= 2:
        return matmul(a, b.T if b.ndim == 2 else b)
    return _fallback(np.inner, a, b)


def outer(a, b, out=None):
    """Outer product of two vectors (inputs are flattened) (see numpy.outer)."""
    a, b = Array(as_node(a)).ravel(), Array(as_node(b)).ravel()
    res = a[:, None] * b[None, :]
    if out is not None:
        out._assign(res)
        return out
    return res


def vecdot(x1, x2, /, out=None, *, axis=-1, keepdims=False):
    """Vector dot product over an axis, conjugating the first (see numpy.vecdot)."""
    axis = operator.index(axis)
    x1, x2 = Array(as_node(x1)), Array(as_node(x2))
    if x1.dtype.kind == "c":
        x1 = x1.conj()
    res = (x1 * x2).sum(axis=axis, keepdims=keepdims)
    if out is None:
        return res
    if out.shape != res.shape:
        raise ValueError(f"vecdot: out has shape {out.shape}, the result has shape {res.shape}")
    out._assign(res)
    return out
