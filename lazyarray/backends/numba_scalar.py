"""Scalar helpers for generated Numba kernels where `np.<ufunc>` on scalars is missing in Numba
or differs from NumPy. Each stub is a plain Python function (so this module imports without
compiling anything); its `@overload` gives Numba the implementation.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload


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


@overload(power)
def _power(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        def impl(a, b):
            if b < 0:
                raise ValueError("Integers to negative integer powers are not allowed.")
            return np.power(a, b)
        return impl
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
    if isinstance(a, types.Float) and isinstance(b, types.Float):
        fdiv = numba.njit(_divmod_float)

        def impl(a, b):
            if b == 0:
                return np.fmod(a, b)
            return fdiv(a, b)[1]
        return impl
    return lambda a, b: np.remainder(a, b)
