"""Node constructors: shape and dtype rules run here, when the op is built.

So `add(x_of_3, y_of_4)` raises NumPy's ValueError at the line that wrote it, not when the
value is needed. Operands are Nodes or Python/NumPy scalars (weak/strong as in NEP 50).
"""

from __future__ import annotations

import math
import operator
import weakref

import numpy as np
from numpy.exceptions import AxisError

from lazyarray.graph.node import Node, buffer, constant
from lazyarray.ops.dtypes import scalar_as, ufunc_loop, weak_type
from lazyarray.ops.indexing import check_bounds, other_axes
from lazyarray.ops.table import OPS, REDUCTIONS
from lazyarray.runtime import pool, threads

_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def convert(node: Node, dtype: np.dtype) -> Node:
    if node.dtype == dtype:
        return node
    if node.op == "constant":
        with np.errstate(all="ignore"):
            return constant(node.value.astype(dtype), dtype)
    return Node("convert", (node,), node.shape, dtype)


def broadcast_to(node: Node, shape: tuple[int, ...]) -> Node:
    """NumPy broadcasting of `node` to `shape` (operand dims right-aligned, size 1 stretches)."""
    if node.shape == shape:
        return node
    if not node.shape:  # a scalar goes anywhere
        return Node("broadcast", (node,), shape, node.dtype, (("dimensions", ()),))
    lead = len(shape) - len(node.shape)
    if lead < 0 or not all(a == b or a == 1 for a, b in zip(node.shape, shape[lead:])):
        np.broadcast_shapes(node.shape, shape)  # raises NumPy's ValueError
        raise ValueError(f"cannot broadcast a non-scalar of shape {node.shape} to shape {shape}")
    dims = tuple(range(lead, len(shape)))
    return Node("broadcast", (node,), shape, node.dtype, (("dimensions", dims),))


def _operand(x, dtype: np.dtype, shape: tuple[int, ...]) -> Node:
    if isinstance(x, Node):
        return broadcast_to(convert(x, dtype), shape)
    return broadcast_to(_scalar_constant(x, dtype), shape)


_CONSTANTS: dict = {}


def _scalar_constant(value, dtype: np.dtype) -> Node:
    """Constant leaves are immutable: the same Python scalar in a loop body is one node."""
    t = type(value)
    if t is float or t is int or t is bool:
        # 1 == 1.0 == True (the type is in the key) and 0.0 == -0.0 (zeros keyed by repr)
        key = (t, value if value else repr(value), dtype)
        c = _CONSTANTS.get(key)
        if c is None:
            c = constant(scalar_as(value, dtype), dtype)
            if len(_CONSTANTS) >= 1024:
                _CONSTANTS.clear()
            _CONSTANTS[key] = c
        return c
    return constant(scalar_as(value, dtype), dtype)


def _comparison_types(types: list, args: tuple) -> list:
    """NumPy 2 compares integer arrays with out-of-range Python ints exactly; widen for that."""
    out = list(types)
    for i, (t, a) in enumerate(zip(types, args, strict=True)):
        if t is int:
            other = [u for u in types if isinstance(u, np.dtype)]
            if other and other[0].kind in "iu":
                info = np.iinfo(other[0])
                if not info.min <= a <= info.max:
                    out[i] = np.dtype(np.int64 if -(2**63) <= a < 2**63 else np.float64)
    return out


_PLANS: dict = {}  # (op, dtype=, operand dtypes/shapes or scalar types) -> typing plan
# (constant node, shape) -> its broadcast: immutable, never a root (no Array holds one)
_BROADCAST_CONSTANTS: dict = {}


