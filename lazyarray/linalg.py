"""lazyarray.linalg: ``numpy.linalg`` over lazy arrays.

`norm`, `vector_norm` and `matrix_norm` are lazy (built from lazyarray's own reductions)
except for the matrix 2-norm, -2-norm and nuclear norm, which need singular values;
`matrix_transpose` is lazyarray's view. Every other public name of ``numpy.linalg`` resolves
too: functions as counted fallbacks (NumPy's function on computed inputs, array results
wrapped as lazy Arrays), everything else (``LinAlgError``) as NumPy's own object.
"""

from __future__ import annotations

import math

import numpy as _np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from lazyarray import _creation, _library, _manipulation, _products, _ufuncs
from lazyarray._coverage import module_getattr as _module_getattr
from lazyarray._products import eager_operand as _eager_operand
from lazyarray._reductions import eager_whole
from lazyarray.array import (Array, eager_result, eager_values, numpy_fallback, scalar_result,
                             writable_alias)

__all__ = list(_np.linalg.__all__)


def __getattr__(name: str):
    return _module_getattr(_np.linalg, globals(), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))


def _as_inexact(x) -> Array:
    """`x` as a lazy array, cast to float64 unless it is floating or complex (NumPy's rule)."""
    x = x if isinstance(x, Array) else _creation.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(_np.float64)


def _squared_magnitude(x: Array) -> Array:
    """|x|**2 in x's real dtype (conj(x) * x for complex, exact like NumPy's)."""
    return (x.conj() * x).real if x.dtype.kind == "c" else x * x


def _drop_axes(r: Array, axes: tuple[int, ...]) -> Array:
    """Remove the (length-1) `axes` of `r`."""
    return r.reshape(tuple(n for i, n in enumerate(r.shape) if i not in axes))


def _vector(x: Array, axes, ord, keepdims: bool) -> Array:
    """Vector norm of order `ord` over `axes` (an int or a tuple of ints), lazily."""
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    axes = normalize_axis_tuple(axes, x.ndim)
    if ord is None or ord == 2:
        return _ufuncs.sqrt(_squared_magnitude(x).sum(axis=axes, keepdims=keepdims))
    if ord == math.inf:
        return abs(x).max(axis=axes, keepdims=keepdims, initial=0)  # 0 for empty, as NumPy
    if ord == -math.inf:
        return abs(x).min(axis=axes, keepdims=keepdims)
    if ord == 0:
        return (x != 0).astype(x.real.dtype).sum(axis=axes, keepdims=keepdims)
    if ord == 1:
        return abs(x).sum(axis=axes, keepdims=keepdims)
    try:
        p = float(ord)
    except TypeError:
        raise ValueError(f"Invalid norm order '{ord}' for vectors") from None
    return (abs(x) ** p).sum(axis=axes, keepdims=keepdims) ** (1.0 / p)


def _matrix(x: Array, axes: tuple[int, int], ord, keepdims: bool) -> Array:
    """Matrix norm of order `ord` over `axes` (rows, columns), lazily where no SVD is needed."""
    row, col = (normalize_axis_index(a, x.ndim) for a in axes)
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord is None or (isinstance(ord, str) and ord in ("fro", "f")):
        return _ufuncs.sqrt(_squared_magnitude(x).sum(axis=(row, col), keepdims=keepdims))
    if isinstance(ord, str) and ord == "nuc" or not isinstance(ord, str) and ord in (2, -2):
        return numpy_fallback(_np.linalg.norm, x, ord=ord, axis=(row, col), keepdims=keepdims)
    if isinstance(ord, str) or ord not in (1, -1, math.inf, -math.inf):
        raise ValueError("Invalid norm order for matrices.")
    # 1-norms: largest/smallest column sum; inf-norms: largest/smallest row sum
    summed, extreme = (row, col) if ord in (1, -1) else (col, row)
    sums = abs(x).sum(axis=summed, keepdims=True)
    if ord > 0:
        r = sums.max(axis=extreme, keepdims=True, initial=0)
    else:
        r = sums.min(axis=extreme, keepdims=True)
    return r if keepdims else _drop_axes(r, (row, col))


