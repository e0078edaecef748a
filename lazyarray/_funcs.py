"""Non-ufunc elementwise functions: where, clip, round."""

from __future__ import annotations

import builtins

import numpy as np

from lazyarray import _creation, config
from lazyarray import _reductions as reductions
from lazyarray import _ufuncs as u
from lazyarray.array import (F64_CONSTANTS, UFUNCS, Array, NonNumeric, as_array, eager_array, eager_result,
                             eager_values, f64_constant, in_order, numpy_fallback, operand,
                             record_two_scalars, record_where, scalar_result, small_value,
                             tiny_values, value_array, wrap)
from lazyarray.graph import build
from lazyarray.graph.node import Node, buffer
from lazyarray.ops.dtypes import result_type, weak_type
from lazyarray.runtime import pool, threads


def where(condition, x=None, y=None):
    """Elements of `x` where `condition` is true, else of `y` (see numpy.where).

    The one-argument form has a data-dependent shape: it materializes (as ``nonzero``).
    """
    if type(condition) is Array and condition._tr is not None:  # a pending bool trace
        res = record_where(condition, x, y)  # goes on, through where (float64 or floats)
        if res is not None:
            return res
    if type(condition) is Array and type(x) is Array and type(y) is Array:  # hot path
        c, a, b = small_value(condition), small_value(x), small_value(y)
        if (c is not None and a is not None and b is not None and c.shape == a.shape == b.shape
                and config.get().backend != "cuda"):
            return value_array(_WHERE(c, a, b))  # the eager tier: NumPy's where, right now
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    values = tiny_values((condition, x, y)) if config.get().backend != "cuda" else None
    if values is not None:  # the eager tier: NumPy's where, right now
        return eager_array(np.where(*values))
    try:
        c, a, b = operand(condition), operand(x), operand(y)
    except NonNumeric:  # strings, objects: NumPy's where (docs/semantics.md, deviation 14)
        return numpy_fallback(np.where, condition, x, y)
    types = [v.dtype if isinstance(v, Node) else weak_type(v) for v in (a, b)]
    dtype = result_type(*types)
    if not isinstance(c, Node):
        c = build.constant(np.asarray(c, dtype=bool), np.dtype(bool))
    # a Python int beyond the result dtype wraps, as NumPy's where casts it (uint8 and -1: 255)
    a, b = (build.constant(_wrapped(v, dtype), dtype) if type(v) is int else v for v in (a, b))
    return in_order(as_array(wrap(build.select(  # (NumPy's where: 0-d arrays, not scalars)
        build.convert(c, np.dtype(bool)) if c.dtype != bool else c, a, b, dtype))), "K",
        (condition, x, y), copy=False)


def _wrapped(v: int, dtype: np.dtype) -> np.ndarray:
    """A Python int as a 0-d array of `dtype`, cast as NumPy's `where` casts its operands."""
    with np.errstate(all="ignore"):
        return np.array(v).astype(dtype)


_CLIP = np._core.umath.clip  # the ufunc behind np.clip, without its 1 us of wrappers
_WHERE = np.where
_F64 = np.dtype(np.float64)


def _f64(b):
    """A bound of a float64 clip as a cached 0-d float64 when it is a Python float (the same
    loop and bits; 0.6 against 0.84 us at 1e3)."""
    if type(b) is not float or not b:  # (0.0 and -0.0 are one key)
        return b
    c = F64_CONSTANTS.get(b)
    return c if c is not None else f64_constant(b)


_UFUNC_KWARGS = frozenset({"where", "casting", "order", "dtype", "subok", "signature"})


