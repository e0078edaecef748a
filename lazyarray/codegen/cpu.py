"""Fusion -> Python source of one Numba kernel (pure: no Numba import here).

The source depends only on the fused computation's masked text and the launch Spec, so it is
shape-polymorphic: sizes, slice offsets and scalar constants are all kernel arguments.

    def kernel(out0, a0, a1, s0, n0):          # outputs, array loads, scalar loads, sizes
        for i0 in prange(n0):
            x1 = a0[i0]
            ...
            out0[i0] = x5

Reductions keep a scalar accumulator over the trailing reduced dims; when the outermost dim
is reduced, each of `nchunks` fixed chunks (a count independent of the thread count, so the
result is deterministic) accumulates into its own row of a partials array.
"""

from __future__ import annotations

import numpy as np

from lazyarray.ir.hlo import Module
from lazyarray.ops.table import OPS, REDUCTIONS
from lazyarray.runtime.layout import Spec

# 7: kernels return a count of possible FP events; 8: flat loads; 9: fma; 10: flat stores;
# 11: exact checks of values that reach an output in a second pass, only when one is not finite;
# 12: unsigned lane indices; 13: BLOCK lanes in reductions with vector math; 14: checks
# moved down chains of one-operand ops; 15: row lanes in column reductions; 16: trace-tier
# sums; 17: row fusion kernels; 18: non-finite counts of values that may not reach an
# output; 19: reduction kernels check float values for not finite only (`_body`'s `loose`);
# 20: one-compare checks of values of known sign, exp of a value <= 0 without the upper clamp;
# 21: streaming stores of large loop outputs (Spec.stream), the running maximum of magnitude
# bits in place of a count of non-finite values (`_magnitude_bits`); 22: streaming from
# registers, 1-d and 2-d (`_render_stream_direct`); 23: float sum, max, min
# vectorized (`vector_combine`), a running maximum per row (`_row_maxima`),
# software prefetch in large 1-d reductions (`Spec.prefetch`); -1 from a loop whose second
# pass would read an input its output overwrote; 24: argmax/argmin in two passes (the extreme,
# then its first index), tanh, sinh, cosh, log2, log10, arctanh, arcsinh, arccosh, cbrt as
# lazyarray's own (`_h.tanh`, ...); ...; 30: power of floats, exp2 and tan as lazyarray's own
# (`_h.power` no longer calls libm: the same kernel source compiles to other code); 31:
# a whole 1-d argmax/argmin in parallel chunks
CODEGEN_VERSION = 31


class Unsupported(Exception):
    """The CPU code generator cannot express this fusion; the interpreter runs it instead."""


# complex operands compile only for these (exact, or NumPy's own formula); other complex math
# differs from NumPy at inf/NaN inputs, so the interpreter runs it
_COMPLEX_OK = {"add", "subtract", "multiply", "negative", "positive", "conjugate", "isnan", "gather",
               "update", "imag",
               "isinf", "isfinite", "equal", "not_equal", "convert", "select", "reduce", "scan",
               "broadcast", "reshape", "transpose", "slice", "parameter", "constant"}
_INTERPRET_ONLY: set[str] = set()  # ops whose Numba scalar form differs from NumPy
_NO_UINT64 = {"lcm", "gcd", "reciprocal"}  # Numba computes these through int64/float


def np_type(dtype: np.dtype) -> str:
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def acc_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """Sums and products of float32/complex64 accumulate in double precision."""
    if name in ("add", "multiply") and dtype in (np.float32, np.complex64):
        return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)
    return dtype


def _check(comp: Module) -> None:
    for ins in comp.instrs:
        if ins.dtype is not None and ins.dtype.kind == "f" and ins.dtype.itemsize == 2:
            raise Unsupported("float16")
        if ins.opcode in _INTERPRET_ONLY or (
                ins.opcode in _NO_UINT64 and ins.dtype == np.uint64):
            raise Unsupported(ins.opcode)
        operand_complex = any(comp.instrs[o].dtype.kind == "c" for o in ins.operands)
        if operand_complex and (ins.opcode not in _COMPLEX_OK or (
                ins.opcode in ("reduce", "scan") and ins.attr("to_apply") in ("maximum", "minimum"))):
            raise Unsupported(f"{ins.opcode} on complex")


# Math with a vectorizable fast path for all but a few arguments (backends/numba_scalar.py):
# `_h.sin(x)` is right for every x but branches to libm above `TRIG_BIG`, which stops LLVM
# from vectorizing the loop around it; `_h.sin_fast(x)` never branches and is right for
# |x| <= TRIG_BIG. Hot loops compute these in blocks (`_vector_block`): the fast forms over a
# block's arguments into small buffers, a fix-up pass with the exact forms only for a block
# that holds a huge argument, then the rest of the body reading the buffers.
_SLOW_PATH = {"sin": "_h.sin_fast({0})", "cos": "_h.cos_fast({0})", "tan": "_h.tan_fast({0})"}
# helpers whose loops LLVM vectorizes (in blocks, inside reductions)
_VECTOR_MATH = ("_h.exp(", "_h.exp_nonpositive(", "_h.expm1(", "_h.log(", "_h.log1p(",
                "_h.sin(", "_h.cos(", "_h.tanh(", "_h.sinh(", "_h.cosh(", "_h.log2(", "_h.log10(",
                "_h.arctanh(", "_h.arcsinh(", "_h.arccosh(", "_h.cbrt(", "_h.arctan(",
                "_h.arctan2(", "_h.arcsin(", "_h.arccos(", "_h.exp2(", "_h.tan(")


def _expr(comp: Module, i: int, fast: bool = False) -> str:
    ins = comp.instrs[i]
    args = [f"x{o}" for o in ins.operands]
    if ins.opcode == "convert":
        src = comp.instrs[ins.operands[0]].dtype
        if ins.dtype.kind == "b":
            return f"({args[0]} != 0)"
        if src.kind == "c" and ins.dtype.kind != "c":
            return f"{np_type(ins.dtype)}({args[0]}.real)"
        return f"{np_type(ins.dtype)}({args[0]})"
    if ins.opcode == "select":
        return f"({args[1]} if {args[0]} else {args[2]})"
    if ins.opcode == "exp" and _sign(comp, ins.operands[0]) < 0:  # (W4: exp(-(x - y)**2))
        return f"{np_type(ins.dtype)}(_h.exp_nonpositive({args[0]}))"
    return f"{np_type(ins.dtype)}({scalar_call(ins.opcode, args, fast)})"


def scalar_call(name: str, args: list[str], fast: bool = False) -> str:
    """The Numba expression applying the elementwise op `name` to the expressions `args`
    (`fast`: the `_SLOW_PATH` form, exact below `TRIG_BIG` only)."""
    if fast and name in _SLOW_PATH:
        return _SLOW_PATH[name].format(*args)
    op = OPS[name]
    template = op.template or f"np.{op.name}(" + ", ".join(f"{{{k}}}" for k in range(op.nin)) + ")"
    return template.format(*args)


def _epilogue(comp: Module) -> set[int]:
    """Elementwise instructions computed from reduction results (once per output element)."""
    epi: set[int] = set()
    derived: set[int] = set()  # reductions, reshapes of them, and the epilogue itself
    for i, ins in enumerate(comp.instrs):
        if ins.opcode == "reduce" or (ins.opcode == "reshape" and ins.operands[0] in derived):
            derived.add(i)
        elif ins.is_elementwise and any(o in derived for o in ins.operands):
            epi.add(i)
            derived.add(i)
    return epi


# ops that never raise a floating-point flag (exact, or NaN in -> NaN out quietly)
_FP_QUIET = {"negative", "positive", "absolute", "fabs", "conjugate", "floor", "ceil", "trunc",
             "rint", "maximum", "minimum", "fmax", "fmin", "copysign", "sign", "clip",
             "select", "isnan", "isinf", "isfinite", "signbit"}
_INT_DIVISIONS = {"floor_divide", "remainder", "fmod"}
_CAST_RANGE = {"int64": (-2.0 ** 63, 2.0 ** 63), "uint64": (-2.0 ** 63, 2.0 ** 64),
               "uint32": (-2.0 ** 63, 2.0 ** 63)}  # smaller targets: the int32 range


