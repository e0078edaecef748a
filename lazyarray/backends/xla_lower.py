"""An optimized HLO module as one JAX function (`jax.lax` / `jax.numpy` calls), for `xla.py`.

`build(module)` returns a `Lowered`: a Python function `fn(args, consts, positions)` that JAX
traces once per module structure and XLA compiles (the module's constants are its arguments
`consts`, and where its slices read and its updates write are `positions`, so a loop that
changes a scalar or moves along rows compiles nothing), and the names of the
instructions that run on the host inside the function (`fallbacks`).

Operands arrive in NumPy's loop dtypes (lowering inserted the `convert`s), so each rule only
reproduces what NumPy's inner loop does where `jax.numpy` differs: integer division and
remainder by zero give 0, shifts by the bit width or more, `reciprocal` of integers, the
sign of NaN. An operation whose values JAX cannot reproduce (a library call: sort, LAPACK,
FFT; complex math beyond `+ - *` and comparisons; max/min and arg-reductions of complex
numbers) runs on the host through `jax.pure_callback` with the reference interpreter's NumPy
call: a counted fallback (`xla_fallbacks`), never a different answer. A module computing
`spacing` or `nextafter` (subnormal results, which XLA flushes) runs on the host as a whole.
A value-dependent error NumPy raises (an index out of bounds in a gather, an integer to a
negative power) is a *check*: an extra boolean output; when it is set, `xla.execute` reruns
the module on the host interpreter, which raises NumPy's error (or, under the "strict"
subnormal mode, gives NumPy's values; subnormal inputs are found before the program runs,
`xla.holds_subnormal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lazyarray import stats
from lazyarray.backends import xla_f64dot
from lazyarray.ir.hlo import Instr, Module
from lazyarray.ir.interpret import evaluate
from lazyarray.ops.table import OPS

# ---- elementwise rules ------------------------------------------------------------------------


def _int_div(f):
    """NumPy's integer //, % and fmod: a zero divisor gives 0 (XLA gives -1 or the dividend)."""
    def rule(xs, out):
        a, b = xs
        if a.dtype.kind not in "iu":
            return f(a, b)
        zero = b == 0
        safe = jnp.where(zero, jnp.ones((), b.dtype), b)
        return jnp.where(zero, jnp.zeros((), a.dtype), f(a, safe))
    return rule


def _shift(left: bool):
    """NumPy's shifts: an amount at least the bit width (or negative) gives 0 (left), or
    the sign fill (right)."""
    def rule(xs, out):
        a, b = xs
        bits = a.dtype.itemsize * 8
        big = (b < 0) | (b >= bits) if b.dtype.kind == "i" else b >= bits
        amount = jnp.where(big, jnp.zeros((), b.dtype), b).astype(a.dtype)
        if left:
            return jnp.where(big, jnp.zeros((), a.dtype), lax.shift_left(a, amount))
        shifted = (lax.shift_right_arithmetic if a.dtype.kind == "i"
                   else lax.shift_right_logical)(a, amount)
        fill = jnp.where(a < 0, -jnp.ones((), a.dtype), jnp.zeros((), a.dtype)) \
            if a.dtype.kind == "i" else jnp.zeros((), a.dtype)
        return jnp.where(big, fill, shifted)
    return rule


def _reciprocal(xs, out):
    """Integers: 1 for 1, -1 for -1, else 0, and 1/0 what NumPy's loop gives on x86 (the
    smallest int32/int64, 0 for narrower or unsigned types)."""
    x = xs[0]
    if x.dtype.kind in "fc":
        return 1 / x
    one = jnp.ones((), x.dtype)
    res = jnp.where(x == one, one, jnp.zeros((), x.dtype))
    if x.dtype.kind == "i":
        res = jnp.where(x == -one, -one, res)
        if x.dtype.itemsize >= 4:
            res = jnp.where(x == 0, np.iinfo(x.dtype).min, res)
    return res


