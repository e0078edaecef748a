"""Reductions: sum, prod, max, min, any, all, argmax/argmin as primitives; mean, var, std as
compositions of them, with NumPy's dtype choices written once here."""

from __future__ import annotations

import math
import builtins
import operator
import sys

import numpy as np

from lazyarray import config
from lazyarray import trace_tier as trace
from lazyarray.array import (EXT_GET, LOWERED, TINY, UFUNCS, Array, NonNumeric, as_node, computed_value,
                             eager_array, eager_op, in_order, large_leaf_operand, new_array,
                             numpy_fallback, record_reduce, record_total, small_value, wrap,
                             writable_alias)
from lazyarray.graph import build
from lazyarray.graph.node import Node
from lazyarray.ops.dtypes import reduce_dtype

_NO_VALUE = np._NoValue
_KINDS, _force_sum, _options = trace._KINDS, trace.force_sum, config._current.get
_TOTAL_OF: dict[int, int] = {}  # program id of a tiny 1-d trace -> that of its total
_refcount = sys.getrefcount


def _argument_refs(a) -> int:
    return _refcount(a)


# the count a function's argument has when the caller passed a temporary (the frame's
# reference and getrefcount's own; measured, as interpreters differ): one more, and the caller
# holds it too
_TEMPORARY = _argument_refs(object())


# the eager tier calls the ufunc reduction that NumPy's method runs (numpy/_core/_methods.py),
# with its positional arguments: np.sum's Python wrappers cost as much again as the reduction
# (1.8 against 0.9 us for a float64 sum at 1e3)
_NUMPY_REDUCTIONS = {"add": np.add.reduce, "multiply": np.multiply.reduce,
                     "maximum": np.maximum.reduce, "minimum": np.minimum.reduce,
                     "or": np.logical_or.reduce, "and": np.logical_and.reduce}
_BOOL = np.dtype(bool)
_TRACED = frozenset({"add", "maximum", "minimum", "or", "and"})  # reductions large traces
# record (any and all: of a comparison, `trace_tier._REDUCED`)
_F64 = np.dtype(np.float64)


def _tiny(a):
    """NumPy's value of `a` when the eager tier computes this reduction at once (a tiny,
    computed, whole array; not on the CUDA backend, where reductions follow the data onto
    the GPU), else None."""
    return small_value(a) if type(a) is Array and config.get().backend != "cuda" else None


# Elements below which a whole reduction of a computed array (no view, nothing pending: no
# work to fuse it with) is NumPy's, at once. At 10^5 float64 NumPy's max, argmax and sum took
# 9, 12 and 18 us against the lazy tier's 26, 40 and 21 (its fixed cost per evaluation); from
# about 3x10^5 on, lazyarray's kernels on both threads are faster.
WHOLE_EAGER_MAX = 1 << 17


def eager_whole(a, axis):
    """`_tiny(a)`, or else, for a reduction over all axes (`axis` None) of a computed array of
    fewer than WHOLE_EAGER_MAX elements, its value: NumPy reduces it now."""
    v = _tiny(a)
    if v is None and axis is None and type(a) is Array and not a._chain \
            and _options().eager_limit and config.get().backend != "cuda":
        v = computed_value(a)
        if v is not None and v.size >= WHOLE_EAGER_MAX:
            return None
    return v


_NUMPY_FUNCTIONS = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min,
                    "or": np.any, "and": np.all}


