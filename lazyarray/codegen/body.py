"""The pieces every CPU kernel is made of: the expression of one instruction, the body of a
fused loop (loads, gathers, vector math, floating-point checks), the kernel's parameters
and the steps of vectorized reductions. `cpu.py` puts them into loops, reductions and
scans; `rows.py` and `moments.py` into their own kernel shapes (pure: no Numba import)."""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from lazyarray import config
from lazyarray.ir.hlo import Module
from lazyarray.ops.loops import has_loop
from lazyarray.ops.table import OPS, having
from lazyarray.codegen.layout import Spec

# Floating-point checks come in two strengths. "cheap" (the default of a new kernel): a kernel
# only tells whether some checked value was not finite -- a superset of NumPy's flags, since
# a NaN or inf operand propagates without raising one -- and the executor re-runs a flagged
# fusion on NumPy to learn the exact warnings (`kernels.recheck_flags`). A check is one
# multiply-add per value, so it costs Numba little to compile (the exact checks, below, were
# about 60% of a large kernel's compile). "exact": operand NaN tests, chains, and a second
# pass over the elements that were not finite; a fusion is rendered so once its cheap
# kernel flagged (data holding NaN or inf: `kernels.escalate`), so such data reruns nothing.
_cheap = contextvars.ContextVar("cheap_checks", default=False)


@contextlib.contextmanager
def cheap_checks(on: bool = True):
    """Render kernels with cheap floating-point checks (see `_cheap`) inside the block."""
    token = _cheap.set(on)
    try:
        yield
    finally:
        _cheap.reset(token)


class Unsupported(Exception):
    """The CPU code generator cannot express this fusion; the interpreter runs it instead."""


# complex operands compile only for these (exact, or NumPy's own formula); other complex math
# differs from NumPy at inf/NaN inputs, so the interpreter runs it
_COMPLEX_OK = having("complex") | {"gather", "update", "convert", "select", "reduce", "scan",
                                   "broadcast", "reshape", "transpose", "slice", "parameter",
                                   "constant"}
_NO_UINT64 = having("no_uint64")  # Numba computes these through int64/float


def np_type(dtype: np.dtype) -> str:
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def acc_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """Sums and products of float32/complex64 accumulate in double precision."""
    if name in ("add", "multiply") and dtype in (np.float32, np.complex64):
        return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)
    return dtype


def check_supported(comp: Module) -> None:
    for ins in comp.instrs:
        if ins.dtype is not None and ins.dtype.kind == "f" and ins.dtype.itemsize == 2:
            raise Unsupported("float16")
        if ins.opcode in _NO_UINT64 and ins.dtype == np.uint64:
            raise Unsupported(ins.opcode)
        operand_complex = any(comp.instrs[o].dtype.kind == "c" for o in ins.operands)
        if operand_complex and (ins.opcode not in _COMPLEX_OK or (
                ins.opcode in ("reduce", "scan") and ins.attr("to_apply") in ("maximum", "minimum"))):
            raise Unsupported(f"{ins.opcode} on complex")


# Math with a vectorizable fast path for all but a few arguments (backends/numba_trig.py and kin):
# `_h.sin(x)` is right for every x but branches to libm above `TRIG_BIG`, which stops LLVM
# from vectorizing the loop around it; `_h.sin_fast(x)` never branches and is right for
# |x| <= TRIG_BIG. Hot loops compute these in blocks (`vector_block`): the fast forms over a
# block's arguments into small buffers, a fix-up pass with the exact forms only for a block
# that holds a huge argument, then the rest of the body reading the buffers.
SLOW_PATH = {"sin": "_h.sin_fast({0})", "cos": "_h.cos_fast({0})", "tan": "_h.tan_fast({0})"}
# helpers whose loops LLVM vectorizes (in blocks, inside reductions)
VECTOR_MATH = ("_h.exp(", "_h.exp_nonpositive(", "_h.expm1(", "_h.log(", "_h.log1p(",
                "_h.sin(", "_h.cos(", "_h.tanh(", "_h.sinh(", "_h.cosh(", "_h.log2(", "_h.log10(",
                "_h.arctanh(", "_h.arcsinh(", "_h.arccosh(", "_h.cbrt(", "_h.arctan(",
                "_h.arctan2(", "_h.arcsin(", "_h.arccos(", "_h.exp2(", "_h.tan(")


