"""Export lazy programs as StableHLO: MLIR text that XLA (and any StableHLO consumer) runs.

``stablehlo(fn, *example_args)`` traces `fn` on lazy inputs shaped like the examples;
``stablehlo_of(*arrays, params=...)`` exports arrays already built. Both lower the graph to
lazyarray's HLO module, run `simplify` and `dce` (no fusion: every instruction stays one plain
op) and print each instruction as StableHLO ops (`_export_emit`), with NumPy's elementwise
semantics spelled out op by op (`_export_elementwise`). See docs/export.md.
"""

from __future__ import annotations

import math

import numpy as np

from lazyarray import config, engine, stats
from lazyarray._export_elementwise import RULES, lower_elementwise
from lazyarray._export_emit import Emitter, UnsupportedOpError, Value
from lazyarray._export_math import imag_part, emit_isnan, real_part
from lazyarray.array import Array
from lazyarray.graph.node import Node, buffer
from lazyarray.ir.hlo import Instr, Module
from lazyarray.ir.lower import lower
from lazyarray.ops.table import OPS, reduce_init
from lazyarray.passes.simplify import dce, simplify

__all__ = ["UnsupportedOpError", "stablehlo", "stablehlo_of"]

# counters that move when tracing computed values instead of recording them
_EVALUATING = ("materializations", "fallbacks", "eager_ops")


def stablehlo(fn, *example_args) -> str:
    """StableHLO text of `fn` traced on lazy arrays shaped like `example_args`.

    Parameters
    ----------
    fn : callable
        Takes one lazy Array per example argument and returns an Array or a tuple/list of
        Arrays, using the lazyarray namespace (``import lazyarray as np``).
    *example_args : array_like
        One per parameter of `fn`; only their shapes and dtypes are used.

    Returns
    -------
    str
        An MLIR module holding ``func.func public @main``, whose parameters are the example
        arguments (their shapes and dtypes) and whose results are `fn`'s outputs. Every other
        array `fn` reads (constants, ``arange``...) is inlined.

    Raises
    ------
    UnsupportedOpError
        An operation has no StableHLO form here; the message names it (and the dtype).
    ValueError
        `fn` needed a computed value while tracing (``float(x)``, ``bool(x)``, a NumPy
        fallback...): the export would hard-code it.

    Examples
    --------
    >>> import numpy as np, lazyarray as la
    >>> text = la.export.stablehlo(lambda x: la.sin(x) * 2, np.zeros(3))
    >>> "stablehlo.sine" in text
    True
    """
    examples = [np.asarray(a) for a in example_args]
    inputs = [Array(buffer(np.array(a, copy=True))) for a in examples]
    leaves = [a._node for a in inputs]  # the parameters, even if `fn` writes into its inputs
    before = stats.snapshot()
    with config.options(eager_threshold=0):  # record everything; nothing runs eagerly
        outs = fn(*inputs)
    after = stats.snapshot()
    if any(after[k] != before[k] for k in _EVALUATING):
        raise ValueError("stablehlo export: fn computed a value while tracing (a Python "
                         "conversion such as float(x) or bool(x), or a NumPy fallback); its "
                         "result would be hard-coded into the export")
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    nodes = [o._node if isinstance(o, Array) else Array(buffer(np.array(o)))._node for o in outs]
    return _export(nodes, leaves)