def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
         max=np._NoValue, **kwargs):
    """Limit the values of `a` to [a_min, a_max], NaN-propagating (see numpy.clip)."""
    if (type(a) is Array and type(a_min) is float and type(a_max) is float and out is None
            and min is max is np._NoValue and not kwargs):  # hot path: float bounds
        if a_min and a_max and a_min == a_min and a_max == a_max:
            # on a trace (or starting one): nonzero bounds only, where NumPy's loop for
            # scalar bounds and the kernel's minimum(maximum(...)) agree on every sign
            res = record_two_scalars("clip", a, a_min, a_max)
            if res is not None:
                return res
        v = small_value(a)
        if type(v) is np.ndarray and v.dtype is _F64 and config.get().backend != "cuda":
            return value_array(_CLIP(v, _f64(a_min), _f64(a_max)))  # the eager tier
    if kwargs:
        unknown = sorted(set(kwargs) - _UFUNC_KWARGS)
        if unknown:
            raise TypeError(f"clip() got an unexpected keyword argument '{unknown[0]}'")
        # ufunc options: NumPy's own clip
        return numpy_fallback(np.clip, a, a_min, a_max, out=out, min=min, max=max, **kwargs)
    if (out is None and a_min is not np._NoValue and a_max is not np._NoValue
            and min is max is np._NoValue):  # (identity: a bound may be an array)
        # None bounds are not tiny values: those stay lazy (and so does the CUDA backend)
        values = tiny_values((a, a_min, a_max)) if config.get().backend != "cuda" else None
        if values is not None and hasattr(values[0], "clip"):  # the eager tier, right now
            v, lo, hi = values
            if type(v) is np.ndarray and v.dtype.kind in "fc" and lo is not None \
                    and hi is not None:  # what ndarray.clip calls (numpy/_core/_methods.py)
                if v.dtype is _F64:
                    lo, hi = _f64(lo), _f64(hi)
                return eager_array(_CLIP(v, lo, hi))
            return eager_array(v.clip(lo, hi))
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    lo = None if lo is np._NoValue else lo
    hi = None if hi is np._NoValue else hi
    dt = a.dtype if isinstance(a, Array) else np.asarray(a).dtype
    if dt.kind in "iu":  # NumPy clips with out-of-range Python ints as with the dtype's limits
        info = np.iinfo(dt)
        lo, hi = (builtins.min(builtins.max(b, info.min), info.max) if type(b) is int else b
                  for b in (lo, hi))
    if lo is None and hi is None:
        return UFUNCS["positive"](a, out=out) if out is not None else wrap(operand_node(a))
    if lo is None:
        return UFUNCS["minimum"](a, hi, out=out, **kwargs)
    if hi is None:
        return UFUNCS["maximum"](a, lo, out=out, **kwargs)
    res = in_order(wrap(build.elementwise("clip", operand(a), operand(lo), operand(hi))), "K",
                   (a, lo, hi), copy=False)
    if out is not None:
        out._assign(res)
        return out
    return res


def operand_node(a) -> Node:
    v = operand(a)
    return v if isinstance(v, Node) else build.constant(np.asarray(v), np.asarray(v).dtype)


def round(a, decimals=0, out=None):
    """Evenly round to the given number of decimals (see numpy.round)."""
    values = eager_values((a,)) if out is None else None
    if values is not None:  # the eager tier
        return eager_result(np.round(values[0], decimals), values)
    node = operand_node(a)
    x = a if isinstance(a, Array) else Array(node)  # (a view keeps its layout: NumPy's order)
    if node.dtype.kind in "biu" and decimals >= 0:
        res = in_order(Array(node), "K", (a,))
    elif decimals == 0:
        res = UFUNCS["rint"](x)
    elif node.dtype.kind in "fc":
        f = 10.0**decimals
        res = UFUNCS["rint"](x * f) / f if decimals > 0 else \
            UFUNCS["rint"](x / 10.0**-decimals) * 10.0**-decimals
        res = res.astype(node.dtype)
    else:
        return numpy_fallback(np.round, a, decimals)
    if out is not None:
        out._assign(res)
        return out
    return res


around = round