def _calls_loop(name: str, dtype, math: str) -> bool:
    """Does op `name` on `dtype` call NumPy's own loop under the `math` option? A row with
    the `numpy_loop` trait whose loop this NumPy has (ops/loops.py), unless `math="fast"`
    asks for lazyarray's own formulas."""
    return math == "numpy" and name in _NUMPY_LOOP and has_loop(name, dtype)


def numpy_loop(comp: Module, i: int) -> bool:
    """Does instruction i call NumPy's own loop? Float operands of the result's dtype
    (`_calls_loop`)."""
    ins = comp.instrs[i]
    return (ins.dtype.kind == "f" and all(comp.instrs[o].dtype == ins.dtype for o in ins.operands)
            and _calls_loop(ins.opcode, ins.dtype, config.get().math))


_NUMPY_LOOP = having("numpy_loop")


def expr_of(comp: Module, i: int, fast: bool = False) -> str:
    ins = comp.instrs[i]
    args = [f"x{o}" for o in ins.operands]
    if numpy_loop(comp, i):  # one element through NumPy's loop (blocks: `vector_block`)
        return f"{np_type(ins.dtype)}(_h.numpy_loop_{ins.opcode}({', '.join(args)}))"
    if ins.opcode == "convert":
        src = comp.instrs[ins.operands[0]].dtype
        if ins.dtype.kind == "b":
            return f"({args[0]} != 0)"
        if src.kind == "c" and ins.dtype.kind != "c":
            return f"{np_type(ins.dtype)}({args[0]}.real)"
        return f"{np_type(ins.dtype)}({args[0]})"
    if ins.opcode == "select":
        return f"({args[1]} if {args[0]} else {args[2]})"
    if ins.opcode == "exp" and _sign(comp, ins.operands[0]) < 0:  # (exp(-(x - y)**2))
        return f"{np_type(ins.dtype)}(_h.exp_nonpositive({args[0]}))"
    f8 = OPS[ins.opcode].f8 if ins.opcode in OPS else None
    if f8 is not None and ins.dtype == _F8 and all(comp.instrs[o].dtype == _F8
                                                   for o in ins.operands):
        return f8.format(*args)  # (`OpDef.f8`: particles' 9 KB kernel compiled 3.46 -> 3.00 s)
    return f"{np_type(ins.dtype)}({scalar_call(ins.opcode, args, fast)})"


_F8 = np.dtype(np.float64)


def loop_call(name: str, args: list[str], math: str, dtype: str = "float64") -> str | None:
    """`_h.numpy_loop_<name>(args)` (NumPy's own loop on one element of `dtype`) where the
    op calls NumPy's loop under the `math` option; else None."""
    return f"_h.numpy_loop_{name}({', '.join(args)})" if _calls_loop(name, dtype, math) else None


def scalar_call(name: str, args: list[str], fast: bool = False) -> str:
    """The Numba expression applying the elementwise op `name` to the expressions `args`
    (`fast`: the `SLOW_PATH` form, exact below `TRIG_BIG` only)."""
    if fast and name in SLOW_PATH:
        return SLOW_PATH[name].format(*args)
    op = OPS[name]
    template = op.template or f"np.{op.name}(" + ", ".join(f"{{{k}}}" for k in range(op.nin)) + ")"
    return template.format(*args)


def epilogue_instrs(comp: Module) -> set[int]:
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
FP_QUIET = having("fp_quiet") | {"select"}
_INT_DIVISIONS = {"floor_divide", "remainder", "fmod"}
_CAST_RANGE = {"int64": (-2.0 ** 63, 2.0 ** 63), "uint64": (-2.0 ** 63, 2.0 ** 64),
               "uint32": (-2.0 ** 63, 2.0 ** 63)}  # smaller targets: the int32 range


def _precision(dtype: np.dtype) -> int:
    return dtype.itemsize // (2 if dtype.kind == "c" else 1)


def nonfinite_test(x: str) -> str:
    return f"(({x} - {x}) != ({x} - {x}))"  # inf - inf and NaN - NaN are NaN: no call, no branch


