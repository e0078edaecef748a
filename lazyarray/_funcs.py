"""Non-ufunc elementwise functions: where, clip, round."""

from __future__ import annotations

import numpy as np

from lazyarray.array import Array, _fallback, _UFUNCS, operand, wrap
from lazyarray.graph import build
from lazyarray.graph.node import Node
from lazyarray.ops.dtypes import result_type, weak_type


def where(condition, x=None, y=None):
    """Elements of `x` where `condition` is true, else of `y` (see numpy.where).

    The one-argument form has a data-dependent shape: it materializes (as ``nonzero``).
    """
    if x is None and y is None:
        return _fallback(np.where, condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    c, a, b = operand(condition), operand(x), operand(y)
    types = [v.dtype if isinstance(v, Node) else weak_type(v) for v in (a, b)]
    dtype = result_type(*types)
    if not isinstance(c, Node):
        c = build.constant(np.asarray(c, dtype=bool), np.dtype(bool))
    return wrap(build.select(build.convert(c, np.dtype(bool)) if c.dtype != bool else c,
                             a, b, dtype))


def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
         max=np._NoValue, **kwargs):
    """Limit the values of `a` to [a_min, a_max], NaN-propagating (see numpy.clip)."""
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    lo = None if lo is np._NoValue else lo
    hi = None if hi is np._NoValue else hi
    if lo is None and hi is None:
        return _UFUNCS["positive"](a, out=out) if out is not None else wrap(operand_node(a))
    if lo is None:
        return _UFUNCS["minimum"](a, hi, out=out, **kwargs)
    if hi is None:
        return _UFUNCS["maximum"](a, lo, out=out, **kwargs)
    res = wrap(build.elementwise("clip", operand(a), operand(lo), operand(hi)))
    if out is not None:
        out._assign(res)
        return out
    return res


def operand_node(a) -> Node:
    v = operand(a)
    return v if isinstance(v, Node) else build.constant(np.asarray(v), np.asarray(v).dtype)


def round(a, decimals=0, out=None):
    """Evenly round to the given number of decimals (see numpy.round)."""
    node = operand_node(a)
    if node.dtype.kind in "biu" and decimals >= 0:
        res = Array(node)
    elif decimals == 0:
        res = _UFUNCS["rint"](Array(node))
    elif node.dtype.kind in "fc":
        f = 10.0**decimals
        res = _UFUNCS["rint"](Array(node) * f) / f if decimals > 0 else \
            _UFUNCS["rint"](Array(node) / 10.0**-decimals) * 10.0**-decimals
        res = res.astype(node.dtype)
    else:
        return _fallback(np.round, a, decimals)
    if out is not None:
        out._assign(res)
        return out
    return res


around = round


def copyto(dst, src, casting="same_kind", where=True):
    """Copy values from `src` into `dst`, broadcasting (see numpy.copyto)."""
    src = src if isinstance(src, Array) else Array(operand_node(src))
    if not np.can_cast(src.dtype, dst.dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from {src.dtype!r} to {dst.dtype!r} "
                        f"according to the rule {casting!r}")
    if where is True:
        dst[...] = src
    else:
        dst[...] = globals()["where"](where, src, dst)


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