@scalar_result
def norm(x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm, as ``numpy.linalg.norm``, computed lazily.

    Parameters
    ----------
    x : array_like
        Input; integer and bool inputs are cast to float64.
    ord : {None, int, float, inf, -inf, 'fro', 'nuc'}, optional
        Order of the norm (NumPy's table). Vector norms of any order, and matrix norms
        ``None``/'fro', 1, -1, inf, -inf, are lazy; matrix 2, -2 and 'nuc' fall back to NumPy.
    axis : None, int or 2-tuple of ints, optional
        An int is a vector norm over that axis, a 2-tuple a matrix norm; None is the vector
        norm of a 1-d `x`, the matrix norm of a 2-d `x`, and the flattened 2-norm if `ord` is
        None.
    keepdims : bool, optional
        Keep the normed axes with length one.

    Returns
    -------
    Array
        The norm (a 0-d lazy array when every axis is normed).
    """
    values = eager_values((x,))
    if values is None and axis is None:  # a whole norm of a computed array, as a whole
        whole = eager_whole(x, None)  # reduction (WHOLE_EAGER_MAX): NumPy's, at once
        if whole is None and ord is None:  # NumPy's 2-norm of it is a dot: as a product
            whole = _eager_operand(x)  # (_products.EAGER_PRODUCT_WORK)
        values = None if whole is None else [writable_alias(whole)]
    if values is not None:  # the eager tier
        return eager_result(_np.asarray(_np.linalg.norm(values[0], ord, axis, keepdims)), values)
    x = _as_inexact(x)
    if axis is None:
        if (ord is None or (isinstance(ord, str) and ord in ("f", "fro") and x.ndim == 2)
                or (not isinstance(ord, str) and ord == 2 and x.ndim == 1)):
            return _vector(x, tuple(range(x.ndim)), None, keepdims)
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        try:
            axis = int(axis)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
        axis = (axis,)
    if len(axis) == 1:
        return _vector(x, axis, ord, keepdims)
    if len(axis) == 2:
        return _matrix(x, axis, ord, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


@scalar_result
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector norm over `axis` (all axes if None), as ``numpy.linalg.vector_norm``, lazily.

    Parameters
    ----------
    x : array_like
        Input; integer and bool inputs are cast to float64.
    axis : None, int or tuple of ints, optional
        Axes treated as one vector; None: every axis.
    keepdims : bool, optional
        Keep the normed axes with length one.
    ord : {int, float, inf, -inf}, optional
        Order of the norm (default 2).

    Returns
    -------
    Array
        The norms.
    """
    x = _as_inexact(x)
    if isinstance(axis, tuple):
        axis = normalize_axis_tuple(axis, x.ndim)
    return _vector(x, tuple(range(x.ndim)) if axis is None else axis, ord, keepdims)


@scalar_result
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two axes, as ``numpy.linalg.matrix_norm``.

    Parameters
    ----------
    x : array_like
        Input of at least two dimensions (a stack of matrices).
    keepdims : bool, optional
        Keep the two matrix axes with length one.
    ord : {'fro', 'nuc', 1, -1, 2, -2, inf, -inf}, optional
        Order of the norm (default Frobenius); 2, -2 and 'nuc' fall back to NumPy.

    Returns
    -------
    Array
        The norms.
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def matrix_transpose(x, /):
    """Swap the last two axes (a view), as ``numpy.linalg.matrix_transpose``."""
    return _manipulation.matrix_transpose(x)


# ---- LAPACK as library calls (custom-call nodes: lazy; the work around them fuses) ---------
def _lib():

    return _library


def _arr(x) -> Array:
    return x if isinstance(x, Array) else _creation.asarray(x)


def _stacked_2d(*arrays) -> None:
    for a in arrays:
        if a.ndim < 2:
            raise _np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at "
                                         "least two-dimensional")


def _stacked_square(*arrays) -> None:
    for a in arrays:
        if a.shape[-1] != a.shape[-2]:
            raise _np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _dtype_of(fn, a: Array, *extra, **kw):
    """NumPy's result dtype(s) for `a`'s dtype, from a 2x2 identity (cheap, never singular)."""
    res = fn(_np.eye(2, dtype=a.dtype), *extra, **kw)
    return tuple(_np.asarray(r).dtype for r in res) if isinstance(res, tuple) else \
        _np.asarray(res).dtype


def _square(a) -> Array:
    a = _arr(a)
    _stacked_2d(a)
    _stacked_square(a)
    if a.dtype.kind not in "biufc":
        raise TypeError(f"array type {a.dtype} is unsupported in linalg")
    return a


def solve(a, b):
    """Solve a @ x = b (numpy.linalg.solve): LAPACK's gesv, as a library call."""
    a, b = _square(a), _arr(b)
    m = a.shape[-1]
    if b.ndim == 1:
        if b.shape[0] != m:
            raise ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0, "
                             f"with gufunc signature (m,m),(m)->(m) (size {b.shape[0]} is "
                             f"different from {m})")
        shape = a.shape[:-1]
    else:
        if b.shape[-2] != m:
            raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, "
                             f"with gufunc signature (m,m),(m,n)->(m,n) (size {b.shape[-2]} is "
                             f"different from {m})")
        shape = _np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    dtype = _np.linalg.solve(_np.eye(2, dtype=a.dtype), _np.ones(2, dtype=b.dtype)).dtype
    return _lib().library_call("solve", [a, b], {}, (shape, dtype))