def _reduce(name: str, ufunc: np.ufunc, a, axis, dtype, keepdims, initial=_NO_VALUE,
            where=True, out=None) -> Array:
    if out is None and where is True:
        v = eager_whole(a, axis)
        if v is not None:  # the eager tier: NumPy's own reduction, right now
            if dtype is None and (name == "or" or name == "and"):
                dtype = _BOOL  # any and all: bool results, as their methods give
            red = _NUMPY_REDUCTIONS[name]
            return eager_array(red(v, axis, dtype, None, keepdims) if initial is _NO_VALUE
                          else red(v, axis, dtype, None, keepdims, initial))
        if dtype is None and initial is _NO_VALUE and name in _TRACED and type(a) is Array \
                and (a._tr is not None or large_leaf_operand(a)):
            res = record_reduce(a, name, axis, keepdims)  # a large float64 trace or leaf
            if res is not None:
                return res
    try:
        node = as_node(a)
    except NonNumeric:  # strings, objects: NumPy's function (docs/semantics.md, deviation 14)
        kw = {"axis": axis, "keepdims": keepdims, "out": out}
        kw.update({k: v for k, v in (("dtype", dtype), ("initial", initial), ("where", where))
                   if v is not None and v is not _NO_VALUE and v is not True})
        return numpy_fallback(_NUMPY_FUNCTIONS[name], a, **kw)
    if where is not True:
        return numpy_fallback(ufunc.reduce, a, axis=axis, dtype=dtype, keepdims=keepdims,
                         initial=initial, where=where)
    if not node.shape and axis in (0, -1, (0,), (-1,)):
        axis = None  # NumPy: ufunc reductions of a 0-d array accept axis 0 and -1
    axes = build.normalize_axes(axis, len(node.shape))
    # dtype= is the accumulator NumPy uses, the input cast to it as it must be ('unsafe')
    acc = np.dtype(dtype) if dtype is not None else reduce_dtype(ufunc, node.dtype, None)
    if name in ("or", "and"):
        acc = np.dtype(bool)
    src = build.convert(node, acc)
    if initial is not _NO_VALUE:
        if ufunc.identity is None and builtins.any(node.shape[x] == 0 for x in axes):
            shape = tuple(1 if i in axes else n for i, n in enumerate(node.shape))
            if not keepdims:
                shape = tuple(n for i, n in enumerate(node.shape) if i not in axes)
            res = build.broadcast_to(build.constant(np.asarray(initial, acc), acc), shape)
            return finish(res, out, ufunc.__name__)
    res = build.reduce(src, name, axes, keepdims) if axes else src  # no axes: the input, cast
    if initial is not _NO_VALUE:
        res = build.elementwise({"add": "add", "multiply": "multiply", "maximum": "maximum",
                                 "minimum": "minimum", "or": "logical_or",
                                 "and": "logical_and"}[name], res, initial)
        res = build.convert(res, acc)
    return finish(res, out, ufunc.__name__)


def finish(node: Node, out, op: str = "add") -> Array:
    """The result as an Array, or written into `out` (which must have the result's shape).

    `op` names the operation in NumPy's error messages: a ufunc name (a reduction),
    ``"argmax"``/``"argmin"``, or ``"accumulate"`` (a scan).
    """
    result = wrap(node)
    if out is not None:
        if out.shape != result.shape:
            raise ValueError(_out_mismatch(op, out.shape, result.shape))
        if isinstance(out, np.ndarray):  # NumPy's own array: the values are written into it
            np.copyto(out, np.asarray(result), casting="unsafe")
            return out
        out._assign(result, casting="unsafe")
        return out
    return result


def _out_mismatch(op: str, got: tuple, want: tuple) -> str:
    if op in ("argmax", "argmin"):
        return f"output array does not match result of np.{op}."
    if op == "accumulate":
        return "provided out is the wrong size for the accumulation."
    if len(got) != len(want):
        return (f"output parameter for reduction operation {op} has the wrong number of "
                f"dimensions: Found {len(got)} but expected {len(want)}")
    return (f"output parameter for reduction operation {op} has shape {got}, expected "
            f"{want}")