def _int_power(xs, out):
    """Integer powers by squaring over every bit of the exponent (wrapping as NumPy's loop
    does); a negative exponent is a check (NumPy raises)."""
    a, b = xs
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        return jnp.power(a, b)
    e = b.astype(a.dtype)
    bits = a.dtype.itemsize * 8

    def step(_, carry):
        acc, base, e = carry
        acc = jnp.where((e & 1) == 1, acc * base, acc)
        return acc, base * base, lax.shift_right_logical(e, jnp.ones((), e.dtype))

    acc = jnp.ones(jnp.broadcast_shapes(a.shape, e.shape), a.dtype)
    return lax.fori_loop(0, bits, step, (acc, jnp.broadcast_to(a, acc.shape),
                                         jnp.broadcast_to(e, acc.shape)))[0]


def _sign(xs, out):
    x = xs[0]
    if x.dtype.kind == "u":
        return (x != 0).astype(x.dtype)
    if x.dtype.kind == "c":
        return jnp.sign(x)
    res = jnp.sign(x)
    return jnp.where(jnp.isnan(x), x, res) if x.dtype.kind == "f" else res


def _bitwise_count(xs, out):
    x = xs[0]
    if x.dtype.kind == "i":
        x = jnp.abs(x).astype(np.dtype(f"u{x.dtype.itemsize}"))
    return jnp.bitwise_count(x)


def _square(xs, out):
    """x * x, as `jax.numpy` writes x ** 2 (XLA's square of a complex number differs)."""
    return xs[0] * xs[0] if xs[0].dtype.kind in "iuf" else jnp.square(xs[0])


def _ufunc(name):
    f = getattr(jnp, name)
    return lambda xs, out: f(*xs)


def _half(name, k):
    f = getattr(jnp, name)
    return lambda xs, out: f(*xs)[k]


RULES = {name: _ufunc(name) for name in OPS if hasattr(jnp, name)}
RULES.update({
    "floor_divide": _int_div(jnp.floor_divide), "remainder": _int_div(jnp.remainder),
    "fmod": _int_div(jnp.fmod), "left_shift": _shift(True), "right_shift": _shift(False),
    "reciprocal": _reciprocal, "sign": _sign, "bitwise_count": _bitwise_count,
    "power": _int_power, "square": _square, "imag": lambda xs, out: jnp.imag(xs[0]),
    "modf_frac": _half("modf", 0), "modf_int": _half("modf", 1),
    "frexp_mantissa": _half("frexp", 0), "frexp_exponent": _half("frexp", 1),
    "clip": lambda xs, out: jnp.minimum(jnp.maximum(xs[0], xs[1]), xs[2]),
})

# complex operations that XLA computes as NumPy does (exact, or the same formula); the rest
# (division, square, sqrt, exp, log, trigonometry, power, sign, max/min) differ at
# infinities and NaN
COMPLEX_EXACT = frozenset({
    "add", "subtract", "multiply", "negative", "positive", "conjugate", "imag",
    "equal", "not_equal", "isnan", "isinf", "isfinite", "logical_and", "logical_or",
    "logical_xor", "logical_not"})
DIVISIONS = frozenset({"divide", "floor_divide", "remainder", "fmod", "arctan2"})
# rows whose float results are about subnormals (XLA flushes them): a module with one runs
# on the host interpreter as a whole
HOST_MODULE = frozenset({"nextafter", "spacing"})
# rows computed on float16 operands in float16 itself; all others in float32, rounded
# back, as NumPy's float16 loops do
HALF_NATIVE = frozenset({"nextafter", "spacing", "frexp_mantissa", "frexp_exponent", "ldexp",
                         "signbit", "isnan", "isinf", "isfinite", "copysign", "negative",
                         "absolute", "fabs", "positive"})


# ---- the module -------------------------------------------------------------------------------

def host_module(module: Module) -> bool:
    """Does `module` run on the host interpreter as a whole (a counted fallback)?"""
    return any(i.opcode in HOST_MODULE for i in module.instrs)