def inv(a):
    """The inverse of a square matrix (numpy.linalg.inv), as a library call."""
    a = _square(a)
    return _lib().library_call("inv", [a], {}, (a.shape, _dtype_of(_np.linalg.inv, a)))


def det(a):
    """The determinant (numpy.linalg.det), as a library call."""
    a = _square(a)
    return _lib().library_call("det", [a], {}, (a.shape[:-2], _dtype_of(_np.linalg.det, a)))


def slogdet(a):
    """Sign and log-magnitude of the determinant (numpy.linalg.slogdet)."""
    a = _square(a)
    ds, dl = _dtype_of(_np.linalg.slogdet, a)
    sign, logabsdet = _lib().library_call("slogdet", [a], {},
                                          [(a.shape[:-2], ds), (a.shape[:-2], dl)])
    return _np.linalg._linalg.SlogdetResult(sign, logabsdet)


def cholesky(a, /, *, upper=False):
    """The Cholesky factor (numpy.linalg.cholesky); not positive definite raises LinAlgError
    when computed."""
    a = _square(a)
    return _lib().library_call("cholesky", [a], {"upper": bool(upper)},
                               (a.shape, _dtype_of(_np.linalg.cholesky, a)))


def eigvalsh(a, UPLO="L"):
    """Eigenvalues of a Hermitian matrix (numpy.linalg.eigvalsh)."""
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    a = _square(a)
    return _lib().library_call("eigvalsh", [a], {"UPLO": UPLO},
                               (a.shape[:-1], _dtype_of(_np.linalg.eigvalsh, a)))


def eigh(a, UPLO="L"):
    """Eigenvalues and eigenvectors of a Hermitian matrix (numpy.linalg.eigh)."""
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    a = _square(a)
    dw, dv = _dtype_of(_np.linalg.eigh, a)
    w, v = _lib().library_call("eigh", [a], {"UPLO": UPLO}, [(a.shape[:-1], dw), (a.shape, dv)])
    return _np.linalg._linalg.EighResult(w, v)


