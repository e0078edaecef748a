"""NumPy's elementwise semantics as StableHLO op sequences (for `lazyarray.export`).

One rule per op-table row: `RULES[name](e, xs, out_dtype) -> Value`. Operands arrive already
converted to NumPy's loop dtypes (lowering inserted the `convert`s), so a rule only has to
reproduce what NumPy's inner loop does: integer division by zero gives 0, floor division
rounds down, `maximum` propagates NaN (and compares complex numbers lexicographically),
`bitwise_count` counts the bits of |x|, and so on. Ops with no faithful StableHLO form for a
dtype raise `UnsupportedOpError` naming the op and the dtype.
"""

from __future__ import annotations

import math

import numpy as np

from lazyarray._export_emit import Emitter, UnsupportedOpError, Value

LN2 = math.log(2.0)
LN10 = math.log(10.0)


def _kind(v: Value) -> str:
    return "b" if v.dtype.kind == "b" else v.dtype.kind


def _unsupported(name: str, dtype) -> UnsupportedOpError:
    return UnsupportedOpError(
        f"StableHLO export: '{name}' on {np.dtype(dtype)} has no StableHLO equivalent "
        "(not supported by lazyarray.export)")


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype == np.complex64 else np.float64)


def _uint_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


# ---- small building blocks -----------------------------------------------------------------


def _c(e: Emitter, value, like: Value, dtype=None) -> Value:
    return e.full(value, like, dtype)