@dataclass
class Lowered:
    fn: object  # fn(args, consts, positions) -> (outputs, any check set or None): for
    # jax.jit; consts: the module's constant values in order, positions: `positions(module)`
    # (a module of the same structure passes its own)
    fallbacks: list[str] = field(default_factory=list)  # instructions run on the host


def structure(module: Module) -> tuple:
    """The module's structure with constant values and positions masked: modules equal under
    it lower to the same function (constants and positions are arguments)."""
    return (tuple((i.opcode, i.operands, i.shape, i.dtype.str, _placeless(i, module),
                   i.value.dtype.str if i.opcode == "constant" else None)
                  for i in module.instrs), module.outputs)


# ---- positions as arguments -------------------------------------------------------------------
# Where a slice reads and where an update writes are arguments of the program (an int64
# vector, `positions`), not part of its structure: a loop over rows, columns or windows of
# the same extent runs one compiled program (`lax.dynamic_slice`, `dynamic_update_slice`).

def _dynamic_slices(ins: Instr) -> tuple | None:
    """((count, step) per axis) of a slice with positive steps and no empty axis, else None
    (it stays static)."""
    out = []
    for a, b, c in ins.attr("slices"):
        if c <= 0 or b < 0 or a < 0:
            return None
        n = len(range(a, b, c))
        if n == 0:
            return None
        out.append((n, c))
    return tuple(out)


def _region(ins: Instr, module: Module) -> tuple:
    """(kind, shape of the region, starts) of an update: ("box", (steps, order, counts)) with
    the base coordinates of its first element, or ("scatter", strides) with its offset."""
    base = module.instrs[ins.operands[0]].shape
    vshape = module.instrs[ins.operands[1]].shape
    offset, strides = ins.attr("offset"), tuple(ins.attr("strides"))
    found = box(offset, strides, vshape, base) if 0 not in vshape else None
    if found is None:
        return ("scatter", strides), (offset,)
    starts, steps, order, counts = found
    return ("box", (steps, order, counts)), starts


def _placeless(ins: Instr, module: Module) -> tuple:
    if ins.opcode == "slice":
        dyn = _dynamic_slices(ins)
        if dyn is not None:
            return (("extent", dyn),)
    elif ins.opcode == "update":
        region, _ = _region(ins, module)
        return tuple((k, v) for k, v in ins.attrs if k != "offset") + (("region", region),)
    return ins.attrs


def positions(module: Module) -> np.ndarray:
    """The module's positions, in instruction order (the program's third argument)."""
    out: list[int] = []
    for ins in module.instrs:
        if ins.opcode == "slice" and _dynamic_slices(ins) is not None:
            out.extend(a for a, _, _ in ins.attr("slices"))
        elif ins.opcode == "update":
            out.extend(_region(ins, module)[1])
    return np.asarray(out, dtype=np.int64)


def host_only(ins: Instr, module: Module) -> bool:
    """Does `ins` run on the host (a counted fallback) rather than in XLA?"""
    op = ins.opcode
    if op == "custom-call":
        return True
    if op in OPS:
        kinds = {module.instrs[o].dtype.kind for o in ins.operands}
        return op not in RULES or "c" in kinds and op not in COMPLEX_EXACT
    if op in ("argreduce", "reduce", "scan") and ins.attr("to_apply") in (
            "max", "min", "maximum", "minimum") and \
            module.instrs[ins.operands[0]].dtype.kind == "c":
        return True
    return False


def _on_host(ins: Instr, xs: list):
    """`ins` computed by the reference interpreter on the host, inside the XLA function."""
    shape = jax.ShapeDtypeStruct(ins.shape, ins.dtype)

    def run(*vals):
        stats.bump("xla_fallbacks")
        with np.errstate(all="ignore"):
            out = evaluate(ins, [np.asarray(v) for v in vals], {}, ())
        return np.asarray(out, dtype=ins.dtype).reshape(ins.shape)

    return jax.pure_callback(run, shape, *xs, vmap_method="sequential")


