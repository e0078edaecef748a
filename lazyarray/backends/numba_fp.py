"""Float primitives of the vectorizable math helpers: IEEE bit casts, a fused multiply-add and
llvm.ldexp as intrinsics (single instructions LLVM vectorizes), whether kernels scale by
vscalefpd (AVX-512), the rounding constant of the argument reductions, and the test for an
argument the float math takes.
"""

from __future__ import annotations

import numba
from llvmlite import ir as llvmlite_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

ROUND = 6755399441055744.0  # 1.5 * 2**52: (t + ROUND) - ROUND is t rounded to an integer
ROUND_BITS = 0x4338000000000000  # its IEEE bits


def _has_avx512() -> bool:
    """Does Numba compile for a CPU with AVX-512F (its own CPU settings first, then the host)?"""
    import llvmlite.binding as llvm

    name, features = numba.config.CPU_NAME, numba.config.CPU_FEATURES
    if features is not None:
        return "+avx512f" in features.split(",")
    if name is not None and name != "host":
        return False  # a named portable target: stay on instructions every x86-64 CPU has
    return bool(llvm.get_host_cpu_features().get("avx512f"))


SCALEF = _has_avx512()


# Numba's options for every helper a kernel calls (overloads and jitted functions): a helper
# is only ever called from compiled code, so neither of the wrappers Numba builds and optimizes
# for each compiled function (the Python-callable one, the C-callable one) is wanted; with
# them, every helper specialization cost a kernel's compile tens of milliseconds more
HELPER = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


@intrinsic
def bits_as_float64(typingctx, bits):
    """The float64 whose IEEE bits are the int64 `bits` (a register move, vectorizable)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


@intrinsic
def ldexp(typingctx, x, n):
    """x * 2**n for an integral float64 n with |n| < 2**31 (llvm.ldexp: vscalefpd on AVX-512)."""
    def codegen(context, builder, signature, args):
        f64, i32 = context.get_value_type(types.float64), context.get_value_type(types.int32)
        fnty = llvmlite_ir.FunctionType(f64, [f64, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ldexp.f64.i32")
        return builder.call(fn, [args[0], builder.fptosi(args[1], i32)])
    return types.float64(types.float64, types.float64), codegen


@intrinsic
def float64_as_bits(typingctx, x):
    """The int64 IEEE bits of the float64 `x` (a register move, vectorizable)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a*b + c rounded once (llvm.fma: one vfmadd instruction, vectorizable)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float64(types.float64, types.float64, types.float64), codegen


def float_arg(x):
    """Is the Numba type `x` a real number (float, integer or bool: taken as float64)?"""
    return isinstance(x, (types.Float, types.Integer, types.Boolean))