def ufunc_reduce(uf, array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
                 where=True):
    names = {"add": "add", "multiply": "multiply", "maximum": "maximum", "minimum": "minimum",
             "logical_or": "or", "logical_and": "and"}
    name = names.get(uf.__name__)
    if name is None:
        return numpy_fallback(uf._np.reduce, array, axis=axis, dtype=dtype, keepdims=keepdims,
                         initial=initial, where=where)
    return _reduce(name, uf._np, array, axis, dtype, keepdims, initial, where, out)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
    """Sum of array elements over the given axes (see numpy.sum)."""
    if type(a) is Array and (tr := a._tr) is not None and axis is None and dtype is None \
            and out is None and not keepdims and initial is _NO_VALUE and where is True \
            and not _KINDS[tr[0]]:
        if len(tr[4]) == 1 and tr[1][0].size < (TINY if not LOWERED[0]
                                                else _options().eager_limit):
            # a pending tiny float64 trace of one dimension: when nothing else holds it (a
            # temporary: the distance's `sum((x - y) ** 2)`), its sum is a trace too (a total, 0-d),
            # which one-argument ufuncs extend (the distance's sqrt) and one loop computes when its
            # value is needed, adding in NumPy's order (trace_tier.force)
            pid = _TOTAL_OF.get(tr[0])
            if pid is None:
                pid = trace.program_id(("total", tr[0]))
                if pid is not None:
                    _TOTAL_OF[tr[0]] = pid
            if pid is not None and EXT_GET() is tr[5] and _refcount(a) <= _TEMPORARY:
                eager_op()
                s = new_array(Array)
                s._tr = (pid, tr[1], tr[2], tr[3], (), tr[5])
                s._val = s._st = s._proxy = s._base = None
                s._chain = ()
                return s
            # else one loop computes it and sums it, in NumPy's order (trace_tier.force_sum);
            # `a` keeps the values (`e / e.sum()` computes `e` once); the sum is a 0-d eager
            # value
            a._val, total = _force_sum(tr)
            a._tr = None
            s = new_array(Array)
            s._val, s._st, s._chain, s._proxy, s._base, s._tr = total, None, (), None, None, None
            return s
        s = record_total(a)  # a large trace: the sum goes on it (the distance)
        if s is not None:
            return s
    return _reduce("add", np.add, a, axis, dtype, keepdims, initial, where, out)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
    """Product of array elements over the given axes (see numpy.prod)."""
    return _reduce("multiply", np.multiply, a, axis, dtype, keepdims, initial, where, out)


