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

from lazyarray._coverage import module_getattr as _module_getattr
from lazyarray.array import Array, _fallback

__all__ = list(_np.linalg.__all__)


def __getattr__(name: str):
    return _module_getattr(_np.linalg, globals(), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))


def _la():
    import lazyarray

    return lazyarray


def _as_inexact(x) -> Array:
    """`x` as a lazy array, cast to float64 unless it is floating or complex (NumPy's rule)."""
    la = _la()
    x = x if isinstance(x, Array) else la.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(_np.float64)


def _squared_magnitude(x: Array) -> Array:
    """|x|**2 in x's real dtype (conj(x) * x for complex, exact like NumPy's)."""
    return (x.conj() * x).real if x.dtype.kind == "c" else x * x


def _drop_axes(r: Array, axes: tuple[int, ...]) -> Array:
    """Remove the (length-1) `axes` of `r`."""
    return r.reshape(tuple(n for i, n in enumerate(r.shape) if i not in axes))


def _vector(x: Array, axes, ord, keepdims: bool) -> Array:
    """Vector norm of order `ord` over `axes` (an int or a tuple of ints), lazily."""
    la = _la()
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    axes = normalize_axis_tuple(axes, x.ndim)
    if ord is None or ord == 2:
        return la.sqrt(_squared_magnitude(x).sum(axis=axes, keepdims=keepdims))
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
    la = _la()
    row, col = (normalize_axis_index(a, x.ndim) for a in axes)
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord is None or (isinstance(ord, str) and ord in ("fro", "f")):
        return la.sqrt(_squared_magnitude(x).sum(axis=(row, col), keepdims=keepdims))
    if isinstance(ord, str) and ord == "nuc" or not isinstance(ord, str) and ord in (2, -2):
        return _fallback(_np.linalg.norm, x, ord=ord, axis=(row, col), keepdims=keepdims)
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
    return _la().matrix_transpose(x)