def copyto(dst, src, casting="same_kind", where=True):
    """Copy values from `src` into `dst`, broadcasting (see numpy.copyto)."""
    if isinstance(dst, Array) and dst._is_scalar():
        raise TypeError(f"copyto() argument 1 must be numpy.ndarray, not numpy."
                        f"{dst.dtype.type.__name__}")
    if type(src) is int and isinstance(dst, Array) and dst.dtype.kind in "iu":
        np.asarray(src, dtype=dst.dtype)  # a Python int must fit, checked first (NEP 50)
    if _same_elements(dst, src):
        return  # NumPy copies nothing, and checks no write flag (`copyto(r[:], r)`)
    if isinstance(dst, Array) and not dst.flags.writeable:
        raise ValueError("assignment destination is read-only")  # (before the cast, as NumPy)
    if type(src) in (bool, int, float, complex) and casting != "unsafe":
        # a Python scalar is weak (NEP 50): its kind decides the cast, and its value must fit
        # (dst[...] = src raises NumPy's error)
        kinds = {bool: "biufc", int: "iufc", float: "fc", complex: "c"}[type(src)]
        if type(src) is bool and casting in ("no", "equiv"):
            kinds = "b"
        if dst.dtype.kind not in kinds:
            raise TypeError(f"Cannot cast scalar from {np.asarray(src).dtype!r} to "
                            f"{dst.dtype!r} according to the rule {casting!r}")
        src_dtype = dst.dtype
    else:
        src = src if isinstance(src, Array) else Array(operand_node(src))
        src_dtype = src.dtype
    if not np.can_cast(src_dtype, dst.dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from {src_dtype!r} to {dst.dtype!r} "
                        f"according to the rule {casting!r}")
    if isinstance(src, Array) and src.dtype != dst.dtype and src._is_scalar():
        src = src.astype(dst.dtype)  # (a cast, as NumPy's copyto: not setitem's checks)
    if where is True:
        dst[...] = src
    else:
        dst[...] = globals()["where"](where, src, dst)


def _same_elements(dst, src) -> bool:
    """Do `dst` and `src` view the same elements of one storage in the same order?"""
    if dst is src:
        return True
    if type(dst) is not Array or type(src) is not Array or dst._storage is not src._storage:
        return False
    d, s = dst._layout(), src._layout()
    return (d.shape == s.shape and d.strides == s.strides and d.dtype == s.dtype
            and d.__array_interface__["data"][0] == s.__array_interface__["data"][0])


def putmask(a, mask, values):
    """Set a.flat[n] = values[n % len(values)] where mask is true (see numpy.putmask)."""
    mask, values = (np.asarray(x) if isinstance(x, Array) else x for x in (mask, values))
    a._mutate_eagerly(lambda view: np.putmask(view, mask, values))


def put(a, ind, v, mode="raise"):
    """Replace elements at flat indices (see numpy.put)."""
    ind, v = (np.asarray(x) if isinstance(x, Array) else x for x in (ind, v))
    a._mutate_eagerly(lambda view: np.put(view, ind, v, mode=mode))


def place(arr, mask, vals):
    """Change elements where mask is true, cycling through vals (see numpy.place)."""
    mask, vals = (np.asarray(x) if isinstance(x, Array) else x for x in (mask, vals))
    arr._mutate_eagerly(lambda view: np.place(view, mask, vals))


# ---- comparisons and cleaning --------------------------------------------------------------