def stablehlo_of(*arrays, params=()) -> str:
    """StableHLO text computing `arrays` (lazy Arrays already built).

    Parameters
    ----------
    *arrays : Array
        The results of the exported function.
    params : sequence of Array
        Evaluated arrays that become the function's parameters, in order; every other array
        the graphs read is inlined as a constant. Pending ones are evaluated first.

    Notes
    -----
    Build `arrays` under ``lazyarray.options(eager_threshold=0)``: otherwise operations on
    small arrays run at once (the eager tier) and their results are inlined as constants.
    A parameter that no graph reads raises ValueError for that reason.

    Returns
    -------
    str
        An MLIR module holding ``func.func public @main`` (see `stablehlo`).
    """
    params = list(params)
    if params:
        engine.materialize([p._node for p in params])
    leaves = []
    for i, p in enumerate(params):
        node = p._node
        if p._chain or node.op != "buffer":
            raise ValueError(f"stablehlo export: params[{i}] is a view; pass whole arrays")
        leaves.append(node)
    nodes = [a._node if isinstance(a, Array) else Array(buffer(np.array(a)))._node
             for a in arrays]
    _, args = lower(nodes)
    read = {id(a) for a in args}
    for i, leaf in enumerate(leaves):
        if id(leaf.value) not in read:
            raise ValueError(f"stablehlo export: params[{i}] is not read by the arrays' graphs "
                             "(computed eagerly? build them under "
                             "lazyarray.options(eager_threshold=0))")
    return _export(nodes, leaves)


# ---- module -> text ------------------------------------------------------------------------


def _export(nodes: list[Node], leaves: list[Node]) -> str:
    module, args = lower(nodes)
    module = dce(simplify(module))
    param_of = {}
    for k, leaf in enumerate(leaves):
        param_of.setdefault(id(leaf.value), k)
    e = Emitter()
    fn_args = [Value(f"%arg{k}", leaf.shape, leaf.dtype) for k, leaf in enumerate(leaves)]
    skip = _concat_chains(module)
    vals: list = []
    for ins in module.instrs:
        xs = [vals[o] for o in ins.operands]
        if ins.opcode == "parameter":
            arr = args[ins.attr("index")]
            k = param_of.get(id(arr))
            vals.append(fn_args[k] if k is not None else _inline(e, arr))
        elif id(ins) in skip:
            vals.append(None)  # an inner write of a concatenation: emitted by its last write
        else:
            vals.append(_lower(e, module, ins, xs, vals))
    results = [vals[o] for o in module.outputs]
    head = ", ".join(f"{a.name}: {a.type}" for a in fn_args)
    res_types = ", ".join(r.type for r in results)
    body = "\n".join(e.live_lines(results))
    return (f"module @lazyarray_export {{\n  func.func public @main({head}) -> ({res_types}) {{\n"
            f"{body}\n    return {', '.join(r.name for r in results)} : {res_types}\n  }}\n}}\n")


def _inline(e: Emitter, arr: np.ndarray) -> Value:
    """A constant array; 1-D `arange`s become `iota`."""
    if arr.ndim == 1 and arr.size > 1 and arr.dtype.kind in "iuf" and \
            np.array_equal(arr, np.arange(arr.size, dtype=arr.dtype)):
        return e.iota(arr.shape, 0, arr.dtype)
    return e.constant(arr)


def _lower(e: Emitter, m: Module, ins: Instr, xs: list[Value], vals: list) -> Value:
    op = ins.opcode
    if op == "constant":
        return e.constant(np.asarray(ins.value, dtype=ins.dtype))
    if op in OPS:
        return lower_elementwise(e, op, xs, ins.dtype)
    if op == "convert":
        return _convert(e, xs[0], ins.dtype)
    if op == "select":
        return e.select(*xs)
    if op == "broadcast":
        return e.broadcast_in_dim(xs[0], ins.shape, ins.attr("dimensions"))
    if op == "reshape":
        return e.reshape(xs[0], ins.shape)
    if op == "transpose":
        return e.transpose(xs[0], ins.attr("permutation"))
    if op == "slice":
        return _slice(e, xs[0], ins.attr("slices"))
    if op == "reduce":
        return _reduce(e, xs[0], ins.attr("dimensions"), ins.attr("to_apply"), ins.dtype)
    if op == "argreduce":
        return _argreduce(e, xs[0], ins.attr("to_apply"))
    if op == "scan":
        return _scan(e, xs[0], ins.attr("to_apply"))
    if op == "dot":
        return _dot(e, xs[0], xs[1], ins.shape, ins.dtype)
    if op == "update":
        chain = _concat_parts(m, ins)
        if chain is not None:
            return _concatenate(e, m, chain, vals)
        return _update(e, xs[0], xs[1], ins.attr("offset"), ins.attr("strides"),
                       _scalar_const(m, ins.operands[0]))
    raise UnsupportedOpError(f"StableHLO export: instruction '{op}' is not supported")


