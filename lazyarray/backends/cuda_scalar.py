"""Scalar helpers for generated CUDA kernels (device functions), with NumPy's semantics where
a plain operator differs: integer division never traps, float divmod follows NumPy's
algorithm, shifts out of range, NaN-propagating maximum/minimum.

`fmath` is what kernels call as `_m`: the `math` module on the GPU (Numba CUDA maps it to
libdevice, which returns inf/NaN at the domain edges as NumPy does), and NumPy's functions in
the simulator, where Python's `math` would raise instead.
"""

from __future__ import annotations

import math
import types

import numpy as np
from numba import config, cuda

SIMULATOR = bool(config.ENABLE_CUDASIM)

if SIMULATOR:
    def _array_loop(f):
        """NumPy's array loop on 1-element arrays (its scalar paths differ at some edges, e.g.
        pow(-inf, 0.5)); the GPU's libdevice follows C99, as the array loops do."""
        return lambda *xs: f(*(np.reshape(x, 1) for x in xs))[0]

    fmath = types.SimpleNamespace(inf=math.inf, nan=math.nan, **{
        name: _array_loop(f) for name, f in dict(
            sqrt=np.sqrt, exp=np.exp, expm1=np.expm1, log=np.log, log2=np.log2,
            log10=np.log10, log1p=np.log1p, sin=np.sin, cos=np.cos, tan=np.tan, asin=np.arcsin,
            acos=np.arccos, atan=np.arctan, atan2=np.arctan2, hypot=np.hypot, sinh=np.sinh,
            cosh=np.cosh, tanh=np.tanh, asinh=np.arcsinh, acosh=np.arccosh, atanh=np.arctanh,
            floor=np.floor, ceil=np.ceil, trunc=np.trunc, copysign=np.copysign, fmod=np.fmod,
            pow=np.power, fabs=np.fabs, isinf=np.isinf, isfinite=np.isfinite).items()})
else:
    fmath = math

_m = fmath
device = cuda.jit(device=True)


@device
def divide(a, b):
    if b == 0:  # IEEE division, stated: no error-model branch can turn it into an exception
        if a != a or a == 0:
            return _m.nan
        return _m.copysign(_m.inf, a) * _m.copysign(1.0, b)
    return a / b


@device
def maximum(a, b):
    return a if (a >= b or a != a) else b


@device
def minimum(a, b):
    return a if (a <= b or a != a) else b


@device
def fmax(a, b):
    return a if (a >= b or b != b) else b


@device
def fmin(a, b):
    return a if (a <= b or b != b) else b


@device
def isinf(x):
    return x == _m.inf or x == -_m.inf


@device
def isfinite(x):
    return x == x and x != _m.inf and x != -_m.inf


@device
def sign(x):
    if x != x:
        return x
    if x > 0:
        return 1
    if x < 0:
        return -1
    return x - x


@device
def _divmod_float(a, b):
    """NumPy's float divmod (exact at denormals and signed zeros)."""
    mod = _m.fmod(a, b)
    div = (a - mod) / b
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
            div -= 1.0
    else:
        mod = _m.copysign(0.0, b)
    if div != 0:
        floordiv = _m.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = _m.copysign(0.0, a) * _m.copysign(1.0, b)
    return floordiv, mod


@device
def floor_divide_f(a, b):
    if b == 0:
        return divide(a, b)
    return _divmod_float(a, b)[0]


@device
def remainder_f(a, b):
    if b == 0:
        return _m.fmod(a, b) if a == a else a
    return _divmod_float(a, b)[1]


@device
def floor_divide_i(a, b):
    if b == 0:
        return a - a
    if b == -1:  # MIN // -1 wraps as in NumPy (never the hardware's trap)
        return (a - a) - a
    return a // b


@device
def remainder_i(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b


@device
def fmod_i(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b  # floor remainder (sign of b): move it to the sign of a, as C does
    if r != 0 and (a < 0) != (b < 0):
        r = r - b
    return r


@device
def left_shift(a, b, bits):
    if b < 0 or b >= bits:  # NumPy: a count outside [0, bits) shifts everything out
        return a - a
    return a << b


@device
def right_shift(a, b, bits):
    if b < 0 or b >= bits:
        return (a - a) - 1 if a < 0 else a - a
    return a >> b
