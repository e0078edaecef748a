"""Building blocks of the StableHLO export's elementwise rules, and the longer expansions:
inverse trigonometric and hyperbolic functions, bit-level float ops (copysign, nextafter,
frexp, ldexp, ...), and gcd/lcm as a `while` loop. `_export_elementwise` maps the op table
onto these.
"""

from __future__ import annotations

import math

import numpy as np

from lazyarray._export_emit import Emitter, UnsupportedOpError, Value

LN2 = math.log(2.0)


def kind_of(v: Value) -> str:
    return "b" if v.dtype.kind == "b" else v.dtype.kind


def unsupported(name: str, dtype) -> UnsupportedOpError:
    return UnsupportedOpError(
        f"StableHLO export: '{name}' on {np.dtype(dtype)} has no StableHLO equivalent "
        "(not supported by lazyarray.export)")


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype == np.complex64 else np.float64)


def _uint_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


# ---- small building blocks -----------------------------------------------------------------


def const(e: Emitter, value, like: Value, dtype=None) -> Value:
    return e.full(value, like, dtype)


def emit_and(e, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = e.ew("and", out, x)
    return out


def emit_or(e, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = e.ew("or", out, x)
    return out


def emit_not(e, x):
    return e.ew("not", x)


def emit_isnan(e, x):
    if x.dtype.kind == "c":
        return emit_or(e, emit_isnan(e, real_part(e, x)), emit_isnan(e, imag_part(e, x)))
    return e.cmp("NE", x, x)


def real_part(e, x):
    return e.op("real", [x], x.shape, _real_dtype(x.dtype))


def imag_part(e, x):
    return e.op("imag", [x], x.shape, _real_dtype(x.dtype))


def emit_complex(e, re, im):
    return e.op("complex", [re, im], re.shape, np.complex64 if re.dtype == np.float32
                else np.complex128)


def to_bool(e, x):
    return x if x.dtype.kind == "b" else e.cmp("NE", x, const(e, 0, x))


def emit_copysign(e, x, sign_of):
    """x with the sign bit of `sign_of` (bit exact, NaN included)."""
    ut = _uint_of(x.dtype)
    mask = 1 << (8 * x.dtype.itemsize - 1)
    bx, by = e.bitcast(x, ut), e.bitcast(sign_of, ut)
    bits = e.ew("or", e.ew("and", bx, const(e, mask - 1, bx)), e.ew("and", by, const(e, mask, by)))
    return e.bitcast(bits, x.dtype)


def emit_trunc(e, x):
    return e.select(e.cmp("LT", x, const(e, 0, x)), e.ew("ceil", x), e.ew("floor", x))


# ---- trigonometric and hyperbolic (real) -------------------------------------------------


def real_only(name, build):
    def rule(e, xs, out):
        if kind_of(xs[0]) != "f":
            raise unsupported(name, xs[0].dtype)
        return build(e, *xs)
    return rule


def _one_minus_x2_sqrt(e, x):
    one = const(e, 1, x)
    return e.ew("sqrt", e.ew("multiply", e.ew("subtract", one, x), e.ew("add", one, x)))


def emit_arcsin(e, x):
    return e.ew("atan2", x, _one_minus_x2_sqrt(e, x))


def emit_arccos(e, x):
    return e.ew("atan2", _one_minus_x2_sqrt(e, x), x)


def emit_arctan(e, x):
    return e.ew("atan2", x, const(e, 1, x))


def _large(x: Value) -> float:
    return 2.0 ** (np.finfo(x.dtype).nmant // 2 + 2)  # x*x + 1 == x*x beyond this


def emit_arcsinh(e, x):
    a = e.ew("abs", x)
    one = const(e, 1, x)
    a2 = e.ew("multiply", a, a)
    small = e.ew("log_plus_one", e.ew("add", a, e.ew("divide", a2, e.ew(
        "add", one, e.ew("sqrt", e.ew("add", one, a2))))))
    big = e.ew("add", e.ew("log", a), const(e, LN2, x))
    return emit_copysign(e, e.select(e.cmp("GT", a, const(e, _large(x), x)), big, small), x)


def emit_arccosh(e, x):
    t = e.ew("subtract", x, const(e, 1, x))
    small = e.ew("log_plus_one", e.ew("add", t, e.ew("sqrt", e.ew(
        "add", e.ew("add", t, t), e.ew("multiply", t, t)))))
    big = e.ew("add", e.ew("log", x), const(e, LN2, x))
    res = e.select(e.cmp("GT", x, const(e, _large(x), x)), big, small)
    return e.select(e.cmp("LT", x, const(e, 1, x)), const(e, np.nan, x), res)


def emit_arctanh(e, x):
    one = const(e, 1, x)
    ratio = e.ew("divide", e.ew("add", x, x), e.ew("subtract", one, x))
    return e.ew("multiply", const(e, 0.5, x), e.ew("log_plus_one", ratio))


def emit_sinh(e, x):
    # |x| < 1: (expm1(x) - expm1(-x)) / 2 keeps precision; else h = exp(|x|/2), h*h/2 - 1/(2h^2)
    half = const(e, 0.5, x)
    near = e.ew("multiply", half, e.ew("subtract", e.ew("exponential_minus_one", x),
                                       e.ew("exponential_minus_one", e.ew("negate", x))))
    a = e.ew("abs", x)
    h = e.ew("exponential", e.ew("multiply", a, half))
    far = e.ew("subtract", e.ew("multiply", e.ew("multiply", half, h), h),
               e.ew("divide", half, e.ew("multiply", h, h)))
    return e.select(e.cmp("LT", a, const(e, 1, x)), near, emit_copysign(e, far, x))


def emit_cosh(e, x):
    half = const(e, 0.5, x)
    h = e.ew("exponential", e.ew("multiply", e.ew("abs", x), half))
    return e.ew("add", e.ew("multiply", e.ew("multiply", half, h), h),
                e.ew("divide", half, e.ew("multiply", h, h)))


def hyperbolic_rule(real_rule, name):
    """sinh/cosh; complex from the real parts: sinh(x+iy) = sinh x cos y + i cosh x sin y,
    cosh(x+iy) = cosh x cos y + i sinh x sin y."""
    def rule(e, xs, out):
        z = xs[0]
        if kind_of(z) != "c":
            return real_rule(e, z)
        x, y = real_part(e, z), imag_part(e, z)
        sh, ch = emit_sinh(e, x), emit_cosh(e, x)
        first, second = (sh, ch) if name == "sinh" else (ch, sh)
        return emit_complex(e, e.ew("multiply", first, e.ew("cosine", y)),
                        e.ew("multiply", second, e.ew("sine", y)))
    return rule


def emit_hypot(e, x, y):
    ax, ay = e.ew("abs", x), e.ew("abs", y)
    big = e.select(e.cmp("GT", ax, ay), ax, ay)
    small = e.select(e.cmp("GT", ax, ay), ay, ax)
    zero, one = const(e, 0, x), const(e, 1, x)
    q = e.ew("divide", small, big)
    r = e.ew("multiply", big, e.ew("sqrt", e.ew("add", one, e.ew("multiply", q, q))))
    r = e.select(e.cmp("EQ", big, zero), zero, r)
    inf = const(e, np.inf, x)
    return e.select(emit_or(e, e.cmp("EQ", ax, inf), e.cmp("EQ", ay, inf)), inf, r)


# ---- classification and bit-level float ops ----------------------------------------------


def classify(test):
    def rule(e, xs, out):
        x = xs[0]
        k = kind_of(x)
        if k in "biu":
            return const(e, test == "isfinite", x, np.bool_)
        if k == "c":
            parts = [rule(e, [p], out) for p in (real_part(e, x), imag_part(e, x))]
            return emit_and(e, *parts) if test == "isfinite" else emit_or(e, *parts)
        if test == "isnan":
            return emit_isnan(e, x)
        if test == "isfinite":
            return e.op("is_finite", [x], x.shape, np.bool_)
        return e.cmp("EQ", e.ew("abs", x), const(e, np.inf, x))
    return rule


def emit_signbit(e, x):
    return e.cmp("LT", e.bitcast(x, np.dtype(f"i{x.dtype.itemsize}")), const(e, 0, x,
                                                                          f"i{x.dtype.itemsize}"))


def emit_nextafter(e, x, y):
    ut = _uint_of(x.dtype)
    bits = e.bitcast(x, ut)
    zero = const(e, 0, x)
    away = e.cmp("EQ", e.cmp("GT", y, x), e.cmp("GT", x, zero))  # magnitude grows
    one = const(e, 1, bits)
    stepped = e.bitcast(e.select(away, e.ew("add", bits, one), e.ew("subtract", bits, one)),
                        x.dtype)
    tiny = emit_copysign(e, e.bitcast(one, x.dtype), y)
    res = e.select(e.cmp("EQ", x, zero), tiny, stepped)
    res = e.select(e.cmp("EQ", x, y), y, res)
    return e.select(emit_or(e, emit_isnan(e, x), emit_isnan(e, y)), e.ew("add", x, y), res)


def emit_spacing(e, x):
    # NumPy's float16 loop steps toward +inf for every x; the others away from zero
    inf = const(e, np.inf, x)
    toward = inf if x.dtype == np.float16 else emit_copysign(e, inf, x)
    res = e.ew("subtract", emit_nextafter(e, x, toward), x)
    return e.select(e.cmp("EQ", e.ew("abs", x), const(e, np.inf, x)), const(e, np.nan, x), res)


def emit_modf_int(e, x):
    return emit_trunc(e, x)


def emit_modf_frac(e, x):
    frac = e.ew("subtract", x, emit_trunc(e, x))
    frac = e.select(e.cmp("EQ", e.ew("abs", x), const(e, np.inf, x)), const(e, 0, x), frac)
    return emit_copysign(e, frac, x)


def emit_frexp(e, x, part):
    fi = np.finfo(x.dtype)
    nmant, bias = fi.nmant, -fi.minexp + 1  # f64: 52, 1023
    ut = _uint_of(x.dtype)
    is_sub = emit_and(e, e.cmp("LT", e.ew("abs", x), const(e, fi.smallest_normal, x)),
                  e.cmp("NE", x, const(e, 0, x)))
    scaled = e.select(is_sub, e.ew("multiply", x, const(e, 2.0 ** (nmant + 2), x)), x)
    bits = e.bitcast(scaled, ut)
    emask = (1 << (8 * x.dtype.itemsize - 1 - nmant)) - 1
    special = emit_or(e, e.cmp("EQ", x, const(e, 0, x)), emit_not(e, e.op("is_finite", [x], x.shape,
                                                                np.bool_)))
    if part == "mantissa":
        m = e.ew("or", e.ew("and", bits, const(e, ~(emask << nmant) & ((1 << 8 * x.dtype.itemsize)
                                                                      - 1), bits)),
                 const(e, (bias - 1) << nmant, bits))
        return e.select(special, x, e.bitcast(m, x.dtype))
    shifted = e.ew("shift_right_logical", bits, const(e, nmant, bits))
    field = e.ew("and", shifted, const(e, emask, bits))
    exp = e.convert(field, np.int32)
    exp = e.ew("subtract", exp, const(e, bias - 1, exp))
    exp = e.select(is_sub, e.ew("subtract", exp, const(e, nmant + 2, exp)), exp)
    return e.select(special, const(e, 0, exp), exp)


def _pow2(e, n: Value, like: Value) -> Value:
    """2**n in like's float dtype, n already within the normal exponent range."""
    fi = np.finfo(like.dtype)
    ut = _uint_of(like.dtype)
    biased = e.convert(e.ew("add", n, const(e, -fi.minexp + 1, n)), ut)
    return e.bitcast(e.ew("shift_left", biased, const(e, fi.nmant, biased)), like.dtype)


def emit_ldexp(e, xs, out):
    """x * 2**n with one rounding: f16/f32 exactly in f64; f64 in musl scalbn's steps."""
    x, n = xs
    n = e.convert(n, np.int64)
    if x.dtype != np.float64:
        wide = e.convert(x, np.float64)
        n = e.op("clamp", [const(e, -400, n), n, const(e, 400, n)], n.shape, n.dtype)
        return e.convert(e.ew("multiply", wide, _pow2(e, n, wide)), x.dtype)
    y = x
    for _ in range(2):
        up = e.cmp("GT", n, const(e, 1023, n))
        y = e.select(up, e.ew("multiply", y, const(e, 2.0 ** 1023, y)), y)
        n = e.select(up, e.ew("subtract", n, const(e, 1023, n)), n)
        down = e.cmp("LT", n, const(e, -1022, n))
        y = e.select(down, e.ew("multiply", y, const(e, 2.0 ** -969, y)), y)
        n = e.select(down, e.ew("add", n, const(e, 969, n)), n)
    n = e.op("clamp", [const(e, -1022, n), n, const(e, 1023, n)], n.shape, n.dtype)
    return e.ew("multiply", y, _pow2(e, n, y))


def emit_heaviside(e, x, h0):
    zero = const(e, 0, x)
    res = e.select(e.cmp("LT", x, zero), zero, const(e, 1, x))
    res = e.select(e.cmp("EQ", x, zero), h0, res)
    return e.select(emit_isnan(e, x), x, res)


def _gcd_abs(e, a, b):
    """Euclid's algorithm on |a|, |b|, all elements at once: a `while` loop that runs until
    every remainder is 0."""
    if kind_of(a) == "i":
        a, b = e.ew("abs", a), e.ew("abs", b)
    scalar = ((), np.dtype(bool))

    def cond(x, y):
        zero = const(e, 0, y)
        busy = e.cmp("NE", y, zero)
        if not y.shape:
            return busy
        init = e.constant(np.asarray(False))
        reg = e.region([scalar, scalar], lambda p, q: e.ew("or", p, q))
        dims = ", ".join(map(str, range(len(y.shape))))
        return e.op("reduce", [busy, init], (), np.bool_, f"dimensions = array<i64: {dims}>",
                    reg)

    def body(x, y):
        zero = const(e, 0, y)
        busy = e.cmp("NE", y, zero)
        safe = e.select(busy, y, const(e, 1, y))
        return [e.select(busy, y, x), e.select(busy, e.ew("remainder", x, safe), zero)]

    types = [(a.shape, a.dtype), (b.shape, b.dtype)]
    regions = e.region(types, cond) + ", " + e.region(types, body)
    outs = e.op("while", [a, b], [a.shape, b.shape], [a.dtype, b.dtype], region=regions,
                nresults=2)
    return outs[0], a, b


def emit_gcd(e, xs, out):
    return _gcd_abs(e, *xs)[0]


def emit_lcm(e, xs, out):
    g, a, b = _gcd_abs(e, *xs)
    zero = const(e, 0, g)
    is_zero = e.cmp("EQ", g, zero)
    lcm = e.ew("multiply", e.ew("divide", a, e.select(is_zero, const(e, 1, g), g)), b)
    return e.select(is_zero, zero, lcm)
