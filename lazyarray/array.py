"""Array: the lazy handle users hold, and the ufunc objects of the namespace.

An Array wraps a graph Node. Operators and methods only build nodes; observing a value
(`__array__`, repr, tolist, item, float/int/bool, iteration, ...) materializes it.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
import threading
import weakref

import numpy as np

from lazyarray import backends, config, engine, stats, trace_tier as trace
from lazyarray.graph import build, live
from lazyarray.graph.node import MAX_DEPTH, Node, buffer, constant, leaf, toposort
from lazyarray.ir import fpstate
from lazyarray.ops.library import attrs_for
from lazyarray.ops.table import MULTI_OUTPUT, OPS
from lazyarray.runtime import pool
from lazyarray.runtime.versions import version_is_dead, version_is_private
from lazyarray.storage import Storage, memory_order, packed_strides, strided_view


def as_node(x) -> Node:
    """Any array-like as a graph node (NumPy data is copied on entry: graphs never alias it)."""
    if isinstance(x, Array):
        return x._node
    if isinstance(x, Node):
        return x
    c = type(x) is np.ndarray and x.flags.c_contiguous  # (order "K": others keep their layout)
    arr = pool.copy(x) if c else np.array(x, copy=True)
    if arr.dtype.kind not in "biufc":
        raise NonNumeric(f"lazyarray does not support arrays of dtype {arr.dtype}")
    return buffer(arr)


class NonNumeric(TypeError):
    """An operand of a dtype the compiler does not handle (strings, bytes, objects, structured,
    void, datetimes): the namespace function that met it runs NumPy's own instead, as a
    counted fallback (`lazyarray.__init__`), except the few hot ones that raise this."""


def operand(x):
    """A ufunc operand: a Node, or a scalar kept as is (Python scalars stay weak, NEP 50)."""
    if isinstance(x, Array):
        return x._node
    if isinstance(x, (bool, int, float, complex, np.generic)):
        if isinstance(x, np.generic) and x.dtype.kind not in "biufc":
            raise NonNumeric(f"unsupported operand type {type(x).__name__}")
        return x
    arr = np.asarray(x)
    if arr.dtype.kind not in "biufc":
        raise NonNumeric(f"unsupported operand type {type(x).__name__} (dtype {arr.dtype})")
    if arr.ndim == 0:
        return constant(arr, arr.dtype)
    return buffer(pool.copy(arr))


def wrap(node: Node) -> Array:
    if node.depth > MAX_DEPTH and not node.realized:
        engine.materialize([node])  # cut long pending graphs: bounded memory, cached kernels
    return Array(node)


# NumPy functions that write into their first argument (run on a copy, then written back)
MUTATING = frozenset({"fill_diagonal", "put_along_axis", "place", "put", "putmask", "copyto",
                      "shuffle"})


def numpy_fallback(func, *args, **kwargs):
    """Run a NumPy function on materialized inputs; wrap array results as Arrays (counted).

    A lazy `out=` receives the result through lazyarray's own write; a function that mutates
    its first argument mutates a copy that is then written back into the lazy array.
    """
    stats.bump("fallbacks")

    seen: list = []  # the computed arrays handed to NumPy (a result may be a view of one)

    pure = getattr(func, "__name__", "") in _READS_ONLY

    def conv(x):
        if isinstance(x, Array):
            seen.append(np.asarray(x))
            return writable_alias(seen[-1]) if pure else seen[-1]
        if isinstance(x, list):
            return [conv(y) for y in x]
        if isinstance(x, tuple) and not hasattr(x, "_fields"):
            return tuple(conv(y) for y in x)
        return x

    out = kwargs.pop("out", None)
    lazy_out = isinstance(out, Array) or (isinstance(out, tuple) and any(
        isinstance(o, Array) for o in out))
    if out is not None and not lazy_out:
        kwargs["out"] = out
    if lazy_out:  # NumPy writes (and validates) NumPy copies; their values are written back
        outs = out if isinstance(out, tuple) else (out,)
        np_outs = tuple(np.array(np.asarray(o), copy=True) if isinstance(o, Array) else o
                        for o in outs)
        kwargs["out"] = np_outs if isinstance(out, tuple) else np_outs[0]
    target = args[0] if args and getattr(func, "__name__", "") in MUTATING else None
    cargs = [conv(a) for a in args]
    if isinstance(target, Array):
        cargs[0] = np.array(cargs[0], copy=True)
    res = func(*cargs, **{k: v if k == "out" else conv(v) for k, v in kwargs.items()})
    if isinstance(target, Array):
        target[...] = cargs[0]
    if lazy_out:
        for o, v in zip(outs, np_outs, strict=True):
            if isinstance(o, Array):
                o[...] = v
        return out
    return _wrap_result(res, seen)


# NumPy functions that only read their array arguments (no callback into user code, no
# writable iterator): a fallback hands them a writeable alias (`writable_alias`)
_READS_ONLY = frozenset({
    "bincount", "histogram", "histogram2d", "histogramdd", "histogram_bin_edges",
    "ravel_multi_index", "nonzero", "flatnonzero", "argwhere", "digitize", "searchsorted",
    "interp", "unique", "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "lexsort", "convolve", "correlate", "polyval", "polyfit", "isin", "intersect1d",
    "union1d", "setdiff1d", "setxor1d", "packbits", "unpackbits", "trapezoid", "corrcoef",
    "cov", "partition", "argpartition", "sort_complex", "ediff1d", "unstack"})


def writable_alias(v: np.ndarray) -> np.ndarray:
    """A computed array as the input of a NumPy function that only reads it (`_READS_ONLY`):
    a writeable view of the same memory where its owner is writeable. NumPy's C functions
    that ask for a C array (PyArray_ContiguousFromAny: np.bincount, ...) copy a read-only
    input first: np.bincount of 10^6 int64 took 1.6 ms on a computed array, 1.0 ms on a
    writeable one. Other functions get the read-only view (one that iterates writably, such
    as np.nditer, or calls user code on views, as np.apply_along_axis, must not write a lazy
    array's buffer behind its storage's back)."""
    if not isinstance(v, np.ndarray) or v.flags.writeable:
        return v
    w = v.view()
    try:
        w.setflags(write=True)
    except ValueError:  # its memory's owner is read-only
        return v
    return w


def scalar_result(fn):
    """`fn` as NumPy has it return a 0-d result: a scalar (`median`, `norm`, `searchsorted`
    of one value, ...), not a 0-d array; a result written into `out=` stays that array."""
    @functools.wraps(fn)
    def with_scalar(*args, **kwargs):
        r = fn(*args, **kwargs)
        if type(r) is Array and not r.shape and kwargs.get("out") is None \
                and not r._is_scalar():
            return Array(r._node)  # (a new storage of the same value: a scalar's)
        return r
    return with_scalar


def _wrap_result(out, inputs=None):
    """A NumPy function's result as lazyarray's: numeric arrays as Arrays. A view is copied
    when it may share memory with one of the computed `inputs` (all of them when None), so
    no result aliases a lazy array's buffer (np.nonzero's index arrays, views of its own
    result, are not copied)."""
    if isinstance(out, np.ndarray):
        if out.dtype.kind not in "biufc":  # strings, objects, dates: NumPy's own array
            return out
        return Array(buffer(out.copy() if _may_alias(out, inputs) else out))
    if isinstance(out, tuple):
        items = [_wrap_result(o, inputs) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    if isinstance(out, list):  # NumPy arrays, detached from any input (`writable_alias`)
        return [o.copy() if isinstance(o, np.ndarray) and _may_alias(o, inputs) else o
                for o in out]
    return out


def _may_alias(out: np.ndarray, inputs) -> bool:
    if out.flags.owndata:
        return False
    return inputs is None or any(np.may_share_memory(out, a) for a in inputs)


_NOARG = object()  # no positional argument given (ufunc.__call__)


class ufunc:
    """A NumPy ufunc over lazy Arrays: same name, attributes, promotion and broadcasting."""

    def __init__(self, np_ufunc: np.ufunc):
        self._np = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.__doc__ = np_ufunc.__doc__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs
        self.identity, self.signature = np_ufunc.identity, np_ufunc.signature
        self.ntypes, self.types = np_ufunc.ntypes, np_ufunc.types
        self._rows = MULTI_OUTPUT.get(self.__name__, (self.__name__,))
        # the op of a one-output ufunc that the graph has (the fast path of `__call__`)
        self._op = self._rows[0] if self.nout == 1 and self._rows[0] in OPS else None
        self._unary = self.nin == 1 and self.nout == 1
        self._traced = self._unary and self._op in trace.TRACED  # recorded on the trace tier
        self._start = (self._op, trace.LEAF)
        self._after: dict[int, int] = {}  # program id of a trace -> that of this op on it
        # f(x, y) of an Array and an Array or Python scalar: the operator's paths (the trace
        # tier records `np.maximum(x * 2, 0)` as it does `x * 2 + 0`)
        self._pair = self._rpair = None
        if self.nin == 2 and self.nout == 1 and self._op in trace.TRACED:
            self._pair = _binary(self._op, np_ufunc, via=self)
            self._rpair = _binary(self._op, np_ufunc, reflected=True, via=self)

    def __repr__(self) -> str:
        return f"<lazyarray ufunc '{self.__name__}'>"

    def __call__(self, x=_NOARG, /, *args, **kwargs):
        if type(x) is Array and self._unary and not args and not kwargs:  # f(x): hot path
            tr = x._tr
            if tr is not None and self._traced and EXT_GET() is tr[5]:  # a trace goes on
                try:
                    pid = self._after[tr[0]]
                except KeyError:
                    pid = trace.program_id((self._op, tr[0]))
                    if pid is not None:
                        self._after[tr[0]] = pid
                if pid is not None:
                    eager_op()
                    a = new_array(Array)
                    a._tr = (pid, tr[1], tr[2], tr[3], tr[4], tr[5])
                    a._val = a._st = a._proxy = a._base = None
                    a._chain = ()
                    return a
            v = x._val  # tiny by construction (see value_array)...
            if LOWERED[0] and v is not None:  # ...unless eager_threshold is lower
                v = small_value(x)
            if self._traced and (v is None or type(v) is _ndarray):  # (a 0-d value, a NumPy
                # scalar, goes straight to NumPy's call below: the distance's sqrt of its sum)
                if tr is None or EXT_GET() is not tr[5]:  # (a trace of another state:
                    if v is None:  # computed here, under its own)
                        v = small_value(x)
                    elif tr is None and (memo := _LEAVES.get(id(v))) is not None \
                            and memo[0] is v and memo[1][5] is EXT_GET() \
                            and (pid := _PIDS.get(self._start)) is not None \
                            and pid not in _NO_START and (opts := _options()).trace \
                            and opts.backend == "cpu":  # a leaf seen before: `_record`,
                        leaf = memo[1]  # inlined (`a*b + c*d - sin(e)`'s sin(e))
                        return _trace_array((pid, leaf[1], leaf[2], leaf[3], leaf[4], leaf[5]))
                    if (type(v) is _ndarray and v.dtype is _F64
                            and _PIDS.get(self._start) not in _NO_START and _options().trace) \
                            or v is None and large_leaf_operand(x):
                        a = _record(self._op, (x,))
                        if a is not None:
                            return a
            if v is None:
                v = small_value(x)
            if v is not None:
                eager_op()
                a = new_array(Array)
                a._val = self._np(v)  # an ndarray, or a NumPy scalar for 0-d (see _binary)
                a._st = a._proxy = a._base = a._tr = None
                a._chain = ()
                return a
            if self._op is not None:
                return _lazy(self._op, (x,))
        if self._pair is not None and len(args) == 1 and not kwargs:
            y = args[0]
            if type(x) is Array and type(y) in _PAIR_OPERANDS:
                return self._pair(x, y)
            if type(y) is Array and type(x) in _PAIR_OPERANDS:
                return self._rpair(y, x)
        if x is not _NOARG:
            args = (x, *args)
        if self.nin < len(args) <= self.nargs:  # outputs given by position, as NumPy takes them
            if "out" in kwargs:
                raise TypeError("cannot specify 'out' as both a positional and keyword argument")
            outs = args[self.nin:]
            kwargs["out"] = outs if len(outs) > 1 or self.nout > 1 else outs[0]
            args = args[:self.nin]
        if not kwargs:
            return self._plain(args)
        return self._call(*args, **kwargs)

    def _plain(self, args: tuple):
        """`self(*args)` without keywords, past the trace tier's paths: tiny computed
        inputs at once (the eager tier), else a node."""
        values = tiny_values(args)
        if values is not None:  # tiny, computed inputs: NumPy's own call, right now
            eager_op()
            res = self._np(*values)  # under the caller's error state (see _binary)
            return tuple(map(eager_array, res)) if self.nout > 1 else eager_array(res)
        if self._op is not None and len(args) == self.nin:
            return _lazy(self._op, args)
        return self._call(*args)

    def _call(self, *args, out=None, dtype=None, where=True, casting="same_kind", **kwargs):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes from {self.nin} to {self.nargs} positional "
                            f"arguments but {len(args)} were given")
        for o in (out if isinstance(out, tuple) else (out,)):
            if o is not None and not isinstance(o, (Array, _ndarray)):
                raise TypeError("return arrays must be of ArrayType")
            if type(o) is Array and not o._is_scalar() and not o._layout().flags.writeable:
                raise ValueError("output array is read-only")  # (NumPy: before the types)
        if where is not True or kwargs or casting != "same_kind" or self._rows[0] not in OPS:
            if self._rows[0] not in OPS and self._np.signature is None:  # bad dtypes: fail now
                self._np.resolve_dtypes((*(a.dtype if isinstance(a, Array) else
                                           np.asarray(a).dtype for a in args),
                                         *(None,) * self.nout))
            return numpy_fallback(self._np, *args, out=out, dtype=dtype, where=where,
                             casting=casting, **kwargs)
        if self.nout > 1 and out is not None and not isinstance(out, tuple):
            raise TypeError("'out' must be a tuple of arrays")
        ops = [operand(a) for a in args]
        dt = None if dtype is None else np.dtype(dtype)
        results = tuple(in_order(wrap(build.elementwise(r, *ops, dtype=dt)), "K", args,
                                 copy=False) for r in self._rows)
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            for o, r in zip(outs, results, strict=True):
                if isinstance(o, np.ndarray):  # a NumPy out= buffer is written for real
                    np.copyto(o, np.asarray(r), casting=casting)
                else:
                    o._assign(r, casting=casting)
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return results[0] if self.nout == 1 else results

    def outer(self, a, b, **kwargs):
        a, b = as_node(a), as_node(b)
        a = build.reshape(a, a.shape + (1,) * len(b.shape))
        return self(Array(a), Array(b), **kwargs)

    def at(self, a, indices, b=None, /):
        """Unbuffered in-place operation at `indices` (repeated indices accumulate), as
        NumPy's ``ufunc.at``: NumPy's own on the current value, written back as one write."""
        idx = _as_numpy_key(indices)
        args = () if b is None else (np.asarray(b) if isinstance(b, Array) else b,)
        if not isinstance(a, Array):
            return self._np.at(a, idx, *args)
        a._mutate_eagerly(lambda v: self._np.at(v, idx, *args))
        return None

    def reduceat(self, *args, **kwargs):
        return numpy_fallback(self._np.reduceat, *args, **kwargs)


def _lazy(op: str, args) -> Array:
    """The elementwise node `op(*args)` as a new Array (the lazy path of a ufunc call or
    an operator, without keyword arguments)."""
    ops = []
    for a in args:
        t = type(a)
        if t is Array:
            st = a._st
            ops.append(st.node if st is not None and not a._chain else a._node)
        elif t is float or t is int:
            ops.append(a)
        else:
            ops.append(operand(a))
    node = build.elementwise(op, *ops)
    if node.depth > MAX_DEPTH and not node.realized:
        engine.materialize([node])  # cut long pending graphs: bounded memory, cached kernels
    st = _new_storage(Storage)
    st.node, st._fake, st.leaf_trace, st.scalar = node, None, None, not node.shape
    st.perm = _result_order(args, node.shape) if len(node.shape) > 1 else None
    if node.srcs:  # pending: computed with an evaluation sharing its work (graph/live.py)
        live.remember(st)
    a = new_array(Array)
    a._st = st
    a._val = a._proxy = a._base = a._tr = None
    a._chain = ()
    return a


TINY = config.TINY  # elements: an op on computed inputs this small runs at once (the eager tier)
_options = config._current.get
LOWERED = config.LOWERED  # see config.LOWERED


def tiny_values(args) -> list | None:
    """NumPy values of `args` if every array among them is computed and has fewer than
    min(TINY, eager_threshold) elements (views only by slicing, see `small_view`): then
    deferring costs more than computing. None otherwise."""
    values = []
    shape = None  # of the first value with more than one element
    limit = _options().eager_limit
    for a in args:
        t = type(a)
        if t is Array:
            v = a._val  # an eager value (see value_array)
            if v is None:
                v = small_value(a)
                if v is None:
                    return None
            elif v.size >= limit:
                return None
            if v.size != 1:
                if shape is None:
                    shape = v.shape
                elif v.shape != shape and not _small_broadcast(
                        [x for x in values if type(x) is _ndarray] + [v]):
                    return None
            values.append(v)
        elif t is float or t is int or isinstance(a, (bool, complex, np.generic)):
            values.append(a)
        else:
            return None
    return values


def eager_values(arrays, mid: bool = False) -> list | None:
    """NumPy values of `arrays` when a function other than an operator runs on the eager
    tier (`tiny_values`: every array a tiny computed value; with `mid`, every array a
    computed whole array below MID_EAGER_MAX elements, `_mid_values`), for the NumPy function
    to run right now; None on the CUDA backend (results follow the data onto the GPU) and for
    anything else. Arrays come as writeable aliases (`writable_alias`: NumPy's C functions
    that ask for a C array copy a read-only one first; these functions only read them)."""
    if _options().backend == "cuda":
        return None
    values = tiny_values(arrays)
    if values is None and mid:
        values = _mid_values(arrays)
    if values is None:
        return None
    return [writable_alias(v) if type(v) is _ndarray else v for v in values]


# Elements below which a function that copies or rearranges computed arrays (concatenate,
# diff, take, astype: `eager_values(..., mid=True)`; a gather, `Array._mid_gather_value`) is
# NumPy's call at once.
# The lazy tier's fixed cost per evaluation (35-60 us) is most of such a call's time there:
# at 10^5 float64 concatenate took 101 us against NumPy's 36, astype 48 against 15, diff 36
# against 20; at 10^6 its kernels on both threads were faster (0.58-0.96 of NumPy's time).
MID_EAGER_MAX = 1 << 19


def _mid_values(arrays) -> list | None:
    """NumPy values of `arrays` if every array among them is a computed whole array (no view,
    nothing pending) of fewer than MID_EAGER_MAX elements, and eager_threshold is not lowered
    below TINY; else None."""
    if _options().eager_limit < TINY:
        return None
    values = [mid_value(a) for a in arrays]
    return None if any(v is None for v in values) else values


def mid_value(a, limit: int = MID_EAGER_MAX):
    """`_mid_values` of one argument: a number as it is, an array's computed value (of fewer
    than `limit` elements), or None."""
    if type(a) is not Array:
        return a if type(a) in (float, int) or isinstance(a, (bool, complex, np.generic)) \
            else None
    v = a._val  # (a tiny eager value)
    if v is None and not a._chain:
        v = computed_value(a)
        if v is not None and v.size >= limit:
            return None
    return v


def eager_result(res, inputs) -> Array:
    """A NumPy function's result on eager values as an Array: copied where it may share
    memory with one of the `inputs` (NumPy returns a view of its own temporary as it is:
    `np.tile`'s reshaped copy)."""
    if type(res) is not np.ndarray:
        return eager_array(res)
    if any(type(v) is np.ndarray and np.may_share_memory(res, v) for v in inputs):
        res = res.copy()
    return value_array(res)


def _small_broadcast(values) -> bool:
    """Is the broadcast of these tiny values tiny too? An outer product of two tiny vectors
    (`x[:, None] - y`) is not: it stays lazy, so that what consumes it can fuse with it (a
    row sum of it never exists in memory). True when the shapes do not broadcast, so that
    NumPy raises its own error at once."""
    try:
        shape = np.broadcast_shapes(*(v.shape for v in values))
    except ValueError:
        return True
    return math.prod(shape) < _options().eager_limit


_HOST_BACKENDS = ("cpu", "numpy", "dask")  # whose computed values live in host buffers


def _may_hold(st: Storage) -> bool:
    """May a region write go into this storage's buffer (`Array._region_buffer`), as far as
    can be told before its value is computed: a host backend, and the storage computed or a
    constant fill? (A write into another pending array stays lazy, its value too.)"""
    node = st.node
    return _options().backend in _HOST_BACKENDS and (
        node._host is not None or node.op == "broadcast" and node.srcs[0].op == "constant")


def _filled_now(st: Storage) -> bool:
    """Give a storage whose version is a constant fill (`zeros`, `ones`, `full`, `empty`,
    their `_like`s) its buffer now, as NumPy's creation would have (a loop of small writes
    into it then writes NumPy's way); False for any other pending version."""
    node = st.node
    if node.op != "broadcast" or node.srcs[0].op != "constant":
        return False
    st.node, st.leaf_trace = leaf(np.full(node.shape, node.srcs[0]._host, node.dtype)), None
    return True


def _written_value(value):
    """The value an eager-tier write stores: a computed Array's NumPy value; a pending one's
    computed now when it is small (NumPy computes it at this line: deferred, a loop of
    element writes would grow one graph of all its iterations); NumPy and Python scalars and
    arrays as they are; None for anything else (the write stays lazy)."""
    if type(value) is Array:
        v = value._val if value._val is not None else small_value(value)
        if v is None and math.prod(value.shape) < _options().eager_limit \
                and _JIT_TRACING() is None and _options().backend in _HOST_BACKENDS:
            v = value._value()
        return v
    if isinstance(value, (np.ndarray, np.generic, float, int, complex)):
        return value
    return None


def _same_place(a: np.ndarray, b: np.ndarray) -> bool:
    """Do two views of one storage's fake base select the same elements, in the same order?"""
    return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def small_value(a: Array) -> np.ndarray | None:
    """The computed host value of `a` if it is a whole (non-view) storage below the eager
    tier's size, else None. This is the hot check of every operator on tiny arrays."""
    v = a._val
    if v is None:
        if a._chain:
            return small_view(a)
        st = a._st
        if st is None:  # a pending trace: its value, now (a large one stays pending)
            return _force(a) if a._tr[1][0].size < _options().eager_limit else None
        node = st.node
        v = node._host
        if v is None or node.op != "buffer":
            return None
        if st.perm is not None:
            v = _laid_out(st, node)
    return v if v.size < _options().eager_limit else None


def computed_value(a: Array) -> np.ndarray | None:
    """The computed host value of a whole storage, of any size, else None (`M[5, 5]` of a
    computed (1000, 1000) M: 91 us on the lazy tier, 0.1 us as NumPy's element)."""
    st = a._st
    if st is None:
        return None
    node = st.node
    if node.op != "buffer":
        return None
    return node._host if st.perm is None or node._host is None else _laid_out(st, node)


def small_view(a: Array, limit: int = 0) -> np.ndarray | None:
    """NumPy's view of a computed value behind a tiny slicing view (`A[1:-1, :-2]`, `M[5]`,
    a diagonal), for reading only (the eager tier's operands); None for other views, larger
    ones (`limit` elements or more; default the eager tier's size) or a pending base. The
    base may be large: `M[5].sum()` of a computed (1000, 1000) M took 64 us on the lazy
    tier, NumPy 0.9 us."""
    node = a._st.node
    v = node._host
    proxy = a._proxy
    if v is None or node.op != "buffer" or proxy.size >= (limit or _options().eager_limit):
        return None
    base = v
    for fn, args in a._chain:
        if fn is not _GETITEM:  # any other view (diagonal, transpose...): read off its proxy,
            return _proxy_view(a._st, base, proxy)  # whose offset is from the base's start
        v = v[args[0]]
    if v.flags.writeable:  # (an eager result that is this very view must not write the base)
        v.setflags(write=False)
    return v


def _proxy_view(st, v: np.ndarray, proxy: np.ndarray) -> np.ndarray | None:
    """The elements of the C-ordered computed base `v` that `proxy` (a view's shape, strides
    and offset over the storage's fake base) selects, as a read-only NumPy view."""
    if st.perm is not None:  # (memory in NumPy's order "K": walked in that order)
        v = _laid_out(st, st.node).transpose(st.perm)
    if not v.flags.c_contiguous or proxy.dtype != v.dtype:
        return None
    offset, strides = st.region(proxy)
    w = strided_view(v.reshape(-1), offset, proxy.shape, strides)
    w.flags.writeable = False
    return w


def _laid_out(st: Storage, node: Node) -> np.ndarray:
    """The computed buffer of `node`, the current version of `st`, in NumPy's memory order
    `st.perm` (a kernel writes its results in C order: they are laid out again once, when a
    NumPy value is first taken from them, so that NumPy's calls on them lay out their own
    results as NumPy would)."""
    v = node._host
    mem = v.transpose(st.perm)
    if not mem.flags.c_contiguous:
        mem = np.ascontiguousarray(mem)
        mem.setflags(write=v.flags.writeable)
        v = node._host = mem.transpose(_inverse(st.perm))
    return v


def _inverse(perm: tuple) -> tuple:
    return tuple(sorted(range(len(perm)), key=perm.__getitem__))


def _layout_pair(a) -> tuple | None:
    """(shape, strides) of an operand as NumPy holds it, or None for a number."""
    t = type(a)
    if t is Array:
        v = a._val
        if v is not None:
            return (v.shape, v.strides) if type(v) is _ndarray else None
        if a._chain:
            p = a._proxy
            return p.shape, p.strides
        st = a._st
        if st is not None and st.perm is not None:
            p = st.fake()
            return p.shape, p.strides
        shape = a.shape
        return shape, packed_strides(shape, 1)
    if t is _ndarray:
        return a.shape, a.strides
    return None


def _result_order(args, shape, copy: bool = False) -> tuple | None:
    """NumPy's memory order (order "K") for an elementwise result (`copy`: a copy) of
    `shape` from `args` (`storage.memory_order`); None for C order (checked first: every
    array operand C-ordered)."""
    pairs = [p for p in map(_layout_pair, args) if p is not None]
    if all(_c_ordered(*p, copy) for p in pairs):
        return None
    return memory_order(tuple(pairs), tuple(shape), copy)


def _c_ordered(shape, strides, copy: bool = False) -> bool:
    """Do the axes of length above one have non-increasing absolute strides (C order,
    slices and reversals included; stride-zero axes count for a `copy` only)?"""
    last = None
    for n, s in zip(shape, strides):
        if n > 1 and (s or copy):
            s = abs(s)
            if last is not None and s > last:
                return False
            last = s
    return True


def ordered(out: Array, perm: tuple | None) -> Array:
    """`out`, a new result that nothing else sees yet, laid out in NumPy's memory order
    `perm` (the proxy of its storage has NumPy's strides: flags, strides and reshape's
    view-or-copy follow)."""
    if perm is None or len(perm) != len(out.shape):
        return out
    v = out._val
    if type(v) is _ndarray:  # an eager value: laid out as NumPy's own
        if not v.transpose(perm).flags.c_contiguous:
            out._val = np.ascontiguousarray(v.transpose(perm)).transpose(_inverse(perm))
        return out
    st = out._storage
    st.perm, st._fake = perm, None
    return out


def in_order(out: Array, order, sources=(), copy: bool = True) -> Array:
    """`out`, a new result, laid out as NumPy lays out a new array of memory order `order`
    ("C", "F", "A": F when every source is F- and not C-contiguous, "K": the sources'
    order, `memory_order`, of a copy or, `copy` False, of a ufunc's result)."""
    n = len(out.shape)
    if n < 2 or order is None or order == "C":
        return out
    if order == "K":
        return ordered(out, _result_order(sources, out.shape, copy))
    if order == "A" and not all((f := _layout_flags(a)) is not None and f.f_contiguous
                                and not f.c_contiguous for a in sources):
        return out
    return ordered(out, tuple(range(n - 1, -1, -1)))


def _layout_flags(a):
    return a._layout().flags if type(a) is Array else getattr(a, "flags", None)


def _gather_order(layout: np.ndarray, node: Node) -> tuple | None:
    """NumPy's memory order for an advanced-indexing result: the index dimensions
    slowest, then the operand's other axes in the operand's own memory order."""
    if node.op != "gather" or len(node.shape) < 2:
        return None
    axes, offsets = node.attr("axes"), node.attr("offset_dims")
    others = [a for a in range(layout.ndim) if a not in axes]
    sub = memory_order(((tuple(layout.shape[a] for a in others),
                         tuple(layout.strides[a] for a in others)),), (0,) * len(others))
    perm = [d for d in range(len(node.shape)) if d not in offsets]
    perm += [offsets[i] for i in (sub if sub is not None else range(len(others)))]
    return None if perm == sorted(perm) else tuple(perm)


_GETITEM = build.getitem
_FAST_KEYS = frozenset({tuple, int, slice})  # keys `Array._fast_region_write` may take
_WHOLE_VIEW = (Ellipsis,)  # `_region_buffer`'s key for the whole of a view (no indexing)
_scalar_array = np.asarray  # a fresh 0-d array of a NumPy scalar (half np.array's cost)


def _slicing(key: tuple) -> int:
    """Is a key Python ints (not bools) and slices, at least one slice (a view)? 1 if so,
    2 if so with one Ellipsis among them (a view too: `a[..., k]`), -1 if it is Python ints
    only (an element, or a row of a higher-dimensional array), else 0."""
    sliced = -1
    for k in key:
        t = type(k)
        if t is slice:
            sliced = sliced if sliced > 0 else 1
        elif k is Ellipsis and sliced < 2:
            sliced = 2
        elif t is not int:
            return 0
    return sliced


eager_op = stats.eager_op  # counts one eager-tier operation

# ---- the trace tier (trace_tier.py): recording ----------------------------------------------
_PIDS, _NO_START = trace._KEYS, trace.NO_START
_EXACT = 2 ** 53  # Python ints a trace takes as scalars: exactly float64 values
_EXT = fpstate._EXTOBJ  # NumPy's error state: a trace runs under the one it was recorded in
EXT_GET = _EXT.get if _EXT is not None else (lambda: None)
_DEFAULT_EXT = _EXT.get() if _EXT is not None else object()
# the last other error state found fit for traces: every category "ignore" or "warn" (and
# underflow ignored), the states whose reports a recheck on NumPy reproduces (ir/fpstate.py)
_fit_state = [_DEFAULT_EXT]


def _trace_input(a, ext) -> tuple | None:
    """`a` as a trace's input: its pending trace, or a trace of one leaf (a tiny computed
    C-contiguous float64 array of one or more dims, made read-only so that a later write into
    `a` copies it first; memoized per array); None when `a` is neither."""
    tr = a._tr
    if tr is not None:
        return tr if tr[5] is ext else None
    v = a._val
    if v is None:
        if a._chain:
            return _large_leaf(a, ext)
        st = a._st
        if st is not None and (memo := st.leaf_trace) is not None and memo[0] is st.node \
                and memo[1] is ext and _JIT_TRACING() is None:
            return memo[2]  # (a large leaf seen before: `_large_leaf`)
        v = small_value(a)
        if v is None:
            return _large_leaf(a, ext)
    elif v.size >= _options().eager_limit:
        return None
    memo = _LEAVES.get(id(v))
    if memo is not None and memo[0] is v and memo[1][5] is ext:
        return memo[1]
    if type(v) is not _ndarray or v.dtype is not _F64 or not v.ndim or not v.flags.c_contiguous:
        return None
    if v.flags.writeable:
        v.setflags(write=False)
    tr = (trace.LEAF, (v.reshape(-1),), [], 0, v.shape, ext)
    if len(_LEAVES) >= 64:
        _LEAVES.clear()
    _LEAVES[id(v)] = (v, tr)
    return tr


_LEAVES: dict[int, tuple] = {}  # id(value) -> (value, its leaf trace): recent leaves
_JIT_TRACING = engine.TRACING.get


def _large_leaf(a, ext) -> tuple | None:
    """A trace of one leaf for `a` when it is a computed float64 array of one or more dims
    and at least TINY elements, whole or a slicing view of one (a large trace: see
    trace_tier.force_large), else None. A whole array's is memoized on its storage, per
    version (node) and error state (`_trace_input` reads the memo). The trace's view of the
    buffer counts as a reference to it, so a later write into `a` never goes into this
    memory (engine._sole_buffers)."""
    st = a._st
    if st is None or _JIT_TRACING() is not None:  # (a jit trace's inputs stay its parameters)
        return None
    node = st.node
    v = node._host
    if node.op != "buffer" or type(v) is not _ndarray or v.dtype is not _F64 or v.size < TINY \
            or not v.flags.c_contiguous:
        return None
    if v.flags.writeable:
        v.setflags(write=False)
    if not a._chain:  # (whole, not flat as a tiny leaf: a view or a sum may read it)
        tr = (trace.LEAF, (v,), [], 0, v.shape, ext) if v.ndim else None
        st.leaf_trace = (node, ext, tr)  # (the storage holds the node already)
        return tr
    pid, view = trace.LEAF, v
    for fn, args in a._chain:  # slicing views: part of the program (trace_tier.view_id)
        if fn is not _GETITEM:
            return None
        view = view[args[0]]
        pid = trace.view_id(pid, args[0])
        if pid is None:
            return None
    if not view.ndim or view.size < TINY:
        return None
    return (pid, (v,), [], 0, view.shape, ext)


def large_leaf_operand(a) -> bool:
    """Might `a` start a large trace (a computed buffer or a view of one)? The cheap test
    before `_record` on the lazy path of an operator."""
    st = a._st
    return st is not None and st.node.op == "buffer"


_NO_TRACE = object()


def _trace_state():
    """NumPy's error state, when traces may be recorded under it and the options allow them;
    else _NO_TRACE."""
    ext = EXT_GET()
    if ext is not _DEFAULT_EXT and ext is not _fit_state[0]:
        if _EXT is None or not fpstate.compiled_ok():
            return _NO_TRACE
        _fit_state[0] = ext
    opts = _options()
    return ext if opts.trace and opts.backend == "cpu" else _NO_TRACE


def _record(name: str, args: tuple) -> Array | None:
    """Record `name(*args)` on the trace tier: a new Array holding the trace, or None when
    the operation does not qualify (then the eager or lazy tiers take it)."""
    ext = _trace_state()
    if ext is _NO_TRACE:
        return None
    x = _trace_operand(args[0], ext)
    if x is None:
        return None
    shape = None  # the result's, when operands broadcast
    if len(args) == 1:
        key, tr = (name, x[0]), x
    else:
        y = _trace_operand(args[1], ext)
        if y is None:
            return None
        if type(x) is tuple:
            if type(y) is tuple:
                x, y = _joined_order(name, x, y)
                if y is None:
                    return None
                if x[4] != y[4]:  # broadcasting: large traces only (tiny: the eager tier's)
                    shape = _large_broadcast(x, y)
                    if shape is None:
                        return None
                key, tr = (name, x[0], y[0]), None
            else:
                key, tr = (name, x[0], trace.SCALAR), None
        elif type(y) is tuple:
            key, tr = (name, trace.SCALAR, y[0]), None
        else:
            return None
    pid = _PIDS.get(key) or trace.program_id(key)
    if pid is None:
        return None  # over the size bound
    if pid in _NO_START and (x[0] < 2 if len(args) == 1 else key[1] < 2 and key[2] < 2) \
            and (x if type(x) is tuple else y)[1][0].size < TINY:
        return None  # a tiny start that does not pay (large traces always pay)
    if tr is None:
        if type(x) is not tuple:
            tr = _with_scalar(y, x)
        elif type(y) is not tuple:
            tr = _with_scalar(x, y)
        else:
            tr = (0, *_joined(x, y), x[4])
    return _trace_array((pid, tr[1], tr[2], tr[3], tr[4] if shape is None else shape, ext))


_THEN_TWO: dict[tuple, int] = {}  # (op, program id) -> that of `op(program, scalar, scalar)`


def record_two_scalars(name: str, a: Array, s1: float, s2: float) -> Array | None:
    """`_record` of `name(a, s1, s2)` (clip with float bounds), without its generality."""
    ext = EXT_GET()
    opts = _options()
    if ext is not _DEFAULT_EXT and ext is not _fit_state[0] or not opts.trace \
            or opts.backend != "cpu":
        ext = _trace_state()  # (an error state not seen before, or no tracing)
        if ext is _NO_TRACE:
            return None
    x = _trace_input(a, ext)
    if x is None:
        return None
    pid = _THEN_TWO.get((name, x[0]))
    if pid is None:
        pid = trace.program_id((name, x[0], trace.SCALAR, trace.SCALAR))
        if pid is None:
            return None
        if len(_THEN_TWO) >= 4096:
            _THEN_TWO.clear()
        _THEN_TWO[name, x[0]] = pid
    if x[0] == trace.LEAF and pid in _NO_START and x[1][0].size < TINY:
        return None
    n = x[3]
    eager_op()
    a = new_array(Array)
    a._tr = (pid, x[1], x[2][:n] + [s1, s2] if n else [s1, s2], n + 2, x[4], ext)
    a._val = a._st = a._proxy = a._base = None
    a._chain = ()
    return a


def record_reduce(a: Array, name: str, axis, keepdims) -> Array | None:
    """`np.sum` / `np.max` / `np.min` of `a` (`name`: the ufunc's name, "or" and "and" for
    `np.any` and `np.all`) over `axis` on the trace tier, `a` a large float64 trace or leaf,
    or a large comparison trace (a count: `np.count_nonzero(x > 0.5)`; any, all); the
    structure, with its reductions, is replayed as its evaluation's kernels
    (trace_tier.force_large). None when `a` is none of these, or when NumPy would raise (a
    maximum of nothing: the lazy tier raises it, now)."""
    tr = a._tr
    if tr is None:  # (a tiny buffer is not looked at: `_trace_input` would make it a leaf)
        st = a._st
        v = st.node._host if st is not None else None
        if v is None or v.size < TINY:
            return None
    elif tr[1][0].size < TINY:
        return None
    ext = _trace_state()
    if ext is _NO_TRACE:
        return None
    x = _trace_input(a, ext)
    if x is None or x[1][0].size < TINY or trace._KINDS[x[0]] > 1:  # (float64 or bool: the
        return None  # reductions each takes, `trace_tier._REDUCED`)
    shape = x[4]
    if not shape:  # (0-d: the lazy tier's, which takes axis 0 and -1 as NumPy does)
        return None
    axes = tuple(sorted(build.normalize_axes(axis, len(shape))))  # (NumPy's errors, now)
    if not axes or name != "add" and not all(map(shape.__getitem__, axes)):  # (an empty axis)
        return None
    keepdims = bool(keepdims)
    pid = trace.program_id((("reduce", name, axes, keepdims), x[0]))
    if pid is None:
        return None
    kept = list(shape)  # the result's shape (a loop: no generator frames)
    for i in reversed(axes):
        if keepdims:
            kept[i] = 1
        else:
            del kept[i]
    return _trace_array((pid, x[1], x[2], x[3], tuple(kept), ext))


def record_total(a: Array) -> Array | None:
    """`np.sum(a)` over every axis of `a`, a pending large float64 trace: `record_reduce`'s
    trace, its program id memoized per structure (the Python of a large call costs its
    time with the caches cold); None when `record_reduce` should decide."""
    tr = a._tr
    key = (tr[0], len(tr[4]))  # (a program id names a structure of any rank)
    pid = _TOTALS.get(key)
    if pid is None or tr[5] is not EXT_GET() or tr[1][0].size < TINY \
            or not (opts := _options()).trace or opts.backend != "cpu":
        s = record_reduce(a, "add", None, False)
        if s is not None and len(_TOTALS) < 4096:
            _TOTALS[key] = s._tr[0]
        return s
    return _trace_array((pid, tr[1], tr[2], tr[3], (), tr[5]))


_TOTALS: dict[tuple, int] = {}  # (program id, rank) -> that of its sum over every axis


def _large_broadcast(x: tuple, y: tuple) -> tuple | None:
    """The broadcast shape of a large trace `x` and a trace `y` of another shape, as
    `_joinable` gives it (`x - x.max(axis=1, keepdims=True)`; `A @ B + bias`); None when `x`
    is tiny (the tiny tier does not broadcast: the eager tier's) or the shapes do not
    broadcast (the lazy tier raises NumPy's error)."""
    if x[1][0].size < TINY:
        return None
    a, b = (x[4], y[4]) if len(x[4]) >= len(y[4]) else (y[4], x[4])
    out = list(a)  # (NumPy's rule on the tuples: np.broadcast_shapes builds arrays, 3-5 µs)
    for k, n in enumerate(b, len(a) - len(b)):
        m = a[k]
        if m != n:
            if m == 1:
                out[k] = n
            elif n != 1:
                return None
    return tuple(out)


def _joinable(x: tuple, y: tuple) -> tuple | None:
    """`y` as the second operand of an operation on the trace `x`, or None when the two
    cannot make one trace. The first leaf's size says which tier a trace is on (tiny: flat
    leaves of its shape; large: whole arrays, `trace_tier._lift`), so traces of one tier
    join as they are; a large `x` takes a tiny computed array (not a tiny pending program)
    as its whole array (`A @ B + bias`, layer norm's `* gamma + beta`); a tiny `x` takes no
    large trace (the lazy tier computes the operation on their graphs)."""
    large = x[1][0].size >= TINY
    v = y[1][0]
    if (v.size >= TINY) == large:
        return y
    if not large or y[0] != trace.LEAF:
        return None
    return (y[0], (v.reshape(y[4]),), y[2], y[3], y[4], y[5])


def _joined_order(name: str, x: tuple, y: tuple) -> tuple:
    """(x, y) as `_joinable` takes them for `name(x, y)`, or (x, None); a commutative
    operation of a tiny computed array and a large trace is recorded the other way round
    (`gamma * x_hat`: IEEE addition and multiplication give the same bits either way)."""
    j = _joinable(x, y)
    if j is not None or name not in _COMMUTATIVE:
        return x, j
    j = _joinable(y, x)
    return (x, None) if j is None else (y, j)


_COMMUTATIVE = frozenset({"add", "multiply"})
_WHERE_OF: dict[tuple, int] = {}  # (condition, x, y program ids) -> that of where(...)


def record_where(c: Array, x, y) -> Array | None:
    """`_record` of `where(c, x, y)`, `c` a pending bool trace, without its generality."""
    tc = c._tr
    ext = tc[5]
    opts = _options()
    if EXT_GET() is not ext or not opts.trace or opts.backend != "cpu":
        return None  # (recorded under another error state or options: c is computed)
    tx = (x._tr or _trace_input(x, ext)) if type(x) is Array else x
    ty = (y._tr or _trace_input(y, ext)) if type(y) is Array else y
    large = tc[1][0].size >= TINY  # (`_joinable` only where tiers differ: a hot path)
    if type(tx) is tuple and (tx[1][0].size >= TINY) is not large \
            and (tx := _joinable(tc, tx)) is None \
            or type(ty) is tuple and (ty[1][0].size >= TINY) is not large \
            and (ty := _joinable(tc, ty)) is None:
        return None
    leaves, scalars, shape = tc[1], tc[2][:tc[3]], tc[4]
    if type(tx) is tuple and type(ty) is tuple:  # two float64 traces: memoized
        pid = _WHERE_OF.get((tc[0], tx[0], ty[0]))
        if pid is not None and tx[4] == shape == ty[4] and tx[5] is ext and ty[5] is ext:
            scalars += tx[2][:tx[3]]
            scalars += ty[2][:ty[3]]
            eager_op()
            a = new_array(Array)
            a._tr = (pid, leaves + tx[1] + ty[1], scalars, len(scalars), shape, ext)
            a._val = a._st = a._proxy = a._base = None
            a._chain = ()
            return a
    key, own = ["where", tc[0]], []
    for t in (tx, ty):  # the inputs in the order a walk meets them: operands', then floats
        if type(t) is tuple:
            if t[4] != shape or t[5] is not ext:
                return None
            leaves += t[1]
            scalars += t[2][:t[3]]
            key.append(t[0])
        elif type(t) is float:
            own.append(t)
            key.append(trace.SCALAR)
        else:
            return None
    key = tuple(key)
    pid = _PIDS.get(key) or trace.program_id(key)
    if pid is None:
        return None
    if not own:
        if len(_WHERE_OF) >= 4096:
            _WHERE_OF.clear()
        _WHERE_OF[key[1:]] = pid
    scalars += own
    eager_op()
    a = new_array(Array)
    a._tr = (pid, leaves, scalars, len(scalars), shape, ext)
    a._val = a._st = a._proxy = a._base = None
    a._chain = ()
    return a


def _trace_array(tr: tuple) -> Array:
    """A new Array holding the pending trace `tr` (counted as an eager-tier operation)."""
    eager_op()
    a = new_array(Array)
    a._tr = tr
    a._val = a._st = a._proxy = a._base = None
    a._chain = ()
    return a


def _large_start(name: str, memo: tuple, other, reflected: bool, pids: list,
                 pid_of) -> Array | None:
    """`self op other` (`name`) as a new large trace, for `self` whose storage's memo is
    `memo` (`_large_leaf`) and `other` a scalar, a pending trace or an Array whose storage has
    a memo too: a new Array, or None for `_record` to decide (`pids[k] or pid_of(k)`: the
    program id of `self op scalar` (k = 0) or `self op other` (k = 1), None until
    interned)."""
    ext, leaf = memo[1], memo[2]
    t = type(other)
    if leaf is None or ext is not EXT_GET() or _JIT_TRACING() is not None \
            or not (opts := _options()).trace or opts.backend != "cpu":
        return None
    if t is float or t is int and -_EXACT <= other <= _EXACT:
        pid = pids[0] or pid_of(0)
        if pid is None:
            return None
        tr = (pid, leaf[1], [other if t is float else float(other)], 1, leaf[4], ext)
    elif t is Array:
        otr = other._tr
        if otr is not None:  # a pending trace (the column standardization's `X - X.mean(axis=0)`)
            if otr[5] is not ext:
                return None
            return _record_pair(name, otr, leaf) if reflected else _record_pair(name, leaf, otr)
        st = other._st
        omemo = None if st is None or other._chain else st.leaf_trace
        if omemo is None or omemo[0] is not st.node or omemo[1] is not ext \
                or omemo[2] is None or omemo[2][4] != leaf[4]:
            return None
        pid = pids[1] or pid_of(1)
        if pid is None:
            return None
        leaves = omemo[2][1] + leaf[1] if reflected else leaf[1] + omemo[2][1]
        tr = (pid, leaves, [], 0, leaf[4], ext)
    else:
        return None
    return _trace_array(tr)


def _record_pair(name: str, x: tuple, y: tuple) -> Array | None:
    """`_record` of `name(x, y)` for two traces (pending, or a large leaf's) of one error
    state: of one shape, or large ones that broadcast."""
    x, y = _joined_order(name, x, y)
    if y is None:
        return None
    shape = x[4]
    if y[4] != shape:
        shape = _large_broadcast(x, y)
        if shape is None:
            return None
    key = (name, x[0], y[0])
    pid = _PIDS.get(key) or trace.program_id(key)
    if pid is None:
        return None
    return _trace_array((pid, *_joined(x, y), shape, x[5]))


def _joined(x: tuple, y: tuple) -> tuple:
    """(leaves, scalars, number of scalars used) of an operation on traces `x` and `y`: one
    list of scalars is shared when only one of them uses any (see _with_scalar)."""
    if not y[3]:
        return x[1] + y[1], x[2], x[3]
    if not x[3]:
        return x[1] + y[1], y[2], y[3]
    scalars = x[2][:x[3]] + y[2][:y[3]]
    return x[1] + y[1], scalars, len(scalars)


def _trace_operand(x, ext):
    """A trace (tuple) for an Array that can be one, the number for a scalar, else None."""
    t = type(x)
    if t is Array:
        return _trace_input(x, ext)
    if t is float or t is int and -_EXACT <= x <= _EXACT:
        return x
    return None


def _with_scalar(tr: tuple, s) -> tuple:
    """`tr` with the scalar `s` appended to its scalars: in place when `tr` uses the whole
    list (the usual chain), else on a copy of the part it uses."""
    scalars, n = tr[2], tr[3]
    if type(s) is int:  # (exact: the float64 NumPy converts it to, which the kernel takes)
        s = float(s)
    if not n:  # a leaf's (shared by every trace starting from it): a list of its own
        return (0, tr[1], [s], 1, tr[4], tr[5])
    scalars.append(s)  # append, then check: two threads extending one chain both notice
    if len(scalars) != n + 1:
        scalars = scalars[:n]
        scalars.append(s)
    return (0, tr[1], scalars, n + 1, tr[4], tr[5])


def _force(a: Array) -> np.ndarray:
    """Compute `a`'s pending trace: `a` becomes an eager value."""
    v = trace.force(a._tr)
    a._val, a._tr = v, None
    return v


def eager_array(res) -> Array:
    """An eager result (fresh from NumPy: an array, or a NumPy scalar for 0-d) as an Array."""
    if type(res) is np.ndarray:
        if res.base is not None:
            res = res.copy(order="K")  # (NumPy's layout kept)
    elif not isinstance(res, np.generic):
        res = np.asarray(res)
    return value_array(res)


def value_array(value: np.ndarray) -> Array:
    """An Array holding a fresh value nothing else refers to, without __init__ (the eager
    tier's hot path; see `Array._storage`). Values of TINY elements or more (a broadcast
    of tiny operands) become ordinary graph leaves: `_val` is only ever a tiny value, so
    operators on it need no size check while no eager_threshold below TINY is in effect
    (`config.LOWERED`)."""
    if value.size >= TINY:
        return Array(buffer(value))
    a = new_array(Array)
    a._val, a._st, a._chain, a._proxy, a._base, a._tr = value, None, (), None, None, None
    return a


new_array = _new_storage = object.__new__
# views whose every element is the one element of a 0-d array (of a scalar's: `_view`)
_ONE_VALUE_VIEWS = frozenset({build.reshape, build.transpose, build.getitem, build.broadcast_to})
_birth = threading.Lock()  # an eager value getting its Storage: once, even across threads


_ndarray = np.ndarray
_type = type  # (`Array.view` takes a parameter named `type`)
_F64 = np.dtype(np.float64)
F64_CONSTANTS: dict[float, np.ndarray] = {}


def f64_constant(x: float) -> np.ndarray:
    """`x` as a read-only 0-d float64 array, cached: NumPy multiplies a float64 array by a
    0-d array in about 60% of the time it takes with a Python float (which it converts on
    every call). Only for float64 arrays, where both give the same dtype and bits; never
    for zeros (0.0 and -0.0 are one dict key)."""
    if len(F64_CONSTANTS) >= 512:
        F64_CONSTANTS.clear()
    c = F64_CONSTANTS[x] = np.array(x, _F64)
    c.setflags(write=False)
    return c


_INT_AS_FLOAT = frozenset({"add", "subtract", "multiply", "divide", "less", "less_equal",
                           "greater", "greater_equal", "equal", "not_equal"})


def _binary(name: str, py_op, reflected: bool = False, via: ufunc | None = None):
    """The Python operator `py_op` (operator.mul, ...) over the namespace's ufunc `name`;
    with `via`, that ufunc's call on an Array and an Array or a Python scalar (`ufunc._pair`),
    whose other cases end in `via._plain`."""
    fast = name in OPS and name not in MULTI_OUTPUT
    # a Python int meets a float64 array as the float64 of the same value (NEP 50): as a
    # cached 0-d float64 it costs what a float does (`x * 2`: 0.45 against 0.76 us at 1e3)
    exact_ints = name in _INT_AS_FLOAT
    traced = name in trace.TRACED
    # the structure of `self op scalar` on a computed self (where most traces start)
    start = (name, trace.SCALAR, trace.LEAF) if reflected else (name, trace.LEAF, trace.SCALAR)
    after: dict[int, int] = {}  # program id of a trace -> that of `trace op scalar`
    start2 = (name, trace.LEAF, trace.LEAF)  # of `self op other` on computed arrays
    start_ids = [None, None]  # their program ids, once interned

    def start_id(k: int) -> int | None:
        """The program id of the start (0: `self op scalar`, 1: `self op other`), once
        interned."""
        pid = start_ids[k] = _PIDS.get(start2 if k else start)
        return pid

    def method(self, other):
        if reflected and type(other) is complex and self._is_complex_left_of_float_scalar():
            return py_op(other, float(self))  # Python's complex op (a float64 is a float)
        # the trace and eager tiers, inlined: the hot path of tiny-array code (tiny-array chains)
        tr = self._tr
        if tr is not None and traced:  # a trace goes on (first: the hottest path)
            t = type(other)
            if (t is float or t is int and -_EXACT <= other <= _EXACT) and \
                    EXT_GET() is tr[5]:
                try:
                    pid = after[tr[0]]
                except KeyError:
                    pid = trace.program_id((name, trace.SCALAR, tr[0]) if reflected
                                           else (name, tr[0], trace.SCALAR))
                    if pid is not None:
                        after[tr[0]] = pid
                if pid is not None:
                    scalars, n = tr[2], tr[3]
                    if t is int:  # (exact: see _with_scalar)
                        other = float(other)
                    if not n:  # `_with_scalar`, inlined (hot path)
                        scalars = [other]
                    else:
                        scalars.append(other)
                        if len(scalars) != n + 1:  # another chain appended to it first
                            scalars = scalars[:n]
                            scalars.append(other)
                    eager_op()
                    a = new_array(Array)
                    a._tr = (pid, tr[1], scalars, n + 1, tr[4], tr[5])
                    a._val = a._st = a._proxy = a._base = None
                    a._chain = ()
                    return a
            if t is Array and (otr := other._tr) is not None and otr[5] is tr[5] \
                    and EXT_GET() is tr[5]:  # two pending traces
                if otr[4] == tr[4] and not otr[3] and not reflected \
                        and (pid := _PIDS.get((name, tr[0], otr[0]))) is not None \
                        and (tr[1][0].size < TINY) is (otr[1][0].size < TINY):
                    eager_op()  # (`_record_pair`, inlined: one shape, `other` no scalars)
                    a = new_array(Array)
                    a._tr = (pid, tr[1] + otr[1], tr[2], tr[3], tr[4], tr[5])
                    a._val = a._st = a._proxy = a._base = None
                    a._chain = ()
                    return a
                a = _record_pair(name, otr, tr) if reflected else _record_pair(name, tr, otr)
                if a is not None:
                    return a
            a = _record(name, (other, self) if reflected else (self, other))
            if a is not None:
                return a
        v = self._val  # tiny by construction (see value_array)...
        if LOWERED[0] and v is not None:  # ...unless eager_threshold is lower
            v = small_value(self)
        if traced and tr is None:
            if v is None:
                st = self._st
                if st is not None and (memo := st.leaf_trace) is not None \
                        and memo[0] is st.node and not self._chain \
                        and (t := type(other)) in _TRACE_OPERANDS:
                    # a large leaf seen before (`_large_leaf`): a large trace starts
                    # here (`_record` with a scalar or another such leaf, inlined)
                    a = _large_start(name, memo, other, reflected, start_ids, start_id)
                    if a is None:
                        a = _record(name, (other, self) if reflected else (self, other))
                    if a is not None:
                        return a
                v = small_value(self)
            t = type(other)
            if t is Array and other._tr is not None or type(v) is _ndarray and (
                    v.dtype is _F64 and not self._chain
                    and (t is not Array or not other._chain and (
                        other._val is None or type(other._val) is _ndarray))  # (not a scalar)
                    and (start_ids[t is Array] or start_id(t is Array)) not in _NO_START
                    and (opts := _options()).trace and opts.backend == "cpu"):
                # it may start a trace (trace_tier.NO_START): from a leaf seen before,
                # with a scalar or another such leaf, here (`_record`, inlined)
                ext = EXT_GET()
                memo = _LEAVES.get(id(v)) if ext is _DEFAULT_EXT or ext is _fit_state[0] \
                    else None
                if memo is not None and memo[0] is v and memo[1][5] is ext:
                    leaf = memo[1]
                    if t is float or t is int and -_EXACT <= other <= _EXACT:
                        pid = start_ids[0]
                        if pid is not None:
                            eager_op()
                            a = new_array(Array)
                            a._tr = (pid, leaf[1], [other if t is float else float(other)],
                                     1, leaf[4], ext)
                            a._val = a._st = a._proxy = a._base = None
                            a._chain = ()
                            return a
                    elif t is Array and other._tr is None:
                        w = other._val
                        if w is None:
                            w = small_value(other)
                        memo = _LEAVES.get(id(w))
                        pid = start_ids[1]
                        if (memo is not None and memo[0] is w and memo[1][5] is ext
                                and pid is not None and memo[1][4] == leaf[4]):
                            eager_op()
                            a = new_array(Array)
                            a._tr = (pid, memo[1][1] + leaf[1] if reflected
                                     else leaf[1] + memo[1][1], [], 0, leaf[4], ext)
                            a._val = a._st = a._proxy = a._base = None
                            a._chain = ()
                            return a
                a = _record(name, (other, self) if reflected else (self, other))
                if a is not None:
                    return a
            elif v is None and (t is float or t is int or t is Array) \
                    and large_leaf_operand(self):  # a large trace starts here
                a = _record(name, (other, self) if reflected else (self, other))
                if a is not None:
                    return a
        if v is None:
            v = small_value(self)
        if v is not None:
            t = type(other)
            if t is float or t is int:
                eager_op()
                # NumPy's operator (its scalar arithmetic for NumPy scalars costs a tenth of
                # the ufunc call), under the caller's error state: NumPy warns, raises or
                # ignores as it would (a warning names this line, not the caller's: finding
                # the caller's would cost as much as the operation; docs/semantics.md)
                if type(v) is _ndarray and other and v.dtype is _F64 and (
                        t is float or exact_ints and -_EXACT <= other <= _EXACT):
                    w = F64_CONSTANTS.get(other)
                    if w is None:
                        w = f64_constant(other)
                    other = w
                a = new_array(Array)
                a._val = py_op(other, v) if reflected else py_op(v, other)
                a._st = a._proxy = a._base = a._tr = None
                a._chain = ()
                return a
            if t is Array:
                w = other._val  # as small_value(other), inlined
                if w is None:
                    w = small_value(other)
                elif w.size >= _options().eager_limit:
                    w = None
                if w is not None:
                    if v.shape == w.shape:  # (the result is as tiny: no size check)
                        eager_op()
                        a = new_array(Array)
                        a._val = py_op(w, v) if reflected else py_op(v, w)
                        a._st = a._proxy = a._base = a._tr = None
                        a._chain = ()
                        return a
                    if v.size == 1 or w.size == 1 or _small_broadcast((v, w)):
                        eager_op()
                        return value_array(py_op(w, v) if reflected else py_op(v, w))
        if not isinstance(other, (Array, np.ndarray, np.generic, bool, int, float, complex,
                                  list, tuple)):
            return NotImplemented
        if v is None and fast:  # lazy operands: build the node (no tiny input to look at)
            return _lazy(name, (other, self) if reflected else (self, other))
        if via is not None:
            return via._plain((other, self) if reflected else (self, other))
        f = UFUNCS[name]
        return f(other, self) if reflected else f(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _inplace(name: str):
    def method(self, other):
        if len(self._chain) == 1 and self._val is None:  # a loop's `c[i, :i + 1] += x`
            t = type(other)
            o = other if t is float or t is int else _written_value(other)
            out = None if o is None else self._slice_buffer()
            if out is not None:
                eager_op()
                UFUNCS[name]._np(out, o, out=out)
                stats.eager_write()
                return self
        v = self._val
        st = self._st
        if v is None and st is not None and not self._chain and not st.scalar \
                and st.node.op == "buffer" and self._layout().size < _options().eager_limit:
            v = self._dead_buffer()  # (a NumPy scalar is never written: `s += 1` rebinds)
        if type(v) is _ndarray and v.flags.writeable:
            # a small computed value only this array holds (an eager value: handed out,
            # traced or viewed, it is read-only or has a storage; a storage's buffer: its
            # version dead): NumPy's own in-place ufunc into it, with NumPy's casting and
            # broadcasting errors (`x += dx` in a loop over small vectors)
            t = type(other)
            o = other if t is float or t is int else _written_value(other)
            if o is not None:
                eager_op()
                UFUNCS[name]._np(v, o, out=v)
                stats.eager_write()
                return self
        if not self._chain and self._is_scalar():  # a NumPy scalar: `s += 1` rebinds `s`
            return UFUNCS[name]._plain((self, other))
        layout = self._layout()
        if not layout.flags.writeable:  # (NumPy: before the operand types)
            raise ValueError("output array is read-only")
        if self._chain and self._st is not None and layout.size < _options().eager_limit \
                and _may_hold(self._st):
            # a small view of a computed array: NumPy's own in-place ufunc into its buffer
            o = _written_value(other)
            out = None if o is None or not layout.size else self._region_buffer(
                layout, _WHOLE_VIEW)
            if out is not None:
                eager_op()
                UFUNCS[name]._np(out, o, out=out)
                stats.eager_write()
                return self
        # (the ufunc's own path, not the operator's: `x[::2] *= 3` stays a node the write
        # fuses with, in place, where a trace of the view would be computed apart)
        self._assign(UFUNCS[name]._plain((self, other)), casting="same_kind")
        return self

    return method


UFUNCS: dict[str, ufunc] = {}
# modules that import this one, looked up when a method is called (a function-level import
# costs a microsecond on every call)
_modules = sys.modules
_RED, _FUNCS = "lazyarray._reductions", "lazyarray._funcs"


def _scalar_check_needed(value: "Array", dtype: np.dtype) -> bool:
    """Whether writing the scalar `value` into an array of `dtype` is a conversion NumPy
    checks element by element (a float or complex into ints, an int into a narrower int,
    a complex into reals): then NumPy needs the value at the write."""
    vt = value.dtype
    return vt != dtype and (dtype.kind in "iu" or vt.kind == "c") and value._is_scalar() \
        and not np.can_cast(vt, dtype, "safe")  # (the cheap tests first: every setitem asks)


def _constructed(shape, dtype, buffer_, offset, strides, order) -> Node:
    """`ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None)`, NumPy's
    low-level constructor: over a copy of `buffer` (an Array's values, or any object with the
    buffer protocol), else zeros (as `empty`: semantics.md, deviations 1 and 4)."""
    if type(buffer_) is Array:
        buffer_ = np.asarray(buffer_)
    view = _ndarray(shape, float if dtype is None else dtype, buffer_, offset, strides, order)
    if buffer_ is None:
        view.fill(0)
    return buffer(view.copy(order="K"))


class Array:
    """A lazy n-dimensional array (lazyarray's ``ndarray``).

    Operations record graph nodes; values are computed when observed. Shape, dtype, ndim,
    size and len() never compute anything.
    """

    __slots__ = ("__weakref__", "_base", "_chain", "_proxy", "_st", "_tr", "_val", "_vnode")
    __array_priority__ = 100.0

    def __init__(self, node: Node, dtype=None, buffer=None, offset=0, strides=None,
                 order=None):
        if type(node) is not Node:  # NumPy's constructor: ndarray(shape, dtype, buffer, ...)
            node = _constructed(node, dtype, buffer, offset, strides, order)
        self._st = Storage(node)
        if node.srcs:  # a pending lazy result: computed with an evaluation sharing its work
            live.remember(self._st)
        # an eager-tier result, until a Storage is needed: its value, an ndarray or (0-d) a
        # NumPy scalar, whose arithmetic costs a tenth of a 0-d array's
        self._val = None
        self._chain: tuple = ()  # view ops from the storage's base to this array
        self._proxy = None  # layout proxy (views: set when made; bases: made on demand)
        self._base: Array | None = None  # the array that owns the storage (None: this one)
        self._tr = None  # a pending trace (see trace_tier.py): its value is computed on demand

    @property
    def _storage(self) -> Storage:
        """The storage this array views. An eager-tier result is born as a bare value (one
        object, not three) and gets its storage the first time anything but the eager tier
        touches it."""
        st = self._st
        if st is None:
            with _birth:
                st = self._st
                if st is None:
                    v = self._val
                    if v is None:
                        tr = self._tr
                        if tr[1][0].size >= _options().eager_limit:  # a large trace: the
                            st = self._st = Storage(trace.graph(tr))  # graph it stands for
                            self._tr = None
                            return st
                        v = _force(self)
                    st = self._st = (Storage(leaf(v), False) if type(v) is np.ndarray
                                     else Storage(leaf(np.array(v)), True))
                    self._val = None
        return st

    @_storage.setter
    def _storage(self, st: Storage) -> None:
        self._st, self._val = st, None

    @property
    def _node(self) -> Node:
        """The current value's graph node: the view chain over the storage's current version
        (a view remembers the node it built for the version it last saw)."""
        base = self._storage.node
        if not self._chain:
            return base
        memo = self._vnode
        if memo is not None and memo[0] is base:
            return memo[1]
        node = base
        for fn, args in self._chain:
            node = fn(node, *args)
        self._vnode = (base, node)
        return node

    def _planned_node(self) -> Node:
        """`_node`, except that a pending trace becomes the graph it stands for instead of
        being computed (`lazyarray.explain` plans without computing)."""
        return self._node if self._tr is None else trace.graph(self._tr)

    def _layout(self) -> np.ndarray:
        return self._storage.fake() if self._proxy is None else self._proxy

    def _is_complex_left_of_float_scalar(self) -> bool:
        """Is this a float64 NumPy scalar, which Python's `complex` takes as a `float` (its
        subclass)? `1j * np.float64(2.0)` is Python's complex `2j`, not NumPy's complex128:
        a later `ints[0] = 2j` raises TypeError where a complex128 would warn."""
        return not self.shape and self.dtype == _F64 and self._is_scalar()

    def _is_scalar(self) -> bool:
        """Does this Array stand for a NumPy scalar (a 0-d result of a computation: a full
        reduction, `dot` of vectors, one element by indexing)? Its value never changes: a
        view of it is a new array (as NumPy's `reshape` of a scalar is), item assignment
        raises and an in-place operator rebinds (`Storage.scalar`)."""
        if self._chain or self.shape:
            return False
        st = self._st
        return type(self._val) is not _ndarray if st is None else st.scalar

    def _view(self, fn, args: tuple, proxy: np.ndarray, checked: bool = False) -> Array:
        """A view of this array: same storage, one more op in the chain (validated now: by
        building its node, unless `checked` says the proxy's indexing did; then the node is
        built when first needed, see `_node`). A view of a scalar is a new array."""
        if self._is_scalar():
            v = self._val if self._val is not None else computed_value(self)  # (no forcing)
            if v is not None and fn in _ONE_VALUE_VIEWS and _JIT_TRACING() is None:
                # NumPy's: computed now (not while `jit` traces: its values stand for inputs)
                return value_array(np.full(proxy.shape, v))
            return as_array(Array(fn(self._node, *args)))
        st = self._storage
        memo = None if checked else (st.node, fn(self._node, *args))
        v = Array.__new__(Array)
        v._storage, v._chain, v._proxy = st, (*self._chain, (fn, args)), proxy
        v._base, v._vnode, v._tr = self._root(), memo, None
        return v

    def _root(self) -> Array:
        return self if self._base is None else self._base

    @property
    def base(self) -> Array | None:
        """The array whose memory this one views (None if it owns its data), as in NumPy."""
        return self._base

    @property
    def flags(self) -> _Flags:
        return _Flags(self)

    # ---- metadata (never computes) ------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        v = self._val
        if v is None:
            if self._chain:  # a view: its proxy's (its node is built when first needed)
                return self._proxy.shape
            tr = self._tr
            return self._node.shape if tr is None else tr[4]
        return v.shape

    @shape.setter
    def shape(self, value) -> None:
        """`a.shape = ...`: NumPy's in-place reshape. The array takes the new shape as a view of
        the same memory (an owner stays the owner); where that needs a copy (a transposed or
        strided array), NumPy's AttributeError."""
        st = self._storage  # (an eager value gets its storage: the view below is over it)
        new = self.reshape(value)
        if type(new) is not Array or new._st is not st:
            raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` "
                                 "to make a copy with the desired shape.")
        if new is not self:
            self._chain, self._proxy, self._vnode = new._chain, new._proxy, new._vnode
            self._tr = None

    @property
    def dtype(self) -> np.dtype:
        v = self._val
        if v is None:
            if self._chain:
                return self._proxy.dtype
            tr = self._tr
            return self._node.dtype if tr is None else trace.dtype(tr[0])
        return v.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def T(self) -> Array:
        return self.transpose()

    @property
    def device(self) -> str:
        """Where the data lives or will be computed: the device backend's name (``"cuda"``,
        ``"xla"``) when it lives only there or the evaluation runs there (``backend="cuda"``
        or ``"xla"``), else ``"cpu"`` (Array API)."""
        device = engine.device_backend(toposort([self._node]))
        return "cpu" if device is None else device.name

    def to_device(self, device, /, *, stream=None) -> Array:
        """A copy of the array on `device` (``"cpu"`` or ``"cuda"``; Array API).

        On ``"cuda"`` the data stays on the GPU until observed on the host (see docs/cuda.md).
        """
        if device_name(device) == "cpu":
            return Array(buffer(np.array(self._value())))
        node, cuda = self._node, backends.get("cuda")
        with config.options(backend="cuda"):
            engine.materialize([node])
        flat = node.device if node.device is not None else cuda.to_device(node.value)
        new = Node("buffer", (), node.shape, node.dtype)
        new.realize_device(flat)
        return Array(new)

    @property
    def mT(self) -> Array:
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def real(self) -> Array:
        """The real part: this array itself unless complex; of a complex array a view, as in
        NumPy (writes through it change the real parts, and it sees later writes)."""
        if self.dtype.kind != "c":
            return self
        return self._view(_real_part, (), self._layout().real)

    @real.setter
    def real(self, value) -> None:
        self.real[...] = value

    @property
    def imag(self) -> Array:
        """The imaginary part: of a complex array a view, as in NumPy (of a real array
        read-only zeros: `_methods`)."""
        return self._view(_imag_part, (), self._layout().imag)

    @imag.setter
    def imag(self, value) -> None:
        self.imag[...] = value

    def view(self, dtype=None, type=None) -> Array:
        """A view of the same memory, as NumPy's; with another `dtype` its bytes are read as
        that dtype (a lazy bitcast, live: it sees later writes, and writes through it change
        this array). NumPy's rules decide which dtype views exist. `type` (or a `dtype` that
        is an array type, as NumPy reads `a.view(np.ndarray)`) may be `ndarray` -- NumPy's or
        lazyarray's, which is `Array` -- giving the same view; other subclasses of NumPy's
        (`matrix`, `recarray`) are not lazy arrays and raise NotImplementedError."""
        if isinstance(dtype, _type) and issubclass(dtype, (_ndarray, Array)):
            dtype, type = None, dtype
        if type is not None and type not in (_ndarray, Array):
            if not (isinstance(type, _type) and issubclass(type, (_ndarray, Array))):
                raise ValueError("Type must be a sub-type of ndarray type")
            raise NotImplementedError(f"lazyarray arrays cannot be viewed as {type.__name__}")
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self[...]
        dt = np.dtype(dtype)
        if dt.kind not in "biufc":
            raise TypeError(f"lazyarray does not support arrays of dtype {dt}")
        proxy = self._layout().view(dt)  # NumPy's checks and messages (ValueError)
        return self._view(_bitcast, (dt.name, proxy.shape), proxy)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # ---- materialization -------------------------------------------------------------
    def _value(self) -> np.ndarray:
        """Compute the storage's current version (as NumPy would hold it), then view it."""
        v = self._val
        if v is None and self._tr is not None:
            tr = self._tr
            if tr[1][0].size >= _options().eager_limit:  # a large trace: the lazy tier's value
                def attach(node):
                    if self._tr is tr:  # (another thread may have computed it meanwhile)
                        self._st, self._tr = Storage(node), None

                trace.force_large(tr, attach)
                return self._storage.node.value
            v = _force(self)
        if type(v) is np.ndarray:  # an eager value: handed out read-only, as a leaf's is
            v.setflags(write=False)  # (a later write copies it first: see _small_write)
            return v
        if v is not None:  # a 0-d eager value (a NumPy scalar): a fresh array, the caller's
            return _scalar_array(v)  # own, as NumPy's np.asarray(scalar) is (no storage, no leaf)
        if not self._chain:  # the whole storage: computed already, or computed here
            node = self._storage.node
            if node.op != "buffer":
                engine.materialize([node])  # where the backend computes (the GPU's: fetched)
            return node.value
        engine.materialize([self._storage.node])
        node = self._node
        engine.materialize([node], host=True)  # a view of the computed base: NumPy's view
        return node.value

    def to_dask(self, chunks=None):
        """This array's computation as a `dask.array.Array` (nothing is computed now).

        Parameters
        ----------
        chunks : int, str, tuple or dict, optional
            Chunks for the NumPy inputs of the graph (default: the `chunks` option); inputs
            that came from `lazyarray.from_dask` keep theirs.

        Returns
        -------
        dask.array.Array
            Fused chunk tasks running lazyarray's kernels (see docs/dask.md).
        """
        return backends.get("dask").module.to_dask(self._node, chunks)

    def __array__(self, dtype=None, copy=None):
        v = self._val
        if v is not None and type(v) is not _ndarray and dtype is None:
            return _scalar_array(v)  # a 0-d eager value (a NumPy scalar): see `_value`
        tr = self._tr
        if tr is not None and dtype is None and not copy and tr[1][0].size < (
                TINY if not LOWERED[0] else _options().eager_limit):  # a tiny trace (hot)
            v = self._val = trace.force(tr)
            self._tr = None
            if type(v) is not _ndarray:  # a total (a NumPy scalar): a fresh 0-d array
                return _scalar_array(v)
            v.setflags(write=False)  # handed out read-only, as `_value` does (setflags:
            # half the cost of `flags.writeable = False`, which goes through a flags object)
            return v
        v = self._value()
        if dtype is not None and np.dtype(dtype) != v.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def __repr__(self) -> str:
        v = self._value()
        return repr(v[()]) if self._is_scalar() else repr(v)  # a scalar: `np.int64(10)`

    def __hash__(self) -> int:
        """A scalar hashes as NumPy's scalar of its value (a dict key, a set member); an
        array is unhashable, as NumPy's."""
        if not self._is_scalar():
            raise TypeError("unhashable type: 'numpy.ndarray'")
        return hash(self._value()[()])

    def __str__(self) -> str:
        return str(self._value())

    def __format__(self, spec: str) -> str:
        return format(self._value(), spec)

    def tolist(self):
        return self._value().tolist()

    def item(self, *args):
        return self._value().item(*args)

    def __bool__(self) -> bool:
        return bool(self._value())

    def __float__(self) -> float:
        return float(self._value())

    def __int__(self) -> int:
        return int(self._value())

    def __complex__(self) -> complex:
        return complex(self._value())

    def __index__(self) -> int:
        return operator.index(self._value())

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        if self.ndim == 1:
            return iter(self._value())
        return (self[i] for i in range(self.shape[0]))

    def __reduce__(self):
        return (_rebuild, (np.array(self._value()),))

    def __copy__(self) -> Array:
        return self.copy()

    def __deepcopy__(self, memo) -> Array:
        return self.copy()

    # ---- indexing ----------------------------------------------------------------------
    def __getitem__(self, key) -> Array:
        t = type(key)
        if t is slice:
            return self._slice_view((key, Ellipsis))
        how = _slicing(key) if t is tuple and key else 0
        if how > 0:
            return self._slice_view(_view_key(key, how))
        if t is int or how:  # one element of a computed array: the eager tier
            v = self._val
            if v is None:
                v = small_value(self) if self._chain else computed_value(self)
            if v is not None and (v.ndim == 1 if t is int else len(key) == v.ndim) \
                    and _options().eager_limit:  # (any size: one element is read)
                return value_array(v[key])  # (a NumPy scalar)
            if t is int and v is not None and v.ndim > 1 and self._tr is None:
                return self._slice_view(_view_key(key))  # a row (`z[t]` in a time loop)
        if _is_basic(key):
            keys = key if isinstance(key, tuple) else (key,)
            if len(keys) == self.ndim and not any(
                    k is None or k is Ellipsis or isinstance(k, slice) for k in keys):
                # one element: NumPy returns a scalar, i.e. a copy (kept lazy here, 0-d)
                if self._tiny_and_computed():
                    return Array(buffer(np.array(self._value()[key])))
                return Array(build.getitem(self._node, _normalize_key(key)))
            key = _normalize_key(key)  # (NumPy's indexing of the proxy checks the key)
            return self._view(build.getitem, (key,), self._layout()[key], checked=True)
        _check_index(key)
        gkey = _gather_key(key)
        if gkey is None:  # a boolean scalar in the key (NumPy adds a dimension): NumPy does it
            return numpy_fallback(lambda a, k: a[k], self, key)
        if not any(isinstance(k, (Node, np.ndarray)) for k in gkey):  # 0-d integer arrays
            return self[gkey]
        if self._tiny_and_computed() and not any(isinstance(k, Node) and k.op != "buffer"
                                                 for k in gkey):
            # the eager tier: NumPy's own indexing of a tiny, computed array
            stats.bump("eager_ops")
            np_key = tuple(k.value if isinstance(k, Node) else k for k in gkey)
            return Array(buffer(np.array(self._value()[np_key])))
        v = self._mid_gather_value(gkey)
        if v is not None:  # NumPy's gather from a computed array below MID_EAGER_MAX
            stats.bump("eager_ops")
            return Array(buffer(v[tuple(k.value if isinstance(k, Node) else k for k in gkey)]))
        node = build.advanced_getitem(self._node, gkey)
        if 0 in node.shape and any(isinstance(k, Node) and not k.realized for k in gkey):
            # an empty result reads nothing, so the gather would check no lazily computed
            # index; NumPy checks every index unless their broadcast is empty: compute them
            gkey = tuple(buffer(np.array(Array(k))) if isinstance(k, Node) and not k.realized
                         else k for k in gkey)
            node = build.advanced_getitem(self._node, gkey)
        return ordered(Array(node), _gather_order(self._layout(), node))

    def _slice_view(self, key: tuple) -> Array:
        """The view `self[key]` for a key of Python ints and slices ending in Ellipsis, at
        least one slice or the Ellipsis left to select (`_view`, inlined: stencils, row and
        column loops); NumPy's indexing of the layout proxy checks the key."""
        st = self._st
        if st is None:
            st = self._storage
        proxy = self._proxy
        if proxy is None:
            proxy = st._fake
            if proxy is None:
                proxy = st.fake()
        proxy = proxy[key]  # (NumPy checks the key)
        v = new_array(Array)
        v._st, v._chain, v._proxy = st, (*self._chain, (_GETITEM, (key,))), proxy
        v._base = self if self._base is None else self._base
        v._val = v._vnode = v._tr = None
        return v

    def _mid_gather_value(self, gkey: tuple) -> np.ndarray | None:
        """This array's value when indexing it by `gkey` is NumPy's gather at once: a computed
        whole array below MID_EAGER_MAX elements, indexed by computed integer arrays below it
        (a boolean mask stays lazy: its compaction on both threads is faster at 10^5);
        else None. (At 10^5 NumPy's x[idx] took 125 us, the lazy gather 227.)"""
        if self._chain or _options().eager_limit < TINY or _options().backend == "cuda":
            return None
        v = computed_value(self)
        if v is None or v.size >= MID_EAGER_MAX:
            return None
        for k in gkey:
            k = k.value if isinstance(k, Node) and k.op == "buffer" else k
            if isinstance(k, Node) or isinstance(k, np.ndarray) and (
                    k.dtype.kind not in "iu" or k.size >= MID_EAGER_MAX):
                return None
        return v

    def __setitem__(self, key, value) -> None:
        """a[key] = value: NumPy's broadcasting and (unsafe) casting, seen by every view."""
        if type(key) in _FAST_KEYS and not self._chain and self._val is None \
                and self._fast_region_write(key, value):
            return None
        if not self._chain and self._is_scalar():
            raise TypeError(f"'{type(self.dtype.type(0)).__name__}' object does not support "
                            "item assignment")
        if type(value) is Array and value._st is self._st and self._st is not None \
                and _reads_back(self, key, value._chain) and self._layout().flags.writeable:
            return None  # `a[k] = a[k]`, as `a[k] += x` ends: NumPy writes what is there
        if type(value) is Array and _scalar_check_needed(value, self.dtype):
            value = value._value()[()]  # a NumPy scalar, computed now if pending: NumPy's
            # conversion raises at this line (NaN into ints ValueError, inf or an int out of
            # range OverflowError), as for `a[0] /= a[0]`
        for fn, _ in self._chain:
            if fn in _PARTS:
                return self._write_part(key, value)
        if (self._val is not None or not self._chain) and self._small_write(key, value):
            return None
        if self._val is None and self._region_write(key, value):
            return None
        layout = self._layout()
        if not layout.flags.writeable:
            raise ValueError("assignment destination is read-only")
        if not _is_basic(key):
            _check_index(key)
            return self._write_eagerly(key, value)
        target = layout[_normalize_key(key)]
        if target.size == 0:  # nothing written; a scalar value is still converted (its errors)
            if not isinstance(value, Array):
                as_value_node(value, self.dtype)
            return None
        if self._tiny_and_computed() and (not isinstance(value, Array) or (
                value._tiny_and_computed() and not value._chain)):
            # the eager tier: NumPy's own setitem on a copy of a tiny, computed storage
            return self._write_eagerly(key, value)
        val = value._node if isinstance(value, Array) else as_value_node(value, self.dtype)
        if val.dtype.kind not in "biufc":
            raise TypeError(f"cannot assign {val.dtype} to {self.dtype}")
        try:
            np.broadcast_shapes(val.shape, target.shape)
            if np.broadcast_shapes(val.shape, target.shape) != target.shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"could not broadcast input array from shape {val.shape} into "
                             f"shape {target.shape}") from None
        with np.errstate(all="ignore"):
            val = build.broadcast_to(build.convert(val, self.dtype), target.shape)
        self._write(target, val)

    def _small_write(self, key, value) -> bool:
        """The eager tier's write: NumPy's own setitem, in place, on a tiny computed whole
        array whose value nothing else can see. False (nothing done) when that does not hold.

        The value is dead (XLA's donation rule, read off refcounts) when it is an eager value
        with no storage yet (so no view, graph or NumPy caller has it), or when only this
        storage refers to its buffer node and only the node to its array.
        """
        if (self._val if self._val is not None else small_value(self)) is None:
            return False
        value = _written_value(value)
        if value is None:
            return False
        key = _as_numpy_key(key)
        v = self._val
        if v is not None:
            # a 0-d NumPy scalar: as an array, to write into; a value handed out (read-only,
            # see _value): a copy, so what the caller holds keeps its value
            if type(v) is not np.ndarray or not v.flags.writeable:
                v = self._val = np.array(v)
        else:
            v = self._dead_buffer()
            if v is None:
                return False
        v[key] = value
        return True

    def _dead_buffer(self) -> np.ndarray | None:
        """The buffer of this whole computed array when its version is dead (nothing but
        this array's storage can see it: `version_is_dead`), made writeable to be written in
        place; else None."""
        st = self._st
        if st is None or self._chain or (st._fake is not None and not st._fake.flags.writeable) \
                or (self._proxy is not None and not self._proxy.flags.writeable):
            return None
        node = st.node
        v = node._host
        if v is None or not version_is_dead(node, v):
            return None
        if not v.flags.writeable:  # read-only again once `Node.value` hands it out
            v.flags.writeable = True
        return v

    def _fast_region_write(self, key, value) -> bool:
        """`_region_write`'s common case, tested first and briefly (a loop's `u[i, 1:-1] =
        row`, `x[i, j] = v`): a whole computed array of the host whose version nothing else
        observes, a key of Python ints and slices, a computed value, a region of fewer elements
        than the eager tier's size: NumPy's setitem into the buffer, with NumPy's errors.
        False (nothing done) for anything else, which the other paths take."""
        t = type(value)
        if t is Array:
            value = value._val  # (an eager value: an ndarray or a NumPy scalar)
            if value is None:
                return False
        elif t is not float and t is not int and t is not _ndarray:
            return False
        st = self._st
        if st is None or st.perm is not None or st.scalar \
                or type(key) is tuple and not _slicing(key):
            return False
        fake, proxy = st._fake, self._proxy
        if fake is not None and not fake.flags.writeable \
                or proxy is not None and not proxy.flags.writeable:
            return False
        v = self._dead_host_buffer(st)
        if v is None:
            return False
        region = v[key]  # (NumPy checks the key)
        if not 0 < (region.size if type(region) is _ndarray else 1) < _options().eager_limit:
            return False
        v[key] = value
        stats.eager_write()
        return True

    def _slice_buffer(self) -> np.ndarray | None:
        """`_region_buffer`'s common case, tested first and briefly (the in-place operator of
        a loop's `c[i, :i + 1] += x`): a slicing view, writable, of fewer elements than the
        eager tier's size, of a whole computed array of the host whose version nothing else
        observes; its elements in the buffer as a writable NumPy view. None for anything
        else, which the other paths take."""
        st, proxy = self._st, self._proxy
        fn, args = self._chain[0]
        if st is None or fn is not _GETITEM or st.perm is not None \
                or not proxy.flags.writeable or not 0 < proxy.size < _options().eager_limit:
            return None
        v = self._dead_host_buffer(st)
        return None if v is None else v[args[0]]

    def _dead_host_buffer(self, st: Storage) -> np.ndarray | None:
        """The buffer of `st`'s current version, made writeable, when it may be written in
        place now (the short paths above): a host backend, no `jit` tracing, the version
        computed and observed by nothing else (`version_is_dead`; this array's own memo of
        the version, no reader, dropped first). Else None."""
        if _options().backend not in _HOST_BACKENDS or _JIT_TRACING() is not None:
            return None
        node = st.node
        v = node._host
        if v is None or node.op != "buffer":
            return None
        self._vnode = None
        if not version_is_dead(node, v):
            return None
        if not v.flags.writeable:  # (read-only again once `Node.value` hands it out)
            v.flags.writeable = True
        return v

    def _region_write(self, key, value) -> bool:
        """The eager tier's write into a small region of a computed array of any size:
        NumPy's own setitem into the array's buffer (`_region_buffer`). A loop that updates
        one row segment or element per iteration (`c[i, :i + 1] = ...`) then costs NumPy's
        write, not a pending update of the whole buffer. False (nothing done) when that does
        not hold."""
        st = self._st
        if st is None:
            return False
        if not _is_basic(key):
            return False
        layout = self._layout()
        if not layout.flags.writeable:
            return False
        nkey = _normalize_key(key)
        target = layout[nkey]
        if type(value) is Array and value._st is st and value._val is None and (
                value._chain == (*self._chain, (_GETITEM, (nkey,)))  # (the usual: same key)
                or _same_place(value._layout(), target)):
            return True  # `a[k] = a[k]`, as `a[k] *= 2` ends: NumPy writes what is there
        if target.size >= _options().eager_limit or target.size == 0 or not _may_hold(st):
            return False
        value = _written_value(value)
        if value is None:
            return False
        out = self._region_buffer(target, nkey)
        if out is None:
            return False
        out[...] = value
        stats.eager_write()
        return True

    def _region_buffer(self, target: np.ndarray, key=None) -> np.ndarray | None:
        """The elements `target` (a view of the storage's fake base, fewer than the eager
        tier's size) select in the storage's buffer, as a writable NumPy view, when the
        storage is computed (a constant fill gets its buffer now, as NumPy's creation would
        have) and nothing else observes its current version: no pending expression, queued
        evaluation or NumPy array handed out reads it (`version_is_dead`). Else None.
        `key`: the normalized key that selected `target` from this array's view (a view
        by slicing only is then indexed as NumPy would, without reading addresses)."""
        st = self._st
        if st.perm is not None or _JIT_TRACING() is not None \
                or _options().backend not in _HOST_BACKENDS \
                or st.node._host is None and not _filled_now(st):
            return None
        self._vnode = None  # (this view's own memo of the version is no reader of it)
        node = st.node
        v = node._host
        if v is None or node.op != "buffer":
            return None
        if not version_is_dead(node, v):
            if not version_is_private(node, v) or v.flags.writeable and v.flags.owndata:
                return None
            # a version nothing else reads, held as a view it may not write (a constant
            # fill evaluated as a broadcast by a pending reader of it): a private copy, once
            v = np.array(v, order="C")
            del node
            st.node, st.leaf_trace = leaf(v), None
            node = st.node
        if not v.flags.writeable:  # (read-only again once `Node.value` hands it out)
            v.flags.writeable = True
        if key is not None:  # slicing views: NumPy's own indexing of the buffer, as `small_view`
            for fn, args in self._chain:
                if fn is not _GETITEM:
                    break
                v = v[args[0]]
            else:
                return v if key is _WHOLE_VIEW else v[key]
            v = node._host
        # (the buffer is C-ordered like the fake base: the target's place in it is the same)
        at = target.__array_interface__["data"][0] - st.fake().__array_interface__["data"][0]
        return _ndarray(target.shape, target.dtype, v, at, target.strides)

    def _tiny_and_computed(self) -> bool:
        """Is the storage computed and below the eager tier's size (see `tiny_values`)?"""
        node = self._storage.node
        return (node.op == "buffer" and node.on_host
                and node.value.size < config.get().eager_limit)

    def _write(self, target: np.ndarray, value: Node) -> None:
        """Replace the storage's node with an `update` of its old version over `target`."""
        storage = self._storage
        offset, strides = storage.region(target)
        base = storage.node
        tracing = engine.TRACING.get()
        if tracing is not None:  # jit: a write must stay inside the traced function
            tracing.written.append(weakref.ref(storage))
        storage.leaf_trace = None  # (it refers to the old version's buffer)
        # pending now: computed with an evaluation sharing its work (remembered at every
        # write: a loop's temporaries would push an array written once out of the ring)
        live.remember(storage)
        if target.shape == base.shape and offset == 0 and target.strides == storage.fake().strides:
            storage.node = value  # the whole base, in order: the new value is the new version
            return
        perm = storage.perm
        if perm is not None:  # the region is in NumPy's memory order: the update's too
            base = build.transpose(base, perm)
        node = Node("update", (base, value), base.shape, base.dtype,
                    (("offset", offset), ("strides", strides)))
        storage.node = node if perm is None else build.transpose(node, _inverse(perm))
        if storage.node.depth > MAX_DEPTH:  # a long loop of writes: cut the pending graph
            engine.materialize([storage.node])

    def _write_part(self, key, value) -> None:
        """A write through `.real` / `.imag` of a complex array (or a view of those): NumPy's
        own write into those parts of (a copy of) the complex storage's current version,
        seen by every view."""
        value = np.asarray(value) if isinstance(value, Array) else value
        key = _as_numpy_key(key)

        def write(v):
            v[key] = value

        self._mutate_eagerly(write)

    def _write_eagerly(self, key, value) -> None:
        """Advanced-index writes: NumPy's own setitem on a copy of the current version."""
        value = np.asarray(value) if isinstance(value, Array) else value
        key = _as_numpy_key(key)

        def write(view):
            view[key] = value

        self._mutate_eagerly(write)

    def _mutate_eagerly(self, mutate) -> None:
        """Run a NumPy mutation `mutate(view)` on a copy of the storage's current version,
        through this array's exact view of it; the copy becomes the new version."""
        if not self._layout().flags.writeable:
            raise ValueError("assignment destination is read-only")
        storage = self._storage
        engine.materialize([storage.node])
        storage.leaf_trace = None  # (before counting the references to its buffer)
        node = storage.node
        perm = storage.perm
        new = node.value if perm is None else _laid_out(storage, node)
        inplace = version_is_dead(node, new)  # (the one rule: runtime/versions.py)
        if inplace:
            new.flags.writeable = True
        else:
            new = np.array(new, copy=True, order="C" if perm is None else "K")
        flat = (new if perm is None else new.transpose(perm)).reshape(-1)  # memory order
        layout = self._layout()
        if layout.dtype == new.dtype:
            offset, strides = storage.region(layout)
            view = strided_view(flat, offset, self.shape, strides)
        else:  # a view of the real or imaginary parts: its bytes inside the complex buffer
            start = layout.__array_interface__["data"][0] - \
                storage.fake().__array_interface__["data"][0]
            view = np.ndarray(layout.shape, layout.dtype, buffer=flat.view(np.uint8),
                              offset=start if layout.size else 0, strides=layout.strides)
        try:
            mutate(view)
        finally:
            if inplace:
                new.setflags(write=False)
        if not inplace:
            storage.node = buffer(new)

    def _assign(self, result: Array, casting: str = "same_kind") -> None:
        """Write `result` over this whole array (out= and in-place operators), NumPy casting."""
        if self._is_scalar():
            raise TypeError("return arrays must be of ArrayType")
        if not self._layout().flags.writeable:  # (NumPy checks this before the cast)
            raise ValueError("output array is read-only")
        if not np.can_cast(result.dtype, self.dtype, casting=casting):
            raise TypeError(f"Cannot cast ufunc output from {result.dtype!r} to "
                            f"{self.dtype!r} with casting rule {casting!r}")
        if np.broadcast_shapes(result.shape, self.shape) != self.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't "
                             f"match the broadcast shape {result.shape}")
        if result.dtype != self.dtype and result._is_scalar():
            result = result.astype(self.dtype)  # (a cast, as NumPy's out=: not setitem's checks)
        self[...] = result

    # ---- conversions and shape methods -------------------------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True) -> Array:
        dtype = np.dtype(dtype)
        if not np.can_cast(self.dtype, dtype, casting=casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dtype!r} according "
                            f"to the rule {casting!r}")
        if dtype.kind not in "biufc":
            return numpy_fallback(lambda a: a.astype(dtype), self)
        if not copy and dtype == self.dtype and not self._is_scalar() and (
                order in "KA" or self._layout().flags[
                    "C_CONTIGUOUS" if order == "C" else "F_CONTIGUOUS"]):
            return self  # NumPy's same object: a later write to either is seen by both
        if _options().backend != "cuda":
            v = small_value(self)
            if v is None and _options().eager_limit >= TINY:  # (a mid-sized computed array:
                v = mid_value(self)  # NumPy's cast, at once, too; `_mid_values`)
            if v is not None:  # the eager tier (astype copies: nothing shared)
                return self._same_kind(eager_array(v.astype(dtype, order=order)))
        return self._same_kind(in_order(Array(build.convert(self._node, dtype)), order, (self,)))

    def copy(self, order="C") -> Array:
        v = small_value(self) if _options().backend != "cuda" else None
        if v is not None:  # the eager tier
            return self._same_kind(eager_array(v.copy(order=order)))
        return self._same_kind(in_order(Array(self._node), order, (self,)))

    def _same_kind(self, out: Array) -> Array:
        """`out` (a copy of this array) a NumPy scalar if this is one, else an array."""
        if not out.shape and out._is_scalar() != self._is_scalar():
            out._storage.scalar = not out._is_scalar()
        return out

    def reshape(self, *shape, order="C", copy=None) -> Array:
        """A view where NumPy gives one (same strides rule), else a copy."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        node = build.reshape(self._node, shape, order)  # validates
        if copy is not True:
            try:
                proxy = self._layout().reshape(node.shape, order=order, copy=False)
            except ValueError:
                if copy is False:
                    raise
            else:
                return self._view(build.reshape, (node.shape, order), proxy)
        return as_array(Array(node))

    def transpose(self, *axes) -> Array:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        axes = tuple(axes) if axes else None
        build.transpose(self._node, axes)  # validates with NumPy's errors
        return self._view(build.transpose, (axes,), self._layout().transpose(axes))

    def ravel(self, order="C") -> Array:
        """A view if the array is contiguous in `order`, else a copy (NumPy's rule). Order
        "K" reads the elements in memory order (axes by decreasing stride, directions kept),
        "A" in F order for an F- but not C-contiguous array."""
        layout = self._layout()
        if order in ("K", "A", None):
            if order == "K" and self.ndim > 1:
                perm = memory_order(((layout.shape, layout.strides),), layout.shape)
                if perm is not None:
                    return self.transpose(perm).ravel("C")
            order = "F" if order == "A" and layout.flags.f_contiguous and not \
                layout.flags.c_contiguous else "C"
        flags = layout.flags
        if (flags.f_contiguous if order == "F" else flags.c_contiguous):
            return self.reshape(-1, order="F" if order == "F" else "C")
        return as_array(Array(build.reshape(self._node, (-1,), "F" if order == "F" else "C")))

    def flatten(self, order="C") -> Array:
        if order in ("K", "A"):
            return self.ravel(order).copy()
        return as_array(Array(build.reshape(self._node, (-1,), order)))

    def fill(self, value) -> None:
        self[...] = value

    # ---- reductions (see _reductions.py) -------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return _modules[_RED].sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return _modules[_RED].prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return _modules[_RED].mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        return _modules[_RED].var(self, axis=axis, dtype=dtype, out=out, ddof=ddof,
                                  keepdims=keepdims, **kw)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        return _modules[_RED].std(self, axis=axis, dtype=dtype, out=out, ddof=ddof,
                                  keepdims=keepdims, **kw)

    def max(self, axis=None, out=None, keepdims=False, **kw):
        return _modules[_RED].max(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def min(self, axis=None, out=None, keepdims=False, **kw):
        return _modules[_RED].min(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def any(self, axis=None, out=None, keepdims=False, **kw):
        return _modules[_RED].any(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def all(self, axis=None, out=None, keepdims=False, **kw):
        return _modules[_RED].all(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def argmax(self, axis=None, out=None, keepdims=False):
        return _modules[_RED].argmax(self, axis=axis, out=out, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None, out=None):
        return _modules[_RED].cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return _modules[_RED].cumprod(self, axis=axis, dtype=dtype, out=out)

    def argmin(self, axis=None, out=None, keepdims=False):
        return _modules[_RED].argmin(self, axis=axis, out=out, keepdims=keepdims)

    def clip(self, min=None, max=None, out=None, **kw):
        return _modules[_FUNCS].clip(self, min, max, out=out, **kw)

    def round(self, decimals=0, out=None):
        return _modules[_FUNCS].round(self, decimals, out=out)

    def conj(self) -> Array:
        if self.dtype.kind != "c":  # NumPy's method returns a real array itself
            return self
        return UFUNCS["conjugate"](self)

    conjugate = conj

    # ---- NumPy protocols ---------------------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions called on lazy arrays run lazyarray's version (or the counted
        fallback), so code that imports real NumPy keeps lazy arrays lazy."""
        if not all(issubclass(t, (Array, np.ndarray)) for t in types):
            return NotImplemented
        if func is np.result_type:  # (NEP 50: an array's dtype is all it reads; nothing runs)
            return func(*(a.dtype if type(a) is Array else a for a in args), **kwargs)
        impl = _native(func)
        if impl is None:
            return numpy_fallback(func, *args, **kwargs)
        try:
            return impl(*args, **kwargs)
        except TypeError as exc:
            if "unexpected keyword argument" not in str(exc):
                raise
            return numpy_fallback(func, *args, **kwargs)
    def __array_ufunc__(self, uf, method, *inputs, **kwargs):
        mine = UFUNCS.get(uf.__name__)
        if mine is None:
            return NotImplemented
        if method == "__call__":
            return mine(*inputs, **kwargs)
        if method == "reduce":
            return mine.reduce(*inputs, **kwargs)
        if method == "outer":
            return mine.outer(*inputs, **kwargs)
        return numpy_fallback(getattr(uf, method), *inputs, **kwargs)


class _Flags:
    """ndarray.flags: read from the layout proxy; `writeable` (and `flags["W"]`) can be
    set, with NumPy's rules (`Array.setflags`)."""

    __slots__ = ("_a",)
    _NAMES = {"C": "c_contiguous", "C_CONTIGUOUS": "c_contiguous", "CONTIGUOUS":
              "c_contiguous", "F": "f_contiguous", "F_CONTIGUOUS": "f_contiguous",
              "FORTRAN": "f_contiguous", "W": "writeable", "WRITEABLE": "writeable",
              "O": "owndata", "OWNDATA": "owndata", "A": "aligned", "ALIGNED": "aligned",
              "X": "writebackifcopy", "WRITEBACKIFCOPY": "writebackifcopy",
              "FNC": "fnc", "FORC": "forc", "BEHAVED": "behaved", "B": "behaved",
              "CARRAY": "carray", "CA": "carray", "FARRAY": "farray", "FA": "farray"}

    def __init__(self, a: Array):
        object.__setattr__(self, "_a", a)

    @property
    def writeable(self) -> bool:
        a = self._a
        return not a._is_scalar() and bool(a._layout().flags.writeable)

    @writeable.setter
    def writeable(self, value) -> None:
        self._a.setflags(write=bool(value))

    c_contiguous = property(lambda self: bool(self._a._layout().flags.c_contiguous))
    f_contiguous = property(lambda self: bool(self._a._layout().flags.f_contiguous))
    owndata = property(lambda self: self._a._base is None)
    aligned = property(lambda self: True)
    writebackifcopy = property(lambda self: False)
    fnc = property(lambda self: self.f_contiguous and not self.c_contiguous)
    forc = property(lambda self: self.f_contiguous or self.c_contiguous)
    behaved = property(lambda self: self.writeable)
    carray = property(lambda self: self.writeable and self.c_contiguous)
    farray = property(lambda self: self.writeable and self.fnc)

    def __setattr__(self, k, v):
        if k != "writeable":
            raise AttributeError(f"cannot set flag {k!r} of a lazyarray array")
        _Flags.writeable.fset(self, v)

    def __setitem__(self, k, v):
        self.__setattr__(self._NAMES.get(k, k), v)

    def __getitem__(self, k):
        try:
            return getattr(self, self._NAMES[k])
        except KeyError:
            raise KeyError(f"Unknown flag {k!r}") from None

    def __repr__(self) -> str:
        return "\n".join(f"  {n.upper()} : {getattr(self, n)}" for n in (
            "c_contiguous", "f_contiguous", "owndata", "writeable", "aligned",
            "writebackifcopy"))


def device_name(device) -> str:
    """"cpu" or "cuda" for a device argument (None: the host)."""
    name = "cpu" if device is None else str(device).split(":")[0].lower()
    if name not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {device!r}; expected 'cpu' or 'cuda'")
    return name


def as_value_node(value, dtype: np.dtype) -> Node:
    """A right-hand side of an assignment as a node (a NumPy/Python value; copied)."""
    if not isinstance(value, np.ndarray) and np.ndim(value) == 0 and dtype.kind in "biufc":
        # a Python or NumPy scalar: NumPy's own conversion into one element of the target,
        # with its errors (OverflowError for an int out of range, TypeError for complex into
        # a real dtype, ValueError for NaN into an integer one)
        cell = np.empty((), dtype)
        with np.errstate(all="ignore"):
            cell[()] = value
        return constant(cell, dtype)
    arr = np.asarray(value)
    if arr.ndim == 0 and arr.dtype.kind in "biufc":
        with np.errstate(all="ignore"):
            return constant(arr, arr.dtype)
    if arr.dtype.kind not in "biufc":
        arr = np.asarray(value, dtype=dtype)
    return buffer(pool.copy(arr) if arr.flags.c_contiguous else np.array(arr, copy=True))


def _reads_back(a: Array, key, chain: tuple) -> bool:
    """Is `chain` (a view's) `a`'s chain and then the slicing view `a[key]` (`_slice_view`),
    so that writing that view into `a[key]` writes what is there?"""
    n = len(a._chain)
    if len(chain) != n + 1 or chain[n][0] is not _GETITEM or chain[:n] != a._chain:
        return False
    t = type(key)
    if t is tuple:
        how = _slicing(key)
        if how <= 0:
            return False
    elif t is int or t is slice:
        how = 1
    else:  # (a mask or an index array: never compared, its == is elementwise)
        return False
    return chain[n][1][0] == _view_key(key, how)


def _view_key(key, how: int = 1) -> tuple:
    """The key of the slicing view `a[key]` in its chain (`Array._slice_view`): an int, a
    slice, or a tuple of them (`how`: `_slicing` of it; 2: it holds its Ellipsis), ending in
    Ellipsis."""
    if type(key) is not tuple:
        return key, Ellipsis
    return key if how == 2 else (*key, Ellipsis)


def _normalize_key(key):
    """Basic index as a tuple of ints, slices, None and Ellipsis (NumPy ints as Python ints),
    with an Ellipsis, so that NumPy indexing a proxy always returns a view (0-d included)."""
    t = type(key)
    if t is tuple and (how := _slicing(key)):  # Python ints and slices: as a view's key
        return _view_key(key, how)
    if t is int or t is slice:
        return key, Ellipsis
    keys = key if isinstance(key, tuple) else (key,)
    out, ellipsis = [], False
    for k in keys:
        if k is Ellipsis:
            ellipsis = True
        elif k is not None and type(k) is not slice:
            k = operator.index(k)
        out.append(k)
    if not ellipsis:
        out.append(Ellipsis)
    return tuple(out)


def _as_numpy_key(key):
    """`key` with its Arrays as NumPy arrays (the key itself when it holds none)."""
    if isinstance(key, tuple):
        for k in key:
            if isinstance(k, Array):
                return tuple(np.asarray(k) if isinstance(k, Array) else k for k in key)
        return key
    return np.asarray(key) if isinstance(key, Array) else key


def shares_memory(a, b, max_work=None) -> bool:
    """Whether `a` and `b` share memory (exactly, as numpy.shares_memory)."""
    if not (isinstance(a, Array) and isinstance(b, Array)) or a._storage is not b._storage:
        return False
    return bool(np.shares_memory(a._layout(), b._layout()))


def may_share_memory(a, b, max_work=None) -> bool:
    """Whether `a` and `b` might share memory (bounds check, as numpy.may_share_memory)."""
    if not (isinstance(a, Array) and isinstance(b, Array)) or a._storage is not b._storage:
        return False
    return bool(np.may_share_memory(a._layout(), b._layout()))


def _native(func):
    """lazyarray's own implementation of a NumPy function, if it has one."""
    import importlib

    module = (func.__module__ or "numpy").replace("numpy", "lazyarray", 1)
    try:
        ns = importlib.import_module(module.split("._")[0])  # (the submodule of NumPy's
        # function is known only here: numpy.linalg's function -> lazyarray.linalg)
    except ImportError:
        return None
    impl = vars(ns).get(func.__name__)
    if impl is func:  # NumPy's own function, re-exported: calling it would come back here
        return None
    return impl if callable(impl) and not isinstance(impl, functools.partial) else None


def _real_part(node: Node) -> Node:
    return build.convert(node, np.dtype(f"f{node.dtype.itemsize // 2}"))


def _imag_part(node: Node) -> Node:
    return build.elementwise("imag", node)


def _bitcast(node: Node, dtype: str, shape: tuple) -> Node:

    return Node("custom-call", (node,), shape, np.dtype(dtype),
                attrs_for("bitcast", {"dtype": dtype}))


# view ops whose writes are NumPy's own, into the bytes of a copy of the storage's value
_PARTS = (_real_part, _imag_part, _bitcast)


def as_array(a: Array) -> Array:
    """`a`, a 0-d *array* if it is 0-d (asarray, zeros(()), a view): not a NumPy scalar
    (see `Array._is_scalar`)."""
    if not a.shape:
        a._storage.scalar = False
    return a


def _read_only(a: Array) -> Array:
    a.setflags(write=False)
    return a


def _rebuild(value: np.ndarray) -> Array:
    return Array(buffer(value))


_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
              "integer or boolean arrays are valid indices")


def _check_index(key) -> None:
    """NumPy's IndexError for a key that can never index, before anything is computed."""
    for k in key if isinstance(key, tuple) else (key,):
        if k is None or k is Ellipsis or isinstance(k, (slice, bool, np.bool_, int, np.integer)):
            continue
        if isinstance(k, (Array, np.ndarray)):
            if k.dtype.kind not in "biu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            continue
        if isinstance(k, (list, tuple)):
            kinds = {np.asarray(k).dtype.kind} if k else {"i"}
            if kinds - set("biu"):
                raise IndexError(_BAD_INDEX)
            continue
        try:
            operator.index(k)
        except TypeError:
            raise IndexError(_BAD_INDEX) from None


def _gather_key(key):
    """An advanced key for `build.advanced_getitem`: index arrays as integer Nodes (computed
    ones as buffers, so they are bounds-checked now), boolean masks as computed NumPy arrays
    (their count is data-dependent: the mask is materialized). None for a key NumPy must run
    (a boolean scalar, which adds a dimension)."""
    out = []
    for k in key if isinstance(key, tuple) else (key,):
        if k is None or k is Ellipsis or isinstance(k, slice):
            out.append(k)
        elif isinstance(k, (bool, np.bool_)):
            return None
        elif isinstance(k, Array):
            if k.ndim == 0 and k.dtype.kind == "b":
                return None
            if k.dtype.kind != "b" and not k._chain and k._storage.node.realized:
                out.append(k._storage.node)  # computed and read-only: no copy
            elif k.dtype.kind == "b" or k._storage.node.realized:
                v = np.asarray(k)
                out.append(v if v.dtype.kind == "b" else buffer(np.array(v)))
            else:
                out.append(k._node)
        elif isinstance(k, (int, np.integer)):
            out.append(operator.index(k))
        elif isinstance(k, (np.ndarray, list, tuple)):
            v = np.array(k, copy=True) if len(np.shape(k)) or np.size(k) else np.array(k)
            if v.size == 0 and v.dtype.kind not in "biu":
                v = v.astype(np.intp)
            if v.dtype.kind == "b":
                if v.ndim == 0:
                    return None
                out.append(v)
            elif v.ndim == 0:
                out.append(operator.index(v[()]))
            else:
                out.append(buffer(v))
        else:
            out.append(operator.index(k))
    return tuple(out)


def _is_basic(key) -> bool:
    t = type(key)
    if t is int or t is slice or t is tuple and _slicing(key):  # (the common keys, at once)
        return True
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, (bool, np.bool_)):
            return False
        if isinstance(k, (int, np.integer)):
            continue
        if isinstance(k, (Array, np.ndarray, list)):
            return False
        try:
            operator.index(k)
        except TypeError:
            return False
    return True


_PAIR_OPERANDS = frozenset({Array, float, int})  # what `ufunc._pair` takes besides an Array

# operators: one line each, over the namespace's ufuncs
_OPERATORS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift",
}  # fmt: skip
for _py, _uf in _OPERATORS.items():
    _op = getattr(operator, _py + "_" if _py in ("and", "or") else _py)
    setattr(Array, f"__{_py}__", _binary(_uf, _op))
    setattr(Array, f"__r{_py}__", _binary(_uf, _op, reflected=True))
    setattr(Array, f"__i{_py}__", _inplace(_uf))
for _py, _uf in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                 "eq": "equal", "ne": "not_equal"}.items():
    setattr(Array, f"__{_py}__", _binary(_uf, getattr(operator, _py)))
def _pow(self, other):
    """x ** 2, 0.5, -1 and 1 on inexact arrays use square, sqrt, reciprocal and positive, as
    ndarray.__pow__ does (x ** -1: 6.2 -> 0.4 ms at 10^6, NumPy 1.1)."""
    t = type(other)
    if t is float or t is int:
        tr = self._tr
        if tr is not None and (other == 2 or other == 0.5):  # the trace goes on
            f = UFUNCS["square" if other == 2 else "sqrt"]
            pid = f._after.get(tr[0])  # (ufunc.__call__'s hot path, without its checks)
            return f(self) if pid is None or EXT_GET() is not tr[5] \
                else _trace_array((pid, tr[1], tr[2], tr[3], tr[4], tr[5]))
        v = self._val
        if v is None or LOWERED[0]:
            v = small_value(self)
        if v is not None:  # the eager tier: NumPy's operator, with its own square/sqrt paths
            eager_op()
            if type(v) is _ndarray and not v.ndim and self._is_scalar():
                v = v[()]  # (a NumPy scalar's power: no fast paths, np.True_ ** 2 is int64)
            return eager_array(v ** other)
    if not self.shape and self._is_scalar():  # NumPy's scalars take no fast path
        return UFUNCS["power"](self, other)
    if t is int and other == 2 and self.dtype.kind == "b":  # ndarray.__pow__'s square: int8
        return UFUNCS["square"](self)
    fast = _POW_FAST.get(other) if isinstance(other, (int, float, np.integer, np.floating)) \
        and not isinstance(other, bool) and self.dtype.kind in "fc" else None
    if fast is not None and self.dtype.kind == "f":
        rt = self.dtype if t is int or t is float else np.result_type(self.dtype, other)
        return UFUNCS[fast](self if rt == self.dtype else self.astype(rt))
    if fast is not None and (t is int or fast == "sqrt" and t is float):
        return UFUNCS[fast](self)
    return UFUNCS["power"](self, other)


# ndarray.__pow__'s scalar exponents that skip pow (their bits differ from pow's: NumPy's
# x**2 is x*x, x**-1 is 1/x); on complex arrays only a Python int does, or the float 0.5
_POW_FAST = {2: "square", 0.5: "sqrt", -1: "reciprocal", 1: "positive"}


Array.__pow__ = _pow
_TRACE_OPERANDS = (float, int, Array)  # operand types `_large_start` may take (as `_record`)
Array.__neg__ = lambda self: UFUNCS["negative"](self)
Array.__pos__ = lambda self: UFUNCS["positive"](self)
Array.__abs__ = lambda self: UFUNCS["absolute"](self)
Array.__invert__ = lambda self: UFUNCS["invert"](self)
Array.__divmod__ = lambda self, o: UFUNCS["divmod"](self, o)
Array.__rdivmod__ = lambda self, o: UFUNCS["divmod"](o, self)


# ---- the rest of ndarray's methods: NumPy's on the value (the namespace's: _methods.py) ----
def _resize(self, new_shape, *more, refcheck=True) -> None:
    """Change shape and size in place, filling with zeros (ndarray.resize); only an array
    that owns its data, as in NumPy. Views made earlier keep the old storage."""
    if self._base is not None:
        raise ValueError("cannot resize this array: it does not own its data")
    shape = (new_shape, *more) if more else new_shape
    value = np.array(self._value(), copy=True)
    value.resize(shape, refcheck=False)
    self._storage, self._proxy = Storage(buffer(value)), None


class _FlatIter:
    """``a.flat``: a 1-d view in C order for reading, writing and iterating."""

    def __init__(self, a: Array):
        self.base = a

    def _flat(self) -> Array:
        return self.base.reshape(-1) if self.base.flags.c_contiguous else self.base.ravel()

    def __getitem__(self, key):
        return self.base.ravel()[key]

    def __setitem__(self, key, value) -> None:
        a = self.base
        if a.flags.c_contiguous:
            a.reshape(-1)[key] = value
        else:
            flat = np.array(a._value(), copy=True).reshape(-1)
            flat[key] = value.__array__() if isinstance(value, Array) else value
            a[...] = flat.reshape(a.shape)

    def __iter__(self):
        return iter(self.base.ravel()._value())

    def __len__(self) -> int:
        return self.base.size

    def __array__(self, dtype=None, copy=None):
        return self.base.ravel().__array__(dtype, copy)

    def copy(self) -> Array:
        return self.base.flatten()


def _setflags(self, write=None, align=None, uic=None) -> None:
    """Only the write flag is meaningful here: False makes this array read-only; True is
    refused for an array that cannot be written (read-only views), as in NumPy."""
    layout = self._layout()
    if write is False:
        if self._proxy is None:
            self._proxy = layout = layout.view()
        layout.setflags(write=False)
    elif write is True and not layout.flags.writeable:
        root = self._base
        if self._is_scalar() or root is not None and not root._layout().flags.writeable:
            raise ValueError("cannot set WRITEABLE flag to True of this array")
        layout.flags.writeable = True  # NumPy's own rule decides (raises for broadcast views)


def _value_method(name: str, wrap_result: bool = False):
    def method(self, *args, **kwargs):
        res = getattr(self._value(), name)(*args, **kwargs)
        return _wrap_result(res) if wrap_result else res

    method.__name__ = name
    method.__doc__ = f"ndarray.{name} on the computed value."
    return method


Array.resize = _resize
Array.setflags = _setflags
Array.flat = property(_FlatIter, lambda self, v: _FlatIter(self).__setitem__(slice(None), v))
Array.strides = property(lambda self: self._layout().strides)
for _name in ("tobytes", "tofile", "dump", "dumps", "getfield"):
    setattr(Array, _name, _value_method(_name, wrap_result=_name == "getfield"))
Array.byteswap = lambda self, inplace=False: (
    numpy_fallback(lambda v: v.byteswap(), self) if not inplace else
    self._mutate_eagerly(lambda v: v.byteswap(inplace=True)) or self)
Array.setfield = lambda self, val, dtype, offset=0: self._mutate_eagerly(
    lambda v: v.setfield(np.asarray(val), dtype, offset))
Array.ctypes = property(lambda self: self._value().ctypes)
Array.data = property(lambda self: self._value().data)


# ---- the Array API standard's protocols ------------------------------------------------------
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Export the computed value through DLPack (CPU memory). The buffer is read-only: a
    versioned consumer is told so; a legacy one (no read-only flag) gets a copy, unless
    ``copy=False`` forbids it (then BufferError, as NumPy)."""
    if stream is not None:
        raise BufferError("lazyarray arrays live on the CPU: stream must be None")
    v = self._value()
    legacy = max_version is None or max_version[0] < 1
    if legacy and not v.flags.writeable:
        if copy is False:
            raise BufferError("Cannot export readonly array since signalling readonly is "
                              "unsupported by DLPack (supported by newer DLPack version).")
        v = v.copy()
    kw = {} if dl_device is None else {"dl_device": dl_device}
    if legacy:
        return v.__dlpack__(**kw, copy=copy) if copy is not None else v.__dlpack__(**kw)
    return v.__dlpack__(max_version=max_version, copy=copy, **kw)


Array.__dlpack__ = _dlpack
Array.__dlpack_device__ = lambda self, /: (1, 0)  # kDLCPU, device 0
