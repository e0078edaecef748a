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
from lazyarray._export_math import (
    LN2,
    emit_and,
    emit_arccos,
    emit_arccosh,
    emit_arcsin,
    emit_arcsinh,
    emit_arctan,
    emit_arctanh,
    const,
    classify,
    emit_complex,
    emit_copysign,
    emit_cosh,
    emit_frexp,
    emit_gcd,
    emit_heaviside,
    hyperbolic_rule,
    emit_hypot,
    imag_part,
    emit_isnan,
    kind_of,
    emit_lcm,
    emit_ldexp,
    emit_modf_frac,
    emit_modf_int,
    emit_nextafter,
    emit_not,
    emit_or,
    real_part,
    real_only,
    emit_signbit,
    emit_sinh,
    emit_spacing,
    to_bool,
    emit_trunc,
    unsupported,
)

LN10 = math.log(10.0)



# ---- arithmetic --------------------------------------------------------------------------


def _add(e, xs, out):
    return e.ew("or" if kind_of(xs[0]) == "b" else "add", *xs)


def _multiply(e, xs, out):
    return e.ew("and" if kind_of(xs[0]) == "b" else "multiply", *xs)


def _int_division(e, a, b, want):
    """NumPy's integer //, % and fmod: division by zero gives 0; // rounds toward -inf and %
    takes the divisor's sign."""
    zero, one = const(e, 0, a), const(e, 1, a)
    by_zero = e.cmp("EQ", b, zero)
    safe = e.select(by_zero, one, b)
    q, r = e.ew("divide", a, safe), e.ew("remainder", a, safe)
    res = q if want == "floor_divide" else r
    if want != "fmod" and a.dtype.kind == "i":
        adjust = emit_and(e, e.cmp("NE", r, zero),
                      e.cmp("NE", e.cmp("LT", r, zero), e.cmp("LT", b, zero)))
        res = e.select(adjust, e.ew("subtract", q, one) if want == "floor_divide"
                       else e.ew("add", r, safe), res)
    return e.select(by_zero, zero, res)


def _float_divmod(e, a, b, want):
    """NumPy's npy_divmod for floats (floor_divide and remainder), step by step."""
    zero, one = const(e, 0, a), const(e, 1, a)
    mod = e.ew("remainder", a, b)  # C fmod
    by_zero = e.cmp("EQ", b, zero)
    quotient = e.ew("divide", a, b)
    div = e.ew("divide", e.ew("subtract", a, mod), b)
    mod_nz = e.cmp("NE", mod, zero)
    adjust = emit_and(e, mod_nz, e.cmp("NE", e.cmp("LT", b, zero), e.cmp("LT", mod, zero)))
    if want == "remainder":
        fixed = e.select(mod_nz, e.select(adjust, e.ew("add", mod, b), mod),
                         emit_copysign(e, zero, b))
        return e.select(by_zero, mod, fixed)
    div = e.select(adjust, e.ew("subtract", div, one), div)
    floor = e.ew("floor", div)
    half = const(e, 0.5, a)
    floor = e.select(e.cmp("GT", e.ew("subtract", div, floor), half), e.ew("add", floor, one),
                     floor)
    floor = e.select(e.cmp("NE", div, zero), floor, emit_copysign(e, zero, quotient))
    return e.select(by_zero, quotient, floor)


def _division(want):
    def rule(e, xs, out):
        a, b = xs
        if kind_of(a) in "iu":
            return _int_division(e, a, b, want)
        if want == "fmod":
            return e.ew("remainder", a, b)
        return _float_divmod(e, a, b, want)
    return rule


def _reciprocal(e, xs, out):
    x = xs[0]
    if kind_of(x) in "fc":
        return e.ew("divide", const(e, 1, x), x)
    # integer 1/x truncates: 1 for 1, -1 for -1, 0 otherwise (NumPy leaves 1/0 undefined)
    res = e.select(e.cmp("EQ", x, const(e, 1, x)), const(e, 1, x), const(e, 0, x))
    if kind_of(x) == "i":
        res = e.select(e.cmp("EQ", x, const(e, -1, x)), const(e, -1, x), res)
    return res


