"""Small matrix products as fused multiply-sums (XLA's dot strength reduction).

A `dot` is a library call: its operands are written out for BLAS and its result is written
back, so nothing fuses across it. Where the product is memory-bound anyway, a multiply and a
`reduce` in its place lets fusion read the operands where they are and feed the result
straight into its consumers:

- a short contraction (K <= TINY_K: `A @ beta` with A of (n, 9)) becomes a reduction over a
  trailing axis of (M, N, K): one kernel over the rows, fused with what reads them
  (`y - A @ beta`);
- a small result (M*N <= SMALL_OUT: `A.T @ y`, `x @ y`) becomes a reduction over a leading
  axis of (K, M, N): per chunk of K, partial sums of the M*N elements.

Larger products stay BLAS: there a reduction would do the multiply-adds without BLAS's
blocking (`A.T @ A` with A of (10^6, 9), 81 results: 15.0 ms against BLAS's 14.3). Only float32,
float64 and integer products: their additions are the dtype's own (integers wrap the same in
any order; floats are summed in the reductions' fixed order, to within rounding of BLAS), and
floating-point warnings name `matmul`, as NumPy's do.
"""

from __future__ import annotations

import numpy as np

from lazyarray.ir.hlo import Builder, Instr, Module

TINY_K = 16  # contraction lengths up to which a product is a reduction over a trailing axis
SMALL_OUT = 16  # result sizes up to which a product is a reduction over a leading axis
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # (float16, longdouble: NumPy's loops)


def _transposed(b: Builder, x: int) -> int:
    """The matrix `x` transposed (the source of a transpose: `A.T @ y` reads A as it is)."""
    ins = b.instrs[x]
    if ins.opcode == "transpose":
        return ins.operands[0]
    n, m = ins.shape
    return b.add(Instr("transpose", (x,), (m, n), ins.dtype, (("permutation", (1, 0)),)))


def _broadcast(b: Builder, x: int, shape: tuple, dims: tuple) -> int:
    if b.instrs[x].shape == shape:  # (dims are increasing: the same shape is the same array)
        return x
    return b.add(Instr("broadcast", (x,), shape, b.instrs[x].dtype, (("dimensions", dims),)))


def _expand(b: Builder, ins: Instr) -> int | None:
    """`ins` (a dot, its operands already in `b`) as multiply + reduce, or None to keep it."""
    a, c = ins.operands
    sa, sc = b.instrs[a].shape, b.instrs[c].shape
    if len(sa) > 2 or len(sc) > 2 or not (ins.dtype in _FLOATS or ins.dtype.kind in "iu") \
            or b.instrs[a].dtype != ins.dtype or b.instrs[c].dtype != ins.dtype:
        return None
    m = sa[0] if len(sa) == 2 else None  # None: the operand was a vector (no such axis)
    n = sc[1] if len(sc) == 2 else None
    k = sa[-1]
    kept = [d for d in (m, n) if d is not None]
    out_size = (1 if m is None else m) * (1 if n is None else n)
    if k <= TINY_K:  # (M, N, K), summed over K
        shape = (*kept, k)
        last = len(kept)
        da = (0, last) if m is not None else (last,)
        if n is not None:  # c is (K, N): as (N, K) for increasing broadcast dimensions
            c = _transposed(b, c)
            dc = (last - 1, last)
        else:
            dc = (last,)
        axis = last
    elif out_size <= SMALL_OUT:  # (K, M, N), summed over K
        shape = (k, *kept)
        if m is not None:  # a is (M, K): as (K, M)
            a = _transposed(b, a)
            da = (0, 1)
        else:
            da = (0,)
        dc = (0, len(kept)) if n is not None else (0,)
        axis = 0
    else:
        return None
    dt = ins.dtype
    prod = b.add(Instr("multiply", (_broadcast(b, a, shape, da), _broadcast(b, c, shape, dc)),
                       shape, dt, _AS_MATMUL))
    return b.add(Instr("reduce", (prod,), ins.shape, dt,
                       (("dimensions", (axis,)), ("to_apply", "add"), *_AS_MATMUL)))


# NumPy's warnings name the product ("overflow encountered in matmul"): so do the rechecks of
# its multiply and sum (ir/interpret.py)
_AS_MATMUL = (("warn_as", "matmul"),)


def reduce_small_dots(m: Module) -> Module:
    """Each small `dot` of `m` as a multiply and a reduce (see the module's doc)."""
    if not any(ins.opcode == "dot" for ins in m.instrs):
        return m
    b = Builder()
    new_id: list[int] = []
    for ins in m.instrs:
        ins = Instr(ins.opcode, tuple(new_id[o] for o in ins.operands), ins.shape, ins.dtype,
                    ins.attrs, ins.value)
        out = _expand(b, ins) if ins.opcode == "dot" else None
        new_id.append(b.add(ins) if out is None else out)
    return b.build([new_id[o] for o in m.outputs], m.name)
