"""Calls from compiled kernels into NumPy's own loops of its float math (ops/loops.py).

Each loop is given to LLVM's linker under a name (`loops.symbol`), and kernels call it by that
name, so a kernel's machine code holds no address of this process: a kernel loaded from the
disk cache links to the loops of the process that loads it. Two forms, for every op with a
loop, as `_h.numpy_loop_<op>`:

- `_h.numpy_loop_<op>(x[, y])`: one element (a loop call of length 1: right in any kernel
  shape, a few nanoseconds more per element than an inlined formula);
- `_h.numpy_block_<op>(a[, b], out, n)`: the first `n` elements of contiguous buffers in one
  call (the blocks of `codegen/body.vector_block`: NumPy's SIMD loop at its own speed).
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from lazyarray.ops import loops
from lazyarray.ops.table import OPS

_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)
_LOOP_TYPE = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), _I64.as_pointer(),
                                             _I64.as_pointer(), _I8P])

for (_name, _dtype), (_address, _data) in loops.numpy_loops().items():
    llvm.add_symbol(loops.symbol(_name, _dtype), _address)
    if _data:
        llvm.add_symbol(loops.symbol(_name, _dtype) + "_data", _data)


def _call(builder, name: str, dtype: str, pointers: list, count, itemsize: int) -> None:
    """Emit `loop(pointers, &count, steps, data)`: NumPy's loop over `count` contiguous
    elements of each buffer."""
    argv = cgutils.alloca_once(builder, _I8P, size=len(pointers))
    steps = cgutils.alloca_once(builder, _I64, size=len(pointers))
    for k, p in enumerate(pointers):
        builder.store(builder.bitcast(p, _I8P), builder.gep(argv, [ir.Constant(_I64, k)]))
        builder.store(ir.Constant(_I64, itemsize), builder.gep(steps, [ir.Constant(_I64, k)]))
    n = cgutils.alloca_once(builder, _I64)
    builder.store(count, n)
    module = builder.module
    sym = loops.symbol(name, dtype)
    fn = cgutils.get_or_insert_function(module, _LOOP_TYPE, sym)
    data = ir.Constant(_I8P, None)
    if loops.numpy_loops()[(name, dtype)][1]:
        gv = module.globals.get(sym + "_data")
        if gv is None:
            gv = ir.GlobalVariable(module, ir.IntType(8), sym + "_data")
            gv.linkage = "external"
        data = gv
    builder.call(fn, [argv, n, steps, data])


def _element(name: str, nin: int):
    """The intrinsic computing op `name` on one element (float32 or float64 operands)."""
    def lower(context, builder, sig, args):
        ty = context.get_value_type(sig.return_type)
        slots = [cgutils.alloca_once(builder, ty) for _ in range(nin + 1)]
        for slot, value in zip(slots, args):
            builder.store(value, slot)
        _call(builder, name, str(sig.return_type), slots, ir.Constant(_I64, 1),
              sig.return_type.bitwidth // 8)
        return builder.load(slots[-1])

    def check(*xs):
        t = xs[0]
        if isinstance(t, types.Float) and all(x == t for x in xs) \
                and (name, str(t)) in loops.numpy_loops():
            return t(*xs), lower
        return None

    if nin == 1:
        def typer(typingctx, x):
            return check(x)
    else:
        def typer(typingctx, x, y):
            return check(x, y)
    typer.__name__ = f"numpy_loop_{name}"
    return intrinsic(typer)


def _block(name: str, nin: int):
    """The intrinsic running op `name` over the first `n` elements of contiguous 1-d buffers."""
    def lower(context, builder, sig, args):
        arrays = [context.make_array(t)(context, builder, v)
                  for t, v in zip(sig.args[:-1], args[:-1])]
        count = context.cast(builder, args[-1], sig.args[-1], types.int64)
        dtype = sig.args[0].dtype
        _call(builder, name, str(dtype), [a.data for a in arrays], count, dtype.bitwidth // 8)
        return context.get_dummy_value()

    def check(*xs):
        arrays, n = xs[:-1], xs[-1]
        t = arrays[0]
        if isinstance(n, types.Integer) and all(
                isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and a.dtype == t.dtype
                for a in arrays) and (name, str(t.dtype)) in loops.numpy_loops():
            return types.none(*xs), lower
        return None

    if nin == 1:
        def typer(typingctx, a, out, n):
            return check(a, out, n)
    else:
        def typer(typingctx, a, b, out, n):
            return check(a, b, out, n)
    typer.__name__ = f"numpy_block_{name}"
    return intrinsic(typer)


ELEMENT = {}
BLOCK = {}
for _name in sorted({n for n, _ in loops.numpy_loops()}):
    _nin = OPS[_name].nin
    ELEMENT[f"numpy_loop_{_name}"] = _element(_name, _nin)
    BLOCK[f"numpy_block_{_name}"] = _block(_name, _nin)