def _mn(a: Array):
    _stacked_2d(a)
    m, n = a.shape[-2:]
    return a.shape[:-2], m, n, min(m, n)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition (numpy.linalg.svd), as a library call."""
    a = _arr(a)
    batch, m, n, k = _mn(a)
    if not compute_uv:
        return svdvals(a) if not hermitian else numpy_fallback(_np.linalg.svd, a, full_matrices,
                                                          compute_uv, hermitian)
    du, ds, dvh = _dtype_of(_np.linalg.svd, a)
    shapes = [batch + ((m, m) if full_matrices else (m, k)), batch + (k,),
              batch + ((n, n) if full_matrices else (k, n))]
    u, s, vh = _lib().library_call(
        "svd", [a], {"full_matrices": bool(full_matrices), "hermitian": bool(hermitian)},
        list(zip(shapes, (du, ds, dvh))))
    return _np.linalg._linalg.SVDResult(u, s, vh)


def svdvals(x, /):
    """Singular values (numpy.linalg.svdvals), as a library call."""
    a = _arr(x)
    batch, m, n, k = _mn(a)
    return _lib().library_call("svdvals", [a], {},
                               (batch + (k,), _dtype_of(_np.linalg.svdvals, a)))


def qr(a, mode="reduced"):
    """QR decomposition (numpy.linalg.qr); modes 'reduced', 'complete' and 'r'."""
    a = _arr(a)
    if mode not in ("reduced", "complete", "r"):
        return numpy_fallback(_np.linalg.qr, a, mode)
    batch, m, n, k = _mn(a)
    if mode == "r":
        r = _np.linalg.qr(_np.eye(2, dtype=a.dtype), mode="r")
        q, rr = _lib().library_call("qr", [a], {"mode": "reduced"},
                                    [(batch + (m, k), r.dtype), (batch + (k, n), r.dtype)])
        return rr
    dq, dr = _dtype_of(_np.linalg.qr, a, mode=mode)
    kq = m if mode == "complete" else k
    q, r = _lib().library_call("qr", [a], {"mode": mode},
                               [(batch + (m, kq), dq), (batch + (kq, n), dr)])
    return _np.linalg._linalg.QRResult(q, r)


def pinv(a, rcond=None, hermitian=False, *, rtol=_np._NoValue):
    """The pseudo-inverse (numpy.linalg.pinv) with the default cutoff, as a library call."""
    a = _arr(a)
    if rcond is not None or rtol is not _np._NoValue:
        return numpy_fallback(_np.linalg.pinv, a, rcond, hermitian, rtol=rtol)
    batch, m, n, k = _mn(a)
    return _lib().library_call("pinv", [a], {"hermitian": bool(hermitian)},
                               (batch + (n, m), _dtype_of(_np.linalg.pinv, a)))


def matrix_power(a, n):
    """`a` to the integer power `n` (numpy.linalg.matrix_power), as a library call."""
    a = _square(a)
    n = operator_index(n)
    dtype = _np.linalg.matrix_power(_np.eye(2, dtype=a.dtype), n).dtype
    return _lib().library_call("matrix_power", [a], {"n": n}, (a.shape, dtype))


@scalar_result
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """Rank by SVD (numpy.linalg.matrix_rank) with the default tolerance."""
    a = _arr(A)
    if tol is not None or rtol is not None or a.ndim < 2:
        return numpy_fallback(_np.linalg.matrix_rank, a, tol, hermitian, rtol=rtol)
    return _lib().library_call("matrix_rank", [a], {"hermitian": bool(hermitian)},
                               (a.shape[:-2], _np.dtype(_np.intp)))


def multi_dot(arrays, *, out=None):
    """A chain of matrix products (numpy.linalg.multi_dot), left to right: lazy matmuls."""
    if out is not None:
        return numpy_fallback(_np.linalg.multi_dot, arrays, out=out)
    arrays = [_arr(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first, last = arrays[0], arrays[-1]
    if first.ndim == 1:
        arrays[0] = first[None, :]
    if last.ndim == 1:
        arrays[-1] = last[:, None]
    for x in arrays:
        _stacked_2d(x)
        if x.ndim != 2:
            raise _np.linalg.LinAlgError(f"{x.ndim}-dimensional array given. Array must be "
                                         "two-dimensional")
    r = arrays[0]
    for x in arrays[1:]:
        r = _products.dot(r, x)
    if first.ndim == 1 and last.ndim == 1:
        return r[0, 0]
    if first.ndim == 1:
        return r[0]
    if last.ndim == 1:
        return r[:, 0]
    return r


def operator_index(n) -> int:
    import operator

    try:
        return operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