def elementwise(name: str, *args, dtype: np.dtype | None = None) -> Node:
    """Apply the elementwise op `name` to Nodes/scalars with NumPy's promotion and broadcasting.

    `dtype` fixes the output dtype as the ufunc's `dtype=` argument does. The typing and
    broadcasting of a (op, operand types and shapes) combination is worked out once and
    memoized: building a node is then a dictionary lookup and the node itself.
    """
    key = [name, dtype]
    for a in args:
        if type(a) is Node:
            key += (a.dtype, a.shape)
        elif type(a) is int and name in _COMPARISONS:  # the integer types it fits decide
            key.append((a < 0, (~a if a < 0 else a).bit_length()))
        else:
            key.append(type(a))
    key = tuple(key)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _elementwise_plan(name, args, dtype)
        if plan is None:  # value-dependent typing: not memoized
            return _elementwise(name, args, dtype)
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        _PLANS[key] = plan
    out_dtype, shape, loop_in = plan
    srcs = []
    folded = True
    for a, dt in zip(args, loop_in):
        if type(a) is Node:
            if a.dtype is not dt:
                a = convert(a, dt)
            if folded and a.op != "constant":
                folded = False
        else:  # a scalar: its constant broadcast to the shape, one shared node per loop body
            a = _scalar_constant(a, dt)
            if shape:
                b = _BROADCAST_CONSTANTS.get((a, shape))
                if b is None:
                    if len(_BROADCAST_CONSTANTS) >= 1024:
                        _BROADCAST_CONSTANTS.clear()
                    b = _BROADCAST_CONSTANTS[a, shape] = broadcast_to(a, shape)
                a = b
            srcs.append(a)
            continue
        if a.shape != shape:
            a = broadcast_to(a, shape)
        srcs.append(a)
    if folded:
        return _fold(name, srcs, out_dtype)
    return Node(name, tuple(srcs), shape, out_dtype)


def _elementwise_plan(name: str, args: tuple, dtype) -> tuple | None:
    """(output dtype, broadcast shape, loop input dtypes) of an elementwise op, or None when
    the typing depends on more than the operands' types (NumPy scalars)."""
    types = [a.dtype if isinstance(a, Node) else weak_type(a) for a in args]
    if name in _COMPARISONS and int in types:  # (an int's plan holds for every int of its
        types = _comparison_types(types, args)  # sign and bit length: `elementwise`'s key)
    if not all(isinstance(a, Node) or type(a) in (int, float, bool, complex) for a in args):
        return None
    return _typing(name, args, types, dtype)


def _typing(name: str, args: tuple, types: list, dtype) -> tuple:
    op = OPS[name]
    uf = op.dtype_ufunc or op.ref
    loop = ufunc_loop(uf, tuple(types), dtype)
    shapes = [a.shape for a in args if isinstance(a, Node)]
    shape = shapes[0] if all(s == shapes[0] for s in shapes) else _broadcast_shapes(shapes)
    return loop[uf.nin + op.output], shape, loop[: uf.nin]


def _elementwise(name: str, args: tuple, dtype) -> Node:
    types = [a.dtype if isinstance(a, Node) else weak_type(a) for a in args]
    if name in _COMPARISONS and int in types:
        types = _comparison_types(types, args)
    out_dtype, shape, loop_in = _typing(name, args, types, dtype)
    srcs = [_operand(a, dt, shape) for a, dt in zip(args, loop_in, strict=True)]
    if all(s.op == "constant" for s in srcs):
        return _fold(name, srcs, out_dtype)
    return Node(name, tuple(srcs), shape, out_dtype)


def _fold(name: str, srcs: list, out_dtype: np.dtype) -> Node:
    """Scalar work is done right away (NumPy semantics)."""
    with np.errstate(all="ignore"):
        value = np.asarray(OPS[name].ref(*(s.value for s in srcs)))
    return constant(value.astype(out_dtype, copy=False), out_dtype)