def _convert(e: Emitter, x: Value, dtype: np.dtype) -> Value:
    if dtype.kind == "b":
        return x if x.dtype.kind == "b" else e.cmp("NE", x, e.full(0, x))
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = e.op("real", [x], x.shape, np.float32 if x.dtype == np.complex64 else np.float64)
    return e.convert(x, dtype)


def _slice(e: Emitter, x: Value, slices) -> Value:
    """Basic slicing; negative steps read the reversed dimension forward."""
    rev, starts, limits, steps = [], [], [], []
    for d, ((a, b, c), n) in enumerate(zip(slices, x.shape, strict=True)):
        count = len(range(a, b, c))
        if c < 0:
            rev.append(d)
            a, c = n - 1 - a, -c
        a = min(a, n) if count else 0
        starts.append(a)
        limits.append(a + (count - 1) * c + 1 if count else a)
        steps.append(c)
    return e.slice(e.reverse(x, rev), starts, limits, steps)


# ---- reductions ------------------------------------------------------------------------------


def _combine(name: str):

    table = {"add": "add", "multiply": "multiply", "maximum": "maximum", "minimum": "minimum",
             "or": "logical_or", "and": "logical_and"}
    rule = RULES[table[name]]
    return lambda e, a, b: rule(e, [a, b], a.dtype)


def _init(name: str, dtype: np.dtype) -> np.ndarray:
    """The start value of a reduction; complex max/min start below/above every number."""
    if dtype.kind == "c" and name in ("maximum", "minimum"):
        inf = -np.inf if name == "maximum" else np.inf
        return np.asarray(complex(inf, inf), dtype=dtype)
    return np.asarray(reduce_init(name, dtype), dtype=dtype)


def _reduce(e: Emitter, x: Value, dims, name: str, dtype: np.dtype) -> Value:
    if name in ("or", "and") and x.dtype.kind != "b":  # logical reduction in another dtype
        return e.convert(_reduce(e, _convert(e, x, np.dtype(bool)), dims, name, np.dtype(bool)),
                         dtype)
    init = e.constant(_init(name, x.dtype))
    combine = _combine(name)
    region = e.region([((), x.dtype), ((), x.dtype)], lambda a, b: combine(e, a, b))
    shape = tuple(n for i, n in enumerate(x.shape) if i not in dims)
    return e.op("reduce", [x, init], shape, x.dtype,
                f"dimensions = array<i64{': ' + ', '.join(map(str, dims)) if dims else ''}>",
                region)