def _absolute(e, xs, out):
    x = xs[0]
    if kind_of(x) in "bu":
        return x
    return e.op("abs", [x], x.shape, out)


def _sign(e, xs, out):
    x = xs[0]
    k = kind_of(x)
    if k == "c":
        return e.ew("sign", x)
    if k == "u":
        return e.convert(e.cmp("NE", x, const(e, 0, x)), x.dtype)
    zero = const(e, 0, x)
    res = e.select(e.cmp("GT", x, zero), const(e, 1, x),
                   e.select(e.cmp("LT", x, zero), const(e, -1, x), zero))
    return e.select(emit_isnan(e, x), x, res) if k == "f" else res


def _conjugate(e, xs, out):
    x = xs[0]
    if kind_of(x) != "c":
        return x
    return emit_complex(e, real_part(e, x), e.ew("negate", imag_part(e, x)))


def _square(e, xs, out):
    return e.ew("multiply", xs[0], xs[0])


def _scale(factor_of):
    """x * constant, the constant rounded in x's dtype as NumPy's loop does (f16 via f32)."""
    def rule(e, xs, out):
        x = xs[0]
        wide = e.convert(x, np.float32) if x.dtype == np.float16 else x
        factor = factor_of(wide.dtype.type)
        res = e.ew("multiply", wide, const(e, factor, wide))
        return e.convert(res, x.dtype)
    return rule


def _exp2(e, xs, out):
    x = xs[0]
    return e.ew("power", const(e, 2, x), x)


def _log_base(base_ln):
    def rule(e, xs, out):
        x = xs[0]
        return e.ew("divide", e.ew("log", x), const(e, base_ln, x))
    return rule


def _logaddexp(base2: bool):
    """npy_logaddexp(2): equal operands give x + log(2) (so inf + inf stays inf)."""
    def rule(e, xs, out):
        x, y = xs
        d = e.ew("subtract", x, y)
        neg_abs = e.ew("negate", e.ew("abs", d))
        if base2:
            tail = e.ew("divide", e.ew("log_plus_one", e.ew("power", const(e, 2, x), neg_abs)),
                        const(e, LN2, x))
            same = e.ew("add", x, const(e, 1, x))
        else:
            tail = e.ew("log_plus_one", e.ew("exponential", neg_abs))
            same = e.ew("add", x, const(e, LN2, x))
        larger = e.select(e.cmp("GT", d, const(e, 0, x)), x, y)
        res = e.select(emit_isnan(e, d), d, e.ew("add", larger, tail))
        return e.select(e.cmp("EQ", x, y), same, res)
    return rule


# ---- rounding, min/max ---------------------------------------------------------------------


def _float_only(hlo):
    def rule(e, xs, out):
        return e.ew(hlo, xs[0]) if kind_of(xs[0]) == "f" else xs[0]  # integer loops: identity
    return rule


def _trunc_rule(e, xs, out):
    return emit_trunc(e, xs[0]) if kind_of(xs[0]) == "f" else xs[0]


def _rint(e, xs, out):
    x = xs[0]
    if kind_of(x) == "c":
        return emit_complex(e, e.ew("round_nearest_even", real_part(e, x)),
                        e.ew("round_nearest_even", imag_part(e, x)))
    return e.ew("round_nearest_even", x)


def _cge(e, op, a, b):
    """NumPy's complex ordering macros (CGE/CLE/CGT/CLT): real parts first, then imaginary."""
    ar, ai, br, bi = real_part(e, a), imag_part(e, a), real_part(e, b), imag_part(e, b)
    strict = "GT" if op in ("GE", "GT") else "LT"
    no_nan = emit_and(e, emit_not(e, emit_isnan(e, ai)), emit_not(e, emit_isnan(e, bi)))
    return emit_or(e, emit_and(e, e.cmp(strict, ar, br), no_nan),
               emit_and(e, e.cmp("EQ", ar, br), e.cmp(op, ai, bi)))


