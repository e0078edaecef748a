"""Running a kernel's part functions on all threads (`codegen/parts.py` writes them).

A kernel calls `launch(part, parts, args)`. With more than one part, `launch` hands a small
wrapper, `void(char **args, intp *dims, intp *steps, void *data)`, to Numba's threading
layer (`numba_parallel_for`, as Numba's own parallel loops do): each thread gets a range of
part numbers (encoded as the offset of the first argument pointer, which starts at 0 with a
step of 1) and calls `part(p, parts, *args)` for each; `data` points at the argument tuple
in the caller's frame, beside the sum of what the parts return (added atomically), which
`launch` returns, and the first part that raised (run again on the calling thread, where its
exception is raised). With one part, the kernel calls the part itself. The number of parts
is the thread count the caller set (`numba.set_num_threads`; 1 on `OneThread`'s calling
thread), at most the loop's length.

A part function is compiled serially with its array arguments declared not to alias each
other (`noalias`, what Numba's parfor pass declares for its gufuncs): a kernel that writes
over an operand reads and writes each element at the same place, and LLVM vectorizes the
loop without runtime alias checks (which an in-place launch fails, and then runs scalar).
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils, compiler
from numba.extending import intrinsic
from numba.np.ufunc import parallel as _parallel

_parallel._launch_threads()  # (the threading layer's symbols, for the compiled launches)


def part(fn):
    """`fn` as a part function: a dispatcher that only names it; `launch` compiles it into
    the calling kernel (see the module's docstring)."""
    return numba.njit(error_model="numpy", nogil=True)(fn)


@intrinsic
def parts(typingctx, n):
    """How many parts a loop of `n` iterations runs in: the caller's thread count, at most
    `n`, at least 1. The thread count is read through the threading layer's
    `get_num_threads` symbol: Numba's own `get_num_threads()` calls through an address of
    the compiling process, which a native image must not hold."""
    if not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        intp = context.get_value_type(types.intp)
        count = context.cast(builder, args[0], n, types.intp)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(intp, []),
                                            "get_num_threads")
        threads = builder.call(fn, [])
        fewer = builder.select(builder.icmp_signed("<", count, threads), count, threads)
        return builder.select(builder.icmp_signed("<", fewer, intp(1)), intp(1), fewer)
    return types.intp(n), codegen


@intrinsic
def launch(typingctx, fn, nparts, args):
    """`fn(p, nparts, *args)` for p in range(nparts), on Numba's threading layer when
    `nparts` > 1; the sum of what the parts return (an event count), 0 when they return
    nothing."""
    if not isinstance(fn, types.Dispatcher) or not isinstance(args, types.BaseTuple):
        return None
    argtypes = (types.intp, types.intp, *args.types)

    def codegen(context, builder, signature, llargs):
        _, n_parts, values = llargs
        cres = _compile_into(context, fn.dispatcher.py_func, argtypes)
        target = context.declare_function(builder.module, cres.fndesc)
        intp = context.get_value_type(types.intp)
        tuple_ty = context.get_value_type(args)
        returned = cres.signature.return_type

        def call(b, p, total, tup):
            """(the part's status, what it returned as an int64)"""
            items = [b.extract_value(tup, k) for k in range(len(args.types))]
            status, value = context.call_conv.call_function(
                b, target, returned, argtypes, [p, total, *items])
            if isinstance(returned, (types.Integer, types.Boolean)):
                return status, context.cast(b, value, returned, types.int64)
            return status, intp(0)

        def raise_if(status):
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)

        total = cgutils.alloca_once_value(builder, intp(0))
        # the frame the parts read: (args, parts, the first failed part + 1, the sum)
        frame_ty = ir.LiteralStructType([tuple_ty, intp, intp, intp])
        with builder.if_else(builder.icmp_signed(">", n_parts, intp(1))) as (many, one):
            with many:
                frame = cgutils.alloca_once(builder, frame_ty)
                builder.store(values, cgutils.gep_inbounds(builder, frame, 0, 0))
                for k, v in ((1, n_parts), (2, intp(0)), (3, intp(0))):
                    builder.store(v, cgutils.gep_inbounds(builder, frame, 0, k))
                wrapper = _wrapper(builder.module, intp, frame_ty, call)
                _parallel_for(builder, intp, wrapper, n_parts, frame)
                # a part raised: run it again here, where its exception can be raised
                first = builder.load(cgutils.gep_inbounds(builder, frame, 0, 2))
                with cgutils.if_unlikely(builder, builder.icmp_signed("!=", first, intp(0))):
                    raise_if(call(builder, builder.sub(first, intp(1)), n_parts, values)[0])
                builder.store(builder.load(cgutils.gep_inbounds(builder, frame, 0, 3)), total)
            with one:
                status, value = call(builder, intp(0), intp(1), values)
                raise_if(status)
                builder.store(value, total)
        return builder.load(total)

    return types.int64(fn, nparts, args), codegen