def _argreduce(e: Emitter, x: Value, name: str) -> Value:
    """argmax/argmin over the last dim: a (value, index) reduce. As NumPy: the first NaN wins,
    then the first index of the extreme; complex values compare real part first."""
    if x.dtype.kind == "b":
        x = e.convert(x, np.uint8)
    idx = e.iota(x.shape, len(x.shape) - 1, np.int64)
    init_v = e.constant(_init("maximum" if name == "max" else "minimum", x.dtype))
    init_i = e.constant(np.asarray(np.iinfo(np.int64).max, dtype=np.int64))
    better = "GT" if name == "max" else "LT"

    def beats(a, b):
        if x.dtype.kind != "c":
            return e.cmp(better, a, b)
        ar, ai, br, bi = real_part(e, a), imag_part(e, a), real_part(e, b), imag_part(e, b)
        return e.ew("or", e.cmp(better, ar, br),
                    e.ew("and", e.cmp("EQ", ar, br), e.cmp(better, ai, bi)))

    def body(av, ai, bv, bi):
        first = e.cmp("LT", ai, bi)
        wins = e.ew("or", beats(av, bv), e.ew("and", e.cmp("EQ", av, bv), first))
        if x.dtype.kind in "fc":
            an, bn = emit_isnan(e, av), emit_isnan(e, bv)
            nan_wins = e.ew("and", an, e.ew("or", e.ew("not", bn), first))
            wins = e.ew("or", nan_wins, e.ew("and", e.ew("and", e.ew("not", an),
                                                              e.ew("not", bn)), wins))
        return [e.select(wins, av, bv), e.select(wins, ai, bi)]

    region = e.region([((), x.dtype), ((), np.int64), ((), x.dtype), ((), np.int64)], body)
    shape = x.shape[:-1]
    outs = e.op("reduce", [x, idx, init_v, init_i], [shape, shape], [x.dtype, np.int64],
                f"dimensions = array<i64: {len(x.shape) - 1}>", region, nresults=2)
    return outs[1]


def _scan(e: Emitter, x: Value, name: str) -> Value:
    """Inclusive scan along the last dim: a reduce_window over the n elements up to each."""
    if not x.shape or x.shape[-1] <= 1:
        return x
    n, r = x.shape[-1], len(x.shape)
    init = e.constant(_init(name, x.dtype))
    combine = _combine(name)
    region = e.region([((), x.dtype), ((), x.dtype)], lambda a, b: combine(e, a, b))
    window = ", ".join(["1"] * (r - 1) + [str(n)])
    pad = ", ".join(["[0, 0]"] * (r - 1) + [f"[{n - 1}, 0]"])
    return e.op("reduce_window", [x, init], x.shape, x.dtype,
                f"window_dimensions = array<i64: {window}>, "
                f"padding = dense<[{pad}]> : tensor<{r}x2xi64>", region)


# ---- dot ---------------------------------------------------------------------------------------


def _dot(e: Emitter, a: Value, b: Value, shape, dtype: np.dtype) -> Value:
    """NumPy's matmul: 1-D operands promoted, batch dims broadcast, then dot_general."""
    if dtype.kind == "b":  # any(a & b) along k
        res = _dot(e, e.convert(a, np.int32), e.convert(b, np.int32), shape, np.dtype(np.int32))
        return e.cmp("NE", res, e.full(0, res))
    if dtype.kind in "iu" and dtype != np.int64:  # XLA's CPU dot: wrap-around sums in int64
        res = _dot(e, e.convert(a, np.int64), e.convert(b, np.int64), shape, np.dtype(np.int64))
        return e.convert(res, dtype)
    a = e.reshape(a, (1,) + a.shape) if len(a.shape) == 1 else a
    b = e.reshape(b, b.shape + (1,)) if len(b.shape) == 1 else b
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    nb = len(batch)

    def widen(x):
        full = batch + x.shape[-2:]
        if x.shape == full:
            return x
        return e.broadcast_in_dim(x, full, range(nb + 2 - len(x.shape), nb + 2))

    a, b = widen(a), widen(b)
    bd = ", ".join(map(str, range(nb)))
    batching = f"lhs_batching_dimensions = [{bd}], rhs_batching_dimensions = [{bd}], " if nb \
        else ""
    attrs = (f"dot_dimension_numbers = #stablehlo.dot<{batching}lhs_contracting_dimensions = "
             f"[{nb + 1}], rhs_contracting_dimensions = [{nb}]>")
    res = e.op("dot_general", [a, b], batch + (a.shape[-2], b.shape[-1]), dtype, attrs)
    return e.reshape(res, tuple(shape))


# ---- writes: concatenate, pad, dynamic_update_slice, scatter -----------------------------------


