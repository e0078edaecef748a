"""Array creation. Constant fills are lazy (a broadcast scalar: no memory until used);
arange/linspace/eye build their data with NumPy at the call (documented in docs/semantics.md)."""

from __future__ import annotations

import math
import operator

import numpy as np

from lazyarray import config, stats
from lazyarray.array import Array, device_name, value_array, as_array, in_order
from lazyarray.config import TINY as _TINY
from lazyarray.graph import build
from lazyarray.graph.node import buffer, constant
from lazyarray.runtime import pool, threads


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)):
        out = tuple(operator.index(s) for s in shape)
    else:
        out = (operator.index(shape),)
    if any(s < 0 for s in out):
        raise ValueError("negative dimensions are not allowed")
    return out


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """Convert the input to a lazy Array (see numpy.asarray).

    lazyarray notes: a NumPy array is copied on entry, so a later change to it is never seen
    by a graph built from it (the one deliberate deviation from NumPy's aliasing ``asarray``).
    """
    if device is not None:  # "cpu" or "cuda": the data is placed there (Array API)
        out = asarray(a, dtype, order, copy=copy)
        if device_name(device) == "cpu" and out.device == "cpu":
            return out
        return out.to_device(device)
    if isinstance(a, Array):
        return _as_array_of(a, dtype, order, copy)
    if type(a) is np.ndarray and a.flags.c_contiguous and order in (None, "C", "K", "A") \
            or type(a) is not np.ndarray and order in (None, "C"):
        arr = pool.copy(a, dtype)  # (np.array's copy: large ones pooled, all threads copy)
    else:  # NumPy's layout: an F-ordered array stays F (`asarray` returns it as it is)
        arr = np.array(a, dtype=dtype, copy=True, order="K" if order in (None, "A") else order)
    if arr.dtype.kind not in "biufc":  # NumPy's own array (a counted fallback), as NumPy
        return _held(np.asarray, a, dtype=dtype, order=order, copy=copy)  # makes it
    if arr.size < _TINY and arr.size < config.get().eager_limit:
        return value_array(arr)  # a tiny value: the eager and trace tiers take it as is
    return as_array(Array(buffer(arr)))  # (the copy above is the only one)


def _held(fn, *args, **kwargs) -> np.ndarray:
    """NumPy's own array for a dtype the compiler does not handle (strings, bytes, objects,
    structured, void, datetimes): `fn(*args, **kwargs)` counted as a fallback. Such arrays
    are NumPy's in every respect (views, writes, printing); a numeric field or comparison of
    one is a NumPy array that lazyarray's functions take as any other (docs/semantics.md)."""
    stats.bump("fallbacks")
    return fn(*args, **kwargs)


def _numeric(dt) -> bool:
    return np.dtype(dt).kind in "biufc"


def _dtype_of(a, dtype) -> np.dtype:
    """The dtype a `*_like` result of `a` has."""
    if dtype is not None:
        return np.dtype(dtype)
    return a.dtype if isinstance(a, (Array, np.ndarray)) else np.asarray(a).dtype


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """Create a lazy Array (see numpy.array)."""
    if isinstance(object, Array):
        if copy is not True:  # (False: NumPy's asarray rule, raising where it must copy)
            out = asarray(object, dtype, None if order in ("K", "A") else order, copy=copy)
        else:
            out = as_array(object.astype(dtype, order=order or "K") if dtype is not None
                           else object.copy(order or "K"))
        if out.ndim < ndmin:
            out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
        return out
    if isinstance(object, np.ndarray) and object.ndim >= ndmin and object.flags.c_contiguous \
            and order in ("K", "A", "C", None):
        arr = pool.copy(object, dtype)  # (order "K": other layouts keep theirs, below)
    else:
        arr = np.array(object, dtype=dtype, copy=True, order=order, ndmin=ndmin)
    if arr.dtype.kind not in "biufc":
        return _held(np.array, object, dtype=dtype, copy=copy, order=order, subok=subok,
                     ndmin=ndmin)
    return Array(buffer(arr))


