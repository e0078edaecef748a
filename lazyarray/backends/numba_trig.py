"""Vectorizable sin, cos and tan (with the test for the arguments that take libm instead), and
arctan, arctan2, arcsin and arccos: arithmetic only, no libm call, so LLVM vectorizes the loops
of generated kernels around them.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import overload

from lazyarray.backends.numba_fp import HELPER, ROUND, float64_as_bits, float_arg, fma


# Derivations (no code from other libraries): the polynomials are the functions' Taylor series,
# truncated where the first omitted term is below 2**-65 relative on the reduced interval, so
# no minimax coefficients are needed; the constants are pi/2 and 2/pi rounded with mpmath.
# Error bounds are worked out in the comments; the measured ones are in docs/performance.md.

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


@numba.njit(inline="always", **HELPER)
def _sincos_parts(v):
    """(the rounded sum's bits, whose low bits are n mod 4; sin and cos of v as unrounded sums
    hi + tail each) for |v| <= TRIG_BIG, by arithmetic only.

    v = n*pi/2 + (hi + lo): n*_PIO2_1 is subtracted with one fma, which is exact (the result
    is a multiple of 2**-52 below 1 in magnitude, or v itself); n*_PIO2_2 is subtracted with
    its product and the subtraction both error-free (fma product error, two-sum), so hi + lo
    carries the reduced argument to ~2**-127 absolute. Then sin and cos of hi + lo by Taylor
    polynomials in z = hi**2 (|hi| <= pi/4 + tiny), with lo entering to first order."""
    t = v * _TWO_OVER_PI
    big = t + ROUND
    nf = big - ROUND
    a = fma(-nf, _PIO2_1, v)  # exact
    w = nf * _PIO2_2
    wl = fma(nf, _PIO2_2, -w)  # n*P2 = w + wl exactly
    h = a - w
    bb = h - a
    e = (a - (h - bb)) - (w + bb)  # two-sum: a - w = h + e exactly
    lo = (e - wl) - nf * _PIO2_3
    z = h * h
    # sin(h + lo) = h + h*z*S(z) + lo*(1 - z/2) + O(lo*h**4)
    s1, s2, s3, s4, s5, s6, s7, s8, s9 = _SIN_C
    ps = s9
    ps = fma(ps, z, s8)
    ps = fma(ps, z, s7)
    ps = fma(ps, z, s6)
    ps = fma(ps, z, s5)
    ps = fma(ps, z, s4)
    ps = fma(ps, z, s3)
    ps = fma(ps, z, s2)
    ps = fma(ps, z, s1)
    st = (h * z) * ps + lo * (1.0 - 0.5 * z)
    # cos(h + lo) = 1 - z/2 + z**2*C(z) - h*lo; 1 - z/2 is carried with its rounding errors
    # (of the square, by fma, and of the subtraction, by fast-two-sum since 1 >= z/2)
    c1, c2, c3, c4, c5, c6, c7, c8, c9 = _COS_C
    pc = c9
    pc = fma(pc, z, c8)
    pc = fma(pc, z, c7)
    pc = fma(pc, z, c6)
    pc = fma(pc, z, c5)
    pc = fma(pc, z, c4)
    pc = fma(pc, z, c3)
    pc = fma(pc, z, c2)
    pc = fma(pc, z, c1)
    hz = 0.5 * z
    ze = fma(h, h, -z)
    wc = 1.0 - hz
    ct = (((1.0 - wc) - hz) - 0.5 * ze) + ((z * z) * pc - h * lo)
    return float64_as_bits(big), h, st, wc, ct


@numba.njit(inline="always", **HELPER)
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


@overload(sin_fast, jit_options=HELPER)
def _sin_fast(x):
    """sin for |x| <= TRIG_BIG (and NaN, +-0, subnormals); a value of no use above it (the
    kernel replaces it). Always float64: the kernel rounds to the result dtype."""
    if not float_arg(x):
        return lambda x: np.sin(x)

    def impl(x):
        v = np.float64(x)
        res = _sincos_core(v, 0)
        return v if abs(v) < 1.4901161193847656e-08 else res  # |v| < 2**-26: sin(v) rounds to v
    return impl


@overload(cos_fast, jit_options=HELPER)
def _cos_fast(x):
    if not float_arg(x):
        return lambda x: np.cos(x)

    def impl(x):
        v = np.float64(x)
        res = _sincos_core(v, 1)
        return res if v == v else v
    return impl


@overload(trig_big, jit_options=HELPER)
def _trig_big(x):
    """Does x take the slow path (|x| > TRIG_BIG, or +-inf)? An int, to add up over a block."""
    if not float_arg(x):
        return lambda x: 0

    def impl(x):
        return np.int64(abs(np.float64(x)) > TRIG_BIG)
    return impl


def _libm_above_big(ref, libm, fast):
    """The overload of a trigonometric function for any argument: `fast`, or `libm` above
    TRIG_BIG (a branch, so a loop that calls this does not vectorize: kernels call it only
    where a loop would not anyway, and in the fix-up pass)."""
    def overload_(x):
        if not float_arg(x):
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


@numba.njit(inline="always", **HELPER)
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
    r = r + (fma(-r, dh, nh) + nl - r * dl) / dh
    return -r if odd else r


@overload(tan_fast, inline="always", jit_options=HELPER)
def _tan_fast(x):
    """tan for |x| <= TRIG_BIG (and NaN, +-0, subnormals); of no use above (`sin_fast`)."""
    if not float_arg(x):
        return lambda x: np.tan(x)

    def impl(x):
        v = np.float64(x)
        res = _tan_core(v)
        return v if abs(v) < 7.450580596923828e-09 else res  # |v| < 2**-27: tan(v) rounds to v
    return impl


overload(tan)(_libm_above_big(np.tan, math.tan, tan_fast))


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


@numba.njit(inline="always", **HELPER)
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
    pe = fma(th, c, -p)
    dh = 1.0 + p
    dl = ((1.0 - dh) + p) + pe + tl * c  # 1 + t c = dh + dl
    uh = nh / dh
    ul = (fma(-uh, dh, nh) + nl - uh * dl) / dh
    z = uh * uh
    q = fma(fma(fma(fma(fma(fma(c7, z, c6), z, c5), z, c4), z, c3), z, c2), z, c1)
    ah, al = _ATAN_HI[k], _ATAN_LO[k]
    sh = ah + uh
    sb = sh - ah
    se = (ah - (sh - sb)) + (uh - sb)
    tail = se + (al + (ul + uh * z * q))
    rh = sh + tail
    return rh, tail - (rh - sh)


@numba.njit(inline="always", **HELPER)
def _minus(ch, cl, rh, rl):
    """(ch + cl) - (rh + rl) rounded once, for ch >= 2 rh > 0 (no cancellation)."""
    h = ch - rh
    return h + (((ch - h) - rh) + cl - rl)


@overload(arctan, inline="always", jit_options=HELPER)
def _arctan(x):
    if not float_arg(x):
        return lambda x: np.arctan(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        big = a > 1.0
        th = 1.0 / a if big else a
        tl = fma(-th, a, 1.0) / a if big else 0.0
        tl = tl if a != np.inf else 0.0
        rh, rl = _atan_unit(th, tl)
        res = _minus(_HALF_PI[0], _HALF_PI[1], rh, rl) if big else rh + rl
        res = math.copysign(res, v)
        return v if v != v else res
    return impl


@numba.njit(inline="always", **HELPER)
def _atan_ratio(ah, al, bh, bl):
    """atan((ah + al) / (bh + bl)) for two non-negative double-doubles (inf and zero
    included; 0/0 is 0), in [0, pi/2], as r_hi + r_lo."""
    swap = ah > bh
    nh, nl, dh, dl = (bh, bl, ah, al) if swap else (ah, al, bh, bl)
    both_inf = nh == np.inf
    zero = nh == 0.0
    th = nh / dh
    tl = (fma(-th, dh, nh) + nl - th * dl) / dh
    th = 1.0 if both_inf else (0.0 if zero else th)
    tl = 0.0 if (both_inf or zero or dh == np.inf) else tl
    rh, rl = _atan_unit(th, tl)
    h = _HALF_PI[0] - rh  # pi/2 - r as a double-double, when the ratio was above one
    hl = ((_HALF_PI[0] - h) - rh) + _HALF_PI[1] - rl
    return (h, hl) if swap else (rh, rl)


@overload(arctan2, inline="always", jit_options=HELPER)
def _arctan2(y, x):
    if not (float_arg(y) and float_arg(x)):
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


@numba.njit(inline="always", **HELPER)
def _unit_root(a):
    """sqrt(1 - a*a) for 0 <= a <= 1 as a double-double (NaN above 1)."""
    p = a * a
    pe = fma(a, a, -p)
    wh = 1.0 - p
    wl = ((1.0 - wh) - p) - pe
    sh = math.sqrt(wh)
    sl = (fma(-sh, sh, wh) + wl) / (2.0 * sh) if sh > 0.0 else 0.0
    return sh, sl


@overload(arcsin, inline="always", jit_options=HELPER)
def _arcsin(x):
    if not float_arg(x):
        return lambda x: np.arcsin(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        sh, sl = _unit_root(min(a, 1.0))
        rh, rl = _atan_ratio(a, 0.0, sh, sl)
        res = math.copysign(rh + rl, v)
        return np.nan if a > 1.0 else (v if v != v else res)
    return impl


@overload(arccos, inline="always", jit_options=HELPER)
def _arccos(x):
    if not float_arg(x):
        return lambda x: np.arccos(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        sh, sl = _unit_root(min(a, 1.0))
        rh, rl = _atan_ratio(sh, sl, a, 0.0)
        res = _minus(_PI[0], _PI[1], rh, rl) if v < 0.0 else rh + rl
        return np.nan if a > 1.0 else (v if v != v else res)
    return impl
