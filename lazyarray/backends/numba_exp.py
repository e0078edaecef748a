"""Vectorizable exp, exp2, expm1, sinh, cosh, tanh, cbrt and the float form of power:
arithmetic only, no libm call, so LLVM vectorizes the loops of generated kernels around them.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from lazyarray.backends.numba_fp import (HELPER, ROUND, ROUND_BITS, SCALEF, bits_as_float64,
                                         float64_as_bits, float_arg, fma, ldexp)
from lazyarray.backends.numba_log import LOG_LN2_HI, LOG_LN2_LO


# ---- exp without a libm call, so LLVM vectorizes the loop around it -------------------------
# x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2 in two parts, each product subtracted by a
# fused multiply-add, exact for the high part), then exp(r) = 1 + r + r**2 * q(r), q of degree 9
# interpolating (e**r - 1 - r) / r**2 at the 10 Chebyshev nodes of [-0.34658, 0.34658]
# (coefficients computed with mpmath at 50 digits; the approximation's relative error is below
# 1.6e-17, a seventh of half an ulp), and the result scaled by 2**n.
# - n is rounded by adding 1.5 * 2**52 (the sum's low bits then hold n as an integer): AVX2 has
#   no vector conversion from float64 to int64, and LLVM would do four scalar ones per vector.
# - q is evaluated by Estrin's scheme, a tree of depth 4: Horner's chain of dependent fused
#   multiply-adds was the loop's critical path (a Gaussian row sum: 293 -> 188 ms at 1e5 x 1000).
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
_TWO_M60 = 2.0 ** -60
_EXP_Q = (0.5000000000000001, 0.16666666666666669, 0.04166666666662416, 0.008333333333330063,
          0.0013888888917199863, 0.00019841269863042963, 2.4801521317484083e-05,
          2.7557268476553695e-06, 2.7620078203806394e-07, 2.5100377619606372e-08)


def exp(x):
    return np.exp(x)


@overload(exp, jit_options=HELPER)
def _exp(x):
    if not isinstance(x, types.Float):
        return lambda x: np.exp(x)
    return exp_impl(as_dtype(x).type, SCALEF)


def exp_nonpositive(x):
    return np.exp(x)


@overload(exp_nonpositive, jit_options=HELPER)
def _exp_nonpositive(x):
    """`exp` of an argument the code generator knows is <= 0 or NaN (`exp(-(x - y)**2)`):
    the same values without the upper clamp (one instruction of about 25)."""
    if not isinstance(x, types.Float):
        return lambda x: np.exp(x)
    return exp_impl(as_dtype(x).type, SCALEF, nonpositive=True)


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
        t = fma(xc, _LOG2E, ROUND)  # n = round(x / ln2) in t's low mantissa bits
        n = t - ROUND
        r = fma(-n, _LN2_LO, fma(-n, _LN2_HI, xc))
        r2 = r * r
        r4 = r2 * r2
        q03 = fma(fma(q3, r, q2), r2, fma(q1, r, q0))
        q47 = fma(fma(q7, r, q6), r2, fma(q5, r, q4))
        q = fma(fma(q9, r, q8), r4 * r4, fma(q47, r4, q03))
        p = fma(q, r2, r) + 1.0
        if scalef:  # (a NaN x makes n's conversion undefined: the select below drops it)
            res = ldexp(p, n)
        elif nonpositive:  # n >= -1076: p * 2^(n + 60) is normal (p > 0.7), and the
            # exact power 2^-60 rounds once, where the result is subnormal: the bits of the
            # two-step form below in two integer operations instead of seven
            res = p * bits_as_float64((float64_as_bits(t) - ROUND_BITS + 1083) << 52) \
                * _TWO_M60
        else:
            k = float64_as_bits(t) - ROUND_BITS  # n as an integer, without a conversion
            half = k >> 1
            res = (p * bits_as_float64((half + 1023) << 52)
                   * bits_as_float64((k - half + 1023) << 52))
        return out(res if v == v else v)
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


@overload(cbrt, inline="always", jit_options=HELPER)
def _cbrt(x):
    if not float_arg(x):
        return lambda x: np.cbrt(x)

    def impl(x):
        v = np.float64(x)
        a = abs(v)
        small, large = a < _TWO_M960, a > _TWO_960
        s = a * _TWO_162 if small else (a * _TWO_M162 if large else a)
        y = bits_as_float64(float64_as_bits(s) // 3 + _CBRT_GUESS)
        for _ in range(3):
            y3 = y * y * y
            y = y * ((y3 + 2.0 * s) / (2.0 * y3 + s))
        p = y * y
        q = p * y
        qe = fma(p, y, -q) + fma(y, y, -p) * y  # y**3 = q + qe
        y = y + ((s - q) - qe) / (3.0 * p)
        y = y * _TWO_M54 if small else (y * _TWO_54 if large else y)
        y = a if (a == 0.0 or a == np.inf) else y
        y = math.copysign(y, v)
        return v if v != v else y
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


@numba.njit(inline="always", **HELPER)
def _expm1_sum(vc):
    """expm1(vc) for vc in [-45, 709.8] as sm + tail (|tail| below sm's ulp) and n, the
    result's power of two: the value is (sm + tail) * 2 when n > 1023."""
    c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16 = _EXPM1_P
    t = vc * _LOG2E
    big = t + ROUND
    nf = big - ROUND
    a = fma(-nf, _LN2_1, vc)  # exact
    w = nf * _LN2_2
    wl = fma(nf, _LN2_2, -w)
    h = a - w
    bb = h - a
    e = (a - (h - bb)) - (w + bb)
    lo = (e - wl) - nf * _LN2_3
    p = c16
    p = fma(p, h, c15)
    p = fma(p, h, c14)
    p = fma(p, h, c13)
    p = fma(p, h, c12)
    p = fma(p, h, c11)
    p = fma(p, h, c10)
    p = fma(p, h, c9)
    p = fma(p, h, c8)
    p = fma(p, h, c7)
    p = fma(p, h, c6)
    p = fma(p, h, c5)
    p = fma(p, h, c4)
    p = fma(p, h, c3)
    hz = h * h
    s = (0.5 * hz + 0.5 * fma(h, h, -hz)) + (hz * h * p + lo * (1.0 + h))
    qh = h + s
    ql = (h - qh) + s  # fast two-sum: |h| >= |s|
    k = float64_as_bits(big) - ROUND_BITS  # n, from the rounded sum's bits
    kk = min(k, 1023)
    scale = bits_as_float64((kk + 1023) << 52)
    am = scale - 1.0
    b2 = am - scale
    ae = (scale - (am - b2)) + (-1.0 - b2)  # two-sum: scale - 1 = am + ae
    bq = scale * qh  # exact
    sm = am + bq
    b3 = sm - am
    se = (am - (sm - b3)) + (bq - b3)  # two-sum: am + bq = sm + se
    return sm, se + ae + scale * ql, k


# (into its one compiled form: numba_scalar, `_inlined_by_llvm`)
@overload(expm1, inline="always", jit_options=HELPER)
def _expm1(x):
    if not float_arg(x):
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


@overload(tanh, inline="always", jit_options=HELPER)
def _tanh(x):
    if not float_arg(x):
        return lambda x: np.tanh(x)

    def impl(x):
        v = np.float64(x)
        th, tl, _ = _expm1_sum(2.0 * min(abs(v), 20.0))
        dh = th + 2.0
        b = dh - th
        dl = (th - (dh - b)) + (2.0 - b) + tl  # two-sum: th + 2 = dh + (its error), plus tl
        inv = 1.0 / dh  # (one division: q and the correction both multiply by it)
        q = th * inv
        res = q + (fma(-q, dh, th) + (tl - q * dl)) * inv
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


@numba.njit(inline="always", **HELPER)
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
    half_square = p + (fma(hh, eh, -p) + eh * el)
    return th, tl, big, (p if p == np.inf else half_square)  # (overflow: the fma term is -inf)


@overload(sinh, inline="always", jit_options=HELPER)
def _sinh(x):
    if not float_arg(x):
        return lambda x: np.sinh(x)

    def impl(x):
        v = np.float64(x)
        th, tl, big, large = _hyperbolic_core(abs(v))
        dh = th + 1.0
        b = dh - th
        dl = (th - (dh - b)) + (1.0 - b) + tl  # 1 + t = dh + dl
        inv = 1.0 / dh
        q = th * inv
        r = (fma(-q, dh, th) + (tl - q * dl)) * inv  # t/(1 + t) = q + r
        sh = th + q
        b2 = sh - th
        se = (th - (sh - b2)) + (q - b2)  # two-sum: th + q = sh + se
        res = large if big else 0.5 * sh + 0.5 * (se + tl + r)
        res = math.copysign(res, v)
        return v if v != v else res
    return impl


@overload(cosh, inline="always", jit_options=HELPER)
def _cosh(x):
    if not float_arg(x):
        return lambda x: np.cosh(x)

    def impl(x):
        v = np.float64(x)
        th, tl, big, large = _hyperbolic_core(abs(v))
        eh = th + 1.0
        b = eh - th
        el = (th - (eh - b)) + (1.0 - b) + tl  # e = 1 + t = eh + el
        rh = 1.0 / eh
        rl = (fma(-rh, eh, 1.0) - rh * el) * rh  # 1/e = rh + rl
        sh = eh + rh
        se = (eh - sh) + rh + el + rl  # eh >= rh: fast two-sum, then the low parts
        res = large if big else 0.5 * sh + 0.5 * se
        return v * v if v != v else res
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
# rounds again only for subnormal results). The special values (zeros, infinities, NaN,
# negative x) follow C99 and NumPy: the sign of an odd integer power, NaN for a negative x to
# a non-integer power, 1 for x**0 and 1**y whatever the other operand. (`numba_scalar.power`
# is the stub; its overload takes this form for floats.)
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


@numba.njit(inline="always", **HELPER)
def _pow_log(a):
    """log(a) for a positive finite a (subnormal included) as hi + lo, to about 2**-75."""
    p0, p1, p2, p3, p4, p5, p6 = _POW_P
    sub = a < 2.2250738585072014e-308
    bits = float64_as_bits(a * 18014398509481984.0 if sub else a)
    kb = (bits - _POW_OFF) >> 52
    mb = bits - (kb << 52)
    i = (mb >> 45) & 127
    k = np.float64(kb) - (54.0 if sub else 0.0)
    r = fma(bits_as_float64(mb), _POW_C[i], -1.0)  # exact
    r2 = r * r
    r2e = fma(r, r, -r2)
    h = -0.5 * r2
    p = fma(fma(fma(fma(fma(fma(p6, r, p5), r, p4), r, p3), r, p2), r, p1), r, p0)
    s1 = k * LOG_LN2_HI + _POW_LOG_HI[i]  # exact
    s2 = s1 + r
    bb = s2 - s1
    e2 = (s1 - (s2 - bb)) + (r - bb)
    s3 = s2 + h
    bb = s3 - s2
    e3 = (s2 - (s3 - bb)) + (h - bb)
    lo = e2 + e3 - 0.5 * r2e + _POW_LOG_LO[i] + k * LOG_LN2_LO + r * r2 * p
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

    @numba.njit(inline="always", **HELPER)
    def exp_dd(zh, zl):
        zc = min(max(zh, -746.0), 710.0)  # beyond: 0 and inf
        zl = zl if zc == zh else 0.0
        t = fma(zc, _EXP_64_LOG2E, ROUND)
        n = t - ROUND
        k = float64_as_bits(t) - ROUND_BITS  # n as an integer (any bits for NaN: masked)
        j = k & 63
        rh = fma(-n, c_hi, zc)  # exact
        rl = fma(-n, c_lo, zl)
        r = rh + rl
        bb = r - rh
        re = (rh - (r - bb)) + (rl - bb)
        e = fma(r * r, fma(fma(fma(fma(q6, r, q5), r, q4), r, q3), r, q2), r + re)
        th = _EXP_T_HI[j]
        p = th + fma(th, e, _EXP_T_LO[j] * (1.0 + e))
        m = k >> 6
        if scalef:
            return ldexp(p, np.float64(m))
        half = m >> 1
        return p * bits_as_float64((half + 1023) << 52) * bits_as_float64((m - half + 1023) << 52)
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
        res = exp_dd(zh, fma(y0, lh, -zh) + y0 * ll)
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


@overload(exp2, inline="always", jit_options=HELPER)
def _exp2(x):
    if not float_arg(x):
        return lambda x: np.exp2(x)
    exp_dd = _pow_exp(SCALEF)
    c_hi, c_lo = _LN2_DD

    def impl(x):
        v = np.float64(x)
        zh = v * c_hi
        res = exp_dd(zh, fma(v, c_hi, -zh) + v * c_lo)
        return v if v != v else res
    return impl