def _and(e, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = e.ew("and", out, x)
    return out


def _or(e, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = e.ew("or", out, x)
    return out


def _not(e, x):
    return e.ew("not", x)


def _isnan(e, x):
    if x.dtype.kind == "c":
        return _or(e, _isnan(e, _re(e, x)), _isnan(e, _im(e, x)))
    return e.cmp("NE", x, x)


def _re(e, x):
    return e.op("real", [x], x.shape, _real_dtype(x.dtype))


def _im(e, x):
    return e.op("imag", [x], x.shape, _real_dtype(x.dtype))


def _complex(e, re, im):
    return e.op("complex", [re, im], re.shape, np.complex64 if re.dtype == np.float32
                else np.complex128)


def _to_bool(e, x):
    return x if x.dtype.kind == "b" else e.cmp("NE", x, _c(e, 0, x))


def _copysign(e, x, sign_of):
    """x with the sign bit of `sign_of` (bit exact, NaN included)."""
    ut = _uint_of(x.dtype)
    mask = 1 << (8 * x.dtype.itemsize - 1)
    bx, by = e.bitcast(x, ut), e.bitcast(sign_of, ut)
    bits = e.ew("or", e.ew("and", bx, _c(e, mask - 1, bx)), e.ew("and", by, _c(e, mask, by)))
    return e.bitcast(bits, x.dtype)


def _trunc(e, x):
    return e.select(e.cmp("LT", x, _c(e, 0, x)), e.ew("ceil", x), e.ew("floor", x))


# ---- arithmetic --------------------------------------------------------------------------


def _add(e, xs, out):
    return e.ew("or" if _kind(xs[0]) == "b" else "add", *xs)


def _multiply(e, xs, out):
    return e.ew("and" if _kind(xs[0]) == "b" else "multiply", *xs)


def _int_division(e, a, b, want):
    """NumPy's integer //, % and fmod: division by zero gives 0; // rounds toward -inf and %
    takes the divisor's sign."""
    zero, one = _c(e, 0, a), _c(e, 1, a)
    by_zero = e.cmp("EQ", b, zero)
    safe = e.select(by_zero, one, b)
    q, r = e.ew("divide", a, safe), e.ew("remainder", a, safe)
    res = q if want == "floor_divide" else r
    if want != "fmod" and a.dtype.kind == "i":
        adjust = _and(e, e.cmp("NE", r, zero),
                      e.cmp("NE", e.cmp("LT", r, zero), e.cmp("LT", b, zero)))
        res = e.select(adjust, e.ew("subtract", q, one) if want == "floor_divide"
                       else e.ew("add", r, safe), res)
    return e.select(by_zero, zero, res)


def _float_divmod(e, a, b, want):
    """NumPy's npy_divmod for floats (floor_divide and remainder), step by step."""
    zero, one = _c(e, 0, a), _c(e, 1, a)
    mod = e.ew("remainder", a, b)  # C fmod
    by_zero = e.cmp("EQ", b, zero)
    quotient = e.ew("divide", a, b)
    div = e.ew("divide", e.ew("subtract", a, mod), b)
    mod_nz = e.cmp("NE", mod, zero)
    adjust = _and(e, mod_nz, e.cmp("NE", e.cmp("LT", b, zero), e.cmp("LT", mod, zero)))
    if want == "remainder":
        fixed = e.select(mod_nz, e.select(adjust, e.ew("add", mod, b), mod),
                         _copysign(e, zero, b))
        return e.select(by_zero, mod, fixed)
    div = e.select(adjust, e.ew("subtract", div, one), div)
    floor = e.ew("floor", div)
    half = _c(e, 0.5, a)
    floor = e.select(e.cmp("GT", e.ew("subtract", div, floor), half), e.ew("add", floor, one),
                     floor)
    floor = e.select(e.cmp("NE", div, zero), floor, _copysign(e, zero, quotient))
    return e.select(by_zero, quotient, floor)


def _division(want):
    def rule(e, xs, out):
        a, b = xs
        if _kind(a) in "iu":
            return _int_division(e, a, b, want)
        if want == "fmod":
            return e.ew("remainder", a, b)
        return _float_divmod(e, a, b, want)
    return rule


def _reciprocal(e, xs, out):
    x = xs[0]
    if _kind(x) in "fc":
        return e.ew("divide", _c(e, 1, x), x)
    # integer 1/x truncates: 1 for 1, -1 for -1, 0 otherwise (NumPy leaves 1/0 undefined)
    res = e.select(e.cmp("EQ", x, _c(e, 1, x)), _c(e, 1, x), _c(e, 0, x))
    if _kind(x) == "i":
        res = e.select(e.cmp("EQ", x, _c(e, -1, x)), _c(e, -1, x), res)
    return res


def _absolute(e, xs, out):
    x = xs[0]
    if _kind(x) in "bu":
        return x
    return e.op("abs", [x], x.shape, out)


def _sign(e, xs, out):
    x = xs[0]
    k = _kind(x)
    if k == "c":
        return e.ew("sign", x)
    if k == "u":
        return e.convert(e.cmp("NE", x, _c(e, 0, x)), x.dtype)
    zero = _c(e, 0, x)
    res = e.select(e.cmp("GT", x, zero), _c(e, 1, x),
                   e.select(e.cmp("LT", x, zero), _c(e, -1, x), zero))
    return e.select(_isnan(e, x), x, res) if k == "f" else res


def _conjugate(e, xs, out):
    x = xs[0]
    return _complex(e, _re(e, x), e.ew("negate", _im(e, x))) if _kind(x) == "c" else x


def _square(e, xs, out):
    return e.ew("multiply", xs[0], xs[0])


def _scale(factor_of):
    """x * constant, the constant rounded in x's dtype as NumPy's loop does (f16 via f32)."""
    def rule(e, xs, out):
        x = xs[0]
        wide = e.convert(x, np.float32) if x.dtype == np.float16 else x
        factor = factor_of(wide.dtype.type)
        res = e.ew("multiply", wide, _c(e, factor, wide))
        return e.convert(res, x.dtype)
    return rule


def _exp2(e, xs, out):
    x = xs[0]
    return e.ew("power", _c(e, 2, x), x)


def _log_base(base_ln):
    def rule(e, xs, out):
        x = xs[0]
        return e.ew("divide", e.ew("log", x), _c(e, base_ln, x))
    return rule


def _logaddexp(base2: bool):
    """npy_logaddexp(2): equal operands give x + log(2) (so inf + inf stays inf)."""
    def rule(e, xs, out):
        x, y = xs
        d = e.ew("subtract", x, y)
        neg_abs = e.ew("negate", e.ew("abs", d))
        if base2:
            tail = e.ew("divide", e.ew("log_plus_one", e.ew("power", _c(e, 2, x), neg_abs)),
                        _c(e, LN2, x))
            same = e.ew("add", x, _c(e, 1, x))
        else:
            tail = e.ew("log_plus_one", e.ew("exponential", neg_abs))
            same = e.ew("add", x, _c(e, LN2, x))
        larger = e.select(e.cmp("GT", d, _c(e, 0, x)), x, y)
        res = e.select(_isnan(e, d), d, e.ew("add", larger, tail))
        return e.select(e.cmp("EQ", x, y), same, res)
    return rule


# ---- trigonometric and hyperbolic (real) -------------------------------------------------


def _real_only(name, build):
    def rule(e, xs, out):
        if _kind(xs[0]) != "f":
            raise _unsupported(name, xs[0].dtype)
        return build(e, *xs)
    return rule


def _one_minus_x2_sqrt(e, x):
    one = _c(e, 1, x)
    return e.ew("sqrt", e.ew("multiply", e.ew("subtract", one, x), e.ew("add", one, x)))


def _arcsin(e, x):
    return e.ew("atan2", x, _one_minus_x2_sqrt(e, x))


def _arccos(e, x):
    return e.ew("atan2", _one_minus_x2_sqrt(e, x), x)


def _arctan(e, x):
    return e.ew("atan2", x, _c(e, 1, x))


def _large(x: Value) -> float:
    return 2.0 ** (np.finfo(x.dtype).nmant // 2 + 2)  # x*x + 1 == x*x beyond this


def _arcsinh(e, x):
    a = e.ew("abs", x)
    one = _c(e, 1, x)
    a2 = e.ew("multiply", a, a)
    small = e.ew("log_plus_one", e.ew("add", a, e.ew("divide", a2, e.ew(
        "add", one, e.ew("sqrt", e.ew("add", one, a2))))))
    big = e.ew("add", e.ew("log", a), _c(e, LN2, x))
    return _copysign(e, e.select(e.cmp("GT", a, _c(e, _large(x), x)), big, small), x)


def _arccosh(e, x):
    t = e.ew("subtract", x, _c(e, 1, x))
    small = e.ew("log_plus_one", e.ew("add", t, e.ew("sqrt", e.ew(
        "add", e.ew("add", t, t), e.ew("multiply", t, t)))))
    big = e.ew("add", e.ew("log", x), _c(e, LN2, x))
    res = e.select(e.cmp("GT", x, _c(e, _large(x), x)), big, small)
    return e.select(e.cmp("LT", x, _c(e, 1, x)), _c(e, np.nan, x), res)


def _arctanh(e, x):
    one = _c(e, 1, x)
    ratio = e.ew("divide", e.ew("add", x, x), e.ew("subtract", one, x))
    return e.ew("multiply", _c(e, 0.5, x), e.ew("log_plus_one", ratio))


def _sinh(e, x):
    # |x| < 1: (expm1(x) - expm1(-x)) / 2 keeps precision; else h = exp(|x|/2), h*h/2 - 1/(2h^2)
    half = _c(e, 0.5, x)
    near = e.ew("multiply", half, e.ew("subtract", e.ew("exponential_minus_one", x),
                                       e.ew("exponential_minus_one", e.ew("negate", x))))
    a = e.ew("abs", x)
    h = e.ew("exponential", e.ew("multiply", a, half))
    far = e.ew("subtract", e.ew("multiply", e.ew("multiply", half, h), h),
               e.ew("divide", half, e.ew("multiply", h, h)))
    return e.select(e.cmp("LT", a, _c(e, 1, x)), near, _copysign(e, far, x))


def _cosh(e, x):
    half = _c(e, 0.5, x)
    h = e.ew("exponential", e.ew("multiply", e.ew("abs", x), half))
    return e.ew("add", e.ew("multiply", e.ew("multiply", half, h), h),
                e.ew("divide", half, e.ew("multiply", h, h)))


def _hyperbolic(real_rule, name):
    """sinh/cosh; complex from the real parts: sinh(x+iy) = sinh x cos y + i cosh x sin y,
    cosh(x+iy) = cosh x cos y + i sinh x sin y."""
    def rule(e, xs, out):
        z = xs[0]
        if _kind(z) != "c":
            return real_rule(e, z)
        x, y = _re(e, z), _im(e, z)
        sh, ch = _sinh(e, x), _cosh(e, x)
        first, second = (sh, ch) if name == "sinh" else (ch, sh)
        return _complex(e, e.ew("multiply", first, e.ew("cosine", y)),
                        e.ew("multiply", second, e.ew("sine", y)))
    return rule


def _hypot(e, x, y):
    ax, ay = e.ew("abs", x), e.ew("abs", y)
    big = e.select(e.cmp("GT", ax, ay), ax, ay)
    small = e.select(e.cmp("GT", ax, ay), ay, ax)
    zero, one = _c(e, 0, x), _c(e, 1, x)
    q = e.ew("divide", small, big)
    r = e.ew("multiply", big, e.ew("sqrt", e.ew("add", one, e.ew("multiply", q, q))))
    r = e.select(e.cmp("EQ", big, zero), zero, r)
    inf = _c(e, np.inf, x)
    return e.select(_or(e, e.cmp("EQ", ax, inf), e.cmp("EQ", ay, inf)), inf, r)


# ---- rounding, min/max ---------------------------------------------------------------------


def _float_only(hlo):
    def rule(e, xs, out):
        return e.ew(hlo, xs[0]) if _kind(xs[0]) == "f" else xs[0]  # integer loops: identity
    return rule


def _trunc_rule(e, xs, out):
    return _trunc(e, xs[0]) if _kind(xs[0]) == "f" else xs[0]


def _rint(e, xs, out):
    x = xs[0]
    if _kind(x) == "c":
        return _complex(e, e.ew("round_nearest_even", _re(e, x)),
                        e.ew("round_nearest_even", _im(e, x)))
    return e.ew("round_nearest_even", x)


def _cge(e, op, a, b):
    """NumPy's complex ordering macros (CGE/CLE/CGT/CLT): real parts first, then imaginary."""
    ar, ai, br, bi = _re(e, a), _im(e, a), _re(e, b), _im(e, b)
    strict = "GT" if op in ("GE", "GT") else "LT"
    no_nan = _and(e, _not(e, _isnan(e, ai)), _not(e, _isnan(e, bi)))
    return _or(e, _and(e, e.cmp(strict, ar, br), no_nan),
               _and(e, e.cmp("EQ", ar, br), e.cmp(op, ai, bi)))


def _minmax(which: str, nan_from: str):
    """maximum/minimum (NaN from either operand wins) and fmax/fmin (NaN loses), as NumPy's
    `(a >= b || isnan(a)) ? a : b`."""
    op = "GE" if which == "max" else "LE"

    def rule(e, xs, out):
        a, b = xs
        k = _kind(a)
        if k == "b":
            return e.ew("or" if which == "max" else "and", a, b)
        if k in "iu":
            return e.ew("maximum" if which == "max" else "minimum", a, b)
        keep_a = _cge(e, op, a, b) if k == "c" else e.cmp(op, a, b)
        keep_a = _or(e, keep_a, _isnan(e, a) if nan_from == "a" else _isnan(e, b))
        return e.select(keep_a, a, b)
    return rule


_maximum, _minimum = _minmax("max", "a"), _minmax("min", "a")


def _clip(e, xs, out):
    x, lo, hi = xs
    return _minimum(e, [_maximum(e, [x, lo], out), hi], out)


def _compare(direction):
    def rule(e, xs, out):
        a, b = xs
        if _kind(a) != "c" or direction in ("EQ", "NE"):
            return e.cmp(direction, a, b)
        return _cge(e, direction, a, b)
    return rule


# ---- logical and bitwise -------------------------------------------------------------------


def _logical(hlo):
    def rule(e, xs, out):
        return e.ew(hlo, *(_to_bool(e, x) for x in xs))
    return rule


def _shift(direction):
    def rule(e, xs, out):
        a, _ = xs
        if direction == "left":
            return e.ew("shift_left", *xs)
        return e.ew("shift_right_arithmetic" if _kind(a) == "i" else "shift_right_logical", *xs)
    return rule


def _bitwise_count(e, xs, out):
    x = xs[0]
    if _kind(x) == "i":  # NumPy counts the bits of |x|
        x = e.ew("abs", x)
    return e.convert(e.ew("popcnt", x), out)


# ---- classification and bit-level float ops ----------------------------------------------


def _classify(test):
    def rule(e, xs, out):
        x = xs[0]
        k = _kind(x)
        if k in "biu":
            return _c(e, test == "isfinite", x, np.bool_)
        if k == "c":
            parts = [rule(e, [p], out) for p in (_re(e, x), _im(e, x))]
            return _and(e, *parts) if test == "isfinite" else _or(e, *parts)
        if test == "isnan":
            return _isnan(e, x)
        if test == "isfinite":
            return e.op("is_finite", [x], x.shape, np.bool_)
        return e.cmp("EQ", e.ew("abs", x), _c(e, np.inf, x))
    return rule


def _signbit(e, x):
    return e.cmp("LT", e.bitcast(x, np.dtype(f"i{x.dtype.itemsize}")), _c(e, 0, x,
                                                                          f"i{x.dtype.itemsize}"))


def _nextafter(e, x, y):
    ut = _uint_of(x.dtype)
    bits = e.bitcast(x, ut)
    zero = _c(e, 0, x)
    away = e.cmp("EQ", e.cmp("GT", y, x), e.cmp("GT", x, zero))  # magnitude grows
    one = _c(e, 1, bits)
    stepped = e.bitcast(e.select(away, e.ew("add", bits, one), e.ew("subtract", bits, one)),
                        x.dtype)
    tiny = _copysign(e, e.bitcast(one, x.dtype), y)
    res = e.select(e.cmp("EQ", x, zero), tiny, stepped)
    res = e.select(e.cmp("EQ", x, y), y, res)
    return e.select(_or(e, _isnan(e, x), _isnan(e, y)), e.ew("add", x, y), res)


def _spacing(e, x):
    # NumPy's float16 loop steps toward +inf for every x; the others away from zero
    inf = _c(e, np.inf, x)
    toward = inf if x.dtype == np.float16 else _copysign(e, inf, x)
    res = e.ew("subtract", _nextafter(e, x, toward), x)
    return e.select(e.cmp("EQ", e.ew("abs", x), _c(e, np.inf, x)), _c(e, np.nan, x), res)


def _modf_int(e, x):
    return _trunc(e, x)


def _modf_frac(e, x):
    frac = e.ew("subtract", x, _trunc(e, x))
    frac = e.select(e.cmp("EQ", e.ew("abs", x), _c(e, np.inf, x)), _c(e, 0, x), frac)
    return _copysign(e, frac, x)


def _frexp(e, x, part):
    fi = np.finfo(x.dtype)
    nmant, bias = fi.nmant, -fi.minexp + 1  # f64: 52, 1023
    ut = _uint_of(x.dtype)
    is_sub = _and(e, e.cmp("LT", e.ew("abs", x), _c(e, fi.smallest_normal, x)),
                  e.cmp("NE", x, _c(e, 0, x)))
    scaled = e.select(is_sub, e.ew("multiply", x, _c(e, 2.0 ** (nmant + 2), x)), x)
    bits = e.bitcast(scaled, ut)
    emask = (1 << (8 * x.dtype.itemsize - 1 - nmant)) - 1
    special = _or(e, e.cmp("EQ", x, _c(e, 0, x)), _not(e, e.op("is_finite", [x], x.shape,
                                                                np.bool_)))
    if part == "mantissa":
        m = e.ew("or", e.ew("and", bits, _c(e, ~(emask << nmant) & ((1 << 8 * x.dtype.itemsize)
                                                                      - 1), bits)),
                 _c(e, (bias - 1) << nmant, bits))
        return e.select(special, x, e.bitcast(m, x.dtype))
    field = e.ew("and", e.ew("shift_right_logical", bits, _c(e, nmant, bits)), _c(e, emask, bits))
    exp = e.convert(field, np.int32)
    exp = e.ew("subtract", exp, _c(e, bias - 1, exp))
    exp = e.select(is_sub, e.ew("subtract", exp, _c(e, nmant + 2, exp)), exp)
    return e.select(special, _c(e, 0, exp), exp)


def _pow2(e, n: Value, like: Value) -> Value:
    """2**n in like's float dtype, n already within the normal exponent range."""
    fi = np.finfo(like.dtype)
    ut = _uint_of(like.dtype)
    biased = e.convert(e.ew("add", n, _c(e, -fi.minexp + 1, n)), ut)
    return e.bitcast(e.ew("shift_left", biased, _c(e, fi.nmant, biased)), like.dtype)


def _ldexp(e, xs, out):
    """x * 2**n with one rounding: f16/f32 exactly in f64; f64 in musl scalbn's steps."""
    x, n = xs
    n = e.convert(n, np.int64)
    if x.dtype != np.float64:
        wide = e.convert(x, np.float64)
        n = e.op("clamp", [_c(e, -400, n), n, _c(e, 400, n)], n.shape, n.dtype)
        return e.convert(e.ew("multiply", wide, _pow2(e, n, wide)), x.dtype)
    y = x
    for _ in range(2):
        up = e.cmp("GT", n, _c(e, 1023, n))
        y = e.select(up, e.ew("multiply", y, _c(e, 2.0 ** 1023, y)), y)
        n = e.select(up, e.ew("subtract", n, _c(e, 1023, n)), n)
        down = e.cmp("LT", n, _c(e, -1022, n))
        y = e.select(down, e.ew("multiply", y, _c(e, 2.0 ** -969, y)), y)
        n = e.select(down, e.ew("add", n, _c(e, 969, n)), n)
    n = e.op("clamp", [_c(e, -1022, n), n, _c(e, 1023, n)], n.shape, n.dtype)
    return e.ew("multiply", y, _pow2(e, n, y))


def _heaviside(e, x, h0):
    zero = _c(e, 0, x)
    res = e.select(e.cmp("LT", x, zero), zero, _c(e, 1, x))
    res = e.select(e.cmp("EQ", x, zero), h0, res)
    return e.select(_isnan(e, x), x, res)


def _gcd_abs(e, a, b):
    """Euclid's algorithm on |a|, |b|, all elements at once: a `while` loop that runs until
    every remainder is 0."""
    if _kind(a) == "i":
        a, b = e.ew("abs", a), e.ew("abs", b)
    scalar = ((), np.dtype(bool))

    def cond(x, y):
        zero = _c(e, 0, y)
        busy = e.cmp("NE", y, zero)
        if not y.shape:
            return busy
        init = e.constant(np.asarray(False))
        reg = e.region([scalar, scalar], lambda p, q: e.ew("or", p, q))
        dims = ", ".join(map(str, range(len(y.shape))))
        return e.op("reduce", [busy, init], (), np.bool_, f"dimensions = array<i64: {dims}>",
                    reg)

    def body(x, y):
        zero = _c(e, 0, y)
        busy = e.cmp("NE", y, zero)
        safe = e.select(busy, y, _c(e, 1, y))
        return [e.select(busy, y, x), e.select(busy, e.ew("remainder", x, safe), zero)]

    types = [(a.shape, a.dtype), (b.shape, b.dtype)]
    regions = e.region(types, cond) + ", " + e.region(types, body)
    outs = e.op("while", [a, b], [a.shape, b.shape], [a.dtype, b.dtype], region=regions,
                nresults=2)
    return outs[0], a, b


def _gcd(e, xs, out):
    return _gcd_abs(e, *xs)[0]


def _lcm(e, xs, out):
    g, a, b = _gcd_abs(e, *xs)
    zero = _c(e, 0, g)
    is_zero = e.cmp("EQ", g, zero)
    lcm = e.ew("multiply", e.ew("divide", a, e.select(is_zero, _c(e, 1, g), g)), b)
    return e.select(is_zero, zero, lcm)


# ---- the table -----------------------------------------------------------------------------


def _direct(hlo, kinds="iufc"):
    """A StableHLO op with NumPy's meaning for the operand dtypes in `kinds`."""
    def rule(e, xs, out):
        if _kind(xs[0]) not in kinds:
            raise UnsupportedOpError(f"'{hlo}' on {xs[0].dtype}")
        return e.op(hlo, xs, xs[0].shape, out)
    return rule


def _float(build):
    def rule(e, xs, out):
        return build(e, *xs)
    return rule


def _identity(e, xs, out):
    return xs[0]


RULES = {
    "add": _add,
    "subtract": _direct("subtract"),
    "multiply": _multiply,
    "divide": _direct("divide", "fc"),
    "floor_divide": _division("floor_divide"),
    "remainder": _division("remainder"),
    "fmod": _division("fmod"),
    "power": _direct("power"),
    "float_power": _direct("power", "fc"),
    "negative": _direct("negate"),
    "positive": _identity,
    "absolute": _absolute,
    "fabs": _absolute,
    "sign": _sign,
    "conjugate": _conjugate,
    "reciprocal": _reciprocal,
    "square": _square,
    "sqrt": _direct("sqrt", "fc"),
    "cbrt": _direct("cbrt", "f"),
    "exp": _direct("exponential", "fc"),
    "exp2": _exp2,
    "expm1": _direct("exponential_minus_one", "fc"),
    "log": _direct("log", "fc"),
    "log2": _log_base(LN2),
    "log10": _log_base(LN10),
    "log1p": _direct("log_plus_one", "fc"),
    "logaddexp": _logaddexp(False),
    "logaddexp2": _logaddexp(True),
    "sin": _direct("sine", "fc"),
    "cos": _direct("cosine", "fc"),
    "tan": _direct("tan", "fc"),
    "arcsin": _real_only("arcsin", _arcsin),
    "arccos": _real_only("arccos", _arccos),
    "arctan": _real_only("arctan", _arctan),
    "arctan2": _direct("atan2", "f"),
    "hypot": _float(_hypot),
    "sinh": _hyperbolic(_sinh, "sinh"),
    "cosh": _hyperbolic(_cosh, "cosh"),
    "tanh": _direct("tanh", "fc"),
    "arcsinh": _real_only("arcsinh", _arcsinh),
    "arccosh": _real_only("arccosh", _arccosh),
    "arctanh": _real_only("arctanh", _arctanh),
    "deg2rad": _scale(lambda t: t(np.pi) / t(180.0)),
    "radians": _scale(lambda t: t(np.pi) / t(180.0)),
    "rad2deg": _scale(lambda t: t(180.0) / t(np.pi)),
    "degrees": _scale(lambda t: t(180.0) / t(np.pi)),
    "floor": _float_only("floor"),
    "ceil": _float_only("ceil"),
    "trunc": _trunc_rule,
    "rint": _rint,
    "maximum": _maximum,
    "minimum": _minimum,
    "fmax": _minmax("max", "b"),
    "fmin": _minmax("min", "b"),
    "copysign": _float(_copysign),
    "nextafter": _float(_nextafter),
    "spacing": _float(_spacing),
    "ldexp": _ldexp,
    "heaviside": _float(_heaviside),
    "gcd": _gcd,
    "lcm": _lcm,
    "equal": _compare("EQ"),
    "not_equal": _compare("NE"),
    "less": _compare("LT"),
    "less_equal": _compare("LE"),
    "greater": _compare("GT"),
    "greater_equal": _compare("GE"),
    "logical_and": _logical("and"),
    "logical_or": _logical("or"),
    "logical_xor": _logical("xor"),
    "logical_not": _logical("not"),
    "bitwise_and": _direct("and", "biu"),
    "bitwise_or": _direct("or", "biu"),
    "bitwise_xor": _direct("xor", "biu"),
    "invert": _direct("not", "biu"),
    "left_shift": _shift("left"),
    "right_shift": _shift("right"),
    "bitwise_count": _bitwise_count,
    "isnan": _classify("isnan"),
    "isinf": _classify("isinf"),
    "isfinite": _classify("isfinite"),
    "signbit": _float(_signbit),
    "modf_frac": _float(_modf_frac),
    "modf_int": _float(_modf_int),
    "frexp_mantissa": _float(lambda e, x: _frexp(e, x, "mantissa")),
    "frexp_exponent": _float(lambda e, x: _frexp(e, x, "exponent")),
    "clip": _clip,
}

# table rows with no rule at all (each rule may still refuse some dtypes)
UNSUPPORTED: dict[str, str] = {}


def lower_elementwise(e: Emitter, name: str, xs: list[Value], out: np.dtype) -> Value:
    """The StableHLO ops computing table op `name` on `xs` (NumPy loop dtypes) as `out`."""
    rule = RULES.get(name)
    if rule is None:
        why = UNSUPPORTED.get(name, "no rule")
        raise UnsupportedOpError(
            f"StableHLO export: elementwise op '{name}' is not supported ({why})")
    try:
        res = rule(e, xs, out)
    except UnsupportedOpError as err:
        if str(err).startswith("StableHLO export"):
            raise
        raise _unsupported(name, xs[0].dtype) from None
    if res.dtype != out:  # e.g. integer identity rules whose NumPy loop widens
        raise UnsupportedOpError(f"StableHLO export: '{name}' gave {res.dtype}, expected {out}")
    return res