def _precision(dtype: np.dtype) -> int:
    return dtype.itemsize // (2 if dtype.kind == "c" else 1)


def _nonfinite(x: str) -> str:
    return f"(({x} - {x}) != ({x} - {x}))"  # inf - inf and NaN - NaN are NaN: no call, no branch


# float ops whose result is >= 0 or NaN whatever their operands
_NONNEGATIVE = {"square", "absolute", "fabs", "sqrt", "exp", "exp2", "cosh"}
_MAX_LITERAL = {"float64": "1.7976931348623157e+308",
                "float32": "np.float32(3.4028234663852886e+38)"}


def _sign(comp: Module, i: int) -> int:
    """1 when instruction i's value is >= 0 or NaN, -1 when it is <= 0 or NaN (W4's
    `-(x - y)**2`), else 0: what its opcode alone tells, for float32 and float64 values."""
    ins = comp.instrs[i]
    if ins.dtype.name not in _MAX_LITERAL:
        return 0
    if ins.opcode in _NONNEGATIVE or ins.opcode == "multiply" and \
            ins.operands[0] == ins.operands[1]:
        return 1
    if ins.opcode == "negative":
        return -_sign(comp, ins.operands[0])
    return 0


def _nonfinite_value(comp: Module, i: int) -> str:
    """`_nonfinite` of instruction i's value: one compare when its sign is known (a value
    >= 0 is not finite exactly where it is not <= the largest finite value), against a
    subtraction and a compare (W4's kernel: 3% of its time)."""
    sign = _sign(comp, i)
    if not sign:
        return _nonfinite(f"x{i}")
    big = _MAX_LITERAL[comp.instrs[i].dtype.name]
    return f"(not (x{i} <= {big}))" if sign > 0 else f"(not (x{i} >= -{big}))"


NONFINITE_BITS = 0x7FF0000000000000  # the magnitude bits of inf: not finite from there up


def _magnitude_bits(comp: Module, i: int) -> list[str]:
    """The IEEE bits of instruction i's value (float64: a float32 widens exactly) without
    the sign, as int64: at least NONFINITE_BITS exactly where the value is not finite (both
    parts of a complex). A split body keeps their running maximum (`nfo`), an integer max
    reduction LLVM vectorizes in two instructions per vector; counting non-finite values
    took four (a subtraction, a compare, the mask widened, an add: W7's kernel 2-4%)."""
    def bits(x: str) -> str:
        return f"(_h._float64_as_bits(np.float64({x})) & 0x7FFFFFFFFFFFFFFF)"
    if comp.instrs[i].dtype.kind == "c":
        return [bits(f"x{i}.real"), bits(f"x{i}.imag")]
    return [bits(f"x{i}")]


def fp_check(comp: Module, i: int) -> str | None:
    """A condition, true where instruction i may have raised a floating-point flag NumPy
    reports (divide by zero, overflow, invalid; runtime/fpstate re-runs the fusion on NumPy to
    know exactly): a superset, never a miss. None when the instruction cannot raise one.

    A float or complex result that is inf or NaN while no operand is NaN (NaN in, NaN out
    raises nothing; inf - inf does); an integer division or remainder by zero (or
    MIN // -1); a float-to-integer cast out of range."""
    ins = comp.instrs[i]
    if not ins.is_elementwise or ins.opcode in _FP_QUIET or ins.dtype.kind == "b":
        return None
    x = f"x{i}"
    if ins.opcode == "convert":
        src = comp.instrs[ins.operands[0]].dtype
        if src.kind not in "fc" or (ins.dtype.kind in "fc" and _precision(ins.dtype)
                                    >= _precision(src)):
            return None  # integer sources and widening casts never raise
        if ins.dtype.kind in "iu":
            lo, hi = _CAST_RANGE.get(ins.dtype.name, (-2.0 ** 31, 2.0 ** 31))
            v = f"x{ins.operands[0]}" + (".real" if src.kind == "c" else "")
            return f"(not ({lo!r} <= {v} < {hi!r}))"
    if ins.dtype.kind in "iu":
        if ins.opcode in _INT_DIVISIONS:
            a, b = (f"x{o}" for o in ins.operands)
            if ins.opcode == "floor_divide" and ins.dtype.kind == "i":
                low = int(np.iinfo(ins.dtype).min)
                return f"(({b} == 0) | (({b} == -1) & ({a} == {low})))"
            return f"({b} == 0)"
        if ins.opcode == "reciprocal":
            return f"(x{ins.operands[0]} == 0)"
        return None
    if ins.dtype.kind not in "fc":
        return None
    quiet = [f"(x{o} == x{o})" for o in dict.fromkeys(ins.operands)
             if comp.instrs[o].dtype.kind in "fc"]
    return " & ".join([_nonfinite_value(comp, i), *quiet])


def _scalar_loads(spec: Spec) -> list[str]:
    """Loads that index nothing are hoisted out of every loop."""
    k = 0
    lines = []
    for p, dims in spec.loads:
        if dims is None:
            lines.append(f"x{p} = s{k}")
            k += 1
    return lines


def _body(comp: Module, spec: Spec, idx: list[str], skip: set[int],
          only: set[int] | None = None, fast: bool = False,
          subst: dict[int, str] | None = None, checks: bool = True,
          aliases: dict[int, str] | None = None, split: bool = False,
          loose: bool = False) -> list[str]:
    """Loads and elementwise instructions (those in `only`, when given; `subst` replaces an
    instruction's expression, `fast` picks the `_SLOW_PATH` forms, `aliases` names values an
    earlier pass computed), and with `checks` the floating-point checks (`fpf |= ...`).

    The checks of instructions whose inf or NaN surely reaches an output ("gated") matter only
    where an output is not finite. Inline, they are `(output not finite) and (checks)`, which
    a vectorized loop evaluates everywhere anyway (W7: +20 %); with `split`, the body only
    counts the elements where an output, or a checked float value that may not reach one
    (W8's `x * 2` under `where`), is not finite (`nfo`), and the caller runs the exact checks
    in a second pass when that count is not zero: one compare per checked value instead of
    the exact check's operand NaN tests. With `loose` (reduction kernels), a checked float
    value counts wherever it is not finite, NaN operands or not: a larger superset, which
    the interpreter then settles (`executor.recheck_flags`), as it does for a sum that is not
    finite; the operand tests cost W4's kernel 7%."""
    lines = []
    k = 0
    for p, dims in spec.loads:
        if dims is not None:
            if only is None or p in only:
                lines.append(f"x{p} = a{k}[{_load_index(spec, k, dims, idx)}]")
            k += 1
    tables = {g: (k, dims) for k, (g, dims) in enumerate(spec.tables)}
    here = [i for i, ins in enumerate(comp.instrs)
            if (ins.is_elementwise or ins.opcode == "gather") and i not in skip
            and (only is None or i in only)]
    for a, src in (aliases or {}).items():  # a slow-path argument, computed in an earlier pass
        if only is None or a not in only:
            lines.append(f"x{a} = {src}")
    sure = _reaches_accumulator(comp)
    roots = [r for r in (_stored(comp, o) for o in comp.outputs)
             if r in here and comp.instrs[r].dtype.kind in "fc"]
    gated = _propagated(comp, roots) - sure
    checks_, gated_checks, nonfinite = [], [], []
    dropped, moved = _chained_checks(comp, here, sure | gated) if checks else (set(), {})
    for i in here:
        if comp.instrs[i].opcode == "gather":
            lines += _gather(comp, i, *tables[i], idx)
            continue
        expr = subst[i] if subst and i in subst else _expr(comp, i, fast)
        lines.append(f"x{i} = {expr}")
        if i in moved:
            exact = [f"fpf |= {moved[i]}"]
        elif checks and i not in dropped:
            exact = _fp_line(comp, i, sure)
            if i in gated:
                gated_checks.extend(exact)
                continue
        else:
            continue
        if split and exact and comp.instrs[i].dtype.kind in "fc":
            nonfinite.append(i)  # exact in the second pass, if ever
        elif loose and exact and comp.instrs[i].dtype.kind in "fc":
            checks_.append(f"fpf |= {_nonfinite_value(comp, i)}")  # (see `loose` above)
        else:
            checks_.extend(exact)
    conds = [c[len("fpf |= "):] for c in checks_]
    if gated_checks or nonfinite:  # exact checks only where a value is not finite (rare)
        if split:
            bits = [b for i in dict.fromkeys((roots if gated_checks else []) + nonfinite)
                    for b in _magnitude_bits(comp, i)]
            top = bits[0] if len(bits) == 1 else f"max({', '.join(bits)})"
            lines.append(f"nfo = max(nfo, {top})")
        else:
            outs = [_nonfinite_value(comp, o) for o in roots] if gated_checks else []
            inner = " | ".join(f"({c[len('fpf |= '):]})" for c in gated_checks)
            conds.append(f"({' | '.join(outs)}) and ({inner})")
    if conds:  # one update per body: a loop with one reduction statement vectorizes best
        lines.append("fpf |= " + (conds[0] if len(conds) == 1 else
                                  " | ".join(f"({c})" for c in conds)))
    return lines