def _broadcast_shapes(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    if len(shapes) == 2:  # (the common case, without np.broadcast_shapes's 1.5 µs)
        out = _broadcast_two(*shapes)
        if out is not None:
            return out
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(
            "operands could not be broadcast together with shapes "
            + " ".join(str(s).replace(" ", "") for s in shapes)
        ) from None


def _broadcast_two(s: tuple, t: tuple) -> tuple | None:
    """The broadcast shape of `s` and `t`, or None when they do not broadcast."""
    if len(s) < len(t):
        s, t = t, s
    out = list(s)
    lead = len(s) - len(t)
    for k, b in enumerate(t, lead):
        a = s[k]
        if a != b and b != 1:
            if a != 1:
                return None
            out[k] = b
    return tuple(out)


def select(cond: Node, x, y, dtype: np.dtype) -> Node:
    shapes = [a.shape for a in (cond, x, y) if isinstance(a, Node)]
    shape = _broadcast_shapes(shapes)
    srcs = (_operand(cond, np.dtype(bool), shape), _operand(x, dtype, shape),
            _operand(y, dtype, shape))
    return Node("select", srcs, shape, dtype)


# ---- movement ----------------------------------------------------------------------------


def reshape(node: Node, shape, order: str = "C") -> Node:
    size = math.prod(node.shape)
    shape = tuple(operator.index(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod([d for d in shape if d != -1])
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if any(d < 0 for d in shape) or math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    if order not in ("C", "F", "A"):
        raise ValueError("order must be one of 'C', 'F', 'A'")
    if order == "F":  # F-order reshape == transpose, C-reshape of the reversed shape, transpose
        return transpose(reshape(transpose(node), shape[::-1]))
    if shape == node.shape:
        return node
    if node.op == "reshape":  # reshape(reshape(x)) -> reshape(x)
        node = node.srcs[0]
        if shape == node.shape:
            return node
    return Node("reshape", (node,), shape, node.dtype, (("shape", shape),))


def normalize_axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, without a generator
        return (axis % ndim,)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError("repeated axis")
    return out


def transpose(node: Node, perm=None) -> Node:
    ndim = len(node.shape)
    if perm is None:
        perm = tuple(range(ndim))[::-1]
    perm = tuple(normalize_axis(p, ndim) for p in perm)
    if len(perm) != ndim:
        raise ValueError("axes don't match array")
    if sorted(perm) != list(range(ndim)):
        raise ValueError("repeated axis in transpose")
    if perm == tuple(range(ndim)):
        return node
    if node.op == "transpose":  # transpose(transpose(x, p), q) -> transpose(x, p[q])
        inner = node.attr("permutation")
        return transpose(node.srcs[0], tuple(inner[p] for p in perm))
    shape = tuple(node.shape[p] for p in perm)
    return Node("transpose", (node,), shape, node.dtype, (("permutation", perm),))


def slice_(node: Node, slices: tuple[tuple[int, int, int], ...]) -> Node:
    """Basic slicing: `slices` holds one normalized (start, stop, step) per dimension (an
    empty selection as (0, 0, 1): `slice(-3, None, -1).indices(2)` is (-1, -1, -1), whose
    start a NumPy slice would read as the last element)."""
    slices = tuple(s if len(range(*s)) else (0, 0, 1) for s in slices)
    shape = tuple(len(range(*s)) for s in slices)
    if all(s == (0, n, 1) for s, n in zip(slices, node.shape, strict=True)):
        return node
    return Node("slice", (node,), shape, node.dtype, (("slices", slices),))


def getitem(node: Node, key) -> Node:
    """Basic indexing (ints, slices, Ellipsis, None) as slice + reshape."""
    if not isinstance(key, tuple):
        key = (key,)
    ndim = len(node.shape)
    n_real = n_ellipsis = 0
    for k in key:
        if k is Ellipsis:
            n_ellipsis += 1
        elif k is not None:
            n_real += 1
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, "
            f"but {n_real} were indexed"
        )
    if n_ellipsis:
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - n_real) + key[i + 1:]
    elif n_real < ndim:
        key = key + (slice(None),) * (ndim - n_real)
    slices, out_shape, sliced_shape, dim = [], [], [], 0
    whole = True
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        n = node.shape[dim]
        if type(k) is slice:
            s = k.indices(n)
            m = len(range(*s))
            if not m:  # (see slice_)
                s = (0, 0, 1)
            out_shape.append(m)
            if s != (0, n, 1):
                whole = False
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                    "integer or boolean arrays are valid indices"
                ) from None
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            i %= n
            s, m, whole = (i, i + 1, 1), 1, False
        slices.append(s)
        sliced_shape.append(m)
        dim += 1
    sliced_shape, out_shape = tuple(sliced_shape), tuple(out_shape)
    sliced = node if whole else Node("slice", (node,), sliced_shape, node.dtype,
                                     (("slices", tuple(slices)),))
    return sliced if sliced_shape == out_shape else reshape(sliced, out_shape)


# ---- reductions ----------------------------------------------------------------------------


def reduce(node: Node, name: str, axes: tuple[int, ...], keepdims: bool = False) -> Node:
    """`ufunc.reduce` over `axes` (normalized) of `node`, already in the accumulator dtype."""
    rdef = REDUCTIONS[name]
    if rdef.ufunc.identity is None and any(node.shape[a] == 0 for a in axes):
        raise ValueError(
            f"zero-size array to reduction operation {rdef.ufunc.__name__} which has no identity"
        )
    shape = tuple(n for i, n in enumerate(node.shape) if i not in axes)
    out = Node("reduce", (node,), shape, node.dtype,
               (("dimensions", tuple(sorted(axes))), ("to_apply", name)))
    if keepdims:
        out = reshape(out, tuple(1 if i in axes else n for i, n in enumerate(node.shape)))
    return out