# float ops whose result is >= 0 or NaN whatever their operands
_NONNEGATIVE = having("nonnegative")
_MAX_LITERAL = {"float64": "1.7976931348623157e+308",
                "float32": "np.float32(3.4028234663852886e+38)"}


def _sign(comp: Module, i: int) -> int:
    """1 when instruction i's value is >= 0 or NaN, -1 when it is <= 0 or NaN (the Gaussian sum's
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
    """`nonfinite_test` of instruction i's value: one compare when its sign is known (a value
    >= 0 is not finite exactly where it is not <= the largest finite value), against a
    subtraction and a compare (the Gaussian sum's kernel: 3% of its time)."""
    sign = _sign(comp, i)
    if not sign:
        return nonfinite_test(f"x{i}")
    big = _MAX_LITERAL[comp.instrs[i].dtype.name]
    return f"(not (x{i} <= {big}))" if sign > 0 else f"(not (x{i} >= -{big}))"


NONFINITE_BITS = 0x7FF0000000000000  # the magnitude bits of inf: not finite from there up


def magnitude_bits(comp: Module, i: int) -> list[str]:
    """The IEEE bits of instruction i's value (float64: a float32 widens exactly) without
    the sign, as int64: at least NONFINITE_BITS exactly where the value is not finite (both
    parts of a complex). A split body keeps their running maximum (`nfo`), an integer max
    reduction LLVM vectorizes in two instructions per vector; counting non-finite values
    took four (a subtraction, a compare, the mask widened, an add: the stencil's kernel 2-4%)."""
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
    raises nothing; inf - inf does; with cheap checks, `_cheap`, NaN operands or not); an
    integer division or remainder by zero (or
    MIN // -1); a float-to-integer cast out of range."""
    ins = comp.instrs[i]
    if not ins.is_elementwise or ins.opcode in FP_QUIET or ins.dtype.kind == "b":
        return None
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
    if _cheap.get():  # (NaN operands or not: see `_cheap`)
        return _nonfinite_value(comp, i)
    quiet = [f"(x{o} == x{o})" for o in dict.fromkeys(ins.operands)
             if comp.instrs[o].dtype.kind in "fc"]
    return " & ".join([_nonfinite_value(comp, i), *quiet])


def scalar_loads(spec: Spec) -> list[str]:
    """Loads that index nothing are hoisted out of every loop."""
    k = 0
    lines = []
    for p, dims in spec.loads:
        if dims is None:
            lines.append(f"x{p} = s{k}")
            k += 1
    return lines


def loop_body(comp: Module, spec: Spec, idx: list[str], skip: set[int],
          only: set[int] | None = None, fast: bool = False,
          subst: dict[int, str] | None = None, checks: bool = True,
          aliases: dict[int, str] | None = None, split: bool = False,
          loose: bool = False) -> list[str]:
    """Loads and elementwise instructions (those in `only`, when given; `subst` replaces an
    instruction's expression, `fast` picks the `SLOW_PATH` forms, `aliases` names values an
    earlier pass computed), and with `checks` the floating-point checks (`fpf |= ...`).

    The checks of instructions whose inf or NaN surely reaches an output ("gated") matter only
    where an output is not finite. Inline, they are `(output not finite) and (checks)`, which
    a vectorized loop evaluates everywhere anyway (the stencil: +20 %); with `split`, the body only
    counts the elements where an output, or a checked float value that may not reach one
    (the where/clip chain's `x * 2` under `where`), is not finite (`nfo`), and the caller runs the
    exact checks in a second pass when that count is not zero: one compare per checked value instead
    of the exact check's operand NaN tests. With `loose` (reduction kernels), a checked float
    value counts wherever it is not finite, NaN operands or not: a larger superset, which
    the interpreter then settles (`executor.recheck_flags`), as it does for a sum that is not
    finite; the operand tests cost the Gaussian sum's kernel 7%."""
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
    roots = [r for r in (stored_output(comp, o) for o in comp.outputs)
             if r in here and comp.instrs[r].dtype.kind in "fc"]
    gated = _propagated(comp, roots) - sure
    checks_, gated_checks, nonfinite = [], [], []
    cheap = _cheap.get()
    dropped, moved = _chained_checks(comp, here, sure | gated) if checks and not cheap \
        else (set(), {})
    for i in here:
        if comp.instrs[i].opcode == "gather":
            lines += _gather(comp, i, *tables[i], idx)
            continue
        expr = subst[i] if subst and i in subst else expr_of(comp, i, fast)
        lines.append(f"x{i} = {expr}")
        if i in moved:
            exact = [f"fpf |= {moved[i]}"]
        elif checks and i not in dropped:
            exact = fp_line(comp, i, sure)
            if i in gated:
                gated_checks.extend(exact)
                continue
        else:
            continue
        if (split or cheap) and exact and comp.instrs[i].dtype.kind in "fc":
            nonfinite.append(i)  # exact in the second pass, if ever (cheap: never)
        elif loose and exact and comp.instrs[i].dtype.kind in "fc":
            checks_.append(f"fpf |= {_nonfinite_value(comp, i)}")  # (see `loose` above)
        else:
            checks_.extend(exact)
    conds = [c[len("fpf |= "):] for c in checks_]
    if cheap and (gated_checks or nonfinite):  # one multiply-add per value (see `_cheap`)
        vals = list(dict.fromkeys((roots if gated_checks else []) + nonfinite))
        lines.append("chk = " + " + ".join(f"x{i} * 0.0" for i in vals))
        conds.append("chk != chk")
    elif gated_checks or nonfinite:  # exact checks only where a value is not finite (rare)
        if split:
            bits = [b for i in dict.fromkeys((roots if gated_checks else []) + nonfinite)
                    for b in magnitude_bits(comp, i)]
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


def ancestors(comp: Module, spec: Spec, roots, stop=frozenset()) -> set[int]:
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


def slow_path_instrs(comp: Module, spec: Spec, roots, skip: set[int]) -> list[int]:
    return sorted(i for i in ancestors(comp, spec, roots)
                  if i not in skip and comp.instrs[i].opcode in SLOW_PATH
                  and comp.instrs[i].dtype.kind == "f" and not numpy_loop(comp, i))


def loop_instrs(comp: Module, spec: Spec, roots, skip: set[int]) -> list[int]:
    """The instructions computing `roots` that call NumPy's loops (`numpy_loop`)."""
    return sorted(i for i in ancestors(comp, spec, roots)
                  if i not in skip and numpy_loop(comp, i))


def _loop_levels(comp: Module, spec: Spec, calls: list[int]) -> list[list[int]]:
    """`calls` (instructions calling NumPy's loops) by level: those whose operands need no
    other call first, then those that need only the first level's, ... (exp(sin(x)): two)."""
    level: dict[int, int] = {}
    for i in calls:  # (in program order: operands first)
        below = ancestors(comp, spec, comp.instrs[i].operands, stop=set(calls)) & set(calls)
        level[i] = 1 + max((level[j] for j in below), default=-1)
    return [[i for i in calls if level[i] == k] for k in range(max(level.values()) + 1)]


def _loop_operands(comp: Module, calls: list[int]) -> dict[tuple[int, int], str]:
    """(call, operand position) -> the buffer holding that operand in a block: the result
    buffer `tb<j>` of the call j it is, else its own `ta<i>_<k>`."""
    return {(i, k): f"tb{o}" if o in calls else f"ta{i}_{k}"
            for i in calls for k, o in enumerate(comp.instrs[i].operands)}


def loop_checks(comp: Module, calls: list[int], where: dict, result: str, head: str,
                q: str) -> list[str]:
    """A loop `head` checking the results of NumPy's loops `calls` (buffers `result`.format(i),
    operands in `where[(i, k)]`) for floating-point events, as `fp_check`."""
    body = []
    for i in calls:
        check = fp_check(comp, i)
        if check is not None:
            body += [f"x{o} = {where[(i, k)]}[{q}]"
                     for k, o in enumerate(comp.instrs[i].operands)]
            body += [f"x{i} = {result.format(i)}[{q}]", f"fpf |= {check}"]
    return [head, *indent(body, 1)] if body else []


def _numpy_loop_block(comp: Module, spec: Spec, idx: list[str], loop: list[str], count: str,
                      skip: set[int], roots, tail: list[str], calls: list[int], loose: bool,
                      split: bool) -> list[str]:
    """`vector_block` with calls of NumPy's loops: per level of calls (`_loop_levels`), a loop
    over the block computing their operands into buffers `ta<i>_<k>`, then one call per
    instruction over the block (`_h.numpy_block_<op>`) into `tb<i>`; then the rest of the body
    reading `tb<i>`. Everything is read before anything is stored (donated buffers)."""
    where = _loop_operands(comp, calls)
    done: list[int] = []
    lines: list[str] = []
    for level in _loop_levels(comp, spec, calls):
        fill = {(i, k): o for i in level for k, o in enumerate(comp.instrs[i].operands)
                if o not in calls}
        if fill:
            need = ancestors(comp, spec, set(fill.values()), stop=set(done))
            aliases = {o: f"{where[(j, k)]}[jj]" for j in done
                       for k, o in enumerate(comp.instrs[j].operands) if o in need}
            body = loop_body(comp, spec, idx, skip, only=need,
                             subst={j: f"tb{j}[jj]" for j in done}, aliases=aliases)
            lines += loop + indent(body + [f"{where[key]}[jj] = x{o}"
                                           for key, o in fill.items()], 1)
        for i in level:
            ins = comp.instrs[i]
            bufs = [where[(i, k)] for k in range(len(ins.operands))]
            lines.append(f"_h.numpy_block_{ins.opcode}({', '.join(bufs)}, tb{i}, {count})")
        lines += loop_checks(comp, level, where, "tb{}", f"for jj in range({count}):", "jj")
        done += level
    main = ancestors(comp, spec, roots, stop=set(calls))
    aliases = {o: f"{where[(j, k)]}[jj]" for j in calls
               for k, o in enumerate(comp.instrs[j].operands) if j in main}
    return lines + loop + indent(loop_body(
        comp, spec, idx, skip, only=main, subst={j: f"tb{j}[jj]" for j in calls},
        aliases=aliases, loose=loose, split=split) + tail, 1)


def vector_block(comp: Module, spec: Spec, idx: list[str], d: int, start: str, count: str,
                  skip: set[int], roots, tail, loose: bool = False,
                  split: bool = False) -> list[str]:
    """`for jj in range(count)` over index u{d} = start + jj of dim d: the body, then the
    lines `tail(index names)` (which use `roots`). The index is unsigned: Numba then indexes
    without the negative-index wraparound, which LLVM cannot rule out for `start + jj` and
    which turns the loads into gathers.

    With `SLOW_PATH` math (sin, cos) in it: the arguments of a block into buffers `ta<i>`;
    the fast forms over those into `tb<i>` (a loop over contiguous buffers, which vectorizes
    whatever the inputs' strides), counting the huge arguments; only when there are any, the
    exact forms over the block again; then the rest of the body reading `tb<i>` (buffers
    allocated by the caller, see `block_buffers`). When one such instruction feeds another
    (sin(cos(x))), the first two steps are one loop over the body instead, and the fix-up
    recomputes that body. The buffers are filled before anything is stored, so an output that
    shares its buffer with an input (donation) is still read before it is written."""
    loop = [f"for jj in range({count}):", f"    u{d} = np.uint64({start} + jj)"]
    idx = [*idx[:d], f"u{d}", *idx[d + 1:]]
    tail = tail(idx)
    calls = loop_instrs(comp, spec, roots, skip)
    if calls:
        return _numpy_loop_block(comp, spec, idx, loop, count, skip, roots, tail, calls,
                                 loose, split)
    slow = slow_path_instrs(comp, spec, roots, skip)
    if not slow:
        return loop + indent(loop_body(comp, spec, idx, skip, loose=loose, split=split) + tail, 1)
    args = {i: comp.instrs[i].operands[0] for i in slow}
    main = ancestors(comp, spec, roots, stop=set(slow))
    rest = loop + indent(loop_body(comp, spec, idx, skip, only=main,
                                subst={i: f"tb{i}[jj]" for i in slow},
                                aliases={a: f"ta{i}[jj]" for i, a in args.items()},
                                loose=loose, split=split) + tail, 1)
    if not any(set(slow) & ancestors(comp, spec, [a]) for a in args.values()):
        # not nested: the arguments into buffers `ta<i>` first, then the math over those
        # contiguous buffers, which vectorizes whatever the strides of the inputs (LLVM
        # vectorizes a loop over a strided array only in a version for unit stride)
        lines = [*loop, *indent(loop_body(comp, spec, idx, skip, only=ancestors(
            comp, spec, args.values())) + [f"ta{i}[jj] = x{a}" for i, a in args.items()], 1)]
        lines += ["nbig = 0", f"for jj in range({count}):"]
        for i in args:
            fast = SLOW_PATH[comp.instrs[i].opcode].format(f"ta{i}[jj]")
            lines += [f"    tb{i}[jj] = {np_type(comp.instrs[i].dtype)}({fast})",
                      f"    nbig += _h.trig_big(ta{i}[jj])"]
        lines += ["if nbig:", f"    for jj in range({count}):"]
        for i in args:
            exact = OPS[comp.instrs[i].opcode].template.format(f"ta{i}[jj]")
            lines.append(f"        tb{i}[jj] = {np_type(comp.instrs[i].dtype)}({exact})")
        return lines + rest
    pre = ancestors(comp, spec, slow)
    store = [f"tb{i}[jj] = x{i}" for i in slow] + [f"ta{i}[jj] = x{a}" for i, a in args.items()]
    lines = ["nbig = 0", *loop]
    lines += indent(loop_body(comp, spec, idx, skip, only=pre, fast=True), 1)
    lines += indent([f"nbig += _h.trig_big(x{comp.instrs[i].operands[0]})" for i in slow]
                     + store, 1)
    lines += ["if nbig:", *indent(loop, 1)]
    lines += indent(loop_body(comp, spec, idx, skip, only=pre, checks=False) + store, 2)
    return lines + rest


def block_buffers(comp: Module, spec: Spec, roots, skip: set[int],
                   size: int | None = None) -> list[str]:
    lines, size = [], size or BLOCK
    calls = loop_instrs(comp, spec, roots, skip)
    for i in calls:  # (see `_numpy_loop_block`)
        ins = comp.instrs[i]
        lines += [f"ta{i}_{k} = np.empty({size}, {np_type(ins.dtype)})"
                  for k, o in enumerate(ins.operands) if o not in calls]
        lines.append(f"tb{i} = np.empty({size}, {np_type(ins.dtype)})")
    for i in ([] if calls else slow_path_instrs(comp, spec, roots, skip)):
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
        lines.append(f"{j} = _h.gather_index(x{o}, {n}, err)")
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
    """Checks moved to the end of chains of one-operand ops: the Gaussian sum's `exp(-(x - y)**2)`
    checks `-(x - y)**2` once, not `x - y` and its square apart (a tenth of the Gaussian sum's
    time).

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
                              if ins.opcode in ("reduce", "scan") and reduce_may_raise(comp, i)])


def fp_line(comp: Module, i: int, sure: set[int]) -> list[str]:
    if i in sure:
        return []
    check = fp_check(comp, i)
    return [] if check is None else [f"fpf |= {check}"]


def kernel_params(comp: Module, spec: Spec) -> list[str]:
    params = [f"out{k}" for k in range(len(comp.outputs))]
    if spec.kind in ("reduce", "moments"):
        params += [f"part{k}" for k in range(len(reductions_of(comp)))]
    n_arr = sum(d is not None for _, d in spec.loads)
    params += [f"a{k}" for k in range(n_arr)]
    params += [f"t{k}" for k in range(len(spec.tables))]
    params += [f"s{k}" for k in range(len(spec.loads) - n_arr)]
    params += _flat_params(spec)
    params += [f"n{d}" for d in range(spec.rank)]
    if spec.kind == "reduce":
        params += [f"init{k}" for k in range(len(reductions_of(comp)))] + ["nchunks"]
        params += ["lanes"] if has_row_lanes(spec) else []
    if spec.kind == "row":
        params += [f"init{k}" for k in range(len(reductions_of(comp)))]
    if spec.kind == "moments":
        params += ["rb", "nblocks", "w"]
    if spec.kind == "scan":
        params.append("init0")
    if spec.tables:
        params.append("err")  # int64[1]: set when an index is out of range
    return params


def reduce_may_raise(comp: Module, r: int) -> bool:
    """A float sum or product may overflow (or meet inf - inf): its result is checked (a NaN
    or inf among its inputs also counts; the interpreter then decides)."""
    ins = comp.instrs[r]
    return ins.attr("to_apply") in ("add", "multiply") and ins.dtype.kind in "fc"


def reductions_of(comp: Module) -> list[int]:
    return [i for i, ins in enumerate(comp.instrs) if ins.opcode == "reduce"]


def indent(lines: list[str], depth: int) -> list[str]:
    return ["    " * depth + line for line in lines]


BLOCK = 64  # elements per block of a reduction whose body LLVM can vectorize


def stored_output(comp: Module, o: int) -> int:
    ins = comp.instrs[o]
    return ins.operands[1] if ins.opcode == "update" else o


ROW_LANES = 4  # partial rows per chunk of a narrow column reduction (see `row_lanes`)
LANES_BELOW = 16  # ... when fewer elements than this are kept per row


def has_row_lanes(spec: Spec) -> bool:
    """Whether the kernel takes `lanes`: dim 0 is reduced in chunks and the innermost dim is
    kept (`X.sum(axis=0)`); row i of chunk c then adds into partial row
    `c * lanes + (i - start of c) mod lanes`."""
    return spec.chunked and not spec.reduced[-1]


def row_lanes(spec: Spec, kept: int) -> int:
    """Partial rows per chunk for `kept` elements per row: ROW_LANES for narrow rows, so that
    consecutive rows add into different partial rows (the column standardization's 8 column sums:
    1.77 ms with one, 1.16 ms with four, where every row's read-add-write waited for the previous
    row's store); one for rows of LANES_BELOW elements or more, whose vectors are independent
    already (a (1000, 1000) column sum: four lanes moved 4x the partials, 0.55 ms against 0.16).
    Chosen by the shape, so the order of the additions does not depend on the thread count."""
    return ROW_LANES if has_row_lanes(spec) and kept < LANES_BELOW else 1


_VECTOR_STEPS = {"add": "_h.sum_step", "maximum": "_h.max_step", "minimum": "_h.min_step"}
# integer and boolean steps: exact in any order, so LLVM vectorizes them as written
_EXACT_STEPS = {"add": "({0} + {1})", "multiply": "({0} * {1})", "maximum": "max({0}, {1})",
                "minimum": "min({0}, {1})", "or": "({0} | {1})", "and": "({0} & {1})"}


PREFETCH_BLOCK = 256  # elements per block of a prefetching 1-d reduction (`Spec.prefetch`)
PREFETCH_AHEAD = 1024  # elements from a block to the lines its prefetches ask for


def prefetch_lines(comp: Module, spec: Spec, start: str) -> list[str]:
    """Software prefetches, one per 64-byte line of each array load, of the block of
    PREFETCH_BLOCK elements PREFETCH_AHEAD elements after the block from `start` (kept below
    n0). the distance at 1e7 (Intel Xeon, 2 cores): 3.5 -> 3.0 ms; the hardware prefetcher alone
    kept too few lines in flight per core. Blocks of 256 and 1024 ahead were the best of
    256-1024 and 512-2048 elements (2048 ahead: 3.2-3.3 ms)."""
    arrays = [comp.instrs[p].dtype.itemsize for p, dims in spec.loads if dims is not None]
    step = max(1, 64 // min(arrays))
    lo, hi = f"{start} + {PREFETCH_AHEAD}", f"{start} + {PREFETCH_AHEAD + PREFETCH_BLOCK}"
    return [f"for pq in range(min({lo}, n0), min({hi}, n0), {step}):",
            *(f"    _h.prefetch(a{k}, pq)" for k in range(len(arrays)))]


def vector_combine(reduce_ins) -> str | None:
    """For a float sum, max or min: the template `{0}` (accumulator) `{1}` (value) of the one
    accumulator step that LLVM vectorizes into several vector accumulators (`_h.sum_step`,
    `max_step`, `min_step`); None for the rest. the distance at 1e7: 3.5 ms, against 5.4 ms for 4
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