def _load_index(spec: Spec, k: int, dims: tuple[int, ...], idx: list[str]) -> str:
    """The subscript of array load `k`: its indices, or for a flat load (`Spec.flat`) the
    unsigned offset `i_0 * f<k>_0 + ... + i_last` (no negative-index wraparound to rule out)."""
    if k not in spec.flat:
        return ", ".join(idx[d] for d in dims)
    terms = [f"np.uint64({idx[d]}) * f{k}_{j}" for j, d in enumerate(dims[:-1])]
    return " + ".join([*terms, f"np.uint64({idx[dims[-1]]})"])


def _flat_params(spec: Spec) -> list[str]:
    k, out = 0, []
    for _, dims in spec.loads:
        if dims is not None:
            if k in spec.flat:
                out += [f"f{k}_{j}" for j in range(len(dims) - 1)]
            k += 1
    if spec.flat_store:
        out += [f"fo_{d}" for d in range(spec.rank - 1)]
    return out


def _ancestors(comp: Module, spec: Spec, roots, stop=frozenset()) -> set[int]:
    """`roots` and the instructions they are computed from, down to the loads (and not
    beyond an instruction in `stop`)."""
    loads = {p for p, _ in spec.loads}
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        if i not in loads and i not in stop:
            todo.extend(comp.instrs[i].operands)
    return seen


def _slow_path_instrs(comp: Module, spec: Spec, roots, skip: set[int]) -> list[int]:
    return sorted(i for i in _ancestors(comp, spec, roots)
                  if i not in skip and comp.instrs[i].opcode in _SLOW_PATH
                  and comp.instrs[i].dtype.kind == "f")


def _vector_block(comp: Module, spec: Spec, idx: list[str], d: int, start: str, count: str,
                  skip: set[int], roots, tail, loose: bool = False,
                  split: bool = False) -> list[str]:
    """`for jj in range(count)` over index u{d} = start + jj of dim d: the body, then the
    lines `tail(index names)` (which use `roots`). The index is unsigned: Numba then indexes
    without the negative-index wraparound, which LLVM cannot rule out for `start + jj` and
    which turns the loads into gathers.

    With `_SLOW_PATH` math (sin, cos) in it: the arguments of a block into buffers `ta<i>`;
    the fast forms over those into `tb<i>` (a loop over contiguous buffers, which vectorizes
    whatever the inputs' strides), counting the huge arguments; only when there are any, the
    exact forms over the block again; then the rest of the body reading `tb<i>` (buffers
    allocated by the caller, see `_block_buffers`). When one such instruction feeds another
    (sin(cos(x))), the first two steps are one loop over the body instead, and the fix-up
    recomputes that body. The buffers are filled before anything is stored, so an output that
    shares its buffer with an input (donation) is still read before it is written."""
    loop = [f"for jj in range({count}):", f"    u{d} = np.uint64({start} + jj)"]
    idx = [*idx[:d], f"u{d}", *idx[d + 1:]]
    tail = tail(idx)
    slow = _slow_path_instrs(comp, spec, roots, skip)
    if not slow:
        return loop + _indent(_body(comp, spec, idx, skip, loose=loose, split=split) + tail, 1)
    args = {i: comp.instrs[i].operands[0] for i in slow}
    main = _ancestors(comp, spec, roots, stop=set(slow))
    rest = loop + _indent(_body(comp, spec, idx, skip, only=main,
                                subst={i: f"tb{i}[jj]" for i in slow},
                                aliases={a: f"ta{i}[jj]" for i, a in args.items()},
                                loose=loose, split=split) + tail, 1)
    if not any(set(slow) & _ancestors(comp, spec, [a]) for a in args.values()):
        # not nested: the arguments into buffers `ta<i>` first, then the math over those
        # contiguous buffers, which vectorizes whatever the strides of the inputs (LLVM
        # vectorizes a loop over a strided array only in a version for unit stride)
        lines = [*loop, *_indent(_body(comp, spec, idx, skip, only=_ancestors(
            comp, spec, args.values())) + [f"ta{i}[jj] = x{a}" for i, a in args.items()], 1)]
        lines += ["nbig = 0", f"for jj in range({count}):"]
        for i in args:
            fast = _SLOW_PATH[comp.instrs[i].opcode].format(f"ta{i}[jj]")
            lines += [f"    tb{i}[jj] = {np_type(comp.instrs[i].dtype)}({fast})",
                      f"    nbig += _h.trig_big(ta{i}[jj])"]
        lines += ["if nbig:", f"    for jj in range({count}):"]
        for i in args:
            exact = OPS[comp.instrs[i].opcode].template.format(f"ta{i}[jj]")
            lines.append(f"        tb{i}[jj] = {np_type(comp.instrs[i].dtype)}({exact})")
        return lines + rest
    pre = _ancestors(comp, spec, slow)
    store = [f"tb{i}[jj] = x{i}" for i in slow] + [f"ta{i}[jj] = x{a}" for i, a in args.items()]
    lines = ["nbig = 0", *loop]
    lines += _indent(_body(comp, spec, idx, skip, only=pre, fast=True), 1)
    lines += _indent([f"nbig += _h.trig_big(x{comp.instrs[i].operands[0]})" for i in slow]
                     + store, 1)
    lines += ["if nbig:", *_indent(loop, 1)]
    lines += _indent(_body(comp, spec, idx, skip, only=pre, checks=False) + store, 2)
    return lines + rest


def _block_buffers(comp: Module, spec: Spec, roots, skip: set[int],
                   size: int | None = None) -> list[str]:
    lines, size = [], size or BLOCK
    for i in _slow_path_instrs(comp, spec, roots, skip):
        arg = comp.instrs[comp.instrs[i].operands[0]]
        lines += [f"ta{i} = np.empty({size}, {np_type(arg.dtype)})",
                  f"tb{i} = np.empty({size}, {np_type(comp.instrs[i].dtype)})"]
    return lines


def _gather(comp: Module, i: int, k: int, dims: tuple[int, ...], idx: list[str]) -> list[str]:
    """Read table t{k} at the loop indices it walks, then one checked index per gathered axis.

    A negative index wraps once; one still outside [0, n) sets err[0] and reads element 0
    instead (never outside the buffer): the executor then raises NumPy's IndexError."""
    ins = comp.instrs[i]
    lines, at = [], [idx[d] for d in dims]
    for t, o in enumerate(ins.operands[1:]):
        j, n = f"j{i}_{t}", f"t{k}.shape[{len(dims) + t}]"
        lines += [f"{j} = np.int64(x{o})",
                  f"if {j} < 0:",
                  f"    {j} += {n}",
                  f"if {j} < 0 or {j} >= {n}:",
                  "    err[0] = 1",
                  f"    {j} = 0"]
        at.append(j)
    return lines + [f"x{i} = t{k}[{', '.join(at)}]"]


# ops whose result is inf or NaN whenever the operand at these positions is (inf - inf, inf * 0
# are NaN: still not finite)
_PROPAGATE = {"add": (0, 1), "subtract": (0, 1), "multiply": (0, 1), "divide": (0,),
              "negative": (0,), "positive": (0,), "absolute": (0,), "fabs": (0,),
              "square": (0,), "sqrt": (0,), "convert": (0,), "reshape": (0,)}