def scan(node: Node, name: str, axis: int | None) -> Node:
    """Inclusive scan (`ufunc.accumulate`) along `axis` (None: the flattened array) of
    `node`, already in the accumulator dtype."""
    if axis is None:
        return scan(reshape(node, (-1,)), name, 0) if len(node.shape) != 1 else scan(node, name, 0)
    axis = normalize_axis(axis, len(node.shape))
    last = len(node.shape) - 1
    perm = tuple(i for i in range(last + 1) if i != axis) + (axis,)
    moved = transpose(node, perm)
    out = Node("scan", (moved,), moved.shape, node.dtype, (("to_apply", name),))
    return transpose(out, tuple(int(i) for i in np.argsort(perm)))


def argreduce(node: Node, name: str, axis: int | None, keepdims: bool = False) -> Node:
    """argmax/argmin (name 'max'/'min') along one axis, or over the flattened array."""
    if not node.shape and not isinstance(axis, tuple) and axis is not None and operator.index(axis) in (0, -1):
        axis = None  # NumPy accepts axis 0 and -1 for a 0-d array
    if axis is None:
        flat = reshape(node, (-1,)) if len(node.shape) != 1 else node
        out = argreduce(flat, name, 0)
        return reshape(out, (1,) * len(node.shape)) if keepdims else out
    axis = normalize_axis(axis, len(node.shape))
    if node.shape[axis] == 0:
        raise ValueError(f"attempt to get arg{name} of an empty sequence")
    last = len(node.shape) - 1
    moved = transpose(node, tuple(i for i in range(last + 1) if i != axis) + (axis,))
    out = Node("argreduce", (moved,), moved.shape[:-1], np.dtype(np.intp), (("to_apply", name),))
    if keepdims:
        out = reshape(out, tuple(1 if i == axis else n for i, n in enumerate(node.shape)))
    return out


# ---- integer-array (advanced) indexing -------------------------------------------------------


def gather(operand: Node, indices: tuple[Node, ...], axes: tuple[int, ...],
           offset_dims: tuple[int, ...], shape: tuple[int, ...]) -> Node:
    """`operand` read through integer index operands (see ops/indexing.py for the rule)."""
    others = other_axes(len(operand.shape), axes)
    if not axes or len(axes) != len(indices) or len(set(axes)) != len(axes):
        raise ValueError(f"gather: one index operand per distinct axis, got axes {axes}")
    if len(offset_dims) != len(others) or any(
            shape[d] != operand.shape[a] for d, a in zip(offset_dims, others, strict=True)):
        raise ValueError(f"gather: offset_dims {offset_dims} do not place the operand's "
                         f"axes {others} in shape {shape}")
    for ix in indices:
        if ix.shape != shape or ix.dtype.kind not in "iu":
            raise ValueError("gather: index operands are integer arrays of the result's shape")
    return Node("gather", (operand, *indices), shape, operand.dtype,
                (("axes", tuple(axes)), ("offset_dims", tuple(offset_dims))))


_RANGES: "weakref.WeakKeyDictionary[Node, tuple[int, int]]" = weakref.WeakKeyDictionary()


def _check_concrete(node: Node, values: np.ndarray, axis: int, shape) -> None:
    """Bounds of a computed index array; its (min, max) is remembered per node, so indexing
    with the same index array again costs no pass over it."""
    if values.size == 0:
        return
    rng = _RANGES.get(node) if node.op == "buffer" else None
    if rng is None:
        v = values.astype(np.intp, copy=False)
        rng = (int(v.min()), int(v.max()))
        if node.op == "buffer":
            _RANGES[node] = rng
    n = shape[axis]
    if rng[0] < -n or rng[1] >= n:
        check_bounds([values], [axis], shape)


def _concrete(node: Node) -> np.ndarray | None:
    """The values of an index operand known now (a computed buffer or a constant), else None."""
    if node.op == "constant" or (node.op == "buffer" and node.on_host):
        return node.value
    return None


def _broadcast_into(node: Node, shape: tuple[int, ...], first: int, nb: int) -> Node:
    """`node` (an index of the broadcast index shape's trailing dims) broadcast to `shape`,
    where the broadcast index dims are shape[first:first + nb]."""
    if node.shape == shape:
        return node
    dims = tuple(first + nb - len(node.shape) + d for d in range(len(node.shape)))
    return Node("broadcast", (node,), shape, node.dtype, (("dimensions", dims),))


