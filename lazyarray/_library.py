"""Sorting, searching and order statistics as library calls (custom-call nodes): lazy, with the
elementwise work around them fused; the call itself runs NumPy's routine between kernels, so
results (including the order of ties, and NaNs sorted last) are NumPy's own.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numpy.exceptions import AxisError

from lazyarray.array import Array, _fallback, as_node, wrap
from lazyarray.graph.node import Node
from lazyarray.ops.library import LIBRARY, attrs_for


def library_call(target: str, operands, params: dict, results) -> Array | tuple[Array, ...]:
    """Lazy results of the library call `target` on `operands`: one Array per (shape, dtype)
    in `results` (a single pair: one Array)."""
    srcs = tuple(as_node(x) for x in operands)
    if LIBRARY[target].outputs == 1:
        shape, dtype = results
        return wrap(Node("custom-call", srcs, tuple(shape), np.dtype(dtype),
                         attrs_for(target, params)))
    return tuple(wrap(Node("custom-call", srcs, tuple(shape), np.dtype(dtype),
                           attrs_for(target, params, k)))
                 for k, (shape, dtype) in enumerate(results))


def _arr(x) -> Array:
    from lazyarray._creation import asarray

    return x if isinstance(x, Array) else asarray(x)


def _norm_axis(axis: int, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim


def _kind(kind, stable):
    if stable is not None:
        if kind is not None:
            raise ValueError("`kind` and `stable` parameters can't be provided at the same "
                             "time. Use only one of them.")
        return "stable" if stable else None
    if kind is not None:
        np.sort(np.zeros(1), kind=kind)  # NumPy validates the name
    return kind


def _flat_or(a: Array, axis):
    if axis is None:
        return a.reshape(-1), 0
    return a, _norm_axis(axis, a.ndim)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """A sorted copy of `a` (numpy.sort): NaNs last, NumPy's algorithms."""
    if order is not None:
        return _fallback(np.sort, a, axis=axis, kind=kind, order=order, stable=stable)
    a = _arr(a)
    kind = _kind(kind, stable)
    a, ax = _flat_or(a, axis)
    return library_call("sort", [a], {"axis": ax, "kind": kind}, (a.shape, a.dtype))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Indices that sort `a` (numpy.argsort); ties ordered as NumPy orders them."""
    if order is not None:
        return _fallback(np.argsort, a, axis=axis, kind=kind, order=order, stable=stable)
    a = _arr(a)
    kind = _kind(kind, stable)
    a, ax = _flat_or(a, axis)
    return library_call("argsort", [a], {"axis": ax, "kind": kind}, (a.shape, np.intp))


def _kth(kth, n: int) -> tuple[int, ...]:
    if isinstance(kth, Array):
        kth = np.asarray(kth)
    ks = np.atleast_1d(np.asarray(kth))
    if ks.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    out = []
    for k in ks.reshape(-1).tolist():
        if not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")
        out.append(k % n)
    return tuple(out)


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`a` with the k-th element in its sorted place (numpy.partition)."""
    if order is not None or kind != "introselect":
        return _fallback(np.partition, a, kth, axis=axis, kind=kind, order=order)
    a = _arr(a)
    a, ax = _flat_or(a, axis)
    if a.ndim == 0:
        raise AxisError(-1, 0)
    ks = _kth(kth, a.shape[ax])
    return library_call("partition", [a], {"kth": ks, "axis": ax}, (a.shape, a.dtype))


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition `a` (numpy.argpartition)."""
    if order is not None or kind != "introselect":
        return _fallback(np.argpartition, a, kth, axis=axis, kind=kind, order=order)
    a = _arr(a)
    a, ax = _flat_or(a, axis)
    if a.ndim == 0:
        raise AxisError(-1, 0)
    ks = _kth(kth, a.shape[ax])
    return library_call("argpartition", [a], {"kth": ks, "axis": ax}, (a.shape, np.intp))


def searchsorted(a, v, side="left", sorter=None):
    """Insertion indices of `v` into the sorted 1-d `a` (numpy.searchsorted)."""
    a = _arr(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else
                         "object of too small depth for desired array")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    vv = _arr(v)
    ops = [a, vv]
    if sorter is not None:
        s = _arr(sorter)
        if s.shape != a.shape:
            raise ValueError("sorter.size must equal a.size")
        ops.append(s.astype(np.intp, copy=False))
    return library_call("searchsorted", ops, {"side": side}, (vv.shape, np.intp))


# ---- order statistics from a sort -------------------------------------------------------------
def _along_last(a: Array, axis) -> Array:
    """`a` sorted along `axis` (None: flattened), moved last."""
    from lazyarray._manipulation import moveaxis

    if axis is None:
        return sort(a.reshape(-1), axis=-1)
    return moveaxis(sort(a, axis=axis), axis, -1)


def _keep(r: Array, a: Array, axis, keepdims: bool) -> Array:
    if not keepdims:
        return r
    if axis is None:
        return r.reshape(r.shape + (1,) * a.ndim)
    ax = _norm_axis(axis, a.ndim)
    return r.reshape(r.shape[:r.ndim - (a.ndim - 1)] + a.shape[:ax] + (1,) + a.shape[ax + 1:])


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along `axis` (numpy.median): NaN where a slice holds a NaN."""
    from lazyarray._funcs import where
    from lazyarray._reductions import mean
    from lazyarray._ufuncs import isnan

    a = _arr(a)
    if out is not None or not isinstance(axis, (int, type(None))) or a.dtype.kind not in "biuf" \
            or a.size == 0:
        return _fallback(np.median, a, axis=axis, out=out, overwrite_input=overwrite_input,
                         keepdims=keepdims)
    s = _along_last(a, axis)
    n = s.shape[-1]
    m = mean(s[..., (n - 1) // 2: n // 2 + 1], axis=-1)
    if a.dtype.kind == "f":
        m = where(isnan(s[..., -1]), np.nan, m).astype(m.dtype, copy=False)
    return _keep(m, a, axis, keepdims)


def _check_q(q, scale: float):
    qa = np.asanyarray(q)
    if qa.dtype.kind not in "biuf":
        raise TypeError("a must be an array of real numbers")
    qa = np.true_divide(qa, scale) if scale != 1 else qa
    if not (np.all(0 <= qa) and np.all(qa <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if scale == 100 else
                         "Quantiles must be in the range [0, 1]")
    return qa


def _quantile(a, q, axis, method, keepdims, weights, scale, np_fn, name):
    from lazyarray._funcs import where
    from lazyarray._manipulation import stack
    from lazyarray._ufuncs import isnan

    if isinstance(q, Array) or method != "linear" or weights is not None or \
            not isinstance(axis, (int, type(None))):
        return _fallback(np_fn, a, q, axis=axis, method=method, keepdims=keepdims,
                         weights=weights)
    a = _arr(a)
    qa = _check_q(q, scale)
    if a.dtype.kind not in "biuf" or a.size == 0:
        return _fallback(np_fn, a, q, axis=axis, method=method, keepdims=keepdims)
    dtype = np_fn(np.zeros(2, a.dtype), q).dtype  # NumPy's result dtype for these inputs
    s = _along_last(a, axis).astype(dtype, copy=False)
    n = s.shape[-1]
    outs = []
    for qi in qa.reshape(-1).tolist():
        virtual = qi * (n - 1)  # NumPy's "linear" method (Hyndman & Fan type 7)
        lo = min(max(math.floor(virtual), 0), n - 1)
        hi = min(lo + 1, n - 1)
        t = virtual - lo
        x0, x1 = s[..., lo], s[..., hi]
        d = x1 - x0
        r = where(t >= 0.5, x1 - d * (1 - t), x0 + d * t).astype(dtype, copy=False)
        if dtype.kind == "f":
            r = where(isnan(s[..., -1]), np.nan, r).astype(dtype, copy=False)
        outs.append(r)
    res = outs[0] if qa.ndim == 0 else stack(outs).reshape(qa.shape + outs[0].shape)
    if keepdims:
        res = _keep(res, a, axis, True)
    return res


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """The q-th percentiles along `axis` (numpy.percentile; the linear method natively)."""
    if out is not None or interpolation is not None:
        extra = {} if interpolation is None else {"interpolation": interpolation}
        return _fallback(np.percentile, a, q, axis=axis, out=out, method=method,
                         keepdims=keepdims, weights=weights, **extra)
    return _quantile(a, q, axis, method, keepdims, weights, 100, np.percentile, "percentile")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """The q-th quantiles along `axis` (numpy.quantile; the linear method natively)."""
    if out is not None or interpolation is not None:
        extra = {} if interpolation is None else {"interpolation": interpolation}
        return _fallback(np.quantile, a, q, axis=axis, out=out, method=method,
                         keepdims=keepdims, weights=weights, **extra)
    return _quantile(a, q, axis, method, keepdims, weights, 1, np.quantile, "quantile")


def sort_complex(a):
    """Sort by real part, then imaginary part (numpy.sort_complex): a complex result."""
    a = _arr(a)
    s = sort(a)
    if a.dtype.kind == "c":
        return s
    target = {"b": "F", "h": "F", "B": "F", "H": "F"}.get(a.dtype.char, "D")
    return s.astype(np.dtype(target))