def _propagated(comp: Module, seeds) -> set[int]:
    """`seeds` and the instructions whose inf or NaN surely reaches one of them."""
    sure: set[int] = set(seeds)
    for i in range(len(comp.instrs) - 1, -1, -1):
        ins = comp.instrs[i]
        if i in sure and ins.opcode in _PROPAGATE and (
                ins.opcode != "convert" or ins.dtype.kind in "fc"):
            sure.update(o for k, o in enumerate(ins.operands) if k in _PROPAGATE[ins.opcode]
                        and comp.instrs[o].dtype.kind in "fc")
    return sure


# one-operand ops whose result is inf or NaN whenever the operand is (and NaN when it is NaN)
_CARRY_UNARY = {"square", "negative", "positive", "absolute", "fabs", "sqrt", "convert"}
# ops whose result is NaN whenever an operand is NaN
_NAN_OUT = {"add", "subtract", "multiply", "divide", "reciprocal", "square", "sqrt", "cbrt",
            "negative", "positive", "absolute", "fabs", "convert", "exp", "exp2", "expm1",
            "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh",
            "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "deg2rad",
            "rad2deg", "radians", "degrees"}


def _chained_checks(comp: Module, here: list[int],
                    skip: set[int]) -> tuple[set[int], dict[int, str]]:
    """Checks moved to the end of chains of one-operand ops: W4's `exp(-(x - y)**2)` checks
    `-(x - y)**2` once, not `x - y` and its square apart (a tenth of W4's time).

    When j = f(i) for an f in `_CARRY_UNARY`, and i is NaN whenever one of its operands is,
    the check of i (`not finite(i) and no operand NaN`) and that of j (`not finite(j) and i
    not NaN`) imply `not finite(j) and no operand of i NaN`: if i is inf or NaN, so is j; and
    where an operand of i is NaN, i is NaN and neither check holds. That one check replaces
    both, and passes on down the chain. Returns the instructions whose check is dropped and
    the moved checks by instruction (in `here`, never in `skip`)."""
    pos = set(here)
    user: dict[int, int] = {}
    for j in here:
        ins = comp.instrs[j]
        if (ins.opcode in _CARRY_UNARY and ins.dtype.kind == "f" and j not in skip
                and len(ins.operands) == 1):
            i = ins.operands[0]
            if (i in pos and i not in skip and comp.instrs[i].dtype.kind == "f"
                    and comp.instrs[i].opcode in _NAN_OUT):
                user.setdefault(i, j)
    carried: dict[int, list[int]] = {}
    dropped: set[int] = set()
    moved: dict[int, str] = {}
    for i in here:
        quiet = carried.get(i)
        if quiet is None:
            if i in skip or i not in user or fp_check(comp, i) is None:
                continue
            quiet = [o for o in dict.fromkeys(comp.instrs[i].operands)
                     if comp.instrs[o].dtype.kind in "fc"]
        if i in user:
            dropped.add(i)
            carried[user[i]] = quiet
        else:
            moved[i] = " & ".join([_nonfinite_value(comp, i),
                                   *(f"(x{o} == x{o})" for o in quiet)])
    return dropped, moved


def _reaches_accumulator(comp: Module) -> set[int]:
    """Instructions whose inf or NaN surely makes a checked sum or product (or scan) not
    finite: their per-element check is redundant with the check of the accumulated result,
    so the reduction's inner loop stays lean."""
    return _propagated(comp, [ins.operands[0] for i, ins in enumerate(comp.instrs)
                              if ins.opcode in ("reduce", "scan") and _reduce_may_raise(comp, i)])


def _fp_line(comp: Module, i: int, sure: set[int]) -> list[str]:
    if i in sure:
        return []
    check = fp_check(comp, i)
    return [] if check is None else [f"fpf |= {check}"]


def _signature(comp: Module, spec: Spec) -> list[str]:
    params = [f"out{k}" for k in range(len(comp.outputs))]
    if spec.kind in ("reduce", "moments"):
        params += [f"part{k}" for k in range(len(_reductions(comp)))]
    n_arr = sum(d is not None for _, d in spec.loads)
    params += [f"a{k}" for k in range(n_arr)]
    params += [f"t{k}" for k in range(len(spec.tables))]
    params += [f"s{k}" for k in range(len(spec.loads) - n_arr)]
    params += _flat_params(spec)
    params += [f"n{d}" for d in range(spec.rank)]
    if spec.kind == "reduce":
        params += [f"init{k}" for k in range(len(_reductions(comp)))] + ["nchunks"]
        params += ["lanes"] if has_row_lanes(spec) else []
    if spec.kind == "row":
        params += [f"init{k}" for k in range(len(_reductions(comp)))]
    if spec.kind == "moments":
        params += ["rb", "nblocks", "w"]
    if spec.kind == "scan":
        params.append("init0")
    if spec.tables:
        params.append("err")  # int64[1]: set when an index is out of range
    return params


def _reduce_may_raise(comp: Module, r: int) -> bool:
    """A float sum or product may overflow (or meet inf - inf): its result is checked (a NaN
    or inf among its inputs also counts; the interpreter then decides)."""
    ins = comp.instrs[r]
    return ins.attr("to_apply") in ("add", "multiply") and ins.dtype.kind in "fc"


def _reductions(comp: Module) -> list[int]:
    return [i for i, ins in enumerate(comp.instrs) if ins.opcode == "reduce"]


def _indent(lines: list[str], depth: int) -> list[str]:
    return ["    " * depth + line for line in lines]


BLOCK = 64  # elements per block of a reduction whose body LLVM can vectorize


def render(comp: Module, spec: Spec) -> str:
    """Python source defining `kernel(...)` for this fusion and launch layout."""
    _check(comp)
    head = [f"def kernel({', '.join(_signature(comp, spec))}):", "    fpe = 0", "    fpf = False"]
    head += _indent(_scalar_loads(spec), 1)
    idx = [f"i{d}" for d in range(spec.rank)]
    if spec.kind in ("loop", "update"):
        src = head + _render_loop(comp, spec, idx)
    elif spec.kind == "reduce":
        src = head + _render_reduce(comp, spec, idx)
    elif spec.kind == "scan":
        src = head + _render_scan(comp, spec, idx)
    elif spec.kind == "row":
        from lazyarray.codegen.rows import render_rows

        src = head + render_rows(comp, spec)
    elif spec.kind == "moments":
        from lazyarray.codegen.moments import render_moments

        src = head + render_moments(comp, spec)
    else:
        src = head + _render_argreduce(comp, spec, idx)
    src += ["    fpe += fpf", "    return fpe  # how many places may have raised a floating-point flag"]
    return "\n".join(_fp_scopes(src)) + "\n"


def _fp_scopes(lines: list[str]) -> list[str]:
    """Numba allows one update of a parallel loop's reduction variable per iteration: inside
    each `prange` loop the checks OR into a private `fpp`, added to `fpe` once at the end of
    the iteration; outside, into `fpf`."""
    out: list[str] = []
    open_at: list[int] = []  # indentation of the prange loop being closed
    single = False  # its body has one check: added to `fpe` directly (no private flag)
    for k, line in enumerate(lines):
        ind = len(line) - len(line.lstrip())
        while open_at and ind <= open_at[-1]:
            at = open_at.pop()
            if not single:
                out.append(" " * (at + 4) + "fpe += fpp")
        if open_at and line.lstrip().startswith("fpf |= "):
            line = line.replace("fpf |= ", "fpe += " if single else "fpp |= ", 1)
        out.append(line)
        if line.lstrip().startswith("for ") and "prange(" in line:
            open_at.append(ind)
            body = []
            for rest in lines[k + 1:]:
                if len(rest) - len(rest.lstrip()) <= ind:
                    break
                body.append(rest)
            single = sum(b.lstrip().startswith("fpf |= ") for b in body) <= 1
            if not single:
                out.append(" " * (ind + 4) + "fpp = False")
    return out