def max(a, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
    """Maximum along the given axes, NaN-propagating (see numpy.max)."""
    return _reduce("maximum", np.maximum, a, axis, None, keepdims, initial, where, out)


def min(a, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
    """Minimum along the given axes, NaN-propagating (see numpy.min)."""
    return _reduce("minimum", np.minimum, a, axis, None, keepdims, initial, where, out)


amax, amin = max, min


def any(a, axis=None, out=None, keepdims=False, *, where=True):
    """Whether any element along the given axes is true (see numpy.any)."""
    return _reduce("or", np.logical_or, a, axis, None, keepdims, where=where, out=out)


def all(a, axis=None, out=None, keepdims=False, *, where=True):
    """Whether all elements along the given axes are true (see numpy.all)."""
    return _reduce("and", np.logical_and, a, axis, None, keepdims, where=where, out=out)


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Indices of the maximum values (first occurrence; NaN wins) (see numpy.argmax)."""
    v = eager_whole(a, axis) if out is None else None
    if v is not None:  # the eager tier
        return eager_array(np.argmax(writable_alias(v), axis, keepdims=keepdims))  # (no copy)
    try:
        node = as_node(a)
    except NonNumeric:  # strings, objects: NumPy's (docs/semantics.md, deviation 14)
        return numpy_fallback(np.argmax, a, axis, out=out, keepdims=keepdims)
    return finish(build.argreduce(node, "max", axis, keepdims), out, "argmax")


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Indices of the minimum values (first occurrence; NaN wins) (see numpy.argmin)."""
    v = eager_whole(a, axis) if out is None else None
    if v is not None:  # the eager tier
        return eager_array(np.argmin(writable_alias(v), axis, keepdims=keepdims))
    try:
        node = as_node(a)
    except NonNumeric:  # strings, objects: NumPy's (docs/semantics.md, deviation 14)
        return numpy_fallback(np.argmin, a, axis, out=out, keepdims=keepdims)
    return finish(build.argreduce(node, "min", axis, keepdims), out, "argmin")


def _large_float64(a) -> bool:
    """Might `a` be a large float64 trace or computed buffer of one or more dims
    (record_reduce decides)?"""
    if type(a) is not Array:
        return False
    tr = a._tr
    if tr is not None:
        return not trace._KINDS[tr[0]] and tr[4] != ()
    return large_leaf_operand(a) and a._st.node.dtype == _F64 and a._st.node.shape != ()


def _traced_var(a: Array, axis, ddof, keepdims) -> Array | None:
    """`var` of a large float64 trace or leaf on the trace tier, in NumPy's steps (the mean
    kept as dims, `x - mean`, `square(x)`, its sum, the division by n - ddof); None when a step
    does not record, or when n - ddof <= 0 (NumPy's warning: the lazy tier's)."""
    n = _count(a, axis)
    if n - ddof <= 0:
        return None
    total = record_reduce(a, "add", axis, True)
    if total is None:
        return None
    x = a - total / float(n)
    if x._tr is None:
        return None
    squares = record_reduce(UFUNCS["square"](x), "add", axis, keepdims)
    return None if squares is None else squares / float(n - ddof)


def _count(a, axis) -> int:
    """Elements per result element of a reduction of `a` (a Node or an Array: only its shape
    is read) over `axis` (NumPy's errors)."""
    if type(a) is Array and (a._tr is not None or a._st is not None and not a._chain):
        shape = a._tr[4] if a._tr is not None else a._st.node.shape  # (`shape`, inlined)
    else:
        shape = a.shape
    return math.prod([shape[x] for x in build.normalize_axes(axis, len(shape))])


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """Arithmetic mean along the given axes (see numpy.mean).

    As NumPy: integer and bool inputs average in float64, float16 accumulates in float32, and
    the division keeps the accumulator's dtype.
    """
    if where is not True:
        return numpy_fallback(np.mean, a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    if out is None:
        v = eager_whole(a, axis)
        if v is not None:  # the eager tier
            return eager_array(v.mean(axis=axis, dtype=dtype, keepdims=keepdims))  # as np.mean
        if dtype is None and _large_float64(a):  # NumPy's sum, then true_divide by the count
            n = _count(a, axis)
            total = record_reduce(a, "add", axis, keepdims) if n else None
            if total is not None:
                return total / float(n)
    node = as_node(a)
    n = _count(node, axis)
    acc = dtype
    if dtype is None and node.dtype.kind in "biu":
        acc = np.float64
    elif dtype is None and node.dtype == np.float16:
        acc = np.float32
    total = sum(Array(node), axis=axis, dtype=acc, keepdims=keepdims)._node
    res = build.convert(build.elementwise("divide", total, n), total.dtype)
    if dtype is None and node.dtype == np.float16:
        res = build.convert(res, node.dtype)
    return finish(res, out)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=_NO_VALUE):
    """Variance along the given axes, ``sum(|x - x.mean()|**2) / (n - ddof)`` (see numpy.var).

    The same steps and dtypes as NumPy: each division keeps the dtype of the sum it divides.
    """
    if where is not True or mean is not None:
        return _moment_fallback(np.var, a, axis, dtype, out, ddof, keepdims, where, mean,
                                correction)
    if correction is not _NO_VALUE:
        ddof = correction
    if out is None:
        v = _tiny(a)
        if v is not None:  # the eager tier
            return eager_array(v.var(axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))
        if dtype is None and _large_float64(a):
            res = _traced_var(a, axis, ddof, keepdims)
            if res is not None:
                return res
    node = as_node(a)
    n = _count(node, axis)
    dt = np.float64 if dtype is None and node.dtype.kind in "biu" else dtype
    total = sum(Array(node), axis=axis, dtype=dt, keepdims=True)._node
    arrmean = build.convert(build.elementwise("divide", total, n), total.dtype)
    x = build.elementwise("subtract", node, arrmean)
    if x.dtype.kind == "c":  # as NumPy: the squares of the real and imaginary parts, added
        real = build.convert(x, np.dtype(f"f{x.dtype.itemsize // 2}"))
        sq = build.elementwise("add", build.elementwise("square", real),
                               build.elementwise("square", build.elementwise("imag", x)))
    else:  # (square, not multiply: NumPy's warnings name the ufunc)
        sq = build.elementwise("square", x)
    ret = sum(Array(sq), axis=axis, dtype=dt, keepdims=keepdims)._node
    res = build.convert(build.elementwise("divide", ret, builtins.max(n - ddof, 0)), ret.dtype)
    return finish(res, out)


def _moment_fallback(np_fn, a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    """NumPy's `var`/`std` for what lazyarray does not build (`where=`, `mean=`), every
    argument passed on."""
    kw = {} if correction is _NO_VALUE else {"correction": correction}
    if mean is not None:
        kw["mean"] = mean
    return numpy_fallback(np_fn, a, axis=axis, dtype=dtype, out=out, ddof=ddof,
                          keepdims=keepdims, where=where, **kw)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=_NO_VALUE):
    """Standard deviation along the given axes: sqrt of `var` (see numpy.std)."""
    if where is not True or mean is not None:
        return _moment_fallback(np.std, a, axis, dtype, out, ddof, keepdims, where, mean,
                                correction)
    if out is None:
        t = _tiny(a)
        if t is not None:  # the eager tier
            ddof = ddof if correction is _NO_VALUE else correction
            return eager_array(t.std(axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))
    v = var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, correction=correction)
    if isinstance(v, Array) and v._tr is not None and out is None:  # a large trace goes on
        return UFUNCS["sqrt"](v)
    root = build.elementwise("sqrt", v._node)
    if root.dtype != v.dtype:  # NumPy takes the root in place: out= v, casting same_kind
        if not np.can_cast(root.dtype, v.dtype, "same_kind"):
            raise TypeError(f"Cannot cast ufunc 'sqrt' output from {root.dtype!r} to "
                            f"{v.dtype!r} with casting rule 'same_kind'")
        root = build.convert(root, v.dtype)
    return finish(root, out)


def _scan(name: str, ufunc: np.ufunc, a, axis, dtype, out) -> Array:
    v = _tiny(a) if out is None else None
    if v is not None:  # the eager tier
        return eager_array((np.cumsum if name == "add" else np.cumprod)(v, axis, dtype))
    node = as_node(a)
    if axis is not None:
        axis = operator.index(axis)
    acc = reduce_dtype(ufunc, node.dtype, None if dtype is None else np.dtype(dtype))
    if axis is not None:
        build.normalize_axis(axis, len(node.shape))
    elif not node.shape:
        node = build.reshape(node, (1,))
    res = finish(build.scan(build.convert(node, acc), name, axis), out, "accumulate")
    return in_order(res, "K", (a,)) if out is None and axis is not None else res


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along an axis (None: the flattened array) (see numpy.cumsum)."""
    return _scan("add", np.add, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along an axis (None: the flattened array) (see numpy.cumprod)."""
    return _scan("multiply", np.multiply, a, axis, dtype, out)


def _one_axis(x, axis):
    """cumulative_*: a one-axis tuple is that axis (NumPy checks the range first)."""
    if isinstance(axis, (tuple, list)):
        ndim = builtins.max(x.ndim if isinstance(x, Array) else np.ndim(x), 1)
        for ax in axis:
            build.normalize_axis(ax, ndim)
        if len(axis) != 1:
            raise ValueError("accumulate does not allow multiple axes")
        axis = axis[0]
    return axis


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Array API cumulative sum (see numpy.cumulative_sum)."""
    axis = _one_axis(x, axis)
    if include_initial or (axis is None and np.ndim(x) > 1 if not isinstance(x, Array)
                           else axis is None and x.ndim > 1):
        return numpy_fallback(np.cumulative_sum, x, axis=axis, dtype=dtype,
                         include_initial=include_initial)
    return cumsum(x, axis=axis, dtype=dtype, out=out)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """Array API cumulative product (see numpy.cumulative_prod)."""
    axis = _one_axis(x, axis)
    if include_initial or (axis is None and (x.ndim if isinstance(x, Array) else np.ndim(x)) > 1):
        return numpy_fallback(np.cumulative_prod, x, axis=axis, dtype=dtype,
                         include_initial=include_initial)
    return cumprod(x, axis=axis, dtype=dtype, out=out)


def ufunc_accumulate(uf, array, axis=0, dtype=None, out=None):
    names = {"add": "add", "multiply": "multiply", "maximum": "maximum", "minimum": "minimum"}
    name = names.get(uf.__name__)
    node = as_node(array)
    if name is None or not node.shape:
        return numpy_fallback(uf._np.accumulate, array, axis=axis, dtype=dtype)
    acc = reduce_dtype(uf._np, node.dtype, None if dtype is None else np.dtype(dtype)) if \
        name in ("add", "multiply") else (np.dtype(dtype) if dtype is not None else node.dtype)
    build.normalize_axis(axis, len(node.shape))
    res = finish(build.scan(build.convert(node, acc), name, axis), out, "accumulate")
    return in_order(res, "K", (array,)) if out is None and axis is not None else res
