"""Sorting, searching and order statistics as library calls (custom-call nodes): lazy, with the
elementwise work around them fused; the call itself runs NumPy's routine between kernels, so
results (including the order of ties, and NaNs sorted last) are NumPy's own.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numpy.exceptions import AxisError

from lazyarray.array import (Array, numpy_fallback, as_node, eager_result, eager_values, in_order,
                             scalar_result,
                             wrap)
from lazyarray._creation import asarray
from lazyarray._funcs import where
from lazyarray._manipulation import moveaxis, stack
from lazyarray._reductions import mean
from lazyarray._ufuncs import floor_divide, isnan, remainder
from lazyarray.graph.node import Node
from lazyarray.ops.library import LIBRARY, attrs_for, params_of


def library_call(target: str, operands, params: dict, results) -> Array | tuple[Array, ...]:
    """Lazy results of the library call `target` on `operands`: one Array per (shape, dtype)
    in `results` (a single pair: one Array)."""
    values = eager_values(operands)
    if values is not None:  # the eager tier: NumPy's routine, right now
        res = LIBRARY[target].run(*values, **params_of(attrs_for(target, params)))
        if LIBRARY[target].outputs == 1:
            return eager_result(np.asarray(res), values)
        return tuple(eager_result(np.asarray(r), values) for r in res)
    srcs = tuple(as_node(x) for x in operands)
    if LIBRARY[target].outputs == 1:
        shape, dtype = results
        return wrap(Node("custom-call", srcs, tuple(shape), np.dtype(dtype),
                         attrs_for(target, params)))
    return tuple(wrap(Node("custom-call", srcs, tuple(shape), np.dtype(dtype),
                           attrs_for(target, params, k)))
                 for k, (shape, dtype) in enumerate(results))


def _arr(x) -> Array:

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


def _sort_call(target: str, np_fn, a, axis, kind, order, stable, indices: bool):
    if order is not None:
        return numpy_fallback(np_fn, a, axis=axis, kind=kind, order=order, stable=stable)
    a = _arr(a)
    kind = _kind(kind, stable)
    a, ax = _flat_or(a, axis)
    res = library_call(target, [a], {"axis": ax, "kind": kind},
                       (a.shape, np.intp if indices else a.dtype))
    return res if indices else in_order(res, "K", (a,))  # (np.sort sorts a copy "K")


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """A sorted copy of `a` (numpy.sort): NaNs last, NumPy's algorithms."""
    return _sort_call("sort", np.sort, a, axis, kind, order, stable, False)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Indices that sort `a` (numpy.argsort); ties ordered as NumPy orders them."""
    return _sort_call("argsort", np.argsort, a, axis, kind, order, stable, True)


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


def _partition_call(target: str, np_fn, a, kth, axis, kind, order, indices: bool):
    if order is not None or kind != "introselect":
        return numpy_fallback(np_fn, a, kth, axis=axis, kind=kind, order=order)
    a = _arr(a)
    a, ax = _flat_or(a, axis)
    if a.ndim == 0:
        raise AxisError(-1, 0)
    ks = _kth(kth, a.shape[ax])
    return library_call(target, [a], {"kth": ks, "axis": ax},
                        (a.shape, np.intp if indices else a.dtype))


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`a` with the k-th element in its sorted place (numpy.partition)."""
    return _partition_call("partition", np.partition, a, kth, axis, kind, order, False)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition `a` (numpy.argpartition)."""
    return _partition_call("argpartition", np.argpartition, a, kth, axis, kind, order, True)


@scalar_result
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


# ---- order statistics from a partition --------------------------------------------------------
def _along_last(a: Array, axis, kth: list[int]) -> Array:
    """`a` partitioned along `axis` (None: flattened) so that each position in `kth` holds the
    value a sort would put there, that axis moved last: what an order statistic reads, in the
    linear time of NumPy's introselect instead of a sort's n log n (as numpy.median does).
    Where `a` is a float array, its last position too: NaNs sort last, so it is NaN exactly
    where the slice holds one."""

    n = a.size if axis is None else a.shape[_norm_axis(axis, a.ndim)]
    ks = sorted({*kth, *([n - 1] if a.dtype.kind == "f" else [])})
    if axis is None:
        return partition(a.reshape(-1), ks, axis=-1)
    return moveaxis(partition(a, ks, axis=axis), axis, -1)


def _keep(r: Array, a: Array, axis, keepdims: bool) -> Array:
    if not keepdims:
        return r
    if axis is None:
        return r.reshape(r.shape + (1,) * a.ndim)
    ax = _norm_axis(axis, a.ndim)
    return r.reshape(r.shape[:r.ndim - (a.ndim - 1)] + a.shape[:ax] + (1,) + a.shape[ax + 1:])


@scalar_result
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along `axis` (numpy.median): NaN where a slice holds a NaN."""

    values = eager_values((a,)) if out is None else None
    if values is not None:  # the eager tier
        return eager_result(np.asarray(np.median(values[0], axis, keepdims=keepdims)), values)
    a = _arr(a)
    if out is not None or not isinstance(axis, (int, type(None))) or a.dtype.kind not in "biuf" \
            or a.size == 0:
        return numpy_fallback(np.median, a, axis=axis, out=out, overwrite_input=overwrite_input,
                         keepdims=keepdims)
    n = a.size if axis is None else a.shape[_norm_axis(axis, a.ndim)]
    s = _along_last(a, axis, [(n - 1) // 2, n // 2])
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

    lazy_q = isinstance(q, Array)
    values = eager_values((a, *([q] if lazy_q else []), *([] if weights is None else [weights])))
    if values is not None:  # the eager tier
        return eager_result(np.asarray(np_fn(
            values[0], values[1] if lazy_q else q, axis=axis, method=method, keepdims=keepdims,
            weights=None if weights is None else values[-1])), values)
    if isinstance(q, Array) or method != "linear" or weights is not None or \
            not isinstance(axis, (int, type(None))):
        return numpy_fallback(np_fn, a, q, axis=axis, method=method, keepdims=keepdims,
                         weights=weights)
    a = _arr(a)
    qa = _check_q(q, scale)
    if a.dtype.kind not in "biuf" or a.size == 0:
        return numpy_fallback(np_fn, a, q, axis=axis, method=method, keepdims=keepdims)
    dtype = np_fn(np.zeros(2, a.dtype), q).dtype  # NumPy's result dtype for these inputs
    n = a.size if axis is None else a.shape[_norm_axis(axis, a.ndim)]
    at = []  # per quantile: (lo, hi, t), NumPy's "linear" method (Hyndman & Fan type 7)
    for qi in qa.reshape(-1).tolist():
        virtual = qi * (n - 1)
        lo = min(max(math.floor(virtual), 0), n - 1)
        at.append((lo, min(lo + 1, n - 1), virtual - lo))
    s = _along_last(a, axis, [k for lo, hi, _ in at for k in (lo, hi)]).astype(dtype, copy=False)
    outs = []
    for lo, hi, t in at:
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


@scalar_result
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """The q-th percentiles along `axis` (numpy.percentile; the linear method natively)."""
    if out is not None or interpolation is not None:
        extra = {} if interpolation is None else {"interpolation": interpolation}
        return numpy_fallback(np.percentile, a, q, axis=axis, out=out, method=method,
                         keepdims=keepdims, weights=weights, **extra)
    return _quantile(a, q, axis, method, keepdims, weights, 100, np.percentile, "percentile")


@scalar_result
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """The q-th quantiles along `axis` (numpy.quantile; the linear method natively)."""
    if out is not None or interpolation is not None:
        extra = {} if interpolation is None else {"interpolation": interpolation}
        return numpy_fallback(np.quantile, a, q, axis=axis, out=out, method=method,
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


# ---- more library calls whose result shapes do not depend on the values ------------------------
def lexsort(keys, axis=-1):
    """Indirect stable sort on several keys, the last one primary (numpy.lexsort)."""
    if isinstance(keys, Array) and keys.ndim >= 1 or isinstance(keys, np.ndarray):
        keys = [keys[i] for i in range(len(keys))]
    ks = [_arr(k) for k in keys]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = ks[0].shape
    if any(k.shape != shape for k in ks):
        raise ValueError("all keys need to be the same shape")
    if not shape:
        return numpy_fallback(np.lexsort, ks, axis=axis)
    ax = _norm_axis(axis, len(shape))
    return library_call("lexsort", ks, {"axis": ax}, (shape, np.intp))


@scalar_result
def interp(x, xp, fp, left=None, right=None, period=None):
    """One-dimensional piecewise-linear interpolation (numpy.interp)."""
    if left is not None or right is not None or isinstance(period, Array):
        return numpy_fallback(np.interp, x, xp, fp, left=left, right=right, period=period)
    x, xp_, fp_ = _arr(x), _arr(xp), _arr(fp)
    if xp_.ndim != 1 or fp_.ndim != 1:
        raise ValueError("object too deep for desired array" if max(xp_.ndim, fp_.ndim) > 1
                         else "object of too small depth for desired array")
    if xp_.shape != fp_.shape:
        raise ValueError("fp and xp are not of the same length.")
    if xp_.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    if period is not None and period == 0:
        raise ValueError("period must be a non-zero value")
    dtype = np.interp(np.zeros(1), np.zeros(1), np.zeros(1, fp_.dtype)).dtype
    return library_call("interp", [x, xp_, fp_], {"period": None if period is None
                                                   else repr(float(period))}, (x.shape, dtype))


def _conv(name, a, v, mode):
    a, v = _arr(a), _arr(v)
    if mode not in ("full", "same", "valid"):
        return numpy_fallback(getattr(np, name), a, v, mode)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError("object too deep for desired array" if max(a.ndim, v.ndim) > 1 else
                         "object of too small depth for desired array")
    n, m = a.shape[0], v.shape[0]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    size = {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}[mode]
    dtype = getattr(np, name)(np.ones(1, a.dtype), np.ones(1, v.dtype)).dtype
    return library_call(name, [a, v], {"mode": mode}, ((size,), dtype))


def convolve(a, v, mode="full"):
    """Discrete linear convolution of two 1-d arrays (numpy.convolve)."""
    return _conv("convolve", a, v, mode)


def correlate(a, v, mode="valid"):
    """Cross-correlation of two 1-d arrays (numpy.correlate)."""
    return _conv("correlate", a, v, mode)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element is in `test_elements` (numpy.isin): the shape of `element`."""
    e, t = _arr(element), _arr(test_elements)
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    return library_call("isin", [e, t], {"invert": bool(invert), "kind": kind},
                        (e.shape, np.bool_))


def digitize(x, bins, right=False):
    """Indices of the bins each value falls in (numpy.digitize)."""
    x, b = _arr(x), _arr(bins)
    if b.ndim != 1:
        raise ValueError("object too deep for desired array" if b.ndim > 1 else
                         "object of too small depth for desired array")
    if x.dtype.kind == "c" or b.dtype.kind == "c":
        raise TypeError("x may not be complex")
    bv = computed_value(b)  # computed bins are checked now; pending ones when they are computed
    if bv is not None and bv.size > 1:
        d = np.diff(bv)
        if not ((d >= 0).all() or (d <= 0).all()):
            raise ValueError("bins must be monotonically increasing or decreasing")
    return library_call("digitize", [x, b], {"right": bool(right)}, (x.shape, np.intp))


def histogram(a, bins=10, range=None, density=None, weights=None):
    """Counts (or density) in `bins` equal-width bins, and the bin edges (numpy.histogram);
    bin edges given as an array or a name ("auto", ...) go to NumPy."""
    values = eager_values((a,) if weights is None else (a, weights))
    if values is not None:  # the eager tier
        counts, edges = np.histogram(values[0], bins, range, density,
                                     values[1] if len(values) > 1 else None)
        return eager_result(counts, values), eager_result(edges, values)
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool) or bins < 1:
        return numpy_fallback(np.histogram, a, bins=bins, range=range, density=density,
                         weights=weights)
    a = _arr(a).reshape(-1)
    ops = [a]
    if weights is not None:
        w = _arr(weights)
        if w.shape != a.shape and w.size != a.size:
            raise ValueError("weights should have the same shape as a.")
        ops.append(w.reshape(-1))
    proxy_w = None if weights is None else np.ones(1, ops[1].dtype)
    dtype = np.histogram(np.zeros(1, a.dtype), bins=1, weights=proxy_w,
                         density=density)[0].dtype
    edge = np.histogram(np.zeros(1, a.dtype), bins=1)[1].dtype
    shapes = [((int(bins),), dtype), ((int(bins) + 1,), edge)]
    if range is None:
        return library_call("histogram", ops, {"bins": int(bins), "density": density}, shapes)
    lo, hi = (float(r) for r in range)
    if lo > hi:
        raise ValueError("max must be larger than min in range parameter.")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"supplied range of [{lo}, {hi}] is not finite")
    return library_call("histogram_range", ops, {"bins": int(bins), "lo": repr(lo),
                                                 "hi": repr(hi), "density": density}, shapes)


def choose(a, choices, out=None, mode="raise"):
    """Elements of `choices` picked by the index array `a` (numpy.choose)."""
    if out is not None or mode not in ("raise", "wrap", "clip"):
        return numpy_fallback(np.choose, a, choices, out=out, mode=mode)
    a = _arr(a)
    cs = [_arr(c) for c in choices]
    if not cs:
        raise ValueError("0-length sequence.")
    if a.dtype.kind not in "iub":
        raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') "
                        "according to the rule 'safe'" if a.dtype.kind == "f" else
                        f"invalid index array of dtype {a.dtype}")
    shape = np.broadcast_shapes(a.shape, *(c.shape for c in cs))
    dtype = np.result_type(*(c.dtype for c in cs))
    return library_call("choose", [a, *(c.astype(dtype, copy=False) for c in cs)],
                        {"mode": mode}, (shape, dtype))


def computed_value(x):
    """The NumPy value of `x` when nothing is pending behind it (a Python or NumPy value, or
    a computed Array), else None."""
    if not isinstance(x, Array):
        return np.asarray(x)
    node = x._storage.node
    return np.asarray(x) if node.op == "buffer" and node.on_host else None


def unravel_index(indices, shape, order="C"):
    """Coordinate arrays of flat indices (numpy.unravel_index), lazily with // and %; indices
    still being computed go to NumPy (their range check needs the values)."""

    flat = computed_value(indices)
    if flat is None:
        return numpy_fallback(np.unravel_index, indices, shape, order=order)
    if flat.dtype.kind not in "iu":
        raise TypeError("only int indices permitted")
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    size = math.prod(dims)
    bad = (flat < 0) | (flat >= size)
    if bad.any():
        first = int(flat.reshape(-1)[int(np.argmax(bad.reshape(-1)))])
        raise ValueError(f"index {first} is out of bounds for array with size {size}")
    rest = _arr(indices).astype(np.intp, copy=False)
    out = {}
    seq = list(enumerate(dims))
    for k, d in (reversed(seq) if order == "C" else seq):
        out[k] = remainder(rest, d)
        rest = floor_divide(rest, d)
    return tuple(out[k] for k in range(len(dims)))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices of coordinate arrays (numpy.ravel_multi_index); mode 'raise' checks the
    coordinates when they are already computed, else goes to NumPy."""
    dims = tuple(operator.index(d) for d in dims)
    coords = [_arr(c) for c in multi_index]
    if len(coords) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    values = [computed_value(c) for c in multi_index]
    if mode != "raise" or order not in ("C", "F") or any(v is None for v in values):
        return numpy_fallback(np.ravel_multi_index, multi_index, dims, mode=mode, order=order)
    for v, d in zip(values, dims):
        if v.dtype.kind not in "iu":
            raise TypeError("only int indices permitted")
        if v.size and (v.min() < 0 or v.max() >= d):
            raise ValueError("invalid entry in coordinates array")
    flat = None
    stride = 1
    seq = list(zip(coords, dims))
    for c, d in (reversed(seq) if order == "C" else seq):
        term = c.astype(np.intp) * stride
        flat = term if flat is None else flat + term
        stride *= d
    return flat