def _compile_into(context, py_func, argtypes):
    """`py_func` for `argtypes`, lowered into the library of the kernel being compiled (one
    LLVM optimization and one machine-code generation of the whole: a part compiled as a
    function of its own would go through both twice, as a library linked into the kernel)."""
    flags = compiler.Flags()
    flags.no_compile = flags.no_cpython_wrapper = flags.no_cfunc_wrapper = True
    flags.nrt = flags.noalias = True
    flags.error_model = "numpy"
    library = context.codegen().create_library(py_func.__name__)
    cres = compiler.compile_internal(context.typing_context, context, library, py_func,
                                     argtypes, None, flags, {})
    kernel = context.active_code_library
    for linked in library._linking_libraries:
        kernel.add_linking_library(linked)
    kernel.add_llvm_module(library._final_module)
    return cres


def _wrapper(module, intp, frame_ty, call):
    """The function the threading layer calls for a range of parts: adds what each returns
    to the frame's sum; a part that raises stops its range and records its number (plus
    one) in the frame."""
    i8p = ir.IntType(8).as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), intp.as_pointer(),
                                           intp.as_pointer(), i8p])
    fn = ir.Function(module, fnty, name=module.get_unique_name("lazyarray_parts"))
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block())
    args, dims, _, data = fn.args
    start = b.ptrtoint(b.load(args), intp)
    count = b.load(dims)
    frame = b.bitcast(data, frame_ty.as_pointer())
    tup = b.load(cgutils.gep_inbounds(b, frame, 0, 0))
    parts = b.load(cgutils.gep_inbounds(b, frame, 0, 1))
    failed = cgutils.gep_inbounds(b, frame, 0, 2)
    done = fn.append_basic_block("done")
    mine = cgutils.alloca_once_value(b, intp(0))
    with cgutils.for_range(b, count) as loop:
        p = b.add(start, loop.index)
        status, value = call(b, p, parts, tup)
        with cgutils.if_unlikely(b, status.is_error):
            b.store(b.add(p, intp(1)), failed)
            b.branch(done)
        b.store(b.add(b.load(mine), value), mine)
    b.branch(done)
    b.position_at_end(done)
    b.atomic_rmw("add", cgutils.gep_inbounds(b, frame, 0, 3), b.load(mine), "monotonic")
    b.ret_void()
    return fn


def _parallel_for(builder, intp, wrapper, n_parts, frame) -> None:
    """`numba_parallel_for(wrapper, args, dims, steps, data, 0, 1, threads)`: parts 0..n-1,
    each thread's first part as the offset of a null first argument (step 1)."""
    i8p = ir.IntType(8).as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [i8p] * 5 + [intp] * 3)
    parallel_for = cgutils.get_or_insert_function(builder.module, fnty, "numba_parallel_for")
    threads = cgutils.get_or_insert_function(builder.module, ir.FunctionType(intp, []),
                                             "get_num_threads")
    first = cgutils.alloca_once_value(builder, i8p(None))
    dims = cgutils.alloca_once_value(builder, n_parts)
    steps = cgutils.alloca_once_value(builder, intp(1))
    builder.call(parallel_for, [builder.bitcast(wrapper, i8p), builder.bitcast(first, i8p),
                                builder.bitcast(dims, i8p), builder.bitcast(steps, i8p),
                                builder.bitcast(frame, i8p), intp(0), intp(1),
                                builder.call(threads, [])])
