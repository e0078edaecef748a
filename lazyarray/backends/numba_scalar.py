"""Scalar helpers for generated Numba kernels, which call them as `_h.<name>` with this module
as `_h`: here the NumPy operations whose scalar form is missing in Numba or differs from
NumPy's at the edges (integer division and shifts, signed zeros, NaN rules), and, imported
from the modules that hold them, the vectorizable math (`numba_exp`, `numba_log`,
`numba_trig`) and the loop intrinsics (`numba_loops`). Each stub is a plain Python function
(so these modules import without compiling anything); its `@overload` gives Numba the
implementation. Importing this module imports them all, which registers every overload.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic, overload
from numba.np.numpy_support import as_dtype

from lazyarray.backends.numba_exp import (  # noqa: F401
    cbrt, cosh, exp, exp2, exp_impl, exp_nonpositive, expm1, pow_impl, sinh, tanh)
from lazyarray.backends.numba_fp import HELPER, SCALEF
from lazyarray.backends.numba_fp import float64_as_bits as _float64_as_bits  # noqa: F401
from lazyarray.backends.numba_log import (  # noqa: F401
    arccosh, arcsinh, arctanh, log, log1p, log2, log10)
from lazyarray.backends.numba_loops import (  # noqa: F401
    PAIRWISE_BLOCK, SCRATCH, carray, max_step, min_step, pairwise_sum, prefetch, scratch,
    store_stream, stream, stream_fence, stream_head, sum_step)
from lazyarray.backends.numba_ufunc import BLOCK as _NUMPY_BLOCKS
from lazyarray.backends.numba_ufunc import ELEMENT as _NUMPY_ELEMENTS
from lazyarray.backends.numba_trig import (  # noqa: F401
    TRIG_BIG, arccos, arcsin, arctan, arctan2, cos, cos_fast, sin, sin_fast, tan, tan_fast,
    trig_big)


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


@overload(power, inline="always", jit_options=HELPER)
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
            return pow_impl(out.type, SCALEF)
    return lambda a, b: np.power(a, b)


@overload(heaviside, jit_options=HELPER)
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


@overload(bitwise_count, jit_options=HELPER)
def _bitwise_count(x):
    def impl(x):
        v = np.uint64(abs(np.int64(x))) if x < 0 else np.uint64(x)
        n = 0
        while v:
            v &= v - np.uint64(1)
            n += 1
        return np.uint8(n)
    return impl


@overload(modf_frac, jit_options=HELPER)
def _modf_frac(x):
    def impl(x):
        if math.isinf(x):
            return math.copysign(0.0, x)
        return math.copysign(x - np.trunc(x), x) if x == x else x
    return impl


@overload(modf_int, jit_options=HELPER)
def _modf_int(x):
    def impl(x):
        if math.isinf(x) or x != x:
            return x
        return math.copysign(np.trunc(x), x)
    return impl


@overload(frexp_mantissa, jit_options=HELPER)
def _frexp_mantissa(x):
    return lambda x: math.frexp(x)[0]


@overload(frexp_exponent, jit_options=HELPER)
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


@overload(floor_divide, jit_options=HELPER)
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
        fdiv = numba.njit(_divmod_float, **HELPER)

        def impl(a, b):
            if b == 0:
                return a / b
            return fdiv(a, b)[0]
        return impl
    return lambda a, b: np.floor_divide(a, b)


@overload(remainder, jit_options=HELPER)
def _remainder(a, b):
    if isinstance(a, types.Integer) and isinstance(b, types.Integer):
        zero = _typed(a, 0)
        if not a.signed:
            return lambda a, b: zero if b == 0 else np.remainder(a, b)
        return lambda a, b: zero if b == 0 or b == -1 else np.remainder(a, b)
    if isinstance(a, types.Float) and isinstance(b, types.Float):
        fdiv = numba.njit(_divmod_float, **HELPER)

        def impl(a, b):
            if b == 0:
                return np.fmod(a, b)
            return fdiv(a, b)[1]
        return impl
    return lambda a, b: np.remainder(a, b)


def gather_index(j, n, err):
    """A gathered index along an axis of length `n`, wrapped once if negative; one still
    outside [0, n) sets err[0] (the executor raises NumPy's IndexError) and reads element 0:
    never outside the buffer. One call per index, typed once (a kernel's source stays small)."""
    if j < 0:
        j += n
    if j < 0 or j >= n:
        err[0] = 1
        return 0
    return j


@overload(gather_index, jit_options=HELPER)
def _gather_index(j, n, err):
    def impl(j, n, err):
        k = np.int64(j)
        if k < 0:
            k += n
        if k < 0 or k >= n:
            err[0] = 1
            return np.int64(0)
        return k
    return impl


def left_shift(a, b):
    return np.left_shift(a, b)


def right_shift(a, b):
    return np.right_shift(a, b)


def _typed(t, value):
    """A constant of Numba type `t` (mixed signed/unsigned arithmetic would go to float)."""
    return as_dtype(t).type(value)


@overload(left_shift, jit_options=HELPER)
def _left_shift(a, b):
    bits, zero = a.bitwidth, _typed(a, 0)  # NumPy: a count outside [0, bits) shifts all out

    def impl(a, b):
        if b < 0 or b >= bits:
            return zero
        return a << b
    return impl


@overload(right_shift, jit_options=HELPER)
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


@overload(fmod, jit_options=HELPER)
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


@overload(sign, jit_options=HELPER)
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


@overload(maximum, jit_options=HELPER)
def _maximum(a, b):
    if not (isinstance(a, types.Float) and isinstance(b, types.Float)):
        return lambda a, b: np.maximum(a, b)

    def impl(a, b):
        r = a if a > b else b
        return a if a != a else r
    return impl


@overload(minimum, jit_options=HELPER)
def _minimum(a, b):
    if not (isinstance(a, types.Float) and isinstance(b, types.Float)):
        return lambda a, b: np.minimum(a, b)

    def impl(a, b):
        r = a if a < b else b
        return a if a != a else r
    return impl


def spacing(x):
    return np.spacing(x)


@overload(spacing, jit_options=HELPER)
def _spacing(x):
    inf = _typed(x, np.inf)

    def impl(x):  # NumPy: the distance to the next number away from zero; NaN at +-inf
        if x != x or x == inf or x == -inf:
            return x - x
        return np.nextafter(x, inf if x >= 0 else -inf) - x
    return impl


# The big math of numba_exp, numba_log and numba_trig is inlined into kernels whole (LLVM
# leaves a call to anything this size, and a call stops a loop from vectorizing).
# `inline="always"` does that on Numba's IR: every kernel then types and lowers the whole
# function again (power: about 1.5 s a kernel, 4 s a parallel one). Instead, each name below
# is an intrinsic that compiles the function once per process and signature (with NumPy's
# error model, as the kernels) and marks the compiled function `alwaysinline`: LLVM inlines it
# into each kernel, which then vectorizes as before (the same vector code) and compiles in a
# tenth of the time. (The names here become the intrinsics; the stubs in their own modules
# stay what the overloads were registered on.)
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

# NumPy's own loops (`numpy_loop_<op>`, `numpy_block_<op>`; backends/numba_ufunc.py)
globals().update(_NUMPY_ELEMENTS)
globals().update(_NUMPY_BLOCKS)