def _nest(dims: list[int], var: str, parallel: bool) -> list[str]:
    lines = []
    for depth, d in enumerate(dims):
        rng = "prange" if parallel and depth == 0 else "range"
        lines.append("    " * depth + f"for {var}{d} in {rng}(n{d}):")
    return lines


SUPERBLOCK = 64 * BLOCK  # elements per parallel iteration of a blocked 1-d loop


def _row_maxima(nest: list[str], body: list[str]) -> list[str]:
    """The loop `nest` around `body` (indented under its innermost loop). When the body
    keeps the running maximum `nfo` and the nest has two loops or more, the innermost loop
    keeps its own (`nfr`), folded into `nfo` after it: the vectorized loop's maximum across
    its lanes then no longer waits on the row before, as it did when the loop started from
    `nfo` (W6's rows of 8: 3.8 ms, against 3.1 ms this way, 2.7 ms with no checks)."""
    depth = len(nest)
    if depth < 2 or not any(line.lstrip().startswith("nfo = max(") for line in body):
        return nest + _indent(body, depth)
    body = [line.replace("nfo = max(nfo,", "nfr = max(nfr,") for line in body]
    pad = "    " * (depth - 1)
    return [*nest[:-1], f"{pad}nfr = 0", nest[-1], *_indent(body, depth),
            f"{pad}nfo = max(nfo, nfr)"]