def _c_strides(shape) -> list[int]:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return out[::-1]


def _box(base_shape, value_shape, offset: int, strides):
    """The write as a box of the base: (value dim -> base dim, starts, steps), or None."""
    S = _c_strides(base_shape)
    starts, rest = [], offset
    for d, s in enumerate(S):
        starts.append(rest // s)
        rest %= s
    if any(st >= n for st, n in zip(starts, base_shape, strict=True)):
        return None
    steps = [1] * len(base_shape)
    mapping = {}
    for k, (n, t) in enumerate(zip(value_shape, strides, strict=True)):
        if n == 1:
            continue
        dims = [d for d in range(len(base_shape)) if base_shape[d] > 1 and t and
                S[d] <= abs(t) < S[d] * base_shape[d] and t % S[d] == 0]
        if len(dims) != 1 or dims[0] in mapping.values():
            return None
        d = dims[0]
        steps[d] = t // S[d]
        if not 0 <= starts[d] + steps[d] * (n - 1) < base_shape[d]:
            return None
        mapping[k] = d
    return mapping, starts, steps


def _boxed_value(e: Emitter, base: Value, value: Value, mapping, starts, steps):
    """`value` laid out in base dim order, steps made positive: (value, starts, steps)."""
    kept = sorted(mapping, key=mapping.get)
    v = e.reshape(value, tuple(value.shape[k] for k in sorted(mapping)))
    order = sorted(mapping)
    v = e.transpose(v, [order.index(k) for k in kept])
    starts, steps = list(starts), list(steps)
    rev = []
    for j, k in enumerate(kept):
        d = mapping[k]
        if steps[d] < 0:
            rev.append(j)
            starts[d] += steps[d] * (value.shape[k] - 1)
            steps[d] = -steps[d]
    v = e.reverse(v, rev)
    counts = [1] * len(base.shape)
    for k in kept:
        counts[mapping[k]] = value.shape[k]
    return e.reshape(v, tuple(counts)), starts, steps


def _update(e: Emitter, base: Value, value: Value, offset: int, strides, fill=None) -> Value:
    """A write; `fill`: the base's value when it is one broadcast scalar (a box written into
    it is a `pad` of the value, as `np.pad` with one constant)."""
    if math.prod(value.shape) == 0:
        return base
    box = _box(base.shape, value.shape, offset, strides)
    if box is None:
        return _scatter(e, base, value, offset, strides)
    v, starts, steps = _boxed_value(e, base, value, *box)
    if fill is not None:
        high = [n - (s + (c - 1) * t + 1) for n, s, c, t in zip(base.shape, starts, v.shape,
                                                                 steps, strict=True)]
        return e.pad(v, e.constant(np.asarray(fill, dtype=base.dtype)), starts, high,
                     [t - 1 for t in steps])
    if all(s == 1 for s in steps):
        idx = [e.constant(np.asarray(s, dtype=np.int64)) for s in starts]
        return e.op("dynamic_update_slice", [base, v, *idx], base.shape, base.dtype)
    # strided box: pad the value (interior padding = the steps) and select it over the base
    high = [n - (s + (c - 1) * t + 1) for n, s, c, t in zip(base.shape, starts, v.shape, steps,
                                                             strict=True)]
    interior = [t - 1 for t in steps]
    padded = e.pad(v, e.constant(np.zeros((), base.dtype)), starts, high, interior)
    mask = e.pad(e.full(True, v, np.bool_), e.constant(np.asarray(False)), starts, high,
                 interior)
    return e.select(mask, padded, base)


def _scatter(e: Emitter, base: Value, value: Value, offset: int, strides) -> Value:
    idx = offset + sum(np.arange(n).reshape([-1 if i == k else 1 for i in range(len(strides))])
                       * s for k, (n, s) in enumerate(zip(value.shape, strides, strict=True)))
    idx = np.broadcast_to(idx, value.shape).reshape(-1, 1).astype(np.int64)
    if len(np.unique(idx)) != len(idx):
        raise UnsupportedOpError("StableHLO export: 'update' writing one element twice")
    size = math.prod(base.shape)
    flat = e.reshape(base, (size,))
    upd = e.reshape(value, (len(idx),))
    region = e.region([((), base.dtype), ((), base.dtype)], lambda old, new: new)
    res = e.op("scatter", [flat, e.constant(idx), upd], (size,), base.dtype,
               "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
               "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>", region)
    return e.reshape(res, base.shape)


def _concat_parts(m: Module, ins: Instr):
    """[(update instr, start along axis)] if `ins` ends a chain of writes that tiles its base
    along one axis with whole slabs (lazyarray's concatenate), and the axis; else None."""
    chain = [ins]
    users = None
    while m.instrs[chain[-1].operands[0]].opcode == "update":
        if users is None:
            users = m.users()
        below = chain[-1].operands[0]
        if len(users[below]) != 1 or below in m.outputs:
            break
        chain.append(m.instrs[below])
    if len(chain) < 2:
        return None
    shape = ins.shape
    S = _c_strides(shape)
    parts, axis = [], None
    for u in chain:
        vshape = m.instrs[u.operands[1]].shape
        if len(vshape) != len(shape) or u.attr("strides") != tuple(S):
            return None
        diff = [d for d in range(len(shape)) if vshape[d] != shape[d]]
        if len(diff) > 1:
            return None
        ax = diff[0] if diff else (axis if axis is not None else 0)
        if axis is None:
            axis = ax
        if ax != axis or u.attr("offset") % S[axis] or any(vshape[d] != shape[d] for d in
                                                           range(len(shape)) if d != axis):
            return None
        parts.append((u, u.attr("offset") // S[axis], vshape[axis]))
    parts.sort(key=lambda p: p[1])
    pos = 0
    for _, start, n in parts:
        if start != pos:
            return None
        pos += n
    return (parts, axis) if pos == shape[axis] else None


def _concat_chains(m: Module) -> set[int]:
    """ids of inner writes of concatenations (emitted together with their last write)."""
    skip: set[int] = set()
    for ins in reversed(m.instrs):
        if ins.opcode == "update" and id(ins) not in skip:
            found = _concat_parts(m, ins)
            if found:
                skip.update(id(u) for u, _, _ in found[0] if u is not ins)
    return skip


def _scalar_const(m: Module, i: int):
    """The value of a broadcast scalar constant at instruction i, else None."""
    ins = m.instrs[i]
    if ins.opcode == "broadcast" and m.instrs[ins.operands[0]].opcode == "constant":
        return m.instrs[ins.operands[0]].value
    return None


def _concatenate(e: Emitter, m: Module, found, vals: list) -> Value:
    """Whole slabs along one axis: `pad` when all but one slab are one constant, else
    `concatenate`."""
    parts, axis = found
    pieces = [u.operands[1] for u, _, _ in parts]
    consts = [_scalar_const(m, p) for p in pieces]
    computed = [k for k, c in enumerate(consts) if c is None]
    if len(computed) == 1 and len(pieces) > 1 and \
            len({np.asarray(c).tobytes() for c in consts if c is not None}) == 1:
        k = computed[0]
        x = vals[pieces[k]]
        value = next(c for c in consts if c is not None)
        low = sum(parts[j][2] for j in range(k))
        high = sum(parts[j][2] for j in range(k + 1, len(parts)))
        zeros = [0] * len(x.shape)
        lows, highs = list(zeros), list(zeros)
        lows[axis], highs[axis] = low, high
        return e.pad(x, e.constant(np.asarray(value, dtype=x.dtype)), lows, highs, zeros)
    xs = [vals[p] for p in pieces]
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return e.op("concatenate", xs, shape, xs[0].dtype, f"dimension = {axis} : i64")
