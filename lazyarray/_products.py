"""Products: matmul and dot as library calls in the graph (BLAS through NumPy), so the
elementwise work around them still fuses; outer and inner as lazy compositions."""

from __future__ import annotations

import operator

import numpy as np

from lazyarray import config
from lazyarray.array import (Array, as_node, eager_array, eager_values, mid_value, numpy_fallback,
                             small_view, value_array, wrap)
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


# A product of two computed whole arrays (no view, nothing pending: no work to fuse into its
# operands) of fewer elements each than this, with fewer results, is NumPy's call, at once:
# the lazy tier's fixed cost per evaluation was several times such a product's own time (a dot
# of two 10^5 vectors: 49 against 11 us; (100, 1000) @ (1000,): 51 against 12 us).
EAGER_PRODUCT_MAX = 1 << 17
# So is one of larger operands with fewer results than EAGER_PRODUCT_MAX and at most this many
# multiply-adds (a matrix-vector or vector-vector product: its result is too small for the
# fusion of what consumes it to matter, and the lazy tier would call the same BLAS after its
# fixed cost; (1000, 1000) @ (1000,): 88 against NumPy's 56 us, a dot of two 10^6 vectors 76
# against 62; at 4x10^6 multiply-adds, about 0.4 ms of BLAS here, 1.08 against 1.22x NumPy's
# time). Beyond it the product is left to the lazy tier, which computes it when its value is
# needed, as any large work (at 10^7 both took 1.0-1.1x NumPy's time).
EAGER_PRODUCT_WORK = 1 << 22


def eager_operand(x) -> np.ndarray | None:
    """The computed value of `x` as an operand of NumPy's product (or of a 2-norm, NumPy's dot)
    right now: a computed array, or a slicing view of one (`lower[i, :i] @ x[:i]` in a
    triangular solve's loop), of at most EAGER_PRODUCT_WORK elements, not under
    eager_threshold=0 nor on the CUDA backend; else None."""
    if type(x) is not Array:
        return None
    o = config.get()
    if not o.eager_limit or o.backend == "cuda":
        return None
    if x._chain:
        return None if x._val is not None or x._st is None else small_view(
            x, EAGER_PRODUCT_WORK + 1)
    return mid_value(x, EAGER_PRODUCT_WORK + 1)


def _eager_operands(x1, x2) -> list | None:
    """NumPy's values of `x1` and `x2` when their product is NumPy's call right now
    (`eager_operand`, `EAGER_PRODUCT_MAX`, `EAGER_PRODUCT_WORK`), else None."""
    a, b = eager_operand(x1), eager_operand(x2)
    if a is None or b is None or not 0 < a.ndim <= 2 or not 0 < b.ndim <= 2:
        return None
    m, n = (a.shape[0] if a.ndim == 2 else 1), (b.shape[-1] if b.ndim == 2 else 1)
    small = a.size < EAGER_PRODUCT_MAX and b.size < EAGER_PRODUCT_MAX
    if m * n >= EAGER_PRODUCT_MAX or not small and m * n * a.shape[-1] > EAGER_PRODUCT_WORK:
        return None
    return [a, b]  # (NumPy's products read read-only operands as fast: no writeable alias)


def _product(res) -> Array:
    """NumPy's product on the eager tier as an Array (a fresh result: `eager_result` without
    its check for memory shared with the operands)."""
    return value_array(res) if type(res) is np.ndarray else eager_array(res)


def matmul(x1, x2, /, out=None, *, dtype=None, casting="same_kind", **kwargs):
    """Matrix product of two arrays (see numpy.matmul).

    lazyarray notes: a library call (NumPy's BLAS) inside the graph; the elementwise work that
    produces its operands, and consumes its result, still fuses around it.
    """
    if dtype is not None or kwargs:
        return numpy_fallback(np.matmul, x1, x2, out=out, dtype=dtype, casting=casting, **kwargs)
    values = None if out is not None else _eager_operands(x1, x2) or eager_values((x1, x2))
    if values is not None:  # the eager tier
        return _product(np.matmul(*values))
    res = wrap(_matmul_node(as_node(x1), as_node(x2)))
    if out is not None:
        out._assign(res, casting=casting)
        return out
    return res


def dot(a, b, out=None):
    """Dot product of two arrays (see numpy.dot): matmul for 1-D and 2-D, a product for
    scalars; N-D arguments use NumPy."""
    values = None if out is not None else _eager_operands(a, b) or eager_values((a, b))
    if values is not None:  # the eager tier
        return _product(np.dot(*values))
    na, nb = np.ndim(a) if not isinstance(a, Array) else a.ndim, \
        np.ndim(b) if not isinstance(b, Array) else b.ndim
    if na == 0 or nb == 0:
        res = Array(as_node(a)) * Array(as_node(b))
    elif na <= 2 and nb <= 2:
        res = wrap(_matmul_node(as_node(a), as_node(b)))
    else:
        return numpy_fallback(np.dot, a, b, out=out)
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
    return numpy_fallback(np.inner, a, b)


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