def _render_loop(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    roots = [_stored(comp, o) for o in comp.outputs]

    def stores(idx: list[str]) -> list[str]:
        at = ", ".join(idx) if spec.rank else "0"
        if spec.flat_store:  # the region as a flat window (see Spec.flat_store)
            at = " + ".join([*(f"np.uint64({idx[d]}) * fo_{d}" for d in range(spec.rank - 1)),
                             f"np.uint64({idx[-1]})"])
        # a write (update) stores its value: out0 is the written region of the new version
        return [f"out{k}[{at}] = x{r}" for k, r in enumerate(roots)]

    if spec.stream and spec.rank == 1 and not _streams_direct(comp, spec, roots):
        body = _render_stream_loop(comp, spec, idx, roots)
        loop = _indent(body, 1)
    elif spec.rank and _slow_path_instrs(comp, spec, roots, set()):
        return _render_blocked_loop(comp, spec, idx, stores, roots)
    else:
        body = _body(comp, spec, idx, set(), split=True)
        if spec.stream and _streams_direct(comp, spec, roots):
            loop = _indent(_render_stream_direct(comp, idx, body, stores, roots), 1)
        else:
            loop = _indent(_row_maxima(_nest(list(range(spec.rank)), "i", True),
                                       body + stores(idx)), 1)
    if not any(line.lstrip().startswith("nfo = max(") for line in body):
        return loop
    # the exact checks of the gated instructions, in a second pass that runs only when an
    # output element is not finite (serial: it is the rare case). It reads the inputs again:
    # when an output was written over one of them (a donated buffer), it cannot, and the
    # kernel answers -1 ("count unknown": the executor rechecks on inputs computed again)
    recheck = _body(comp, spec, idx, set())
    n_arr = sum(d is not None for _, d in spec.loads)
    aliased = " or ".join(f"out{j}.ctypes.data == a{k}.ctypes.data"
                          for j in range(len(roots)) for k in range(n_arr))
    return (["    nfo = 0", *loop, f"    if nfo >= {NONFINITE_BITS:#x}:"]
            + ([f"        if {aliased}:", "            return -1"] if aliased else [])
            + _indent(_nest(list(range(spec.rank)), "i", False), 2)
            + _indent(recheck, spec.rank + 2))


STREAM_BLOCK = 64  # elements per block of a streaming loop
STREAM_SUPERBLOCK = 256 * STREAM_BLOCK  # elements per parallel iteration


def _render_stream_loop(comp: Module, spec: Spec, idx: list[str], roots) -> list[str]:
    """A 1-d loop whose outputs are stored streaming (`Spec.stream`), in blocks of
    STREAM_BLOCK elements computed into buffers `to<k>` (in L1), each block then written out
    by `_h.stream`: non-temporal stores where the block covers whole 64-byte lines. Blocks
    are aligned to out0's lines (a first short block up to the first boundary), and a full
    block runs a loop of constant length (LLVM unrolls it: no trip-count or overlap checks).
    Each parallel iteration (STREAM_SUPERBLOCK elements) ends with a fence. Not indented."""
    sb, b = STREAM_SUPERBLOCK, STREAM_BLOCK
    bufs = _block_buffers(comp, spec, roots, set(), b) + [
        f"to{k} = np.empty({b}, {np_type(comp.instrs[r].dtype)})" for k, r in enumerate(roots)]

    def block(count: str) -> list[str]:
        return _vector_block(comp, spec, idx, 0, "lo", count, set(), roots,
                             lambda _: [f"to{k}[jj] = x{r}" for k, r in enumerate(roots)],
                             split=True)
    return ["h0 = _h.stream_head(out0, 0)", f"v0 = h0 - {b} if h0 else 0",
            f"for qs in prange((n0 - v0 + {sb - 1}) // {sb}):",
            *_indent(bufs, 1),
            f"    for qb in range(v0 + qs * {sb}, min(n0, v0 + (qs + 1) * {sb}), {b}):",
            "        lo = max(qb, 0)", f"        hi = min(qb + {b}, n0)",
            f"        if hi - lo == {b}:", *_indent(block(str(b)), 3),
            "        else:", *_indent(block("hi - lo"), 3),
            *(f"        _h.stream(out{k}, lo, to{k}, hi - lo)" for k in range(len(roots))),
            "    _h.stream_fence()"]


STREAM_ROWS = 16  # rows per parallel iteration of a streaming 2-d loop (one fence each)
STREAM_SPAN = 256  # bytes: the streaming loop of `_render_stream_direct` covers multiples
# what a loop streaming from registers may compute: operations LLVM vectorizes (a body it
# does not vectorize stores element by element, at a third of the speed)
_STREAMABLE = frozenset({
    "parameter", "constant", "broadcast", "slice", "reshape", "transpose", "add", "subtract",
    "multiply", "divide", "negative", "positive", "absolute", "fabs", "square", "sqrt",
    "maximum", "minimum", "fmax", "fmin", "clip", "select", "greater", "greater_equal", "less",
    "less_equal", "equal", "not_equal", "copysign", "floor", "ceil", "trunc", "rint"})


def _streams_direct(comp: Module, spec: Spec, roots) -> bool:
    """Does this streaming loop (`Spec.stream`) store straight from registers
    (`_render_stream_direct`)? One output (its lines decide where the streaming stores
    start), of float values, computed by operations that vectorize. Else a 1-d loop streams
    through a buffer (`_render_stream_loop`) and a 2-d one does not stream."""
    return (len(roots) == 1 and comp.instrs[roots[0]].dtype.kind == "f"
            and all(comp.instrs[i].opcode in _STREAMABLE for i in _ancestors(comp, spec, roots)))


def _render_stream_direct(comp: Module, idx: list[str], body: list[str], stores,
                          roots) -> list[str]:
    """A loop (`Spec.stream`) whose output is stored by non-temporal vector stores straight from
    registers. Per piece -- a row of a 2-d loop (W7's stencil), STREAM_SUPERBLOCK elements of a
    1-d one (W8) -- three loops over its elements: up to the first 64-byte boundary of out0,
    then over whole multiples of STREAM_SPAN bytes with the store `_h.store_stream` (LLVM
    vectorizes the loop as the plain one, its stores into aligned non-temporal vector stores),
    then the rest; the first and last store plainly. The indices are unsigned (signed ones make
    the loads gathers). Each parallel iteration (STREAM_ROWS rows, or one piece) ends with a
    fence. Through a buffer instead (`_render_stream_loop`), a store and a load per element
    more: W7's kernel ran 1.2-1.4x slower than the plain one that way, 0.86-0.95 of it this way;
    W8's 0.79-0.84 against 0.86-0.95 (docs/performance.md). Not indented."""
    # the streaming loop covers whole multiples of STREAM_SPAN bytes: LLVM vectorizes it in
    # groups of up to 256 bytes (8 lanes unrolled up to 4x), which then leave no element to a
    # scalar remainder (its non-temporal stores, one element each, are slow)
    span = STREAM_SPAN // comp.instrs[roots[0]].dtype.itemsize
    main = body + [f"_h.store_stream(out0, r0 + {idx[-1]}, x{roots[0]})"]
    plain = body + stores(idx)
    if len(idx) == 1:
        sb = STREAM_SUPERBLOCK
        head = [f"for qs in prange((n0 + {sb - 1}) // {sb}):", f"    lo = qs * {sb}",
                f"    hi = min(n0, lo + {sb})", "    r0 = np.uint64(0)"]
    else:
        rows = STREAM_ROWS
        head = [f"for qs in prange((n0 + {rows - 1}) // {rows}):",
                f"    for {idx[0]} in range(qs * {rows}, min(n0, (qs + 1) * {rows})):",
                f"        lo, hi = {idx[0]} * n1, ({idx[0]} + 1) * n1",
                "        r0 = np.uint64(lo)"]
    ind = len(idx)  # the indentation of a piece's loops
    i = idx[-1]
    pieces = ["h0 = min(lo + _h.stream_head(out0, lo), hi)",
              f"e0 = h0 + (hi - h0) // {span} * {span}",
              f"for {i} in range(np.uint64(lo) - r0, np.uint64(h0) - r0):", *_indent(plain, 1),
              f"for {i} in range(np.uint64(h0) - r0, np.uint64(e0) - r0):", *_indent(main, 1),
              f"for {i} in range(np.uint64(e0) - r0, np.uint64(hi) - r0):", *_indent(plain, 1)]
    return [*head, *_indent(pieces, ind), "    _h.stream_fence()"]


def _stored(comp: Module, o: int) -> int:
    ins = comp.instrs[o]
    return ins.operands[1] if ins.opcode == "update" else o


def _render_blocked_loop(comp: Module, spec: Spec, idx: list[str], stores, roots) -> list[str]:
    """The innermost dim in blocks of BLOCK (see `_vector_block`); a 1-d loop runs its
    blocks in parallel SUPERBLOCK elements at a time (one set of buffers per superblock)."""
    last = spec.rank - 1
    bufs = _block_buffers(comp, spec, roots, set())
    block = _vector_block(comp, spec, idx, last, "qb", f"min({BLOCK}, n{last} - qb)", set(),
                          roots, stores)
    if spec.rank == 1:
        lines = [f"for qs in prange((n0 + {SUPERBLOCK - 1}) // {SUPERBLOCK}):",
                 *_indent(bufs, 1),
                 (f"    for qb in range(qs * {SUPERBLOCK}, min(n0, (qs + 1) * {SUPERBLOCK}), "
                  f"{BLOCK}):"),
                 *_indent(block, 2)]
        return _indent(lines, 1)
    nest = _nest(list(range(last)), "i", True)  # buffers once per outermost iteration
    lines = [nest[0], *_indent(bufs, 1), *nest[1:],
             *_indent([f"for qb in range(0, n{last}, {BLOCK}):", *_indent(block, 1)], last)]
    return _indent(lines, 1)


ROW_LANES = 4  # partial rows per chunk of a narrow column reduction (see `row_lanes`)
LANES_BELOW = 16  # ... when fewer elements than this are kept per row


def has_row_lanes(spec: Spec) -> bool:
    """Whether the kernel takes `lanes`: dim 0 is reduced in chunks and the innermost dim is
    kept (`X.sum(axis=0)`); row i of chunk c then adds into partial row
    `c * lanes + (i - start of c) mod lanes`."""
    return spec.chunked and not spec.reduced[-1]


def row_lanes(spec: Spec, kept: int) -> int:
    """Partial rows per chunk for `kept` elements per row: ROW_LANES for narrow rows, so that
    consecutive rows add into different partial rows (W6's 8 column sums: 1.77 ms with one,
    1.16 ms with four, where every row's read-add-write waited for the previous row's store);
    one for rows of LANES_BELOW elements or more, whose vectors are independent already
    (a (1000, 1000) column sum: four lanes moved 4x the partials, 0.55 ms against 0.16).
    Chosen by the shape, so the order of the additions does not depend on the thread count."""
    return ROW_LANES if has_row_lanes(spec) and kept < LANES_BELOW else 1


_VECTOR_STEPS = {"add": "_h.sum_step", "maximum": "_h.max_step", "minimum": "_h.min_step"}
# integer and boolean steps: exact in any order, so LLVM vectorizes them as written
_EXACT_STEPS = {"add": "({0} + {1})", "multiply": "({0} * {1})", "maximum": "max({0}, {1})",
                "minimum": "min({0}, {1})", "or": "({0} | {1})", "and": "({0} & {1})"}


PREFETCH_BLOCK = 256  # elements per block of a prefetching 1-d reduction (`Spec.prefetch`)
PREFETCH_AHEAD = 1024  # elements from a block to the lines its prefetches ask for


def _prefetch_lines(comp: Module, spec: Spec, start: str) -> list[str]:
    """Software prefetches, one per 64-byte line of each array load, of the block of
    PREFETCH_BLOCK elements PREFETCH_AHEAD elements after the block from `start` (kept below
    n0). W2 at 1e7 (Intel Xeon, 2 cores): 3.5 -> 3.0 ms; the hardware prefetcher alone kept
    too few lines in flight per core. Blocks of 256 and 1024 ahead were the best of
    256-1024 and 512-2048 elements (2048 ahead: 3.2-3.3 ms)."""
    arrays = [comp.instrs[p].dtype.itemsize for p, dims in spec.loads if dims is not None]
    step = max(1, 64 // min(arrays))
    lo, hi = f"{start} + {PREFETCH_AHEAD}", f"{start} + {PREFETCH_AHEAD + PREFETCH_BLOCK}"
    return [f"for pq in range(min({lo}, n0), min({hi}, n0), {step}):",
            *(f"    _h.prefetch(a{k}, pq)" for k in range(len(arrays)))]


def vector_combine(reduce_ins) -> str | None:
    """For a float sum, max or min: the template `{0}` (accumulator) `{1}` (value) of the one
    accumulator step that LLVM vectorizes into several vector accumulators (`_h.sum_step`,
    `max_step`, `min_step`); None for the rest. W2 at 1e7: 3.5 ms, against 5.4 ms for 4
    scalar accumulators, which wait on the add's latency on a core that loads faster than
    it adds; a (10000, 1000) row max: 1.8 ms against 3.3 ms. The order of a sum's additions
    is fixed by the compiled kernel (the vector width LLVM picks for the CPU), not by the
    thread count; max and min do not depend on the order. Zeros of both signs: max and min
    take +0.0 and -0.0 as ordered (NumPy's own SIMD loops take either). Integer sums,
    products, max and min and boolean any/all (`_EXACT_STEPS`) are exact in any order, so
    one accumulator as written vectorizes: `isnan(x).any()` of 10^6 float64 took 0.45 ms in
    four short-circuiting scalar lanes."""
    name = reduce_ins.attr("to_apply")
    kind = acc_dtype(name, reduce_ins.dtype).kind
    acc = np_type(acc_dtype(name, reduce_ins.dtype))
    if name in _VECTOR_STEPS and kind == "f":
        return f"{_VECTOR_STEPS[name]}({{0}}, {acc}({{1}}))"
    if kind in "iu" and name in ("add", "multiply", "maximum", "minimum") \
            or kind == "b" and name in ("or", "and"):
        return _EXACT_STEPS[name].format("{0}", f"{acc}({{1}})")
    return None


def partial_mode(spec: Spec) -> bool:
    """Accumulate into partials (then combine) unless every reduced dim is in the trailing run."""
    t = spec.rank
    while t > 0 and spec.reduced[t - 1]:
        t -= 1
    return spec.chunked or any(spec.reduced[:t])


def _render_reduce(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    reds = _reductions(comp)
    epi = _epilogue(comp)
    kept = [d for d in range(spec.rank) if not spec.reduced[d]]
    t = spec.rank  # start of the trailing all-reduced run
    while t > 0 and spec.reduced[t - 1]:
        t -= 1
    partial = partial_mode(spec)
    combine, acc_t = [], []
    for k, r in enumerate(reds):
        rins = comp.instrs[r]
        rdef = REDUCTIONS[rins.attr("to_apply")]
        acc_t.append(np_type(acc_dtype(rdef.name, rins.dtype)))
        combine.append(rdef.combine)
    body = _body(comp, spec, idx, epi, loose=True)

    def stepped(lane: str) -> list[str]:
        return [f"acc{k}{lane} = {acc_t[k]}("
                f"{combine[k].format(f'acc{k}{lane}', f'x{comp.instrs[r].operands[0]}')})"
                for k, r in enumerate(reds)]

    step = stepped("")

    epi_alias: set[int] = set()

    blocked = any(m in line for line in body for m in _VECTOR_MATH)

    def lanes(d: int, lo: str, hi: str) -> list[str]:
        """The innermost reduced loop. Float sums, max and min (`vector_combine`): one
        accumulator, which LLVM splits into vector lanes, the body's vector math vectorized
        with it (W4 at 1e5: 42.2 ms, against 43.5-44.7 ms in BLOCK lanes). Otherwise 4
        independent scalar accumulators (fixed order, so still deterministic): the chain no
        longer waits on one register.

        Other reductions of a body with vectorizable math (exp, expm1, log, log1p), and those
        of sin and cos (their fix-up pass needs blocks), have BLOCK lanes
        `accb<k>` instead: element q of the run goes into lane (q - lo) mod BLOCK, a block of
        BLOCK elements (then the partial last one) at a time, in a loop without a carried
        value, which LLVM vectorizes (sin and cos in the passes of `_vector_block`); the lanes
        are then combined by halving (lane j with lane j + w). A fixed order, whatever the
        thread count. (W4: a buffer per block summed by 4 scalar lanes was 12% slower, and
        the 40 elements of a 1000-long row past the last full block another 20%.)"""
        roots = [comp.instrs[r].operands[0] for r in reds]
        steps = [vector_combine(comp.instrs[r]) for r in reds]
        if all(steps) and not (blocked and _slow_path_instrs(comp, spec, roots, epi)):
            out = [f"    i{d} = np.uint64(q)", *_indent(body, 1)]
            out += [f"    acc{k} = {acc_t[k]}({c.format(f'acc{k}', f'x{o}')})"
                    for k, (c, o) in enumerate(zip(steps, roots, strict=True))]
            if spec.prefetch:  # (a 1-d reduction: d is 0)
                return [f"for qb in range({lo}, {hi}, {PREFETCH_BLOCK}):",
                        *_indent(_prefetch_lines(comp, spec, "qb"), 1),
                        f"    for q in range(qb, min(qb + {PREFETCH_BLOCK}, {hi})):",
                        *_indent(out, 1)]
            return [f"for q in range({lo}, {hi}):", *out]
        if blocked:
            return blocked_lanes(d, lo, hi)
        out = [f"acc{k}_{j} = init{k}" for k in range(len(reds)) for j in (1, 2, 3)]
        out.append(f"for q in range({lo}, {hi} - 3, 4):")
        for j in range(4):
            lane = stepped(f"_{j}" if j else "")
            out += [f"    i{d} = np.uint64(q + {j})", *_indent(body, 1), *_indent(lane, 1)]
        out.append(f"for i{d} in range({lo} + ({hi} - ({lo})) // 4 * 4, {hi}):")
        out += _indent(body + step, 1)
        for k in range(len(reds)):
            c = combine[k]
            pair = lambda x, y, c=c, k=k: f"{acc_t[k]}({c.format(x, y)})"  # noqa: E731
            out.append(f"acc{k} = " + pair(pair(f"acc{k}", f"acc{k}_1"),
                                           pair(f"acc{k}_2", f"acc{k}_3")))
        return out

    def blocked_lanes(d: int, lo: str, hi: str) -> list[str]:
        roots = [comp.instrs[r].operands[0] for r in reds]
        ks = range(len(reds))
        into = lambda _: [  # noqa: E731
            f"accb{k}[jj] = {acc_t[k]}({combine[k].format(f'accb{k}[jj]', f'x{o}')})"
            for k, o in enumerate(roots)]
        # np.empty in a prange body is hoisted (once per thread); np.full would not be
        out = [f"accb{k} = np.empty({BLOCK}, {acc_t[k]})" for k in ks]
        out += [f"for jj in range({BLOCK}):", *(f"    accb{k}[jj] = init{k}" for k in ks)]
        out += _block_buffers(comp, spec, roots, epi)
        out.append(f"qt = {lo} + ({hi} - ({lo})) // {BLOCK} * {BLOCK}")
        out.append(f"for qb in range({lo}, qt, {BLOCK}):")
        out += _indent(_vector_block(comp, spec, idx, d, "qb", str(BLOCK), epi, roots, into,
                                     loose=True), 1)
        out += _vector_block(comp, spec, idx, d, "qt", f"{hi} - qt", epi, roots, into,
                             loose=True)
        out += [f"w = {BLOCK // 2}", "while w:", "    for jj in range(w):"]
        out += [f"        accb{k}[jj] = {acc_t[k]}("
                f"{combine[k].format(f'accb{k}[jj]', f'accb{k}[jj + w]')})" for k in ks]
        out.append("    w //= 2")
        return out + [f"acc{k} = {acc_t[k]}({combine[k].format(f'acc{k}', f'accb{k}[0]')})"
                      for k in ks]

    def finish(at: str) -> list[str]:
        lines = [f"x{r} = acc{k}" for k, r in enumerate(reds)]
        lines += [f"fpf |= {_nonfinite(f'{np_type(comp.instrs[r].dtype)}(x{r})')}"
                  for r in reds if _reduce_may_raise(comp, r)]
        for i in range(len(comp.instrs)):  # reshapes of results are aliases; then the epilogue
            ins = comp.instrs[i]
            if ins.opcode == "reshape" and (comp.instrs[ins.operands[0]].opcode == "reduce"
                                            or ins.operands[0] in epi_alias):
                epi_alias.add(i)
                lines.append(f"x{i} = x{ins.operands[0]}")
            elif i in epi:
                lines.append(f"x{i} = {_expr(comp, i)}")
                lines += _fp_line(comp, i, set())
        return lines + [f"out{j}[{at}] = x{o}" for j, o in enumerate(comp.outputs)]

    if not partial:  # every output element owns its accumulators: one pass, parallel over dim 0
        kidx = ", ".join(idx[d] for d in kept) or "0"
        lines = _nest(list(range(t)), "i", True)
        inner = [f"acc{k} = init{k}" for k in range(len(reds))]
        inner += _nest(list(range(t, spec.rank - 1)), "i", False)
        if spec.rank > t:
            inner += _indent(lanes(spec.rank - 1, "0", f"n{spec.rank - 1}"), spec.rank - 1 - t)
        else:
            inner += body + step
        inner += finish(kidx)
        return _indent(lines, 1) + _indent(inner, t + 1)

    # partials: part[c, kept...] per chunk c of dim 0 (one chunk unless dim 0 is reduced), or
    # part[r, kept...] for row lane r of chunk c (`row_lanes`)
    laned = has_row_lanes(spec)
    pidx = ", ".join(["r" if laned else "c", *(idx[d] for d in kept)])

    def open_dim(d: int) -> str:
        if spec.chunked and d == 0:
            return "for i0 in range(c * n0 // nchunks, (c + 1) * n0 // nchunks):"
        return f"for i{d} in {'prange' if d == 0 else 'range'}(n{d}):"

    lines = ["for c in prange(nchunks):"] if spec.chunked else ["c = 0"]
    depth = 1 if spec.chunked else 0
    for d in range(t):
        lines.append("    " * depth + open_dim(d))
        depth += 1
        if d == 0 and laned:  # (lanes: a power of two)
            lines.append("    " * depth
                         + "r = c * lanes + ((i0 - c * n0 // nchunks) & (lanes - 1))")
    acc_depth = depth
    lines += _indent([f"acc{k} = part{k}[{pidx}]" for k in range(len(reds))], depth)
    if t == spec.rank:  # the innermost dim is kept: accumulate element by element
        lines += _indent(body + step, depth)
    else:
        for d in range(t, spec.rank - 1):
            lines.append("    " * depth + open_dim(d))
            depth += 1
        last = spec.rank - 1
        lo, hi = ("c * n0 // nchunks", "(c + 1) * n0 // nchunks") if (
            spec.chunked and last == 0) else ("0", f"n{last}")
        lines += _indent(lanes(last, lo, hi), depth)
    lines += _indent([f"part{k}[{pidx}] = acc{k}" for k in range(len(reds))], acc_depth)
    # combine the partials, then the epilogue, once per output element
    jidx = [f"j{d}" for d in range(spec.rank)]
    kat = ", ".join(jidx[d] for d in kept)
    comb = [f"acc{k} = part{k}[{', '.join(['0', *(jidx[d] for d in kept)])}]" for k in range(len(reds))]
    comb += ["for c in range(1, part0.shape[0]):"]
    comb += [f"    acc{k} = {acc_t[k]}({combine[k].format(f'acc{k}', f'part{k}[' + ', '.join(['c', *(jidx[d] for d in kept)]) + ']')})"
             for k in range(len(reds))]
    comb += finish(kat or "0")
    tail = _nest(kept, "j", True)
    return _indent(lines, 1) + _indent(tail, 1) + _indent(comb, len(kept) + 1)


def _render_scan(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    """Inclusive scan along the last dim, one row per outer index (rows in parallel)."""
    (root,) = comp.outputs
    rins = comp.instrs[root]
    rdef = REDUCTIONS[rins.attr("to_apply")]
    acc_t = np_type(acc_dtype(rdef.name, rins.dtype))
    last = spec.rank - 1
    body = _body(comp, spec, idx, {root})
    at = ", ".join(idx)
    scan = (["acc = init0", f"for i{last} in range(n{last}):"]
            + _indent(body, 1)
            + [f"    acc = {acc_t}({rdef.combine.format('acc', f'x{rins.operands[0]}')})",
               f"    out0[{at}] = acc"]
            + ([f"    fpf |= {_nonfinite('acc')}"] if _reduce_may_raise(comp, root) else []))
    lines = [("    " * d) + f"for i{d} in {'prange' if d == 0 else 'range'}(n{d}):"
             for d in range(last)]
    return _indent(lines, 1) + _indent(scan, last + 1)


def _render_argreduce(comp: Module, spec: Spec, idx: list[str]) -> list[str]:
    (root,) = comp.outputs
    rins = comp.instrs[root]
    last = spec.rank - 1
    better = "<" if rins.attr("to_apply") == "min" else ">"
    body = _body(comp, spec, idx, {root})
    v = f"x{rins.operands[0]}"
    kidx = ", ".join(idx[:last]) or "0"
    dtype = comp.instrs[rins.operands[0]].dtype
    if dtype.kind in "fiu" and last == 0:
        # A whole 1-d array in two passes: the extreme of each chunk of ARG_CHUNK elements,
        # chunks in parallel, each a loop LLVM vectorizes (llvm.maximum/minimum for floats:
        # a NaN anywhere makes it NaN); then the first chunk holding the overall extreme (the
        # first NaN's, if any), and in it the first index holding it. From the identity,
        # with unsigned indices: from the first element, or with a negative index's
        # wraparound test, LLVM did not vectorize the first pass. 10^7 float64: 2.0 ms
        # against 6.1 ms in one thread over the whole array (NumPy 3.3). Along an axis of a
        # 2-d array the rows run in parallel (`_arg_lanes`).
        if dtype.kind == "f":
            init = "np.inf" if better == "<" else "-np.inf"
            step = f"_h.{'min' if better == '<' else 'max'}_step(best, {v})"
            found = f"{v} == best or (best != best and {v} != {v})"
            wins = f"(e != e and best == best) or e {better} best"
        else:
            info = np.iinfo(dtype)
            init = info.max if better == "<" else info.min
            step, found = f"{v} if {v} {better} best else best", f"{v} == best"
            wins = f"e {better} best"
        t = np_type(dtype)
        scan = [f"ch = max({ARG_CHUNK}, (n0 + {ARG_CHUNKS - 1}) // {ARG_CHUNKS})",
                "nch = (n0 + ch - 1) // ch", f"ext = np.empty(nch, {t})",
                "for c in prange(nch):", f"    best = {t}({init})",
                "    for q in range(c * ch, min(c * ch + ch, n0)):", "        i0 = np.uint64(q)",
                *_indent(body, 2), f"        best = {step}", "    ext[c] = best",
                f"best = {t}({init})", "bc = 0", "for c in range(nch):", "    e = ext[c]",
                f"    if {wins}:", "        best = e", "        bc = c", "bi = 0",
                "for q in range(bc * ch, min(bc * ch + ch, n0)):", "    i0 = np.uint64(q)",
                *_indent(body, 1), f"    if {found}:", "        bi = q", "        break",
                "out0[0] = bi"]
    else:
        scan = ([f"i{last} = 0", *body, f"best = {v}", "bi = 0",
                 f"for i{last} in range(1, n{last}):"]
                + _indent(body, 1)
                + [f"    if best == best and ({v} {better} best or {v} != {v}):",
                   f"        best = {v}",
                   f"        bi = i{last}",
                   f"out0[{kidx}] = bi"])
        arrays = [d for _, d in spec.loads if d is not None]
        unit = [f"a{k}.strides[-1] == a{k}.itemsize" for k, d in enumerate(arrays)
                if last in d]  # the lanes read rows along memory, not down columns
        if dtype.kind in "fiu" and not spec.tables:
            scan = [f"if n{last} >= {ARG_LANES}{''.join(' and ' + u for u in unit)}:",
                    *_indent(_arg_lanes(body, v, last, better, dtype, kidx), 1),
                    "else:", *_indent(scan, 1)]
    lines = []
    for d in range(last):
        lines.append("    " * d + f"for i{d} in {'prange' if d == 0 else 'range'}(n{d}):")
    return _indent(lines, 1) + _indent(scan, last + 1)


ARG_LANES = 16  # lanes of a row's argmax/argmin (`_arg_lanes`)
ARG_CHUNK = 4096  # elements per chunk of a whole 1-d array's argmax/argmin, at least ...
ARG_CHUNKS = 1024  # ... and chunks at most (longer chunks past that)


def _arg_lanes(body: list[str], v: str, last: int, better: str, dtype, kidx: str) -> list[str]:
    """argmax/argmin of one row (dim `last`, at least ARG_LANES long) in ARG_LANES lanes:
    element q goes to lane q mod ARG_LANES, which keeps its extreme and the first index
    holding it (a NaN is taken over a number and kept: the first NaN), a block of lanes at
    a time in a loop of selects without a carried branch, which LLVM vectorizes; the lanes
    are then merged, ties to the smaller index, so the answer is NumPy's first occurrence.
    (1000, 1000) float64 along axis 1: 0.55 ms in one scalar pass, NumPy 0.29.)"""
    t, L = np_type(dtype), ARG_LANES
    nan = dtype.kind == "f"
    take = f"({v} {better} b)" + (f" | (({v} != {v}) & (b == b))" if nan else "")
    i = f"i{last}"
    out = [f"bv = np.empty({L}, {t})", f"bx = np.empty({L}, np.int64)",
           f"for l in range({L}):", f"    {i} = np.uint64(l)", *_indent(body, 1),
           f"    bv[l] = {v}", "    bx[l] = l",
           f"for qb in range({L}, n{last}, {L}):",
           f"    for l in range(min({L}, n{last} - qb)):",
           f"        {i} = np.uint64(qb + l)", *_indent(body, 2),
           "        b = bv[l]", f"        take = {take}",
           f"        bv[l] = {v} if take else b", "        bx[l] = qb + l if take else bx[l]",
           "best = bv[0]", "bi = bx[0]", f"for l in range(1, {L}):", "    c = bv[l]",
           "    j = bx[l]"]
    if nan:
        out += ["    if best != best:", "        if c != c and j < bi:", "            bi = j",
                "    elif c != c or c " + better + " best or (c == best and j < bi):",
                "        best = c", "        bi = j"]
    else:
        out += [f"    if c {better} best or (c == best and j < bi):", "        best = c",
                "        bi = j"]
    return out + [f"out0[{kidx}] = bi"]