# strict subnormals: a zero result that NumPy would give as a subnormal (XLA flushes it)
UNDERFLOWS = {
    "add": lambda r, a, b: (r == 0) & (a != -b),
    "subtract": lambda r, a, b: (r == 0) & (a != b),
    "multiply": lambda r, a, b: (r == 0) & (a != 0) & (b != 0),
    "divide": lambda r, a, b: (r == 0) & (a != 0) & jnp.isfinite(b),
}


def _elementwise(ins: Instr, xs: list, module: Module, strict=False) -> tuple:
    """An elementwise row in XLA (`host_only` sent the others to the host): its value and
    its check (None, or flags per element, any of which reruns the module on the host)."""
    op = ins.opcode
    check = None
    if op == "power" and xs[1].dtype.kind == "i" and ins.dtype.kind in "iu":
        check = xs[1] < 0  # NumPy: "Integers to negative integer powers ..."
    if op not in HALF_NATIVE and any(x.dtype == np.float16 for x in xs):
        xs = [x.astype(np.float32) if x.dtype == np.float16 else x for x in xs]
    if op in DIVISIONS and xs[1].dtype.kind in "fc" and _broadcast_of(module, ins.operands[1]):
        # XLA rewrites x / broadcast(c) as x * broadcast(1 / c): not NumPy's rounding
        xs = [xs[0], lax.optimization_barrier(xs[1])]
    out = RULES[op](xs, ins.dtype)
    if strict and op in UNDERFLOWS and ins.dtype.kind == "f":
        check = UNDERFLOWS[op](out, *xs)
    return jnp.asarray(out).astype(ins.dtype), check


def _broadcast_of(module: Module, k: int, depth: int = 0) -> bool:
    """Is instruction `k` a broadcast, or computed elementwise or by movement from
    broadcasts and constants only (XLA's simplifier moves such broadcasts outward)?"""
    ins = module.instrs[k]
    if ins.opcode == "broadcast":
        return True
    if depth > 16 or not ins.operands or not (
            ins.opcode in OPS or ins.opcode in ("convert", "reshape", "transpose", "slice")):
        return False
    return all(module.instrs[o].opcode == "constant" or _broadcast_of(module, o, depth + 1)
               for o in ins.operands)


def _convert(x, dtype: np.dtype):
    if dtype.kind == "b":
        return x != 0
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = jnp.real(x)
    if x.dtype.kind == "f" and dtype.kind in "iu":
        return _float_to_int(x, dtype)
    return lax.convert_element_type(x, dtype)


def _float_to_int(x, dtype: np.dtype):
    """NumPy's float -> integer cast on x86 (what the CPU backend computes): truncation;
    NaN, infinities and values out of range give the integer "indefinite" value of the
    conversion through int32/int64 (XLA would saturate)."""
    wide = np.dtype(np.int64) if dtype.itemsize == 8 else np.dtype(np.int32)
    if dtype == np.uint64:
        wide = np.dtype(np.int64)
    info = np.iinfo(wide)
    t = jnp.trunc(x)
    if dtype == np.uint64:  # in range of uint64: through subtraction of 2**63 above it
        big = t >= 2.0 ** 63
        low = lax.convert_element_type(jnp.where(big, t - 2.0 ** 63, t), np.int64)
        ok = (t > -(2.0 ** 63) - 1) & (t < 2.0 ** 64)
        res = jnp.where(big, lax.convert_element_type(low, np.uint64) + np.uint64(2 ** 63),
                        lax.convert_element_type(low, np.uint64))
        return jnp.where(ok, res, np.uint64(2 ** 63))
    ok = (t >= float(info.min)) & (t <= float(info.max)) & ~jnp.isnan(t)
    if x.dtype == np.float32 and wide == np.int64:
        ok &= t < float(2 ** 63)
    res = jnp.where(ok, lax.convert_element_type(jnp.where(ok, t, 0), wide), info.min)
    return lax.convert_element_type(res, dtype)


