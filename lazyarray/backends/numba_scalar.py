"""Scalar helpers for generated Numba kernels where `np.<ufunc>` on scalars is missing in Numba
or differs from NumPy. Each stub is a plain Python function (so this module imports without
compiling anything); its `@overload` gives Numba the implementation.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir as llvmlite_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.numpy_support import as_dtype


def power(a, b):
    return np.power(a, b)


def heaviside(x, h):
    return np.heaviside(x, h)


def bitwise_count(x):
    return np.bitwise_count(x)


def modf_frac(x):
    return np.modf(x)[0]


def modf_int(x):
    return np.modf(x)[1]


def frexp_mantissa(x):
    return np.frexp(x)[0]


def frexp_exponent(x):
    return np.frexp(x)[1]


@overload(power, inline="always")
def _power(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        one = _typed(a, 1)

        def impl(a, b):
            if b < 0:
                raise ValueError("Integers to negative integer powers are not allowed.")
            result = one  # by squaring, wrapping in the integer type as NumPy does
            base = a
            e = b
            while e:
                if e & 1:
                    result = result * base
                base = base * base
                e >>= 1
            return result
        return impl
    if all(isinstance(t, (types.Float, types.Integer, types.Boolean)) for t in (a, b)):
        out = np.result_type(as_dtype(a), as_dtype(b))
        if out in (np.float32, np.float64):  # (float16: NumPy's float32 loop, rounded)
            return pow_impl(out.type, _SCALEF)
    return lambda a, b: np.power(a, b)


@overload(heaviside)
def _heaviside(x, h):
    def impl(x, h):
        if x != x:
            return x
        if x < 0:
            return 0.0
        if x == 0:
            return h
        return 1.0
    return impl


@overload(bitwise_count)
def _bitwise_count(x):
    def impl(x):
        v = np.uint64(abs(np.int64(x))) if x < 0 else np.uint64(x)
        n = 0
        while v:
            v &= v - np.uint64(1)
            n += 1
        return np.uint8(n)
    return impl


@overload(modf_frac)
def _modf_frac(x):
    def impl(x):
        if math.isinf(x):
            return math.copysign(0.0, x)
        return math.copysign(x - np.trunc(x), x) if x == x else x
    return impl


@overload(modf_int)
def _modf_int(x):
    def impl(x):
        if math.isinf(x) or x != x:
            return x
        return math.copysign(np.trunc(x), x)
    return impl


@overload(frexp_mantissa)
def _frexp_mantissa(x):
    return lambda x: math.frexp(x)[0]


@overload(frexp_exponent)
def _frexp_exponent(x):
    return lambda x: np.int32(math.frexp(x)[1])


def floor_divide(a, b):
    return np.floor_divide(a, b)


def remainder(a, b):
    return np.remainder(a, b)


def _divmod_float(a, b):
    """NumPy's float divmod: floor division consistent with fmod, exact at the edges
    (denormals, signed zeros) where floor(a / b) is not."""
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
            div -= 1.0
    else:
        mod = math.copysign(0.0, b)
    if div != 0:
        floordiv = np.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv, mod


@overload(floor_divide)
def _floor_divide(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        # never trap: x // 0 is 0 (NumPy), and MIN // -1 (a hardware trap) wraps to MIN
        zero = _typed(a, 0)
        if not a.signed:
            return lambda a, b: zero if b == 0 else np.floor_divide(a, b)

        def impl(a, b):
            if b == 0:
                return zero
            if b == -1:
                return zero - a
            return np.floor_divide(a, b)
        return impl
    if isinstance(a, types.Float) and isinstance(b, types.Float):
        fdiv = numba.njit(_divmod_float)

        def impl(a, b):
            if b == 0:
                return a / b
            return fdiv(a, b)[0]
        return impl
    return lambda a, b: np.floor_divide(a, b)


@overload(remainder)
def _remainder(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        zero = _typed(a, 0)
        if not a.signed:
            return lambda a, b: zero if b == 0 else np.remainder(a, b)
        return lambda a, b: zero if b == 0 or b == -1 else np.remainder(a, b)
    if isinstance(a, types.Float) and isinstance(b, types.Float):
        fdiv = numba.njit(_divmod_float)

        def impl(a, b):
            if b == 0:
                return np.fmod(a, b)
            return fdiv(a, b)[1]
        return impl
    return lambda a, b: np.remainder(a, b)


def left_shift(a, b):
    return np.left_shift(a, b)


def right_shift(a, b):
    return np.right_shift(a, b)


def _typed(t, value):
    """A constant of Numba type `t` (mixed signed/unsigned arithmetic would go to float)."""
    return as_dtype(t).type(value)


@overload(left_shift)
def _left_shift(a, b):
    bits, zero = a.bitwidth, _typed(a, 0)  # NumPy: a count outside [0, bits) shifts all out

    def impl(a, b):
        if b < 0 or b >= bits:
            return zero
        return a << b
    return impl


@overload(right_shift)
def _right_shift(a, b):
    bits, zero = a.bitwidth, _typed(a, 0)

    def impl(a, b):
        if b < 0 or b >= bits:
            return ~zero if a < 0 else zero
        return a >> b
    return impl


def fmod(a, b):
    return np.fmod(a, b)


def sign(x):
    return np.sign(x)


@overload(fmod)
def _fmod(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        zero = _typed(a, 0)
        if not a.signed:
            return lambda a, b: zero if b == 0 else a % b

        def impl(a, b):  # C's remainder, with the sign of a; x % 0 and x % -1 are 0
            if b == 0 or b == -1:
                return zero
            r = a % b  # Python's (floor) remainder, sign of b: move it to the sign of a
            if r != 0 and (a < 0) != (b < 0):
                r = r - b
            return r
        return impl
    return lambda a, b: np.fmod(a, b)


@overload(sign)
def _sign(x):
    if isinstance(x, types.Integer) and not x.signed:
        zero, one = _typed(x, 0), _typed(x, 1)
        return lambda x: one if x > 0 else zero
    return lambda x: np.sign(x)


# ---- maximum, minimum: NumPy's NaN and signed-zero rules in three instructions --------------
# np.maximum(a, b) is `a if a > b or a is NaN else b`: NaN wins (a's first), and a tie (0.0
# against -0.0) gives b. On floats `a if a > b else b` is one vmaxpd, and the NaN rule a compare
# and a blend: three instructions where Numba's np.maximum took six, and NumPy's signed zeros
# (Numba's returns a on a tie). np.clip on array bounds is minimum(maximum(x, lo), hi) with
# these, bit for bit (its loop for scalar bounds differs from its own array loop on zero signs).


def maximum(a, b):
    return np.maximum(a, b)


def minimum(a, b):
    return np.minimum(a, b)


@overload(maximum)
def _maximum(a, b):
    if not (isinstance(a, types.Float) and isinstance(b, types.Float)):
        return lambda a, b: np.maximum(a, b)

    def impl(a, b):
        r = a if a > b else b
        return a if a != a else r
    return impl


@overload(minimum)
def _minimum(a, b):
    if not (isinstance(a, types.Float) and isinstance(b, types.Float)):
        return lambda a, b: np.minimum(a, b)

    def impl(a, b):
        r = a if a < b else b
        return a if a != a else r
    return impl


def spacing(x):
    return np.spacing(x)


@overload(spacing)
def _spacing(x):
    inf = _typed(x, np.inf)

    def impl(x):  # NumPy: the distance to the next number away from zero; NaN at +-inf
        if x != x or x == inf or x == -inf:
            return x - x
        return np.nextafter(x, inf if x >= 0 else -inf) - x
    return impl


# ---- exp without a libm call, so LLVM vectorizes the loop around it -------------------------
# x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2 in two parts, each product subtracted by a
# fused multiply-add, exact for the high part), then exp(r) = 1 + r + r**2 * q(r), q of degree 9
# interpolating (e**r - 1 - r) / r**2 at the 10 Chebyshev nodes of [-0.34658, 0.34658]
# (coefficients computed with mpmath at 50 digits; the approximation's relative error is below
# 1.6e-17, a seventh of half an ulp), and the result scaled by 2**n.
# - n is rounded by adding 1.5 * 2**52 (the sum's low bits then hold n as an integer): AVX2 has
#   no vector conversion from float64 to int64, and LLVM would do four scalar ones per vector.
# - q is evaluated by Estrin's scheme, a tree of depth 4: Horner's chain of dependent fused
#   multiply-adds was the loop's critical path (W4's row sum: 293 ms -> 188 ms at 1e5 x 1000).
# - Where the CPU has AVX-512, p * 2**n is llvm.ldexp, one vscalefpd per vector that rounds
#   subnormal results once and saturates to 0 and inf by itself. Elsewhere 2**n is built from
#   its bits as two factors, so that subnormal results (n < -1022) and n = 1024 scale correctly
#   (ldexp there would be a libm call per element). Both: 12% less time per exp on AVX-512.
# Measured against NumPy on 2 million arguments per range over [-750, 710], [-1, 1], the
# subnormal results and the edges: at most 1 ulp apart, and the same inf/0/NaN/subnormal
# results (asv_bench/tools/vmath_ulp.py; tests/test_elementwise.py checks it).

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5 * 2**52: (t + _ROUND) - _ROUND is t rounded to an integer
_ROUND_BITS = 0x4338000000000000  # its IEEE bits
_TWO_M60 = 2.0 ** -60
_EXP_Q = (0.5000000000000001, 0.16666666666666669, 0.04166666666662416, 0.008333333333330063,
          0.0013888888917199863, 0.00019841269863042963, 2.4801521317484083e-05,
          2.7557268476553695e-06, 2.7620078203806394e-07, 2.5100377619606372e-08)


def _has_avx512() -> bool:
    """Does Numba compile for a CPU with AVX-512F (its own CPU settings first, then the host)?"""
    import llvmlite.binding as llvm

    name, features = numba.config.CPU_NAME, numba.config.CPU_FEATURES
    if features is not None:
        return "+avx512f" in features.split(",")
    if name is not None and name != "host":
        return False  # a named portable target: stay on instructions every x86-64 CPU has
    return bool(llvm.get_host_cpu_features().get("avx512f"))


_SCALEF = _has_avx512()


@intrinsic
def _bits_as_float64(typingctx, bits):
    """The float64 whose IEEE bits are the int64 `bits` (a register move, vectorizable)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