def _minmax(which: str, nan_from: str):
    """maximum/minimum (NaN from either operand wins) and fmax/fmin (NaN loses), as NumPy's
    `(a >= b || isnan(a)) ? a : b`."""
    op = "GE" if which == "max" else "LE"

    def rule(e, xs, out):
        a, b = xs
        k = kind_of(a)
        if k == "b":
            return e.ew("or" if which == "max" else "and", a, b)
        if k in "iu":
            return e.ew("maximum" if which == "max" else "minimum", a, b)
        keep_a = _cge(e, op, a, b) if k == "c" else e.cmp(op, a, b)
        keep_a = emit_or(e, keep_a, emit_isnan(e, a) if nan_from == "a" else emit_isnan(e, b))
        return e.select(keep_a, a, b)
    return rule


_maximum, _minimum = _minmax("max", "a"), _minmax("min", "a")


def _clip(e, xs, out):
    x, lo, hi = xs
    return _minimum(e, [_maximum(e, [x, lo], out), hi], out)


def _compare(direction):
    def rule(e, xs, out):
        a, b = xs
        if kind_of(a) != "c" or direction in ("EQ", "NE"):
            return e.cmp(direction, a, b)
        return _cge(e, direction, a, b)
    return rule


# ---- logical and bitwise -------------------------------------------------------------------


def _logical(hlo):
    def rule(e, xs, out):
        return e.ew(hlo, *(to_bool(e, x) for x in xs))
    return rule


def _shift(direction):
    def rule(e, xs, out):
        a, _ = xs
        if direction == "left":
            return e.ew("shift_left", *xs)
        return e.ew("shift_right_arithmetic" if kind_of(a) == "i" else "shift_right_logical", *xs)
    return rule


def _bitwise_count(e, xs, out):
    x = xs[0]
    if kind_of(x) == "i":  # NumPy counts the bits of |x|
        x = e.ew("abs", x)
    return e.convert(e.ew("popcnt", x), out)


# ---- the table -----------------------------------------------------------------------------


def _direct(hlo, kinds="iufc"):
    """A StableHLO op with NumPy's meaning for the operand dtypes in `kinds`."""
    def rule(e, xs, out):
        if kind_of(xs[0]) not in kinds:
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
    "imag": _direct("imag", kinds="fc"),
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
    "arcsin": real_only("arcsin", emit_arcsin),
    "arccos": real_only("arccos", emit_arccos),
    "arctan": real_only("arctan", emit_arctan),
    "arctan2": _direct("atan2", "f"),
    "hypot": _float(emit_hypot),
    "sinh": hyperbolic_rule(emit_sinh, "sinh"),
    "cosh": hyperbolic_rule(emit_cosh, "cosh"),
    "tanh": _direct("tanh", "fc"),
    "arcsinh": real_only("arcsinh", emit_arcsinh),
    "arccosh": real_only("arccosh", emit_arccosh),
    "arctanh": real_only("arctanh", emit_arctanh),
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
    "copysign": _float(emit_copysign),
    "nextafter": _float(emit_nextafter),
    "spacing": _float(emit_spacing),
    "ldexp": emit_ldexp,
    "heaviside": _float(emit_heaviside),
    "gcd": emit_gcd,
    "lcm": emit_lcm,
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
    "isnan": classify("isnan"),
    "isinf": classify("isinf"),
    "isfinite": classify("isfinite"),
    "signbit": _float(emit_signbit),
    "modf_frac": _float(emit_modf_frac),
    "modf_int": _float(emit_modf_int),
    "frexp_mantissa": _float(lambda e, x: emit_frexp(e, x, "mantissa")),
    "frexp_exponent": _float(lambda e, x: emit_frexp(e, x, "exponent")),
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
        raise unsupported(name, xs[0].dtype) from None
    if res.dtype != out:  # e.g. integer identity rules whose NumPy loop widens
        raise UnsupportedOpError(f"StableHLO export: '{name}' gave {res.dtype}, expected {out}")
    return res