def _reduce(ins: Instr, x):
    name, dims, dtype = ins.attr("to_apply"), tuple(ins.attr("dimensions")), ins.dtype
    if x.dtype != dtype:
        x = _convert(x, dtype) if dtype.kind != "b" else x != 0
    if dtype.kind == "b":
        return (jnp.any if name in ("add", "or", "maximum") else jnp.all)(x, axis=dims)
    f = {"add": jnp.sum, "multiply": jnp.prod, "maximum": jnp.max, "minimum": jnp.min,
         "or": jnp.any, "and": jnp.all}[name]
    return f(x, axis=dims).astype(dtype)


def _identity(ins: Instr, dtype: np.dtype):
    """The value a reduction's padding rows take: they change nothing."""
    name = ins.attr("to_apply")
    if dtype.kind == "b":
        return name in ("multiply", "and", "minimum")
    if name in ("add", "or"):
        return np.zeros((), dtype)
    if name in ("multiply", "and"):
        return np.ones((), dtype)
    big = np.inf if dtype.kind in "fc" else np.iinfo(dtype).max
    small = -np.inf if dtype.kind in "fc" else np.iinfo(dtype).min
    return np.asarray(small if name == "maximum" else big, dtype)


def _as_shape(x, shape: tuple, dtype: np.dtype):
    """A parameter whose device array is padded past its rows, or short of a bucket's: its
    first rows, or padded to them (`xla_buckets`); one held in float32 for a float64
    parameter (``xla_float64``): widened."""
    if x.dtype != dtype:
        x = x.astype(dtype)
    have = jnp.shape(x)
    if have == shape:
        return x
    if have[0] > shape[0]:
        return lax.slice_in_dim(x, 0, shape[0])
    return jnp.pad(x, [(0, shape[0] - have[0])] + [(0, 0)] * (len(shape) - 1))


def _scan(ins: Instr, x):
    name, dtype = ins.attr("to_apply"), ins.dtype
    if x.ndim == 0:
        return x.astype(dtype)
    if x.dtype != dtype:
        x = _convert(x, dtype)
    if dtype.kind == "b":
        i = x.astype(np.int8)
        f = lax.cummax if name in ("add", "or", "maximum") else lax.cummin
        return f(i, axis=x.ndim - 1) != 0
    if name == "add":
        return jnp.cumsum(x, axis=-1, dtype=dtype)
    if name == "multiply":
        return jnp.cumprod(x, axis=-1, dtype=dtype)
    f = lax.cummax if name == "maximum" else lax.cummin
    if dtype.kind == "f":  # NaN-propagating, as np.maximum.accumulate
        nan = lax.cummax(jnp.isnan(x).astype(np.int8), axis=x.ndim - 1) != 0
        return jnp.where(nan, jnp.nan, f(x, axis=x.ndim - 1)).astype(dtype)
    return f(x, axis=x.ndim - 1)


def _gather(ins: Instr, x, idx: list):
    axes, offset_dims, shape = ins.attr("axes"), ins.attr("offset_dims"), ins.shape
    rank = len(shape)
    key, m, bad = [], 0, None
    for a in range(x.ndim):
        if a in axes:
            i = idx[axes.index(a)]
            if i.dtype == np.uint64:
                i = i.astype(np.int64)
            n = x.shape[a]
            out = (i < -n) | (i >= n) if i.dtype.kind == "i" else i >= n
            b = jnp.any(out)
            bad = b if bad is None else bad | b
            key.append(i)
        else:
            placed = [1] * rank
            placed[offset_dims[m]] = x.shape[a]
            key.append(jnp.arange(x.shape[a]).reshape(placed))
            m += 1
    if 0 in x.shape or 0 in shape:
        return jnp.zeros(shape, ins.dtype), bad
    out = x[tuple(key)]
    if out.shape != tuple(shape):
        out = jnp.broadcast_to(out, shape)
    return out, bad