@intrinsic
def _ldexp(typingctx, x, n):
    """x * 2**n for an integral float64 n with |n| < 2**31 (llvm.ldexp: vscalefpd on AVX-512)."""
    def codegen(context, builder, signature, args):
        f64, i32 = context.get_value_type(types.float64), context.get_value_type(types.int32)
        fnty = llvmlite_ir.FunctionType(f64, [f64, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ldexp.f64.i32")
        return builder.call(fn, [args[0], builder.fptosi(args[1], i32)])
    return types.float64(types.float64, types.float64), codegen


def exp(x):
    return np.exp(x)


@overload(exp)
def _exp(x):
    if not isinstance(x, types.Float):
        return lambda x: np.exp(x)
    return exp_impl(as_dtype(x).type, _SCALEF)


def exp_nonpositive(x):
    return np.exp(x)


@overload(exp_nonpositive)
def _exp_nonpositive(x):
    """`exp` of an argument the code generator knows is <= 0 or NaN (W4's `exp(-(x - y)**2)`):
    the same values without the upper clamp (one instruction of about 25)."""
    if not isinstance(x, types.Float):
        return lambda x: np.exp(x)
    return exp_impl(as_dtype(x).type, _SCALEF, nonpositive=True)


def exp_impl(out, scalef: bool, nonpositive: bool = False):
    """The scalar exp of a float `out` type, scaling by llvm.ldexp when `scalef` (tests
    compile both forms on any CPU: where there is no vscalefpd, ldexp is a libm call).
    `nonpositive`: for arguments <= 0 or NaN only."""
    q0, q1, q2, q3, q4, q5, q6, q7, q8, q9 = _EXP_Q
    top = 0.0 if nonpositive else 710.0

    def impl(x):
        v = np.float64(x)
        xc = max(v, -746.0)  # beyond: 0 and inf (and n stays in int range)
        if not nonpositive:  # (a compile-time constant: the branch is folded away)
            xc = min(xc, top)
        t = _fma(xc, _LOG2E, _ROUND)  # n = round(x / ln2) in t's low mantissa bits
        n = t - _ROUND
        r = _fma(-n, _LN2_LO, _fma(-n, _LN2_HI, xc))
        r2 = r * r
        r4 = r2 * r2
        q03 = _fma(_fma(q3, r, q2), r2, _fma(q1, r, q0))
        q47 = _fma(_fma(q7, r, q6), r2, _fma(q5, r, q4))
        q = _fma(_fma(q9, r, q8), r4 * r4, _fma(q47, r4, q03))
        p = _fma(q, r2, r) + 1.0
        if scalef:  # (a NaN x makes n's conversion undefined: the select below drops it)
            res = _ldexp(p, n)
        elif nonpositive:  # n >= -1076: p * 2^(n + 60) is normal (p > 0.7), and the
            # exact power 2^-60 rounds once, where the result is subnormal: the bits of the
            # two-step form below in two integer operations instead of seven (W4)
            res = p * _bits_as_float64((_float64_as_bits(t) - _ROUND_BITS + 1083) << 52) \
                * _TWO_M60
        else:
            k = _float64_as_bits(t) - _ROUND_BITS  # n as an integer, without a conversion
            half = k >> 1
            res = (p * _bits_as_float64((half + 1023) << 52)
                   * _bits_as_float64((k - half + 1023) << 52))
        return out(res if v == v else v)
    return impl


# ---- sin, cos, log without libm (vectorizable) -------------------------------------------------
# Derivations (no code from other libraries): the polynomials are the functions' Taylor series,
# truncated where the first omitted term is below 2**-65 relative on the reduced interval, so
# no minimax coefficients are needed; the constants are pi/2, 2/pi, ln 2 and sqrt(2)/2 rounded
# with mpmath. Error bounds are worked out in the comments; the measured ones are in
# docs/performance.md.

@intrinsic
def _float64_as_bits(typingctx, x):
    """The int64 IEEE bits of the float64 `x` (a register move, vectorizable)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a*b + c rounded once (llvm.fma: one vfmadd instruction, vectorizable)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def sum_step(typingctx, acc, x):
    """acc + x as an addition LLVM may reassociate (`fadd reassoc`, and no other fast-math
    flag): in a loop `acc = sum_step(acc, x)` the loop vectorizer keeps several vector
    accumulators, then adds them up, so a sum runs at the speed of its loads instead of one
    add's latency per element. Only this addition is reordered; the operands are computed
    exactly as written, and NaN and inf come out as in any order (codegen/cpu.py,
    `vector_combine`)."""
    if not isinstance(acc, types.Float) or acc != x:
        return None
    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=("reassoc",))
    return acc(acc, x), codegen


def _extremum_step(name: str):
    """An intrinsic for llvm.maximum or llvm.minimum of two floats: NaN if either is NaN (as
    np.maximum), and an operation LLVM knows to be associative, so a loop of
    `acc = max_step(acc, x)` vectorizes into vector accumulators (vmaxpd and a NaN fix-up)."""
    @intrinsic
    def step(typingctx, acc, x):
        if not isinstance(acc, types.Float) or acc != x:
            return None
        def codegen(context, builder, signature, args):
            t = args[0].type
            fn = builder.module.declare_intrinsic(name, [t], llvmlite_ir.FunctionType(t, [t, t]))
            return builder.call(fn, args)
        return acc(acc, x), codegen
    return step


max_step = _extremum_step("llvm.maximum")
min_step = _extremum_step("llvm.minimum")


# pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_3 + 5.6e-50: each part is the double nearest to what the
# parts before it leave (mpmath at 300 bits).
_TWO_OVER_PI = 0.6366197723675814
_PIO2_1 = 1.5707963267948966       # 0x1.921fb54442d18p+0
_PIO2_2 = 6.123233995736766e-17    # 0x1.1a62633145c07p-54
_PIO2_3 = -1.4973849048591698e-33  # -0x1.f1976b7ed8fbcp-110
# Arguments with |x| above this take libm's sin/cos (the "slow path"; the kernels run it as a
# fix-up pass over the few elements that need it, see codegen/cpu.py). Below it the reduction
# is accurate to 2**-127 absolute (|n| < 2**30 times the 2**-163.6 left of pi/2 after three
# parts, plus the rounding of the low part), while x mod pi/2 of any double is at least
# 2**-60.9 (J.-M. Muller, Elementary Functions, worst case 6381956970095103 * 2**797): the
# reduced argument keeps 66 correct bits, 13 more than a double holds.
TRIG_BIG = 1073741824.0  # 2**30
_SIN_C = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(1, 10))  # r**3 .. r**19
_COS_C = tuple((-1) ** k / math.factorial(2 * k) for k in range(2, 11))  # r**4 .. r**20


@numba.njit(inline="always")
def _sincos_parts(v):
    """(the rounded sum's bits, whose low bits are n mod 4; sin and cos of v as unrounded sums
    hi + tail each) for |v| <= TRIG_BIG, by arithmetic only.

    v = n*pi/2 + (hi + lo): n*_PIO2_1 is subtracted with one fma, which is exact (the result
    is a multiple of 2**-52 below 1 in magnitude, or v itself); n*_PIO2_2 is subtracted with
    its product and the subtraction both error-free (fma product error, two-sum), so hi + lo
    carries the reduced argument to ~2**-127 absolute. Then sin and cos of hi + lo by Taylor
    polynomials in z = hi**2 (|hi| <= pi/4 + tiny), with lo entering to first order."""
    t = v * _TWO_OVER_PI
    big = t + _ROUND
    nf = big - _ROUND
    a = _fma(-nf, _PIO2_1, v)  # exact
    w = nf * _PIO2_2
    wl = _fma(nf, _PIO2_2, -w)  # n*P2 = w + wl exactly
    h = a - w
    bb = h - a
    e = (a - (h - bb)) - (w + bb)  # two-sum: a - w = h + e exactly
    lo = (e - wl) - nf * _PIO2_3
    z = h * h
    # sin(h + lo) = h + h*z*S(z) + lo*(1 - z/2) + O(lo*h**4)
    s1, s2, s3, s4, s5, s6, s7, s8, s9 = _SIN_C
    ps = s9
    ps = _fma(ps, z, s8)
    ps = _fma(ps, z, s7)
    ps = _fma(ps, z, s6)
    ps = _fma(ps, z, s5)
    ps = _fma(ps, z, s4)
    ps = _fma(ps, z, s3)
    ps = _fma(ps, z, s2)
    ps = _fma(ps, z, s1)
    st = (h * z) * ps + lo * (1.0 - 0.5 * z)
    # cos(h + lo) = 1 - z/2 + z**2*C(z) - h*lo; 1 - z/2 is carried with its rounding errors
    # (of the square, by fma, and of the subtraction, by fast-two-sum since 1 >= z/2)
    c1, c2, c3, c4, c5, c6, c7, c8, c9 = _COS_C
    pc = c9
    pc = _fma(pc, z, c8)
    pc = _fma(pc, z, c7)
    pc = _fma(pc, z, c6)
    pc = _fma(pc, z, c5)
    pc = _fma(pc, z, c4)
    pc = _fma(pc, z, c3)
    pc = _fma(pc, z, c2)
    pc = _fma(pc, z, c1)
    hz = 0.5 * z
    ze = _fma(h, h, -z)
    wc = 1.0 - hz
    ct = (((1.0 - wc) - hz) - 0.5 * ze) + ((z * z) * pc - h * lo)
    return _float64_as_bits(big), h, st, wc, ct


@numba.njit(inline="always")
def _sincos_core(v, odd):
    """sin(v) (odd=0) or cos(v) (odd=1) for |v| <= TRIG_BIG: the quadrant (n mod 4, plus 1
    for cos) picks the sum and the sign."""
    bits, h, st, wc, ct = _sincos_parts(v)
    q = bits + odd
    res = wc + ct if q & 1 else h + st
    return -res if q & 2 else res


def sin(x):
    return np.sin(x)


def cos(x):
    return np.cos(x)


def sin_fast(x):
    return np.sin(x)


def cos_fast(x):
    return np.cos(x)


def trig_big(x):
    return abs(x) > TRIG_BIG


def _float_arg(x):
    return isinstance(x, (types.Float, types.Integer, types.Boolean))


@overload(sin_fast)
def _sin_fast(x):
    """sin for |x| <= TRIG_BIG (and NaN, +-0, subnormals); a value of no use above it (the
    kernel replaces it). Always float64: the kernel rounds to the result dtype."""
    if not _float_arg(x):
        return lambda x: np.sin(x)

    def impl(x):
        v = np.float64(x)
        res = _sincos_core(v, 0)
        return v if abs(v) < 1.4901161193847656e-08 else res  # |v| < 2**-26: sin(v) rounds to v
    return impl


@overload(cos_fast)
def _cos_fast(x):
    if not _float_arg(x):
        return lambda x: np.cos(x)

    def impl(x):
        v = np.float64(x)
        res = _sincos_core(v, 1)
        return res if v == v else v
    return impl


@overload(trig_big)
def _trig_big(x):
    """Does x take the slow path (|x| > TRIG_BIG, or +-inf)? An int, to add up over a block."""
    if not _float_arg(x):
        return lambda x: 0

    def impl(x):
        return np.int64(abs(np.float64(x)) > TRIG_BIG)
    return impl


def _libm_above_big(ref, libm, fast):
    """The overload of a trigonometric function for any argument: `fast`, or `libm` above
    TRIG_BIG (a branch, so a loop that calls this does not vectorize: kernels call it only
    where a loop would not anyway, and in the fix-up pass)."""
    def overload_(x):
        if not _float_arg(x):
            return lambda x: ref(x)

        def impl(x):
            v = np.float64(x)
            if abs(v) > TRIG_BIG:
                return libm(v) if v - v == 0 else v - v
            return fast(v)
        return impl
    return overload_


overload(sin)(_libm_above_big(np.sin, math.sin, sin_fast))
overload(cos)(_libm_above_big(np.cos, math.cos, cos_fast))


# tan(x): the reduction of sin and cos (x = n pi/2 + hi + lo), then sin and cos of hi + lo
# as the unrounded sums of `_sincos_parts` (hi + its tail, 1 - z/2 + its tail), and their
# quotient (n even) or the negated inverse quotient (n odd) by one division corrected once by
# its fma residual: the tails enter to first order, so the one sizable rounding is the last.
def tan_fast(x):
    return np.tan(x)


def tan(x):
    return np.tan(x)


@numba.njit(inline="always")
def _tan_core(v):
    """tan(v) for |v| <= TRIG_BIG, by arithmetic only."""
    bits, h, st, wc, ct = _sincos_parts(v)
    odd = bits & 1
    sh = h + st
    sl = st - (sh - h)  # sin = sh + sl, sl below sh's ulp (|st| <= |h|/6)
    ch = wc + ct
    cl = ct - (ch - wc)
    nh, nl, dh, dl = (ch, cl, sh, sl) if odd else (sh, sl, ch, cl)
    r = nh / dh
    r = r + (_fma(-r, dh, nh) + nl - r * dl) / dh
    return -r if odd else r


@overload(tan_fast, inline="always")
def _tan_fast(x):
    """tan for |x| <= TRIG_BIG (and NaN, +-0, subnormals); of no use above (`sin_fast`)."""
    if not _float_arg(x):
        return lambda x: np.tan(x)

    def impl(x):
        v = np.float64(x)
        res = _tan_core(v)
        return v if abs(v) < 7.450580596923828e-09 else res  # |v| < 2**-27: tan(v) rounds to v
    return impl


overload(tan)(_libm_above_big(np.tan, math.tan, tan_fast))


# log(x) = k*ln2 + log(m), m = x / 2**k in [sqrt(2)/2, sqrt(2)) cut from the IEEE bits.
# With f = m - 1 (exact) and s = f / (2 + f): log(m) = 2*atanh(s) = 2s + s*T(s**2),
# T(z) = sum 2 z**j / (2j + 1), |s| <= 0.1716, so z <= 0.0295 and 11 terms leave < 2**-70.
# 2s = f - s*f and s*f = hf - s*hf with hf = f**2/2, so log(m) = f - (hf - s*(hf + T)): the
# large part f is exact, hf is carried with its fma rounding error, and k*ln2 + f is added
# by two-sum, so the one sizable rounding is the final addition.
_LOG_LN2_HI = 0.6931471805598903   # ln 2 to 42 bits: k*_LOG_LN2_HI is exact for |k| < 2**11
_LOG_LN2_LO = 5.497923018708371e-14  # ln 2 - _LOG_LN2_HI
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # the IEEE bits of sqrt(2)/2
_LOG_T = tuple(2.0 / (2 * j + 1) for j in range(1, 12))


def log(x):
    return np.log(x)


@numba.njit(inline="always")
def _log_core(u, kshift, extra):
    """log(u) + extra for a positive normal u (extra: a correction well below u's ulp),
    minus kshift*ln2 (u was scaled by 2**kshift)."""
    hi, tail = _log_parts(u, kshift, extra)
    return hi + tail


@numba.njit(inline="always")
def _log_parts(u, kshift, extra):
    """`_log_core`'s value unrounded, as hi + tail (tail well below hi's ulp)."""
    t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11 = _LOG_T
    bits = _float64_as_bits(u)
    kb = (bits - _SQRT_HALF_BITS) >> 52
    m = _bits_as_float64(bits - (kb << 52))
    kf = np.float64(kb) - kshift
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    p = t11
    p = _fma(p, z, t10)
    p = _fma(p, z, t9)
    p = _fma(p, z, t8)
    p = _fma(p, z, t7)
    p = _fma(p, z, t6)
    p = _fma(p, z, t5)
    p = _fma(p, z, t4)
    p = _fma(p, z, t3)
    p = _fma(p, z, t2)
    p = _fma(p, z, t1)
    p = p * z
    hf0 = f * f
    hfe = 0.5 * _fma(f, f, -hf0)  # hf = 0.5*f*f = hf1 + hfe exactly
    hf1 = 0.5 * hf0
    a = kf * _LOG_LN2_HI
    hi = a + f
    bb = hi - a
    e = (a - (hi - bb)) + (f - bb)  # two-sum: a + f = hi + e
    tail = kf * _LOG_LN2_LO + e - (hf1 - s * (hf1 + p)) - hfe + s * hfe + extra
    return hi, tail


# log2(x) and log10(x): log's value as hi + tail, times 1/ln 2 or 1/ln 10 as a double-double
# (c_hi + c_lo: the product's rounding error by fma), so the only sizable rounding is the
# last addition; log2 of a power of two comes out exact (hi + tail is k ln 2 to ~2**-100).
_INV_LN2 = (1.4426950408889634, 2.0355273740931033e-17)
_INV_LN10 = (0.4342944819032518, 1.098319650216765e-17)


def log2(x):
    return np.log2(x)


def log10(x):
    return np.log10(x)


def _scaled_log(ref, constant):
    c_hi, c_lo = constant

    def overload_(x):
        if not _float_arg(x):
            return lambda x: ref(x)

        def impl(x):
            v = np.float64(x)
            sub = v < 2.2250738585072014e-308  # subnormal (or <= 0: sorted out at the end)
            hi, tail = _log_parts(v * 18014398509481984.0 if sub else v, 54.0 if sub else 0.0,
                                  0.0)
            p = hi * c_hi
            res = p + ((_fma(hi, c_hi, -p) + hi * c_lo) + tail * c_hi)
            res = v if v == np.inf else res
            res = -np.inf if v == 0 else res
            res = np.nan if v < 0 else res
            return v if v != v else res
        return impl
    return overload_


overload(log2)(_scaled_log(np.log2, _INV_LN2))
overload(log10)(_scaled_log(np.log10, _INV_LN10))


# arcsinh(x) = sign(x) log(a + sqrt(a**2 + 1)) and arccosh(x) = log(x + sqrt(x**2 - 1)), a = |x|:
# the square +-1 in double-double (fma), its square root corrected once, the sum with a by
# two-sum, and the log of that hi + lo as log1p takes it (`_log_parts` with lo/hi as the
# correction), so a sum near 1 loses nothing. From 2**28 on the root is a to within 2**-57:
# the result is log(a) + ln 2 (kshift -1), and the square (which may overflow) is not used.
def arcsinh(x):
    return np.arcsinh(x)


def arccosh(x):
    return np.arccosh(x)


@numba.njit(inline="always")
def _log_of_root_sum(a, sign):
    """log(a + sqrt(a*a + sign)) for a >= 0 (sign +1) or a >= 1 (sign -1), a < 2**28."""
    p = a * a
    pe = _fma(a, a, -p)
    dh = p + sign
    bb = dh - p
    dl = (p - (dh - bb)) + (sign - bb) + pe  # a*a + sign = dh + dl
    sh = math.sqrt(dh)
    sl = (_fma(-sh, sh, dh) + dl) / (2.0 * sh) if dh > 0.0 else 0.0  # sqrt(dh + dl) = sh + sl
    wh = a + sh
    b2 = wh - a
    wl = (a - (wh - b2)) + (sh - b2) + sl  # a + sh + sl = wh + wl
    hi, tail = _log_parts(wh, 0.0, wl / wh)
    return hi + tail


@overload(arcsinh, inline="always")
def _arcsinh(x):
    if not _float_arg(x):
        return lambda x: np.arcsinh(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        big = a >= 268435456.0  # 2**28
        near = _log_of_root_sum(min(a, 268435456.0), 1.0)
        far = _log_core(max(a, 268435456.0) if a == a else a, -1.0, 0.0)  # log(a) + ln 2
        res = far if big else near
        res = a if a < 1.4901161193847656e-08 else res  # a < 2**-26: asinh rounds to a
        res = np.inf if a == np.inf else res
        res = math.copysign(res, v)
        return v if v != v else res
    return impl


@overload(arccosh, inline="always")
def _arccosh(x):
    if not _float_arg(x):
        return lambda x: np.arccosh(x)

    def impl(x):
        v = np.float64(x)
        big = v >= 268435456.0
        near = _log_of_root_sum(min(max(v, 1.0), 268435456.0), -1.0)
        far = _log_core(max(v, 268435456.0), -1.0, 0.0)
        res = far if big else near
        res = np.inf if v == np.inf else res
        res = np.nan if v < 1.0 else res
        return v if v != v else res
    return impl


# cbrt(x): |x| scaled into [2**-960, 2**960] by 2**+-162 (the result then by 2**-+54, exact),
# a first guess from the bits (the exponent divided by 3: a few correct bits), three Halley
# steps y * (y**3 + 2s) / (2y**3 + s) (each triples the correct bits; the ratio first, so no
# product leaves the range), then one Newton step with y**3 in double-double (fma), whose
# residual s - y**3 is then exact to the last bits: within about half an ulp. Exact cubes
# come out exact; the sign is copied; 0, inf and NaN are themselves.
def cbrt(x):
    return np.cbrt(x)


_TWO_M960, _TWO_960 = 2.0 ** -960, 2.0 ** 960
_TWO_162, _TWO_M162, _TWO_54, _TWO_M54 = 2.0 ** 162, 2.0 ** -162, 2.0 ** 54, 2.0 ** -54
_CBRT_GUESS = 0x2A9F7893782DA1CE  # about (2/3 * 1023) << 52, less the guess's mean error


@overload(cbrt, inline="always")
def _cbrt(x):
    if not _float_arg(x):
        return lambda x: np.cbrt(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        small, large = a < _TWO_M960, a > _TWO_960
        s = a * _TWO_162 if small else (a * _TWO_M162 if large else a)
        y = _bits_as_float64(_float64_as_bits(s) // 3 + _CBRT_GUESS)
        for _ in range(3):
            y3 = y * y * y
            y = y * ((y3 + 2.0 * s) / (2.0 * y3 + s))
        p = y * y
        q = p * y
        qe = _fma(p, y, -q) + _fma(y, y, -p) * y  # y**3 = q + qe
        y = y + ((s - q) - qe) / (3.0 * p)
        y = y * _TWO_M54 if small else (y * _TWO_54 if large else y)
        y = a if (a == 0.0 or a == np.inf) else y
        y = math.copysign(y, v)
        return v if v != v else y
    return impl


# arctanh(x) = (log1p(|x|) - log1p(-|x|)) / 2 with the sign of x: the two logs have opposite
# signs, so the difference is an addition of magnitudes (no cancellation), each log1p taken
# unrounded (hi + tail, with 1 +- |x| and its rounding error as in log1p), the two highs
# added by two-sum. |x| < 2**-54 returns x; +-1 gives +-inf, beyond NaN.
def arctanh(x):
    return np.arctanh(x)


@overload(arctanh, inline="always")
def _arctanh(x):
    if not _float_arg(x):
        return lambda x: np.arctanh(x)

    def impl(x):
        v = np.float64(x)
        a = min(abs(v), 0.9999999999999999)
        u1 = 1.0 + a
        b1 = u1 - 1.0
        c1 = (1.0 - (u1 - b1)) + (a - b1)  # two-sum: 1 + a = u1 + c1
        u2 = 1.0 - a  # exact for a >= 1/2; else its error by two-sum
        b2 = u2 - 1.0
        c2 = (1.0 - (u2 - b2)) + (-a - b2)
        h1, t1 = _log_parts(u1, 0.0, c1 / u1)
        h2, t2 = _log_parts(u2, 0.0, c2 / u2)
        s = h1 - h2
        bb = s - h1
        e = (h1 - (s - bb)) + (-h2 - bb)  # two-sum: h1 + (-h2) = s + e
        res = 0.5 * s + 0.5 * (e + (t1 - t2))
        res = a if a < 5.551115123125783e-17 else res  # |x| < 2**-54: rounds to x
        res = np.inf if abs(v) == 1.0 else res
        res = np.nan if abs(v) > 1.0 else res
        res = math.copysign(res, v)
        return v if v != v else res
    return impl


def log1p(x):
    return np.log1p(x)


@overload(log)
def _log(x):
    if not _float_arg(x):
        return lambda x: np.log(x)

    def impl(x):
        v = np.float64(x)
        sub = v < 2.2250738585072014e-308  # subnormal (or <= 0: sorted out at the end)
        vs = v * 18014398509481984.0 if sub else v  # 2**54
        res = _log_core(vs, 54.0 if sub else 0.0, 0.0)
        res = v if v == np.inf else res
        res = -np.inf if v == 0 else res
        res = np.nan if v < 0 else res
        return v if v != v else res
    return impl


@overload(log1p)
def _log1p(x):
    """log1p(x) = log(u) + c/u with u = 1 + x rounded and c its exact rounding error
    (two-sum): log(u + c) = log(u) + c/u + O((c/u)**2), and c/u is below 2**-53."""
    if not _float_arg(x):
        return lambda x: np.log1p(x)

    def impl(x):
        v = np.float64(x)
        u = 1.0 + v
        bb = u - 1.0
        c = (1.0 - (u - bb)) + (v - bb)
        res = _log_core(u, 0.0, c / u)
        res = v if abs(v) < 5.551115123125783e-17 else res  # |v| < 2**-54: rounds to v
        res = v if v == np.inf else res
        res = -np.inf if v == -1.0 else res
        res = np.nan if v < -1.0 else res
        return v if v != v else res
    return impl


# expm1(x) = 2**n * (1 + q) - 1, q = expm1(r), x = n*ln2 + r, |r| <= ln2/2. The reduction
# is the one of sin/cos with ln 2 in three parts (x - n*_LN2_1 is one exact fma, the n*_LN2_2
# step keeps its errors), so r = h + lo to ~2**-150. q = h + s with s = h**2/2 + h**3*P(h)
# + lo*(1 + h) (P: the Taylor series of (e**h - 1 - h - h**2/2)/h**3 to h**13, truncation
# below 2**-66 relative), kept as q_hi + q_lo; then 2**n - 1 and 2**n*q_hi are added by
# two-sum with every rounding error collected into the last addition. n = 0 is the plain
# series; 2**n for n = 1024 is taken as 2**1023 and the result doubled.
_LN2_1 = 0.6931471805599453
_LN2_2 = 2.3190468138462996e-17
_LN2_3 = 5.707708438416212e-34
_EXPM1_P = tuple(1.0 / math.factorial(k) for k in range(3, 17))  # h**3 .. h**16


def expm1(x):
    return np.expm1(x)


@numba.njit(inline="always")
def _expm1_sum(vc):
    """expm1(vc) for vc in [-45, 709.8] as sm + tail (|tail| below sm's ulp) and n, the
    result's power of two: the value is (sm + tail) * 2 when n > 1023."""
    c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16 = _EXPM1_P
    t = vc * _LOG2E
    big = t + _ROUND
    nf = big - _ROUND
    a = _fma(-nf, _LN2_1, vc)  # exact
    w = nf * _LN2_2
    wl = _fma(nf, _LN2_2, -w)
    h = a - w
    bb = h - a
    e = (a - (h - bb)) - (w + bb)
    lo = (e - wl) - nf * _LN2_3
    p = c16
    p = _fma(p, h, c15)
    p = _fma(p, h, c14)
    p = _fma(p, h, c13)
    p = _fma(p, h, c12)
    p = _fma(p, h, c11)
    p = _fma(p, h, c10)
    p = _fma(p, h, c9)
    p = _fma(p, h, c8)
    p = _fma(p, h, c7)
    p = _fma(p, h, c6)
    p = _fma(p, h, c5)
    p = _fma(p, h, c4)
    p = _fma(p, h, c3)
    hz = h * h
    s = (0.5 * hz + 0.5 * _fma(h, h, -hz)) + (hz * h * p + lo * (1.0 + h))
    qh = h + s
    ql = (h - qh) + s  # fast two-sum: |h| >= |s|
    k = _float64_as_bits(big) - _ROUND_BITS  # n, from the rounded sum's bits
    kk = min(k, 1023)
    scale = _bits_as_float64((kk + 1023) << 52)
    am = scale - 1.0
    b2 = am - scale
    ae = (scale - (am - b2)) + (-1.0 - b2)  # two-sum: scale - 1 = am + ae
    bq = scale * qh  # exact
    sm = am + bq
    b3 = sm - am
    se = (am - (sm - b3)) + (bq - b3)  # two-sum: am + bq = sm + se
    return sm, se + ae + scale * ql, k


@overload(expm1, inline="always")  # into its one compiled form (`_inlined_by_llvm`, below)
def _expm1(x):
    if not _float_arg(x):
        return lambda x: np.expm1(x)

    def impl(x):
        v = np.float64(x)
        sm, tail, k = _expm1_sum(min(max(v, -45.0), 709.8))
        res = sm + tail
        res = res * 2.0 if k > 1023 else res
        res = v if abs(v) < 5.551115123125783e-17 else res  # |v| < 2**-54: rounds to v
        res = -1.0 if v < -45.0 else res
        res = np.inf if v > 709.782712893384 else res
        return v if v != v else res
    return impl


# tanh(x) = sign(x) * t / (t + 2) with t = expm1(2|x|), the formula of fdlibm's tanh, here
# with t carried as th + tl (`_expm1_sum`) and t + 2 as dh + dl (two-sum): the quotient
# q = th * (1/dh) is corrected once by its fma residual, r = (th + tl - q*(dh + dl)) / dh
# (times 1/dh too: one division), which leaves the result within about half an ulp. |x| is
# capped at 20, where tanh rounds to 1 (1 - tanh(x) is about 2e**-2x, below 2**-54 from
# x = 18.7); a tiny x gives t = 2x exactly and q = x; the sign is copied (tanh(-0.0) = -0.0).
def tanh(x):
    return np.tanh(x)


@overload(tanh, inline="always")
def _tanh(x):
    if not _float_arg(x):
        return lambda x: np.tanh(x)

    def impl(x):
        v = np.float64(x)
        th, tl, _ = _expm1_sum(2.0 * min(abs(v), 20.0))
        dh = th + 2.0
        b = dh - th
        dl = (th - (dh - b)) + (2.0 - b) + tl  # two-sum: th + 2 = dh + (its error), plus tl
        inv = 1.0 / dh  # (one division: q and the correction both multiply by it)
        q = th * inv
        res = q + (_fma(-q, dh, th) + (tl - q * dl)) * inv
        res = math.copysign(res, v)
        return v if v != v else res
    return impl


# sinh and cosh from the same core. Below |x| = 22: with t = expm1(|x|) as th + tl and
# e = 1 + t as eh + el (two-sum), sinh = (t + t/(1 + t))/2 (fdlibm's form) and cosh =
# (e + 1/e)/2, each quotient corrected once by its fma residual and each sum a two-sum, so
# the result is within about half an ulp. From 22 on the other term is below 2**-63 of the
# result: both are e**|x|/2, taken as (e**(|x|/2))**2/2 with the square in double-double, which
# stays finite up to where the result itself overflows (|x| = 710.475...).
def sinh(x):
    return np.sinh(x)


def cosh(x):
    return np.cosh(x)


@numba.njit(inline="always")
def _hyperbolic_core(a):
    """For a = |x| (or NaN): (t_hi, t_lo), t = expm1(a), for a < 22; and e**a / 2 for
    a >= 22 (inf from its overflow on), as (e**(a/2))**2 / 2 with the square in
    double-double. One expm1 core serves both (its argument a or a/2): the loop computes
    every path of a select."""
    big = a >= 22.0
    th, tl, _ = _expm1_sum(0.5 * min(a, 712.0) if big else a)
    eh = th + 1.0
    el = (1.0 - (eh - th)) + tl  # big: th >= 1, a fast two-sum
    hh = 0.5 * eh  # (halved first: the square alone overflows below the result's overflow)
    p = hh * eh
    half_square = p + (_fma(hh, eh, -p) + eh * el)
    return th, tl, big, (p if p == np.inf else half_square)  # (overflow: the fma term is -inf)


@overload(sinh, inline="always")
def _sinh(x):
    if not _float_arg(x):
        return lambda x: np.sinh(x)

    def impl(x):
        v = np.float64(x)
        th, tl, big, large = _hyperbolic_core(abs(v))
        dh = th + 1.0
        b = dh - th
        dl = (th - (dh - b)) + (1.0 - b) + tl  # 1 + t = dh + dl
        inv = 1.0 / dh
        q = th * inv
        r = (_fma(-q, dh, th) + (tl - q * dl)) * inv  # t/(1 + t) = q + r
        sh = th + q
        b2 = sh - th
        se = (th - (sh - b2)) + (q - b2)  # two-sum: th + q = sh + se
        res = large if big else 0.5 * sh + 0.5 * (se + tl + r)
        res = math.copysign(res, v)
        return v if v != v else res
    return impl


@overload(cosh, inline="always")
def _cosh(x):
    if not _float_arg(x):
        return lambda x: np.cosh(x)

    def impl(x):
        v = np.float64(x)
        th, tl, big, large = _hyperbolic_core(abs(v))
        eh = th + 1.0
        b = eh - th
        el = (th - (eh - b)) + (1.0 - b) + tl  # e = 1 + t = eh + el
        rh = 1.0 / eh
        rl = (_fma(-rh, eh, 1.0) - rh * el) * rh  # 1/e = rh + rl
        sh = eh + rh
        se = (eh - sh) + rh + el + rl  # eh >= rh: fast two-sum, then the low parts
        res = large if big else 0.5 * sh + 0.5 * se
        return v * v if v != v else res
    return impl


PAIRWISE_BLOCK = 128  # NumPy's PW_BLOCKSIZE
SCRATCH = 2048  # float64 values a kernel keeps in its stack frame (16 KiB): a total's values
# (a bound any thread stack affords: Python's smallest, threading.stack_size(32768), too)
carray = numba.carray


def _stack_array(dtype, count: int):
    """An intrinsic `() -> pointer` to `count` elements of `dtype` in the stack frame of the
    function calling it (an alloca in its entry block): scratch memory that costs no
    allocation and is the same, cache-hot memory at every call. W2's loop at 1e3 elements:
    0.51 against 0.61 us with np.empty (three allocations), 0.25 us less between Python
    statements (a fresh heap block is out of cache). Valid until that function returns: call
    it in the kernel itself, or in a function inlined into it."""
    @intrinsic
    def stack(typingctx):
        def codegen(context, builder, signature, args):
            return cgutils.alloca_once(builder, context.get_value_type(dtype), size=count)
        return types.CPointer(dtype)(), codegen
    return stack


scratch = _stack_array(types.float64, SCRATCH)  # `carray(scratch(), n)` for n <= SCRATCH
_pairwise_frames = _stack_array(types.int64, 192)
_pairwise_firsts = _stack_array(types.float64, 64)


@numba.njit(nogil=True)
def _pairwise_block(a, lo, n):
    """The sum of a[lo:lo + n], n <= PAIRWISE_BLOCK, as NumPy's pairwise loop adds a block:
    below 8 elements one running sum; else eight running sums combined as a balanced tree,
    then the rest added in turn. (Unsigned indices: no wraparound test, 2.6x faster.)"""
    u0, u1, u2, u3 = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(3)
    u4, u5, u6, u7, u8 = np.uint64(4), np.uint64(5), np.uint64(6), np.uint64(7), np.uint64(8)
    b = np.uint64(lo)
    end = b + np.uint64(n)
    if n < 8:
        res = 0.0
        for i in range(b, end):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[b + u0], a[b + u1], a[b + u2], a[b + u3]
    r4, r5, r6, r7 = a[b + u4], a[b + u5], a[b + u6], a[b + u7]
    nb = np.uint64(n // 8)
    for t in range(u1, nb):
        i = b + u8 * t
        r0 += a[i + u0]
        r1 += a[i + u1]
        r2 += a[i + u2]
        r3 += a[i + u3]
        r4 += a[i + u4]
        r5 += a[i + u5]
        r6 += a[i + u6]
        r7 += a[i + u7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(b + u8 * nb, end):
        res += a[i]
    return res


@numba.njit(nogil=True)
def pairwise_sum(a, lo, n):
    """The sum of a[lo:lo + n] in the order of NumPy's float pairwise summation (its
    `pairwise_sum` in numpy/_core/src/umath/loops_utils.h.src): a block of at most
    PAIRWISE_BLOCK elements as `_pairwise_block` adds it; a longer range as the sum of its two
    halves (the first a multiple of 8 elements), each summed the same way. np.add.reduce of a
    contiguous float64 vector is 0.0 plus this.

    The halving runs on an explicit stack (Numba's cache cannot reload a recursive function):
    frame k covers `todo[k]` elements from `start[k]`; `first[k]` is its first half's sum
    once `half_done[k]` (the halves shrink by 2: 64 frames cover any n)."""
    if n <= PAIRWISE_BLOCK:
        return _pairwise_block(a, lo, n)
    idx = carray(_pairwise_frames(), 192)  # start[k] = idx[k], todo[k] = idx[64 + k],
    first = carray(_pairwise_firsts(), 64)  # half_done[k] = idx[128 + k]
    sp = 0
    idx[0], idx[64], idx[128] = lo, n, 0
    while True:
        m = idx[64 + sp]
        while m > PAIRWISE_BLOCK:  # descend into first halves
            half = m // 2
            half -= half % 8
            idx[sp + 1], idx[65 + sp], idx[129 + sp] = idx[sp], half, 0
            sp += 1
            m = half
        v = _pairwise_block(a, idx[sp], m)
        while True:  # hand v to the frames above: a first half waits, a second completes
            if sp == 0:
                return v
            sp -= 1
            if idx[128 + sp]:
                v = first[sp] + v
                continue
            first[sp] = v
            idx[128 + sp] = 1
            m = idx[64 + sp]
            half = m // 2
            half -= half % 8
            idx[sp + 1], idx[65 + sp], idx[129 + sp] = idx[sp] + half, m - half, 0
            sp += 1
            break


# Streaming stores (codegen/cpu.py, `Spec.stream`): a large elementwise kernel computes each
# block of its output into a small buffer that stays in L1, then writes the block out with
# non-temporal stores, which skip the read of each output line that a plain store makes first
# (a third of a one-input kernel's memory traffic). Results are the same bits either way.
_LINE = 64  # bytes per non-temporal vector store (one cache line)


def _data_address(context, builder, aryty, ary, flat):
    """The address (int64) of flat element `flat` of the contiguous array `ary`."""
    data = context.make_array(aryty)(context, builder, ary).data
    size = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
    i64 = llvmlite_ir.IntType(64)
    return builder.add(builder.ptrtoint(data, i64), builder.mul(flat, i64(size))), size


@intrinsic
def stream_head(typingctx, arr, flat):
    """How many elements of the contiguous `arr` from flat element `flat` come before the next
    64-byte boundary (0 on one). Blocks of the output starting there are stored streaming."""
    def codegen(context, builder, signature, args):
        at, size = _data_address(context, builder, signature.args[0], args[0], args[1])
        i64 = llvmlite_ir.IntType(64)
        gap = builder.and_(builder.neg(at), i64(_LINE - 1))
        return builder.udiv(gap, i64(size))
    return types.int64(arr, types.int64), codegen


@intrinsic
def stream(typingctx, arr, flat, buf, count):
    """arr.flat[flat:flat + count] = buf[:count] for the contiguous `arr`: by non-temporal
    64-byte stores when the destination starts on a 64-byte boundary and spans whole lines,
    by a plain copy otherwise (a block at an edge of the output)."""
    def codegen(context, builder, signature, args):
        at, size = _data_address(context, builder, signature.args[0], args[0], args[1])
        i64 = llvmlite_ir.IntType(64)
        src = context.make_array(signature.args[2])(context, builder, args[2]).data
        nbytes = builder.mul(args[3], i64(size))
        line = llvmlite_ir.VectorType(i64, _LINE // 8)
        whole = builder.icmp_unsigned(
            "==", builder.and_(builder.or_(at, nbytes), i64(_LINE - 1)), i64(0))
        with builder.if_else(whole) as (lines, plain):
            with lines:
                dst = builder.inttoptr(at, line.as_pointer())
                src_lines = builder.bitcast(src, line.as_pointer())
                nontemporal = builder.module.add_metadata([llvmlite_ir.IntType(32)(1)])
                with cgutils.for_range(builder, builder.udiv(nbytes, i64(_LINE))) as loop:
                    v = builder.load(builder.gep(src_lines, [loop.index]), align=size)
                    st = builder.store(v, builder.gep(dst, [loop.index]), align=_LINE)
                    st.set_metadata("nontemporal", nontemporal)
            with plain:
                cgutils.raw_memcpy(builder, builder.inttoptr(at, src.type), src, args[3], size)
        return context.get_dummy_value()
    return types.void(arr, types.int64, buf, types.int64), codegen


@intrinsic
def store_stream(typingctx, arr, flat, value):
    """arr.flat[flat] = value for the contiguous `arr`, marked non-temporal, for the loops of
    a streaming row (`codegen/cpu.py`, `_render_stream_rows`): each runs from a 64-byte
    boundary over whole lines, so every vector store LLVM makes of it (its iterations in
    groups of the vector width) starts on a boundary of its size. The store claims 32 bytes
    of alignment, which is what lets the loop vectorizer emit vector non-temporal stores
    (x86 has them only aligned; LLVM checks the scalar store's alignment): true of each
    vector store, not of every element, so nothing else may call this."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        st = builder.store(args[2], builder.gep(data, [args[1]]), align=_STREAM_ALIGN)
        st.set_metadata("nontemporal", builder.module.add_metadata([llvmlite_ir.IntType(32)(1)]))
        return context.get_dummy_value()
    return types.void(arr, flat, arr.dtype), codegen


_STREAM_ALIGN = 32  # the widest x86 non-temporal store LLVM vectorizes to (a ymm register)


@intrinsic
def prefetch(typingctx, arr, i):
    """Ask for the cache line holding arr[i] of the 1-d `arr` (llvm.prefetch: a read, kept
    in all levels). A hint: it never faults, whatever the address; the kernels keep `i` in
    range all the same (a prefetch past the end walked the page tables of unmapped memory)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(i, types.Integer):
        return None
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        step = cgutils.unpack_tuple(builder, ary.strides, 1)[0]
        i8p = llvmlite_ir.IntType(8).as_pointer()
        offset = builder.mul(context.cast(builder, args[1], signature.args[1], types.intp), step)
        at = builder.gep(builder.bitcast(ary.data, i8p), [offset])
        i32 = llvmlite_ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [i8p], llvmlite_ir.FunctionType(llvmlite_ir.VoidType(),
                                                             [i8p, i32, i32, i32]))
        builder.call(fn, [at, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(arr, i), codegen


@intrinsic
def stream_fence(typingctx):
    """Order the streaming stores before everything after (they are weakly ordered): each
    parallel iteration ends with one, before another thread may read what it wrote."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen


# arctan(x) and arctan2(y, x) without libm. The argument becomes t in [0, 1] as a
# double-double (t = |x|, or 1/|x| with the division's remainder by fma; for arctan2,
# min(|x|, |y|) / max(|x|, |y|) likewise), then t = c + (t - c) around c = k/8, the nearest
# eighth: atan(t) = atan(c) + atan(u), u = (t - c) / (1 + t c), |u| <= 1/16, with t - c exact
# (Sterbenz) and u a double-double again. atan(u) is u plus u**3 times its Taylor series in
# u**2 (terms (-1)**j / (2j + 1)), cut where the next term is below 2**-64 of u (u**16 at
# |u| <= 1/16); atan(k/8), pi/2 and pi are double-doubles rounded from 200-bit values
# (mpmath). The quadrant is put back by pi/2 - r and pi - r in double-double, so the one
# sizable rounding is the last addition: within an ulp of the true value, as NumPy's.
_ATAN_HI = np.array([0.0, 0.12435499454676144, 0.24497866312686414, 0.35877067027057225,
                     0.4636476090008061, 0.5585993153435624, 0.6435011087932844,
                     0.7188299996216245, 0.7853981633974483])
_ATAN_LO = np.array([0.0, -3.1253241424539383e-18, 1.0698755618734451e-17,
                     -2.4623815582638635e-17, 2.2698777452961687e-17, -5.4556305485916264e-18,
                     1.5834785051444286e-17, -2.1478388444456983e-17, 3.061616997868383e-17])
_HALF_PI = (1.5707963267948966, 6.123233995736766e-17)
_PI = (3.141592653589793, 1.2246467991473532e-16)
_ATAN_T = tuple((-1.0) ** j / (2 * j + 1) for j in range(1, 8))


def arctan(x):
    return np.arctan(x)


def arctan2(y, x):
    return np.arctan2(y, x)


@numba.njit(inline="always")
def _atan_unit(th, tl):
    """atan(th + tl) for 0 <= th <= 1 (tl below th's ulp), as r_hi + r_lo."""
    c1, c2, c3, c4, c5, c6, c7 = _ATAN_T
    tc = min(max(th, 0.0), 1.0) if th == th else 0.0  # (a NaN picks entry 0; it stays NaN)
    k = np.uint64(tc * 8.0 + 0.5)
    c = np.float64(k) * 0.125
    d = th - c  # exact
    nh = d + tl
    nb = nh - d
    nl = (d - (nh - nb)) + (tl - nb)  # two-sum: d + tl = nh + nl
    p = th * c
    pe = _fma(th, c, -p)
    dh = 1.0 + p
    dl = ((1.0 - dh) + p) + pe + tl * c  # 1 + t c = dh + dl
    uh = nh / dh
    ul = (_fma(-uh, dh, nh) + nl - uh * dl) / dh
    z = uh * uh
    q = _fma(_fma(_fma(_fma(_fma(_fma(c7, z, c6), z, c5), z, c4), z, c3), z, c2), z, c1)
    ah, al = _ATAN_HI[k], _ATAN_LO[k]
    sh = ah + uh
    sb = sh - ah
    se = (ah - (sh - sb)) + (uh - sb)
    tail = se + (al + (ul + uh * z * q))
    rh = sh + tail
    return rh, tail - (rh - sh)


@numba.njit(inline="always")
def _minus(ch, cl, rh, rl):
    """(ch + cl) - (rh + rl) rounded once, for ch >= 2 rh > 0 (no cancellation)."""
    h = ch - rh
    return h + (((ch - h) - rh) + cl - rl)


@overload(arctan, inline="always")
def _arctan(x):
    if not _float_arg(x):
        return lambda x: np.arctan(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        big = a > 1.0
        th = 1.0 / a if big else a
        tl = _fma(-th, a, 1.0) / a if big else 0.0
        tl = tl if a != np.inf else 0.0
        rh, rl = _atan_unit(th, tl)
        res = _minus(_HALF_PI[0], _HALF_PI[1], rh, rl) if big else rh + rl
        res = math.copysign(res, v)
        return v if v != v else res
    return impl


@numba.njit(inline="always")
def _atan_ratio(ah, al, bh, bl):
    """atan((ah + al) / (bh + bl)) for two non-negative double-doubles (inf and zero
    included; 0/0 is 0), in [0, pi/2], as r_hi + r_lo."""
    swap = ah > bh
    nh, nl, dh, dl = (bh, bl, ah, al) if swap else (ah, al, bh, bl)
    both_inf = nh == np.inf
    zero = nh == 0.0
    th = nh / dh
    tl = (_fma(-th, dh, nh) + nl - th * dl) / dh
    th = 1.0 if both_inf else (0.0 if zero else th)
    tl = 0.0 if (both_inf or zero or dh == np.inf) else tl
    rh, rl = _atan_unit(th, tl)
    h = _HALF_PI[0] - rh  # pi/2 - r as a double-double, when the ratio was above one
    hl = ((_HALF_PI[0] - h) - rh) + _HALF_PI[1] - rl
    return (h, hl) if swap else (rh, rl)


@overload(arctan2, inline="always")
def _arctan2(y, x):
    if not (_float_arg(y) and _float_arg(x)):
        return lambda y, x: np.arctan2(y, x)

    def impl(y, x):
        vy, vx = np.float64(y), np.float64(x)
        rh, rl = _atan_ratio(abs(vy), 0.0, abs(vx), 0.0)
        neg = math.copysign(1.0, vx) < 0.0  # x < 0 or x = -0: the other half-plane
        res = _minus(_PI[0], _PI[1], rh, rl) if neg else rh + rl
        res = math.copysign(res, vy)
        return vy + vx if (vy != vy or vx != vx) else res
    return impl


# arcsin(x) = atan2(|x|, s) and arccos(x) = atan2(s, x) with s = sqrt(1 - x**2) as a
# double-double: x**2 exact by fma, 1 - x**2 by two-sum, the root corrected once by its fma
# residual; then `_atan_ratio` as arctan2's. Outside [-1, 1] the result is NaN (NumPy's
# invalid warning comes from the kernel's check, as for log of a negative number).
def arcsin(x):
    return np.arcsin(x)


def arccos(x):
    return np.arccos(x)


@numba.njit(inline="always")
def _unit_root(a):
    """sqrt(1 - a*a) for 0 <= a <= 1 as a double-double (NaN above 1)."""
    p = a * a
    pe = _fma(a, a, -p)
    wh = 1.0 - p
    wl = ((1.0 - wh) - p) - pe
    sh = math.sqrt(wh)
    sl = (_fma(-sh, sh, wh) + wl) / (2.0 * sh) if sh > 0.0 else 0.0
    return sh, sl


@overload(arcsin, inline="always")
def _arcsin(x):
    if not _float_arg(x):
        return lambda x: np.arcsin(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        sh, sl = _unit_root(min(a, 1.0))
        rh, rl = _atan_ratio(a, 0.0, sh, sl)
        res = math.copysign(rh + rl, v)
        return np.nan if a > 1.0 else (v if v != v else res)
    return impl


@overload(arccos, inline="always")
def _arccos(x):
    if not _float_arg(x):
        return lambda x: np.arccos(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        sh, sl = _unit_root(min(a, 1.0))
        rh, rl = _atan_ratio(sh, sl, a, 0.0)
        res = _minus(_PI[0], _PI[1], rh, rl) if v < 0.0 else rh + rl
        return np.nan if a > 1.0 else (v if v != v else res)
    return impl


# power(x, y) for floats without libm: exp(y log|x|) with log|x| as a double-double to about
# 2**-75, so that y log|x| (up to 745 in size when the result is finite) keeps its last bits.
# |x| = 2**k m with m in [_POW_LOW, 2 _POW_LOW); the top 7 fraction bits of m pick c, an
# 8-bit number near 1/m (exactly 1 in the two buckets around m = 1), so r = m c - 1 is exact
# by fma and |r| < 2**-7; log m = log(1/c) + log1p(r), with log(1/c) from a table of
# double-doubles (its high part a multiple of 2**-42, as k ln2_hi is, so their sum is exact)
# and log1p(r) = r - r**2/2 (exact by fma) + r**3 times its Taylor series to r**9 (the first
# term left out is below 2**-77). exp of the product y log|x| = zh + zl (`_pow_exp`): the
# argument less n ln2/64 as a double-double, then 2**(n/64) from a table times its Taylor
# polynomial, so the one sizable rounding is the last addition (the scaling by 2**(n >> 6)
# rounds again only for subnormal results). The special values (zeros, infinities, NaN, negative x) follow C99 and
# NumPy: the sign of an odd integer power, NaN for a negative x to a non-integer power, 1
# for x**0 and 1**y whatever the other operand.
_POW_LOW = (1 + 53 / 128) / 2  # a bucket boundary (the buckets tile m's binades)
_POW_OFF = int(np.float64(_POW_LOW).view(np.int64))


def _pow_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bucket: c, and log(1/c) as high part (a multiple of 2**-42) + low part, from
    50-digit decimal logarithms."""
    import decimal

    ctx = decimal.Context(prec=50)
    inv, hi, lo = [], [], []
    for i in range(128):
        a, b = 1 + i / 128, 1 + (i + 1) / 128
        if i >= 53:  # the buckets of m below 1
            a, b = a / 2, b / 2
        c = 1.0
        if i not in (0, 127):
            c = 2 / (a + b)
            e = math.frexp(c)[1]
            c = math.ldexp(round(math.ldexp(c, 8 - e)), e - 8)  # 8 significant bits
        d = -ctx.ln(decimal.Decimal(c))
        h = math.ldexp(round(math.ldexp(float(d), 42)), -42)
        inv.append(c)
        hi.append(h)
        lo.append(float(d - decimal.Decimal(h)))
    return np.array(inv), np.array(hi), np.array(lo)


_POW_C, _POW_LOG_HI, _POW_LOG_LO = _pow_tables()
_POW_P = tuple((-1.0) ** j / (j + 3) for j in range(7))  # log1p(r) = r - r**2/2 + r**3 P(r)


@numba.njit(inline="always")
def _pow_log(a):
    """log(a) for a positive finite a (subnormal included) as hi + lo, to about 2**-75."""
    p0, p1, p2, p3, p4, p5, p6 = _POW_P
    sub = a < 2.2250738585072014e-308
    bits = _float64_as_bits(a * 18014398509481984.0 if sub else a)
    kb = (bits - _POW_OFF) >> 52
    mb = bits - (kb << 52)
    i = (mb >> 45) & 127
    k = np.float64(kb) - (54.0 if sub else 0.0)
    r = _fma(_bits_as_float64(mb), _POW_C[i], -1.0)  # exact
    r2 = r * r
    r2e = _fma(r, r, -r2)
    h = -0.5 * r2
    p = _fma(_fma(_fma(_fma(_fma(_fma(p6, r, p5), r, p4), r, p3), r, p2), r, p1), r, p0)
    s1 = k * _LOG_LN2_HI + _POW_LOG_HI[i]  # exact
    s2 = s1 + r
    bb = s2 - s1
    e2 = (s1 - (s2 - bb)) + (r - bb)
    s3 = s2 + h
    bb = s3 - s2
    e3 = (s2 - (s3 - bb)) + (h - bb)
    lo = e2 + e3 - 0.5 * r2e + _POW_LOG_LO[i] + k * _LOG_LN2_LO + r * r2 * p
    hi = s3 + lo
    return hi, lo - (hi - s3)


def _exp_tables() -> tuple[np.ndarray, np.ndarray]:
    """2**(j/64), j = 0..63, as high + low parts, from 50-digit decimal powers."""
    import decimal

    ctx = decimal.Context(prec=50)
    hi, lo = [], []
    for j in range(64):
        d = ctx.power(decimal.Decimal(2), decimal.Decimal(j) / 64)
        hi.append(float(d))
        lo.append(float(d - decimal.Decimal(hi[-1])))
    return np.array(hi), np.array(lo)


_EXP_T_HI, _EXP_T_LO = _exp_tables()
_LN2_64 = (0.010830424696223417, 2.572804622327669e-14)  # ln2/64: 36 bits + the rest
_EXP_64_LOG2E = 92.33248261689366  # 64 / ln 2
_EXP_T_Q = tuple(1.0 / math.factorial(k) for k in range(2, 7))  # exp(r) = 1 + r + r**2 q(r)


def _pow_exp(scalef: bool):
    """exp(zh + zl) for |zl| below zh's ulp: n = round(64 (zh + zl) / ln 2), the argument
    less n ln2/64 as a double-double r (|r| <= ln2/128, n ln2/64's high part exact), then
    2**(n/64) (a table entry, times 2**(n >> 6)) times exp(r), whose Taylor polynomial needs
    terms to r**6; the one sizable rounding is the final addition (correctly rounded but for
    about 0.1% of arguments; the scaling rounds again for subnormal results)."""
    q2, q3, q4, q5, q6 = _EXP_T_Q
    c_hi, c_lo = _LN2_64

    @numba.njit(inline="always")
    def exp_dd(zh, zl):
        zc = min(max(zh, -746.0), 710.0)  # beyond: 0 and inf
        zl = zl if zc == zh else 0.0
        t = _fma(zc, _EXP_64_LOG2E, _ROUND)
        n = t - _ROUND
        k = _float64_as_bits(t) - _ROUND_BITS  # n as an integer (any bits for NaN: masked)
        j = k & 63
        rh = _fma(-n, c_hi, zc)  # exact
        rl = _fma(-n, c_lo, zl)
        r = rh + rl
        bb = r - rh
        re = (rh - (r - bb)) + (rl - bb)
        e = _fma(r * r, _fma(_fma(_fma(_fma(q6, r, q5), r, q4), r, q3), r, q2), r + re)
        th = _EXP_T_HI[j]
        p = th + _fma(th, e, _EXP_T_LO[j] * (1.0 + e))
        m = k >> 6
        if scalef:
            return _ldexp(p, np.float64(m))
        half = m >> 1
        return p * _bits_as_float64((half + 1023) << 52) * _bits_as_float64((m - half + 1023) << 52)
    return exp_dd


def pow_impl(out, scalef: bool):
    """The scalar power of floats, rounded to the float type `out` (computed in float64)."""
    exp_dd = _pow_exp(scalef)

    def impl(a, b):
        x, y = np.float64(a), np.float64(b)
        ax = abs(x)
        yinf = abs(y) == np.inf
        edge = ax == 0.0 or ax == np.inf or yinf
        lh, ll = _pow_log(1.0 if edge else ax)
        y0 = 0.0 if edge else y
        zh = y0 * lh
        res = exp_dd(zh, _fma(y0, lh, -zh) + y0 * ll)
        # zeros and infinities of x, infinite y: 0, inf or 1 (|x| = 1, y infinite)
        res = (1.0 if ax == 1.0 else (np.inf if (ax > 1.0) == (y > 0.0) else 0.0)) if edge \
            else res
        odd = y - 2.0 * np.floor(0.5 * y) == 1.0  # an odd integer (below 2**53)
        res = math.copysign(res, x) if odd else res
        # (NaN as the CPU makes it for an invalid operation, and a NaN operand's own)
        res = (ax - ax) * np.inf if (x < 0.0 and np.floor(y) != y and ax < np.inf) else res
        res = x + y if (x != x or y != y) else res
        return out(1.0 if (y == 0.0 or x == 1.0) else res)
    return impl


# exp2(x) = exp(x ln 2) with x ln 2 as a double-double (ln 2 to 106 bits, the product's
# rounding error by fma), through power's exp: within an ulp, and 2**k exact for every
# integer k (the reduced argument is then below 2**-70, so the polynomial's sum rounds to 1).
_LN2_DD = (0.6931471805599453, 2.3190468138462996e-17)


def exp2(x):
    return np.exp2(x)


@overload(exp2, inline="always")
def _exp2(x):
    if not _float_arg(x):
        return lambda x: np.exp2(x)
    exp_dd = _pow_exp(_SCALEF)
    c_hi, c_lo = _LN2_DD

    def impl(x):
        v = np.float64(x)
        zh = v * c_hi
        res = exp_dd(zh, _fma(v, c_hi, -zh) + v * c_lo)
        return v if v != v else res
    return impl


# The big math above is inlined into kernels whole (LLVM leaves a call to anything this size,
# and a call stops a loop from vectorizing). `inline="always"` does that on Numba's IR: every
# kernel then types and lowers the whole function again (power: about 1.5 s a kernel, 4 s a
# parallel one). Instead, each name below is an intrinsic that compiles the function once per
# process and signature (with NumPy's error model, as the kernels) and marks the compiled
# function `alwaysinline`: LLVM inlines it into each kernel, which then vectorizes as before
# (the same vector code) and compiles in a tenth of the time.
_INLINED_BY_LLVM = {"power": 2, "arctan2": 2, "cbrt": 1, "exp2": 1, "expm1": 1, "tan_fast": 1,
                    "arcsin": 1, "arccos": 1, "arctan": 1, "sinh": 1, "cosh": 1, "tanh": 1,
                    "arcsinh": 1, "arccosh": 1, "arctanh": 1}


def _subroutine_flags():
    from numba.core.compiler import Flags

    flags = Flags()
    flags.error_model = "numpy"
    return flags


def _inlined_by_llvm(stub, nin: int):
    """An intrinsic computing `stub(*args)` (its `@overload`) by a call that LLVM inlines."""
    impl = (lambda x: stub(x)) if nin == 1 else (lambda x, y: stub(x, y))

    def lower(context, builder, sig, args):
        sub = context.compile_subroutine(builder, impl, sig, flags=_subroutine_flags())
        fn = sub.library._final_module.get_function(sub.fndesc.llvm_func_name)
        if b"alwaysinline" not in b" ".join(fn.attributes):
            fn.add_function_attribute("alwaysinline")
        return context.call_internal(builder, sub.fndesc, sig, args)

    def signature(typingctx, args):
        return typingctx.resolve_value_type(stub).get_call_type(typingctx, args, {})

    if nin == 1:
        def typer(typingctx, x):
            return signature(typingctx, (x,)), lower
    else:
        def typer(typingctx, x, y):
            return signature(typingctx, (x, y)), lower
    typer.__name__ = stub.__name__
    return intrinsic(typer)


for _name, _nin in _INLINED_BY_LLVM.items():
    globals()[_name] = _inlined_by_llvm(globals()[_name], _nin)
