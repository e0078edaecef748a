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
    _and,
    _arccos,
    _arccosh,
    _arcsin,
    _arcsinh,
    _arctan,
    _arctanh,
    _c,
    _classify,
    _complex,
    _copysign,
    _cosh,
    _frexp,
    _gcd,
    _heaviside,
    _hyperbolic,
    _hypot,
    _im,
    _isnan,
    _kind,
    _lcm,
    _ldexp,
    _modf_frac,
    _modf_int,
    _nextafter,
    _not,
    _or,
    _re,
    _real_only,
    _signbit,
    _sinh,
    _spacing,
    _to_bool,
    _trunc,
    _unsupported,
)

LN10 = math.log(10.0)



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