def _flat_region(offset: int, strides: tuple, vshape: tuple) -> np.ndarray:
    """The flat (C order) indices offset + sum(i_k * strides_k) of a region of shape vshape."""
    flat = np.full(vshape, offset, np.int64)
    for d, s in enumerate(strides):
        placed = [1] * len(vshape)
        placed[d] = vshape[d]
        flat = flat + np.arange(vshape[d], dtype=np.int64).reshape(placed) * s
    return flat


def _update(ins: Instr, module: Module, base, value, starts: list):
    """`base` with the elements at offset + sum(i_k * strides_k) (flat, C order) replaced;
    `starts`: the region's position (`_region`), traced."""
    vshape = tuple(value.shape)
    if 0 in vshape:
        return base
    (kind, shape), _ = _region(ins, module)
    if kind == "box":
        steps, order, counts = shape
        v = jnp.transpose(value, order) if order != tuple(range(len(order))) else value
        v = v.reshape(counts)
        if any(s != 1 for s in steps):  # the window the strided box spans, updated
            window = [(n - 1) * s + 1 for n, s in zip(counts, steps, strict=True)]
            w = lax.dynamic_slice(base, starts, window)
            v = w.at[tuple(slice(None, None, s) for s in steps)].set(v)
        return lax.dynamic_update_slice(base, v, starts)
    flat = starts[0] + _flat_region(0, shape, vshape)
    out = base.reshape(-1).at[flat.reshape(-1)].set(value.reshape(-1),
                                                   indices_are_sorted=False,
                                                   unique_indices=True)
    return out.reshape(base.shape)


def _slice(ins: Instr, x, starts: list):
    """A slice with positive steps at traced `starts`: the window it spans, then its steps."""
    extent = _dynamic_slices(ins)
    window = [(n - 1) * c + 1 for n, c in extent]
    w = lax.dynamic_slice(x, starts, window)
    if any(c != 1 for _, c in extent):
        w = w[tuple(slice(None, None, c) for _, c in extent)]
    return w


def box(offset: int, strides: tuple, vshape: tuple, shape: tuple) -> tuple | None:
    """The region offset + sum(i_k * strides_k) of a C-order array of `shape` as a strided
    box, from the numbers alone (no index arrays: a region may hold millions of elements):
    (starts, steps, order, counts) per base axis, `order` the value's axes permuted into the
    base's axis order; None when it is not a box with positive steps (a scatter)."""
    n = len(shape)
    if not n:
        return None
    inner = [1] * n  # elements per step along each base axis
    for j in range(n - 2, -1, -1):
        inner[j] = inner[j + 1] * shape[j + 1]
    starts = [int(c) for c in np.unravel_index(offset, shape)]
    steps, counts, along = [1] * n, [1] * n, [None] * n
    for k, (m, s) in enumerate(zip(vshape, strides, strict=True)):
        if m == 1:
            continue
        j = next((j for j in range(n) if shape[j] > 1 and s > 0 and s % inner[j] == 0), None)
        if j is None or along[j] is not None or starts[j] + s // inner[j] * (m - 1) >= shape[j]:
            return None
        along[j], steps[j], counts[j] = k, s // inner[j], m
    used = [k for k in along if k is not None]
    order = tuple(used + [k for k in range(len(vshape)) if k not in used])
    return tuple(starts), tuple(steps), order, tuple(counts)


def _movement(ins: Instr, x):
    op = ins.opcode
    if op == "reshape":
        return jnp.reshape(x, ins.shape)
    if op == "transpose":
        return jnp.transpose(x, ins.attr("permutation"))
    if op == "slice":
        return x[tuple(slice(a, None if b < 0 else b, c) for a, b, c in ins.attr("slices"))]
    dims = ins.attr("dimensions")
    placed = [1] * len(ins.shape)
    for d, n in zip(dims, x.shape, strict=True):
        placed[d] = n
    return jnp.broadcast_to(jnp.reshape(x, placed), ins.shape)