_NO_COPY = "Unable to avoid copy while creating an array as requested."


def _as_array_of(a: Array, dtype, order, copy) -> Array:
    """NumPy's asarray of an Array: `a` itself where NumPy returns the same object (its
    dtype, its layout in `order`, no copy asked), else a new array; a NumPy scalar's value
    always becomes a new 0-d array."""
    if dtype is not None and np.dtype(dtype) != a.dtype:
        if copy is False:
            raise ValueError(_NO_COPY)
        return as_array(a.astype(dtype, order="K" if order in (None, "A") else order))
    flags = a._layout().flags
    if order in ("C", "F") and not (flags.c_contiguous if order == "C" else flags.f_contiguous):
        if copy is False:
            raise ValueError(_NO_COPY)
        return a.copy(order)
    if copy or a._is_scalar():
        if copy is False:
            raise ValueError(_NO_COPY)
        return as_array(a.copy("K" if order in (None, "A") else order))
    return a


asanyarray = asarray


def ascontiguousarray(a, dtype=None, *, like=None):
    """A C-contiguous array of at least one dimension: `a` itself when it already is one
    (see numpy.ascontiguousarray)."""
    if isinstance(a, Array) and a.ndim == 0:
        a = a.reshape(1)
    return asarray(a, dtype, order="C") if isinstance(a, Array) else asarray(
        np.ascontiguousarray(a, dtype))


def asfortranarray(a, dtype=None, *, like=None):
    """An F-contiguous array of at least one dimension: `a` itself when it already is one
    (see numpy.asfortranarray)."""
    if isinstance(a, Array):
        return asarray(a.reshape(1) if a.ndim == 0 else a, dtype, order="F")
    return asarray(np.asfortranarray(a, dtype))


def _place(a: Array, device) -> Array:
    """`a` on `device` (None: where it is; "cuda": resident on the GPU)."""
    if device is None or (device_name(device) == "cpu" and a.device == "cpu"):
        return a
    return a.to_device(device)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """A new array of `shape` filled with `fill_value` (see numpy.full)."""
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    if device is not None:
        return _place(full(shape, fill_value, dtype, order), device)
    shape = _shape(shape)
    if isinstance(fill_value, Array) or np.ndim(fill_value) > 0:
        v = asarray(fill_value, dtype=dtype)
        return in_order(as_array(Array(build.broadcast_to(v._node, shape))), order)
    dt = np.dtype(dtype) if dtype is not None else np.array(fill_value).dtype
    if dt.kind not in "biufc":
        return _held(np.full, shape, fill_value, dt, order)
    if type(fill_value) is int:  # a Python int must fit (NumPy raises OverflowError)
        value = np.asarray(fill_value, dtype=dt)
    else:
        with np.errstate(all="ignore"):
            value = np.array(fill_value).astype(dt)
    if math.prod(shape) < config.get().eager_limit:  # the eager tier
        return as_array(Array(buffer(np.full(shape, value, dt, order=order))))
    return in_order(as_array(Array(build.broadcast_to(constant(value, dt), shape))), order)


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    """A new array of `shape` filled with zeros (see numpy.zeros)."""
    if not _numeric(dtype):
        return _held(np.zeros, shape, dtype, order)
    return full(shape, 0, dtype=np.dtype(dtype), order=order, device=device)


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    """A new array of `shape` filled with ones (see numpy.ones)."""
    if dtype is not None and not _numeric(dtype):
        return _held(np.ones, shape, dtype, order)
    return full(shape, 1, dtype=np.dtype(float if dtype is None else dtype), order=order,
                device=device)


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """A new array of `shape` (see numpy.empty; lazyarray's contents are zeros)."""
    if not _numeric(dtype):
        return _held(np.empty, shape, dtype, order)
    return zeros(shape, dtype, order, device=device)