def _a(x) -> Array:
    return x if isinstance(x, Array) else Array(operand_node(x))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` with NumPy's inf/NaN rules (see
    numpy.isclose)."""
    values = eager_values((a, b))
    if values is not None:  # the eager tier
        return eager_result(np.asarray(np.isclose(*values, rtol, atol, equal_nan)), values)
    x, y = _a(a), _a(b)
    dt = np.result_type(x.dtype, y.dtype, 1.0)
    x, y = (v if v.dtype == dt else v.astype(dt) for v in (x, y))  # (no copy: only read)
    finite = u.isfinite(x) & u.isfinite(y)
    close = u.less_equal(abs(x - y), atol + rtol * abs(y)) & finite
    res = close | ((x == y) & ~finite)
    if equal_nan:
        res = res | (u.isnan(x) & u.isnan(y))
    return res


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether all elements are close (see numpy.allclose): computes the value."""
    return bool(isclose(a, b, rtol, atol, equal_nan).all())


def array_equal(a1, a2, equal_nan=False) -> bool:
    """Same shape and elements (see numpy.array_equal): computes the value."""
    x, y = _a(a1), _a(a2)
    if x.shape != y.shape:
        return False
    eq = x == y
    if equal_nan and x.dtype.kind in "fc" and y.dtype.kind in "fc":
            eq = eq | (u.isnan(x) & u.isnan(y))
    return bool(eq.all())


def array_equiv(a1, a2) -> bool:
    """Shape-consistent (broadcastable) and equal (see numpy.array_equiv)."""
    x, y = _a(a1), _a(a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return bool((x == y).all())


@scalar_result
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities with finite numbers (see numpy.nan_to_num)."""
    a = _a(x)
    if a.dtype.kind not in "fc":
        return a.copy()
    if a.dtype.kind == "c":
        return numpy_fallback(np.nan_to_num, a, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    info = np.finfo(a.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    out = where(u.isnan(a), np.asarray(nan, a.dtype), a)
    out = where(out == np.inf, np.asarray(hi, a.dtype), out)
    out = where(out == -np.inf, np.asarray(lo, a.dtype), out)
    if not copy:
        a[...] = out
        return a
    return out


# ---- statistics ---------------------------------------------------------------------------


def ptp(a, axis=None, out=None, keepdims=False):
    """Range of values, max - min, along an axis (see numpy.ptp)."""
    x = _a(a)
    res = x.max(axis=axis, keepdims=keepdims) - x.min(axis=axis, keepdims=keepdims)
    return reductions.finish(res._node, out, "maximum")


def nonzero(a):
    """Indices of the elements that are non-zero (see numpy.nonzero).

    Returns a tuple of int64 arrays, one per dimension of `a`, the indices in C order. How
    many there are depends on the values, so the mask (``a != 0``, fused with whatever
    computes `a`) is computed here; a large one is scanned on all threads
    (`runtime.threads.nonzero`)."""
    x = a if isinstance(a, Array) else np.asarray(a)
    if x.ndim == 0 or x.dtype.kind not in "biufc" or (x.dtype != bool and not isinstance(
            a, Array)):
        return numpy_fallback(np.nonzero, a)  # (NumPy's errors, and NumPy's loop for its arrays)
    return tuple(Array(buffer(i)) for i in _nonzero_rows(x))


def _nonzero_rows(x) -> np.ndarray:
    """`threads.nonzero` of the mask of `x` (an Array or a NumPy bool array)."""
    return threads.nonzero(np.asarray(x if x.dtype == bool else x != 0), pool.empty)


def flatnonzero(a):
    """Indices of the non-zero elements of the flattened `a` (see numpy.flatnonzero)."""
    return nonzero(_a(a).ravel())[0]


def argwhere(a):
    """Indices of the non-zero elements, one row per element (see numpy.argwhere): the
    arrays of `nonzero` as the columns of an (N, a.ndim) array."""
    x = _a(a)
    if x.ndim == 0:
        return numpy_fallback(np.argwhere, a)
    return Array(buffer(_nonzero_rows(x))).T


@scalar_result
def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of non-zero values along an axis (see numpy.count_nonzero)."""
    values = eager_values((a,))
    if values is not None:  # the eager tier (an np.intp where NumPy gives an int)
        return eager_result(np.asarray(np.count_nonzero(values[0], axis, keepdims=keepdims),
                                       np.intp), values)
    x = _a(a)  # (a sum of bools is an np.intp count, as NumPy's)
    return (x if x.dtype == bool else x != 0).sum(axis=axis, keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average along an axis (see numpy.average)."""
    x = _a(a)
    if weights is None:
        avg = x.mean(axis=axis, keepdims=keepdims)
        n = x.size if axis is None else int(np.prod([x.shape[d] for d in
                                                     np.atleast_1d(axis)]))
        scl = full_like_scalar(avg, n)
    else:
        w = _a(weights)
        if w.shape != x.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.ndim != 1 or w.shape[0] != x.shape[axis]:
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            shape = [1] * x.ndim
            shape[axis] = w.shape[0]
            w = w.reshape(shape)
        dt = np.result_type(x.dtype, w.dtype, np.float64 if x.dtype.kind in "biu" else x.dtype)
        scl = (w * np.ones((), dt)).sum(axis=axis, keepdims=keepdims)
        avg = (x * w).astype(dt).sum(axis=axis, keepdims=keepdims) / scl
    return (avg, scl) if returned else avg


def full_like_scalar(ref, value):
    return _creation.full(ref.shape, value, dtype=ref.dtype)


def _nan_reduction(fn, fill, a, axis, dtype, keepdims, **kw):
    x = _a(a)
    if x.dtype.kind not in "fc":
        return fn(x, axis=axis, keepdims=keepdims, **({"dtype": dtype} if dtype else {}), **kw)
    clean = where(u.isnan(x), np.asarray(fill, x.dtype), x)
    return fn(clean, axis=axis, keepdims=keepdims, **({"dtype": dtype} if dtype else {}), **kw)


_NV = np._NoValue


def _nan_fallback(np_fn, a, axis, dtype, out, keepdims, **extra):
    """NumPy's own nan-reduction for the arguments lazyarray does not build (initial=,
    where=)."""
    kw = {k: v for k, v in extra.items() if v is not _NV}
    if dtype is not None:
        kw["dtype"] = dtype
    if keepdims is not _NV:
        kw["keepdims"] = keepdims
    return numpy_fallback(np_fn, a, axis=axis, out=out, **kw)


def nansum(a, axis=None, dtype=None, out=None, keepdims=_NV, initial=_NV, where=_NV):
    """Sum treating NaN as zero (see numpy.nansum)."""
    if initial is not _NV or where is not _NV:
        return _nan_fallback(np.nansum, a, axis, dtype, out, keepdims, initial=initial,
                             where=where)
    return _nan_reduction(reductions.sum, 0, a, axis, dtype, keepdims is True, out=out)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=_NV, initial=_NV, where=_NV):
    """Product treating NaN as one (see numpy.nanprod)."""
    if initial is not _NV or where is not _NV:
        return _nan_fallback(np.nanprod, a, axis, dtype, out, keepdims, initial=initial,
                             where=where)
    return _nan_reduction(reductions.prod, 1, a, axis, dtype, keepdims is True, out=out)


def nanmax(a, axis=None, out=None, keepdims=_NV, initial=_NV, where=_NV):
    """Maximum ignoring NaN (see numpy.nanmax; all-NaN slices use NumPy for its warning)."""
    if initial is not _NV or where is not _NV:
        return _nan_fallback(np.nanmax, a, axis, None, out, keepdims, initial=initial,
                             where=where)
    return _nan_reduction(reductions.max, -np.inf, a, axis, None, keepdims is True, out=out)


def nanmin(a, axis=None, out=None, keepdims=_NV, initial=_NV, where=_NV):
    """Minimum ignoring NaN (see numpy.nanmin)."""
    if initial is not _NV or where is not _NV:
        return _nan_fallback(np.nanmin, a, axis, None, out, keepdims, initial=initial,
                             where=where)
    return _nan_reduction(reductions.min, np.inf, a, axis, None, keepdims is True, out=out)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NV, *, where=_NV):
    """Mean ignoring NaN (see numpy.nanmean)."""
    if where is not _NV:
        return _nan_fallback(np.nanmean, a, axis, dtype, out, keepdims, where=where)
    keep = keepdims is True
    x = _a(a)
    if x.dtype.kind not in "fc":
        return x.mean(axis=axis, dtype=dtype, out=out, keepdims=keep)
    ok = ~u.isnan(x)
    total = nansum(x, axis=axis, dtype=dtype, keepdims=keep)
    return reductions.finish((total / ok.sum(axis=axis, keepdims=keep))._node, out)


def polyval(p, x):
    """Evaluate a polynomial by Horner's rule (see numpy.polyval)."""
    coeffs = list(p) if not isinstance(p, Array) else [p[i] for i in range(p.shape[0])]
    xv = _a(x)
    y = xv * 0
    for c in coeffs:
        y = y * xv + c
    return y