def _dot(ins: Instr, a, b):
    if ins.dtype.kind == "b":
        return jnp.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
    if xla_f64dot.ENABLED and xla_f64dot.usable(a, b):  # (a TPU: float64 is emulated)
        return xla_f64dot.dot(a, b, _native_dot)
    return _native_dot(a, b).astype(ins.dtype)


def _native_dot(a, b):
    return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def build(module: Module, subnormals: str = "check", padded: frozenset = frozenset()
          ) -> Lowered:
    """The JAX function computing `module` (see the module docstring). `subnormals`:
    "strict", a zero result of + - * / that NumPy would give as a subnormal is a check;
    "check" and "flush": no checks of subnormals inside the program (inputs holding one are
    found before it runs, `xla.holds_subnormal`). `padded`: the instructions whose leading
    axis is a size bucket's (`xla_buckets`): the rows in use, ``n``, are the last position,
    and reductions over that axis and checks read those rows only."""
    strict = subnormals == "strict"
    fallbacks = [f"%{k} {i.opcode}" for k, i in enumerate(module.instrs) if host_only(i, module)]

    def fn(args, cs, pos):
        vals: list = [None] * len(module.instrs)
        flags: list = []
        c = j = 0
        rows = pos[pos.shape[0] - 1] if padded else None

        def in_use(shape):  # the rows in use of a padded value of `shape`
            return lax.broadcasted_iota(np.int64, shape, 0) < rows

        for k, ins in enumerate(module.instrs):
            op = ins.opcode
            xs = [vals[o] for o in ins.operands]
            check = None
            if op == "parameter":  # (subnormal inputs are found before: `holds_subnormal`)
                v = _as_shape(args[ins.attr("index")], ins.shape, ins.dtype)
            elif op == "constant":
                v = cs[c]
                c += 1
            elif host_only(ins, module):
                v = _on_host(ins, xs)
            elif op in OPS:
                v, check = _elementwise(ins, xs, module, strict)
            elif op == "convert":
                v = _convert(xs[0], ins.dtype)
            elif op == "select":
                v = jnp.where(*xs)
            elif op == "slice" and _dynamic_slices(ins) is not None:
                n = len(ins.attr("slices"))
                v, j = _slice(ins, xs[0], [pos[j + d] for d in range(n)]), j + n
            elif op in ("reshape", "transpose", "slice", "broadcast"):
                v = _movement(ins, xs[0])
            elif op == "reduce":
                x = xs[0]
                if ins.operands[0] in padded and 0 in ins.attr("dimensions"):
                    x = jnp.where(in_use(x.shape), x, _identity(ins, x.dtype))
                v = _reduce(ins, x)
            elif op == "scan":
                v = _scan(ins, xs[0])
            elif op == "argreduce":
                f = jnp.argmax if ins.attr("to_apply") == "max" else jnp.argmin
                v = f(xs[0], axis=-1).astype(ins.dtype)
            elif op == "gather":
                v, check = _gather(ins, xs[0], xs[1:])
            elif op == "update":
                n = len(_region(ins, module)[1])
                v = _update(ins, module, xs[0], xs[1].astype(ins.dtype),
                            [pos[j + d] for d in range(n)])
                j += n
            elif op == "dot":
                v = _dot(ins, *xs)
            else:
                raise NotImplementedError(f"xla: no lowering for {op}")
            if check is not None:
                if k in padded and jnp.ndim(check):
                    check = check & in_use(jnp.shape(check))
                flags.append(jnp.any(check))
            vals[k] = jnp.asarray(v)
        outs = tuple(vals[o] for o in module.outputs)
        return outs, (jnp.any(jnp.stack(flags)) if flags else None)

    return Lowered(fn, fallbacks)
