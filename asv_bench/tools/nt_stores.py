"""Do non-temporal stores pay on this machine, and in which form can a kernel emit them?

    python asv_bench/tools/nt_stores.py [--n 10000000] [--rounds 20]

A memory-bound elementwise kernel (W8, W7 at their largest sizes) reads its input, and its
plain stores read each output line before writing it (a read for ownership): three streams
for two arrays. A non-temporal store writes the line without reading it. Four parallel
kernels computing `out = 2 * x` over float64 arrays of `--n` elements (64-byte aligned
output), alternating, medians in ms:

- plain: the loop as the code generator writes it (LLVM vectorizes it, plain stores);
- direct: 8 elements at a time, loaded, scaled and stored as one aligned vector marked
  non-temporal (an LLVM intrinsic written here: `vmovntpd`);
- blocked: the plain loop into a 512-byte buffer in L1 (64 elements), then that buffer
  copied out by aligned non-temporal vector stores (what the code generator's streaming
  loops do, `Spec.stream`);
- marked: the plain loop with its scalar store marked non-temporal; the loop is then not
  vectorized, and the backend emits scalar `movntsd` (AMD's SSE4a), eight per unrolled
  iteration. Fast for this body; W8's generated kernel marked the same way ran 1.9x slower
  than unmarked (7.8 against 4.2 ms at 1e7; a one-off run, not kept).

docs/performance.md ("Large traces") quotes a run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

_NT = [ir.Constant(ir.IntType(32), 1)]  # the metadata operand of !nontemporal
_V8 = ir.VectorType(ir.DoubleType(), 8)


def _ptr(context, builder, aryty, ary, idx):
    arr = context.make_array(aryty)(context, builder, ary)
    return cgutils.get_item_pointer(context, builder, aryty, arr, [idx], wraparound=False,
                                    boundscheck=False)


@intrinsic
def _scale8_nt(typingctx, dst, src, idx):
    """dst[idx:idx+8] = 2 * src[idx:idx+8], one aligned non-temporal vector store."""
    def codegen(context, builder, sig, args):
        v8p = _V8.as_pointer()
        ps = builder.bitcast(_ptr(context, builder, sig.args[1], args[1], args[2]), v8p)
        pd = builder.bitcast(_ptr(context, builder, sig.args[0], args[0], args[2]), v8p)
        v = builder.fmul(builder.load(ps, align=8), ir.Constant(_V8, [2.0] * 8))
        builder.store(v, pd, align=64).set_metadata("nontemporal", builder.module.add_metadata(_NT))
        return context.get_dummy_value()
    return types.void(dst, src, idx), codegen


@intrinsic
def _copy_nt(typingctx, dst, start, src, count):
    """dst[start:start+count] = src[:count] by aligned non-temporal vector stores."""
    def codegen(context, builder, sig, args):
        v8p = _V8.as_pointer()
        pd = builder.bitcast(_ptr(context, builder, sig.args[0], args[0], args[1]), v8p)
        ps = builder.bitcast(context.make_array(sig.args[2])(context, builder, args[2]).data, v8p)
        md = builder.module.add_metadata(_NT)
        with cgutils.for_range(builder, builder.udiv(args[3], ir.Constant(args[3].type, 8))) as lp:
            v = builder.load(builder.gep(ps, [lp.index]), align=64)
            builder.store(v, builder.gep(pd, [lp.index]), align=64).set_metadata("nontemporal", md)
        return context.get_dummy_value()
    return types.void(dst, start, src, count), codegen


@intrinsic
def _set_nt(typingctx, arr, idx, val):
    """arr[idx] = val, the scalar store marked non-temporal."""
    def codegen(context, builder, sig, args):
        st = builder.store(args[2], _ptr(context, builder, sig.args[0], args[0], args[1]), align=8)
        st.set_metadata("nontemporal", builder.module.add_metadata(_NT))
        return context.get_dummy_value()
    return types.void(arr, idx, val), codegen


@intrinsic
def _sfence(typingctx):
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                            "llvm.x86.sse.sfence")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


BLOCK = 64  # elements per buffered block (512 lost the gain: docs/performance.md)


@njit(parallel=True)
def plain(x, out, nch):
    for i in prange(x.shape[0]):
        out[i] = x[i] * 2.0


@njit(parallel=True)
def direct(x, out, nch):
    n8 = x.shape[0] // 8
    for c in prange(nch):
        for b in range(c * n8 // nch, (c + 1) * n8 // nch):
            _scale8_nt(out, x, b * 8)
        _sfence()


@njit(parallel=True)
def blocked(x, out, nch):
    nb = x.shape[0] // BLOCK
    for c in prange(nch):
        buf = np.empty(BLOCK + 8)
        o = (-buf.ctypes.data % 64) // 8  # the buffer's first 64-byte aligned element
        for b in range(c * nb // nch, (c + 1) * nb // nch):
            for j in range(BLOCK):
                buf[np.uint64(o + j)] = x[np.uint64(b * BLOCK + j)] * 2.0
            _copy_nt(out, b * BLOCK, buf[o:], BLOCK)
        _sfence()


@njit(parallel=True)
def marked(x, out, nch):
    n = x.shape[0]
    for c in prange(nch):
        for i in range(c * n // nch, (c + 1) * n // nch):
            u = np.uint64(i)
            _set_nt(out, u, x[u] * 2.0)
        _sfence()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    n = args.n // BLOCK * BLOCK
    x = np.random.default_rng(0).random(n)
    raw = np.empty(n + 8)
    out = raw[(-raw.ctypes.data % 64) // 8:][:n]  # 64-byte aligned, as vmovntpd needs
    kernels = {"plain": plain, "direct": direct, "blocked": blocked, "marked": marked}
    for name, k in kernels.items():
        out[:] = 0.0
        k(x, out, 64)
        if not np.array_equal(out, x * 2.0):
            raise SystemExit(f"{name}: wrong result")
    times: dict[str, list[float]] = {k: [] for k in kernels}
    for _ in range(args.rounds):
        for name, k in kernels.items():
            t0 = time.perf_counter()
            k(x, out, 64)
            times[name].append(time.perf_counter() - t0)
    for name, t in times.items():
        print(f"{name:8s} {np.median(t) * 1e3:7.3f} ms")


if __name__ == "__main__":
    main()
