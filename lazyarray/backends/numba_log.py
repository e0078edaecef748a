"""Vectorizable log, log1p, log2 and log10, and arcsinh, arccosh and arctanh built on the same
core: arithmetic only, no libm call, so LLVM vectorizes the loops of generated kernels around
them.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import overload

from lazyarray.backends.numba_fp import (HELPER, bits_as_float64, float64_as_bits, float_arg,
                                         fma)


# Derivations (no code from other libraries): the polynomials are the functions' Taylor series,
# truncated where the first omitted term is below 2**-65 relative on the reduced interval, so
# no minimax coefficients are needed; the constants are ln 2 and sqrt(2)/2 rounded with
# mpmath. Error bounds are worked out in the comments; the measured ones are in
# docs/performance.md.

# log(x) = k*ln2 + log(m), m = x / 2**k in [sqrt(2)/2, sqrt(2)) cut from the IEEE bits.
# With f = m - 1 (exact) and s = f / (2 + f): log(m) = 2*atanh(s) = 2s + s*T(s**2),
# T(z) = sum 2 z**j / (2j + 1), |s| <= 0.1716, so z <= 0.0295 and 11 terms leave < 2**-70.
# 2s = f - s*f and s*f = hf - s*hf with hf = f**2/2, so log(m) = f - (hf - s*(hf + T)): the
# large part f is exact, hf is carried with its fma rounding error, and k*ln2 + f is added
# by two-sum, so the one sizable rounding is the final addition. (Power's log, numba_exp, uses
# the same split of ln 2.)
LOG_LN2_HI = 0.6931471805598903   # ln 2 to 42 bits: k*LOG_LN2_HI is exact for |k| < 2**11
LOG_LN2_LO = 5.497923018708371e-14  # ln 2 - LOG_LN2_HI
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # the IEEE bits of sqrt(2)/2
_LOG_T = tuple(2.0 / (2 * j + 1) for j in range(1, 12))


def log(x):
    return np.log(x)


@numba.njit(inline="always", **HELPER)
def _log_core(u, kshift, extra):
    """log(u) + extra for a positive normal u (extra: a correction well below u's ulp),
    minus kshift*ln2 (u was scaled by 2**kshift)."""
    hi, tail = _log_parts(u, kshift, extra)
    return hi + tail


@numba.njit(inline="always", **HELPER)
def _log_parts(u, kshift, extra):
    """`_log_core`'s value unrounded, as hi + tail (tail well below hi's ulp)."""
    t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11 = _LOG_T
    bits = float64_as_bits(u)
    kb = (bits - _SQRT_HALF_BITS) >> 52
    m = bits_as_float64(bits - (kb << 52))
    kf = np.float64(kb) - kshift
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    p = t11
    p = fma(p, z, t10)
    p = fma(p, z, t9)
    p = fma(p, z, t8)
    p = fma(p, z, t7)
    p = fma(p, z, t6)
    p = fma(p, z, t5)
    p = fma(p, z, t4)
    p = fma(p, z, t3)
    p = fma(p, z, t2)
    p = fma(p, z, t1)
    p = p * z
    hf0 = f * f
    hfe = 0.5 * fma(f, f, -hf0)  # hf = 0.5*f*f = hf1 + hfe exactly
    hf1 = 0.5 * hf0
    a = kf * LOG_LN2_HI
    hi = a + f
    bb = hi - a
    e = (a - (hi - bb)) + (f - bb)  # two-sum: a + f = hi + e
    tail = kf * LOG_LN2_LO + e - (hf1 - s * (hf1 + p)) - hfe + s * hfe + extra
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
        if not float_arg(x):
            return lambda x: ref(x)

        def impl(x):
            v = np.float64(x)
            sub = v < 2.2250738585072014e-308  # subnormal (or <= 0: sorted out at the end)
            hi, tail = _log_parts(v * 18014398509481984.0 if sub else v, 54.0 if sub else 0.0,
                                  0.0)
            p = hi * c_hi
            res = p + ((fma(hi, c_hi, -p) + hi * c_lo) + tail * c_hi)
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


@numba.njit(inline="always", **HELPER)
def _log_of_root_sum(a, sign):
    """log(a + sqrt(a*a + sign)) for a >= 0 (sign +1) or a >= 1 (sign -1), a < 2**28."""
    p = a * a
    pe = fma(a, a, -p)
    dh = p + sign
    bb = dh - p
    dl = (p - (dh - bb)) + (sign - bb) + pe  # a*a + sign = dh + dl
    sh = math.sqrt(dh)
    sl = (fma(-sh, sh, dh) + dl) / (2.0 * sh) if dh > 0.0 else 0.0  # sqrt(dh + dl) = sh + sl
    wh = a + sh
    b2 = wh - a
    wl = (a - (wh - b2)) + (sh - b2) + sl  # a + sh + sl = wh + wl
    hi, tail = _log_parts(wh, 0.0, wl / wh)
    return hi + tail


@overload(arcsinh, inline="always", jit_options=HELPER)
def _arcsinh(x):
    if not float_arg(x):
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


@overload(arccosh, inline="always", jit_options=HELPER)
def _arccosh(x):
    if not float_arg(x):
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


# arctanh(x) = (log1p(|x|) - log1p(-|x|)) / 2 with the sign of x: the two logs have opposite
# signs, so the difference is an addition of magnitudes (no cancellation), each log1p taken
# unrounded (hi + tail, with 1 +- |x| and its rounding error as in log1p), the two highs
# added by two-sum. |x| < 2**-54 returns x; +-1 gives +-inf, beyond NaN.
def arctanh(x):
    return np.arctanh(x)


@overload(arctanh, inline="always", jit_options=HELPER)
def _arctanh(x):
    if not float_arg(x):
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


@overload(log, jit_options=HELPER)
def _log(x):
    if not float_arg(x):
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


@overload(log1p, jit_options=HELPER)
def _log1p(x):
    """log1p(x) = log(u) + c/u with u = 1 + x rounded and c its exact rounding error
    (two-sum): log(u + c) = log(u) + c/u + O((c/u)**2), and c/u is below 2**-53."""
    if not float_arg(x):
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