def advanced_getitem(node: Node, key) -> Node:
    """NumPy's integer-array indexing as one `gather`.

    `key` holds ints, slices, None, Ellipsis, integer index Nodes and concrete boolean NumPy
    arrays (masks: their `nonzero` indices, one per axis they cover). Integers count as index
    arrays (0-d) once an array is present. Where the index dimensions go follows NumPy: where
    the first index sits when all index entries are next to each other in the key, else first.
    Index arrays already computed are bounds-checked here, at the user's line.
    """
    key = key if isinstance(key, tuple) else (key,)
    ndim = len(node.shape)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")

    def width(k) -> int:
        if k is None or k is Ellipsis:
            return 0
        if isinstance(k, np.ndarray) and k.dtype.kind == "b":
            return k.ndim
        return 1

    used = sum(width(k) for k in key)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{used} were indexed")
    # (entry, its position in the key, the operand axis it starts at)
    items: list[tuple[object, int, int]] = []
    axis = 0
    for pos, k in enumerate(key):
        if k is Ellipsis:
            for _ in range(ndim - used):
                items.append((slice(None), pos, axis))
                axis += 1
            continue
        items.append((k, pos, axis))
        axis += width(k)
    for _ in range(ndim - axis):  # trailing axes not named: full slices
        items.append((slice(None), len(key), axis))
        axis += 1

    adv: list[tuple[object, int, int]] = []  # (Node | int, key position, operand axis)
    for k, pos, ax in items:
        if isinstance(k, np.ndarray) and k.dtype.kind == "b":
            for d in range(k.ndim):
                if k.shape[d] != node.shape[ax + d]:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {ax + d}; size "
                        f"of axis is {node.shape[ax + d]} but size of corresponding boolean "
                        f"axis is {k.shape[d]}")
            for d, nz in enumerate(threads.nonzero(k, pool.empty)):
                adv.append((buffer_of(nz), pos, ax + d))
        elif isinstance(k, Node):
            adv.append((k, pos, ax))
        elif k is not None and not isinstance(k, slice):
            adv.append((operator.index(k), pos, ax))
    if not adv:
        raise ValueError("advanced_getitem needs an index array")

    # NumPy's order of errors: the masks' shapes (above), the ints' bounds, the arrays'
    # broadcast, then the bounds of the arrays known now (computed index arrays), in key order
    for a, _, ax in adv:
        if isinstance(a, int) and not -node.shape[ax] <= a < node.shape[ax]:
            raise IndexError(f"index {a} is out of bounds for axis {ax} with size "
                             f"{node.shape[ax]}")
    shapes = [a.shape for a, _, _ in adv if isinstance(a, Node)]  # (an int's is (): NumPy's
    try:  # message names the arrays' only)
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                         "with shapes " + "".join(str(s).replace(" ", "") + " "
                                                  for s in shapes)) from None
    for a, _, ax in adv:  # (an empty broadcast reads nothing: NumPy checks nothing)
        if not isinstance(a, int) and 0 not in bshape:
            v = _concrete(a)
            if v is not None:
                _check_concrete(a, v, ax, node.shape)

    positions = sorted({pos for _, pos, _ in adv})
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    adv_axes = {ax for _, _, ax in adv}
    out_shape: list[int] = []
    slices = []
    offset_of: dict[int, int] = {}  # operand axis -> result dim
    first = 0 if not adjacent else None
    for k, pos, ax in items:
        if ax in adv_axes and not (isinstance(k, slice) or k is None):
            if first is None:
                first = len(out_shape)
                out_shape += bshape
            continue
        if isinstance(k, np.ndarray):  # a mask's later axes were counted above
            continue
        if k is None:
            out_shape.append(1)
            continue
        s = k.indices(node.shape[ax])
        offset_of[ax] = len(out_shape) + (len(bshape) if first == 0 and not adjacent else 0)
        out_shape.append(len(range(*s)))
    if not adjacent:
        out_shape = [*bshape, *out_shape]
    shape = tuple(out_shape)
    for ax in range(ndim):
        if ax not in offset_of:
            slices.append((0, node.shape[ax], 1))
        else:
            k = next(k for k, _, a in items if a == ax and isinstance(k, slice))
            slices.append(k.indices(node.shape[ax]))
    operand = slice_(node, tuple(slices))
    nb = len(bshape)
    indices, axes = [], []
    for a, _, ax in adv:
        if isinstance(a, int):
            a = constant(np.intp(a), np.dtype(np.intp))
        indices.append(_broadcast_into(a, shape, first, nb))
        axes.append(ax)
    others = other_axes(ndim, axes)
    return gather(operand, tuple(indices), tuple(axes), tuple(offset_of[a] for a in others),
                  shape)


def buffer_of(values: np.ndarray) -> Node:

    return buffer(np.ascontiguousarray(values))
