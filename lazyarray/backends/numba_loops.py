"""Intrinsics and compiled helpers for the loops of generated kernels: reduction steps LLVM may
reassociate, scratch memory in the kernel's stack frame, NumPy's pairwise summation, and
streaming (non-temporal) stores with the prefetch and the fence that go with them.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir as llvmlite_ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from lazyarray.backends.numba_fp import HELPER


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


PAIRWISE_BLOCK = 128  # NumPy's PW_BLOCKSIZE
SCRATCH = 2048  # float64 values a kernel keeps in its stack frame (16 KiB): a total's values
# (a bound any thread stack affords: Python's smallest, threading.stack_size(32768), too)
carray = numba.carray


def _stack_array(dtype, count: int):
    """An intrinsic `() -> pointer` to `count` elements of `dtype` in the stack frame of the
    function calling it (an alloca in its entry block): scratch memory that costs no
    allocation and is the same, cache-hot memory at every call. The distance's loop at 1e3:
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


@numba.njit(nogil=True, **HELPER)
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


@numba.njit(nogil=True, **HELPER)
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