def _like(a, dtype, shape):
    a = a if isinstance(a, Array) else asarray(a)
    return (a.dtype if dtype is None else np.dtype(dtype)), (a.shape if shape is None else shape)


def _laid_like(out: Array, a, order, shape) -> Array:
    """A `*_like` result in NumPy's order: `a`'s for "K" (and "A" when `a` is F-ordered) when
    the shape is `a`'s, else C."""
    if order in ("K", "A") and shape is not None and _shape(shape) != np.shape(a):
        return out
    return in_order(out, order, (a if isinstance(a, Array) else np.asarray(a),))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if not _numeric(_dtype_of(a, dtype)):
        return _held(np.full_like, a, fill_value, dtype, order, subok, shape)
    dt, sh = _like(a, dtype, shape)
    return _laid_like(full(sh, fill_value, dtype=dt, device=device), a, order, shape)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if not _numeric(_dtype_of(a, dtype)):
        return _held(np.zeros_like, a, dtype, order, subok, shape)
    dt, sh = _like(a, dtype, shape)
    return _laid_like(full(sh, 0, dtype=dt, device=device), a, order, shape)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if not _numeric(_dtype_of(a, dtype)):
        return _held(np.ones_like, a, dtype, order, subok, shape)
    dt, sh = _like(a, dtype, shape)
    return _laid_like(full(sh, 1, dtype=dt, device=device), a, order, shape)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if not _numeric(_dtype_of(prototype, dtype)):
        return _held(np.empty_like, prototype, dtype, order, subok, shape)
    dt, sh = _like(prototype, dtype, shape)
    return _laid_like(full(sh, 0, dtype=dt, device=device), prototype, order, shape)


def arange(*args, dtype=None, device=None, like=None, **kwargs):
    """Evenly spaced values within an interval (see numpy.arange)."""
    if dtype is None and not kwargs and 1 <= len(args) <= 3 \
            and all(type(a) is int for a in args):  # Python ints: large ones on all threads
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        values = threads.arange_int64(start, stop, step, pool.empty)
        if values is not None:
            return _place(Array(buffer(values)), device)
    return _place(Array(buffer(np.arange(*args, dtype=dtype, **kwargs))), device)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """Evenly spaced numbers over an interval (see numpy.linspace)."""
    start = np.asarray(start) if isinstance(start, Array) else start
    stop = np.asarray(stop) if isinstance(stop, Array) else stop
    res = np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
    if retstep:
        return _place(Array(buffer(res[0])), device), res[1]
    return _place(Array(buffer(res)), device)


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    """A 2-D array with ones on the k-th diagonal (see numpy.eye)."""
    return _place(Array(buffer(np.eye(N, M, k, dtype))), device)


def identity(n, dtype=None, *, like=None):
    """The identity matrix (see numpy.identity)."""
    return eye(n, dtype=float if dtype is None else dtype)


def from_dlpack(x, /, *, device=None, copy=None):
    """A lazy array from any DLPack producer (a copy on entry, like `asarray`)."""
    if device is not None and device_name(device) != "cpu":
        raise ValueError(f"unsupported device {device!r} for from_dlpack")
    if isinstance(x, Array):
        return x.copy() if copy else x
    return asarray(np.from_dlpack(x, copy=copy))


class _ArrayNamespaceInfo:
    """What `__array_namespace_info__()` reports (Array API 2024.12): NumPy's dtypes, the
    one "cpu" device (and "cuda" when lazyarray's CUDA backend can run)."""

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list:
        return ["cpu"]

    def default_dtypes(self, *, device=None) -> dict:
        return np.__array_namespace_info__().default_dtypes(device=device)

    def dtypes(self, *, device=None, kind=None) -> dict:
        return np.__array_namespace_info__().dtypes(device=device, kind=kind)


def __array_namespace_info__():
    """Introspection of lazyarray's Array API namespace (capabilities, devices, dtypes)."""
    return _ArrayNamespaceInfo()
