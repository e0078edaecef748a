"""THE op table: one row per elementwise primitive and per reduction.

Everything else reads these rows: the namespace (`_ufuncs.py`), dtype rules (NumPy's own
`ufunc.resolve_dtypes` on `ref`), the reference interpreter (`ref`), HLO names (`hlo`),
fusion cost (`cost`), the Numba CPU scalar templates (`template`; default `np.<name>(...)`;
`f8` on float64 operands),
the CUDA templates (`cuda`) and the traits the code generators and the trace tier ask about
(`traits`). StableHLO's rules (`_export_elementwise.RULES`) are the one per-op rendering kept
apart: they are code over the emitter, not text.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


class Cost(enum.IntEnum):
    CHEAP = 0  # may be recomputed in every consumer (XLA: always duplicable)
    EXPENSIVE = 1  # transcendental or division-like: never duplicated, never broadcast-pushed


@dataclass(frozen=True, slots=True)
class OpDef:
    name: str  # internal name (NumPy ufunc name where one exists)
    hlo: str  # opcode printed in HLO text
    nin: int
    ref: Callable  # NumPy reference: dtype oracle (when a ufunc) and interpreter kernel
    cost: Cost = Cost.CHEAP
    template: str | None = None  # Numba scalar expression; None -> "np.<name>({0}, ...)"
    direction: str | None = None  # compare direction (EQ, NE, LT, LE, GT, GE)
    output: int = 0  # which output of `dtype_ufunc` this row computes (two-output ufuncs)
    dtype_ufunc: np.ufunc | None = None  # dtype oracle when `ref` is not a ufunc itself
    # CUDA scalar templates by the first operand's kind: "b" bool, "i" integers (and bool),
    # "f" floats, "c" complex (only where exact), "*" any real kind; none: the op does not
    # run on CUDA (its fusion runs on the host)
    cuda: tuple[tuple[str, str], ...] = ()
    traits: frozenset[str] = frozenset()  # of TRAITS
    # Numba scalar template where the operands and the result are all float64 (None:
    # `template`): Python's operator, one IEEE rounding as NumPy's loop, which Numba types
    # without its ufunc machinery (`error_model="numpy"`: x / 0 is inf, no exception)
    f8: str | None = None

    def cuda_template(self, kind: str) -> str | None:
        """The CUDA template for a first operand of dtype kind `kind`, or None."""
        forms = dict(self.cuda)
        if kind == "c":
            return forms.get("c")
        for k in ("b", "i", "*") if kind == "b" else ("i", "*") if kind in "iu" else ("f", "*"):
            if k in forms:
                return forms[k]
        return None

    @property
    def is_ufunc(self) -> bool:
        return isinstance(self.ref, np.ufunc)


C, E = Cost.CHEAP, Cost.EXPENSIVE

TRAITS = {
    "complex": "the CPU kernels compile it on complex operands (exact, or NumPy's formula)",
    "no_uint64": "Numba computes it through int64 or float: uint64 runs on the interpreter",
    "fp_quiet": "never raises a floating-point flag (exact, or NaN in gives NaN out quietly)",
    "nonnegative": "a float result is >= 0 or NaN whatever the operands",
    "trace": "the trace tier records it (float64 in, float64 out, one NumPy loop)",
    "numpy_loop": "CPU kernels call NumPy's own loop for it on float32/float64 (ops/loops.py):"
                  " NumPy's math picks its code by the CPU, so only its loop gives its bits",
}


def _ew(name, hlo, cost=C, template=None, direction=None, ref=None, nin=None, half=None,
        traits="", cuda=None, f8=None):
    ref = getattr(np, name) if ref is None else ref
    ufunc, output = half if half else (None, 0)
    assert set(traits.split()) <= set(TRAITS), traits
    forms = {"*": cuda} if isinstance(cuda, str) else cuda or {}
    return OpDef(name, hlo, ref.nin if nin is None else nin, ref, cost, template, direction,
                 output, ufunc, tuple(forms.items()), frozenset(traits.split()), f8)


def _modf_frac(x):
    return np.modf(x)[0]


def _modf_int(x):
    return np.modf(x)[1]


def _frexp_mantissa(x):
    return np.frexp(x)[0]


def _frexp_exponent(x):
    return np.frexp(x)[1]


# fmt: off
ELEMENTWISE: tuple[OpDef, ...] = (
    #    numpy name            hlo opcode               cost  template / extras
    _ew("add",                 "add",
        traits="complex trace", cuda={"*": "({0} + {1})", "c": "({0} + {1})", "b": "({0} or {1})"},
        f8="({0} + {1})"),
    _ew("subtract",            "subtract",
        traits="complex trace", cuda={"*": "({0} - {1})", "c": "({0} - {1})"}, f8="({0} - {1})"),
    _ew("multiply",            "multiply",
        traits="complex trace",
        cuda={"*": "({0} * {1})", "c": "({0} * {1})", "b": "({0} and {1})"}, f8="({0} * {1})"),
    _ew("divide",              "divide",                E,
        traits="trace", cuda={"f": "_c.divide({0}, {1})"}, f8="({0} / {1})"),
    _ew("floor_divide",        "floor-divide",          E, "_h.floor_divide({0}, {1})",
        cuda={"*": "_c.floor_divide_f({0}, {1})", "i": "_c.floor_divide_i({0}, {1})"}),
    _ew("remainder",           "modulo",                E, "_h.remainder({0}, {1})",
        cuda={"*": "_c.remainder_f({0}, {1})", "i": "_c.remainder_i({0}, {1})"}),
    _ew("fmod",                "remainder",             E, "_h.fmod({0}, {1})",
        cuda={"*": "_m.fmod({0}, {1})", "i": "_c.fmod_i({0}, {1})"}),
    _ew("power",               "power",                 E, "_h.power({0}, {1})",
        traits="numpy_loop trace", cuda={"f": "_m.pow({0}, {1})"}),
    _ew("float_power",         "float-power",           E, traits="numpy_loop"),
    _ew("negative",            "negate",
        traits="complex fp_quiet trace", cuda={"*": "(-{0})", "c": "(-{0})"}),
    _ew("positive",            "positive",
        traits="complex fp_quiet trace", cuda={"*": "(+{0})", "c": "(+{0})"}),
    _ew("absolute",            "abs",
        traits="fp_quiet nonnegative trace", cuda={"*": "abs({0})", "b": "{0}"}),
    _ew("fabs",                "fabs",
        traits="fp_quiet nonnegative trace", cuda={"f": "_m.fabs({0})"}),
    _ew("sign",                "sign",                  C, "_h.sign({0})",
        traits="fp_quiet trace", cuda="_c.sign({0})"),
    _ew("conjugate",           "conjugate",
        traits="complex fp_quiet", cuda={"*": "{0}.conjugate()", "c": "{0}.conjugate()"}),
    # the imaginary part (complex -> its real dtype); `.imag` builds it only for complex arrays
    _ew("imag",                "imag",                  C, "{0}.imag", ref=np.imag, nin=1,
        half=(np.absolute, 0),
        traits="complex", cuda={"*": "{0}.imag", "c": "{0}.imag"}),
    _ew("reciprocal",          "reciprocal",            E, traits="no_uint64 trace"),
    _ew("square",              "square", traits="nonnegative trace", cuda="({0} * {0})"),
    _ew("sqrt",                "sqrt",                  E,
        traits="nonnegative trace", cuda={"f": "_m.sqrt({0})"}),
    _ew("cbrt",                "cbrt",                  E, "_h.cbrt({0})", traits="numpy_loop trace"),
    _ew("exp",                 "exponential",           E, "_h.exp({0})",
        traits="numpy_loop nonnegative trace", cuda={"f": "_m.exp({0})"}),
    _ew("exp2",                "exponential2",          E, "_h.exp2({0})",
        traits="numpy_loop nonnegative trace", cuda={"f": "_m.pow(2.0, {0})"}),
    _ew("expm1",               "exponential-minus-one", E, "_h.expm1({0})",
        traits="numpy_loop trace", cuda={"f": "_m.expm1({0})"}),
    _ew("log",                 "log",                   E, "_h.log({0})",
        traits="numpy_loop trace", cuda={"f": "_m.log({0})"}),
    _ew("log2",                "log2",                  E, "_h.log2({0})",
        traits="numpy_loop trace", cuda={"f": "_m.log2({0})"}),
    _ew("log10",               "log10",                 E, "_h.log10({0})",
        traits="numpy_loop trace", cuda={"f": "_m.log10({0})"}),
    _ew("log1p",               "log-plus-one",          E, "_h.log1p({0})",
        traits="numpy_loop trace", cuda={"f": "_m.log1p({0})"}),
    _ew("logaddexp",           "logaddexp",             E, traits="numpy_loop"),
    _ew("logaddexp2",          "logaddexp2",            E, traits="numpy_loop"),
    _ew("sin",                 "sine",                  E, "_h.sin({0})",
        traits="numpy_loop trace", cuda={"f": "_m.sin({0})"}),
    _ew("cos",                 "cosine",                E, "_h.cos({0})",
        traits="numpy_loop trace", cuda={"f": "_m.cos({0})"}),
    _ew("tan",                 "tan",                   E, "_h.tan({0})",
        traits="numpy_loop trace", cuda={"f": "_m.tan({0})"}),
    _ew("arcsin",              "asin",                  E, "_h.arcsin({0})",
        traits="numpy_loop trace", cuda={"f": "_m.asin({0})"}),
    _ew("arccos",              "acos",                  E, "_h.arccos({0})",
        traits="numpy_loop trace", cuda={"f": "_m.acos({0})"}),
    _ew("arctan",              "atan",                  E, "_h.arctan({0})",
        traits="numpy_loop trace", cuda={"f": "_m.atan({0})"}),
    _ew("arctan2",             "atan2",                 E, "_h.arctan2({0}, {1})",
        traits="numpy_loop trace", cuda={"f": "_m.atan2({0}, {1})"}),
    _ew("hypot",               "hypot",                 E,
        traits="numpy_loop trace", cuda={"f": "_m.hypot({0}, {1})"}),
    _ew("sinh",                "sinh",                  E, "_h.sinh({0})",
        traits="numpy_loop trace", cuda={"f": "_m.sinh({0})"}),
    _ew("cosh",                "cosh",                  E, "_h.cosh({0})",
        traits="numpy_loop nonnegative trace", cuda={"f": "_m.cosh({0})"}),
    _ew("tanh",                "tanh",                  E, "_h.tanh({0})",
        traits="numpy_loop trace", cuda={"f": "_m.tanh({0})"}),
    _ew("arcsinh",             "asinh",                 E, "_h.arcsinh({0})",
        traits="numpy_loop trace", cuda={"f": "_m.asinh({0})"}),
    _ew("arccosh",             "acosh",                 E, "_h.arccosh({0})",
        traits="numpy_loop trace", cuda={"f": "_m.acosh({0})"}),
    _ew("arctanh",             "atanh",                 E, "_h.arctanh({0})",
        traits="numpy_loop trace", cuda={"f": "_m.atanh({0})"}),
    _ew("deg2rad",             "deg2rad", traits="trace", cuda={"f": "({0} * (math.pi / 180.0))"}),
    _ew("rad2deg",             "rad2deg", traits="trace", cuda={"f": "({0} * (180.0 / math.pi))"}),
    _ew("radians",             "radians", cuda={"f": "({0} * (math.pi / 180.0))"}),
    _ew("degrees",             "degrees", cuda={"f": "({0} * (180.0 / math.pi))"}),
    _ew("floor",               "floor",
        traits="fp_quiet trace", cuda={"*": "_m.floor({0})", "i": "{0}"}),
    _ew("ceil",                "ceil",
        traits="fp_quiet trace", cuda={"*": "_m.ceil({0})", "i": "{0}"}),
    _ew("trunc",               "trunc",
        traits="fp_quiet trace", cuda={"*": "_m.trunc({0})", "i": "{0}"}),
    _ew("rint",                "round-nearest-even", traits="fp_quiet trace"),
    _ew("maximum",             "maximum",               C, "_h.maximum({0}, {1})",
        traits="fp_quiet trace", cuda={"*": "_c.maximum({0}, {1})", "b": "({0} or {1})"}),
    _ew("minimum",             "minimum",               C, "_h.minimum({0}, {1})",
        traits="fp_quiet trace", cuda={"*": "_c.minimum({0}, {1})", "b": "({0} and {1})"}),
    _ew("fmax",                "fmax", traits="fp_quiet trace", cuda={"f": "_c.fmax({0}, {1})"}),
    _ew("fmin",                "fmin", traits="fp_quiet trace", cuda={"f": "_c.fmin({0}, {1})"}),
    _ew("copysign",            "copysign",
        traits="fp_quiet trace", cuda={"f": "_m.copysign({0}, {1})"}),
    _ew("nextafter",           "nextafter"),
    _ew("spacing",             "spacing",               C, "_h.spacing({0})"),
    _ew("ldexp",               "ldexp"),
    _ew("heaviside",           "heaviside",             C, "_h.heaviside({0}, {1})"),
    _ew("gcd",                 "gcd",                   E, traits="no_uint64"),
    _ew("lcm",                 "lcm",                   E, traits="no_uint64"),
    _ew("equal",               "compare",               C, None, "EQ",
        traits="complex", cuda={"*": "({0} == {1})", "c": "({0} == {1})"}),
    _ew("not_equal",           "compare",               C, None, "NE",
        traits="complex", cuda={"*": "({0} != {1})", "c": "({0} != {1})"}),
    _ew("less",                "compare",               C, None, "LT", cuda="({0} < {1})"),
    _ew("less_equal",          "compare",               C, None, "LE", cuda="({0} <= {1})"),
    _ew("greater",             "compare",               C, None, "GT", cuda="({0} > {1})"),
    _ew("greater_equal",       "compare",               C, None, "GE", cuda="({0} >= {1})"),
    _ew("logical_and",         "logical-and", cuda="(({0} != 0) and ({1} != 0))"),
    _ew("logical_or",          "logical-or", cuda="(({0} != 0) or ({1} != 0))"),
    _ew("logical_xor",         "logical-xor", cuda="(({0} != 0) != ({1} != 0))"),
    _ew("logical_not",         "logical-not", cuda="({0} == 0)"),
    _ew("bitwise_and",         "and", cuda={"i": "({0} & {1})"}),
    _ew("bitwise_or",          "or", cuda={"i": "({0} | {1})"}),
    _ew("bitwise_xor",         "xor", cuda={"i": "({0} ^ {1})"}),
    _ew("invert",              "not", cuda={"i": "(~{0})", "b": "({0} == 0)"}),
    _ew("left_shift",          "shift-left",            C, "_h.left_shift({0}, {1})",
        cuda={"i": "_c.left_shift({0}, {1}, {bits})"}),
    _ew("right_shift",         "shift-right",           C, "_h.right_shift({0}, {1})",
        cuda={"i": "_c.right_shift({0}, {1}, {bits})"}),
    _ew("bitwise_count",       "popcnt",                C, "_h.bitwise_count({0})"),
    _ew("isnan",               "is-nan",
        traits="complex fp_quiet", cuda={"*": "({0} != {0})", "c": "({0} != {0})"}),
    _ew("isinf",               "is-inf", traits="complex fp_quiet", cuda="_c.isinf({0})"),
    _ew("isfinite",            "is-finite", traits="complex fp_quiet", cuda="_c.isfinite({0})"),
    _ew("signbit",             "signbit",
        traits="fp_quiet", cuda={"f": "(_m.copysign(1.0, {0}) < 0)"}),
    # the two halves of NumPy's two-output ufuncs (divmod is floor_divide + remainder)
    _ew("modf_frac",           "modf-fraction",         C, "_h.modf_frac({0})", ref=_modf_frac, nin=1, half=(np.modf, 0)),
    _ew("modf_int",            "modf-integral",         C, "_h.modf_int({0})", ref=_modf_int, nin=1, half=(np.modf, 1)),
    _ew("frexp_mantissa",      "frexp-mantissa",        C, "_h.frexp_mantissa({0})", ref=_frexp_mantissa, nin=1, half=(np.frexp, 0)),
    _ew("frexp_exponent",      "frexp-exponent",        C, "_h.frexp_exponent({0})", ref=_frexp_exponent, nin=1, half=(np.frexp, 1)),
    # np.clip is a 3-input ufunc in NumPy 2 (NaN-propagating like maximum/minimum)
    _ew("clip",                "clamp",                 C, "_h.minimum(_h.maximum({0}, {1}), {2})",
        ref=np._core.umath.clip,
        traits="fp_quiet", cuda="_c.minimum(_c.maximum({0}, {1}), {2})"),
)
# fmt: on

# NumPy ufuncs whose halves are rows above: name -> internal rows of its outputs
MULTI_OUTPUT = {
    "divmod": ("floor_divide", "remainder"),
    "modf": ("modf_frac", "modf_int"),
    "frexp": ("frexp_mantissa", "frexp_exponent"),
}

OPS: dict[str, OpDef] = {op.name: op for op in ELEMENTWISE}


def having(trait: str) -> frozenset[str]:
    """The names of the rows with `trait`."""
    return frozenset(op.name for op in ELEMENTWISE if trait in op.traits)
BY_HLO: dict[tuple[str, str | None], OpDef] = {(op.hlo, op.direction): op for op in ELEMENTWISE}


@dataclass(frozen=True, slots=True)
class ReduceDef:
    name: str  # HLO to_apply= name
    ufunc: np.ufunc  # the NumPy ufunc whose .reduce this is (interpreter, identity)
    combine: str  # Numba template combining accumulator {0} and value {1}


# fmt: off
REDUCTIONS: dict[str, ReduceDef] = {r.name: r for r in (
    ReduceDef("add",      np.add,         "({0} + {1})"),
    ReduceDef("multiply", np.multiply,    "({0} * {1})"),
    # NaN-propagating like np.maximum: keep acc if it is NaN or >= v, else take v
    ReduceDef("maximum",  np.maximum,     "({0} if ({0} >= {1} or {0} != {0}) else {1})"),
    ReduceDef("minimum",  np.minimum,     "({0} if ({0} <= {1} or {0} != {0}) else {1})"),
    ReduceDef("or",       np.logical_or,  "({0} or {1})"),
    ReduceDef("and",      np.logical_and, "({0} and {1})"),
)}
# fmt: on


def reduce_init(name: str, dtype: np.dtype):
    """Start value of a reduction in `dtype` (the identity, or the dtype's extreme for max/min)."""
    if name in ("add", "or"):
        return dtype.type(0)
    if name in ("multiply", "and"):
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(-np.inf if name == "maximum" else np.inf)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if name == "maximum" else info.max)
    if dtype.kind == "b":
        return np.bool_(name == "minimum")
    raise TypeError(f"no start value for {name} on {dtype}")
