"""Scalar helpers for generated Numba kernels where `np.<ufunc>` on scalars is missing in Numba
or differs from NumPy. Each stub is a plain Python function (so this module imports without
compiling anything); its `@overload` gives Numba the implementation.
"""

from __future__ import annotations

import math

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
