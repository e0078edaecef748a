"""The trace tier: chains of elementwise operations on tiny float64 arrays, recorded as they
are written and run as one loop when their value is needed.

An operator, a one-argument ufunc or a two-argument ufunc called on an Array and an Array or
a Python scalar (`np.maximum(x, 0)`, as `x + 0` is) whose array operands are tiny, computed
float64 arrays of one shape (or pending traces of that shape) and whose other operands are
Python floats (or exactly representable ints, taken as the float64 NumPy converts them to)
does not call NumPy: it records a *trace*, a tuple

    (program id, leaves, scalars, number of scalars used, shape, NumPy error state)

The program id names the program's structure alone -- `(op, operand ids)`, interned in `_KEYS`
(id 0 is a leaf array, id 1 a scalar) -- so `sin(x * 1.01 + 0.1) - 0.05` gets the same id
whatever the values of `x` and of the scalars, and whatever the size. The leaves (flat, read-
only arrays) and the scalars are the program's inputs, in the order a left-to-right walk of
the program meets them (an operation's own scalar after its operands' inputs). Scalars live
in one list that a chain appends to in place (`x * 1.01 + 0.1` shares the list of `x * 1.01`,
using one more element), so recording an operation costs what allocating its Array costs.

Besides float64 -> float64 operations, a program may compare (`x > 0.5`: a bool trace), combine
bool traces into masks (`&`, `|`, `^`, `~` and the logical ufuncs: `(x > a) & (x < b)`), pick
(`where(bool trace, float64 or float, float64 or float)`) and clip (`clip(x, lo, hi)` with
nonzero float bounds, where NumPy's loop for scalar bounds and the kernel's
minimum(maximum(...)) agree on every sign); each id has a result kind (`_KINDS`: float64,
bool, a total or a count; below) and an operation on operands of other kinds is not
recorded. `np.sum` of a 1-d float64 trace is one loop too: it adds the values in NumPy's
pairwise order, so the sum has np.add.reduce's bits. Of a temporary, the sum is a trace
itself (kind 2, a *total*: 0-d, a NumPy float64 scalar when computed) that one-argument
ufuncs extend (the distance's `sqrt`), computed by one loop returning one float; of a trace the
caller holds, `force_sum` computes both at once, and the trace keeps its values.

When the value is needed (`np.asarray`, `print`, a reduction, any operation the tier does
not record), `force` runs the program: on NumPy, one call per operation (the same calls the
eager tier would have made, so the same values), until the program has been run `PROMOTE`
times; then, on the background build thread, it is compiled by the lazy tier's compiler --
the trace is the front end, nothing more: its program becomes the graph the lazy tier would
have built (`_graph_of`), with each leaf and each scalar a parameter, which is lowered,
optimized, planned and rendered by the one code generator into the one kernel cache (in
memory and on disk) -- and the runs after it is ready call those kernels directly through a
launcher generated from their parameter lists (`_compile_graph`): one call instead of one
NumPy call per operation (`lazyarray.wait_compiles()` waits for it). A total's sum adds in
NumPy's pairwise order (`Spec.pairwise`), so it has np.add.reduce's bits. A program is at
most `MAX_OPS` operations (one kernel: `passes.fusion.MAX_FUSION`): an operation that would
make it longer computes its operand first and starts a new trace from the value.

Floating-point errors: traces are recorded only under error states whose categories are all
"ignore" or "warn" (NumPy's default is one), and a trace runs under the state it was recorded
in (an operation under another state computes the trace first). NumPy's calls run with the
"warn" categories raising; a program that raises is run again on NumPy with each category
recorded (`ir/fpstate.py`), and its warnings are issued at the line that needed the value, as
on the lazy tiers. A kernel counts the places where an operation may have raised a flag, as
every kernel does; a non-zero count runs the program on NumPy the same way."""

from __future__ import annotations

import math
import operator
import threading
import warnings
from collections import OrderedDict

import numpy as np

from lazyarray import config, debug, engine, stats
from lazyarray.codegen.body import kernel_params
from lazyarray.codegen.layout import plan
from lazyarray.config import TINY, get as _config_get
from lazyarray.graph import build
from lazyarray.graph.node import leaf
from lazyarray.ir import fpstate
from lazyarray.ir.lower import lower
from lazyarray.ops.table import OPS, having
from lazyarray.runtime import background, compile_service
from lazyarray.runtime.buffers import kernel_args
from lazyarray.runtime.kernels import (ensure_kernel, escalate, kernel_entry, native_pair,
                                       write_native)
from lazyarray.runtime.launches import load_sources, plain, scalar_reads

LEAF, SCALAR = 0, 1
MAX_OPS = 128  # operations per program: bounds compile time and the recursion of a walk
PROMOTE = 16  # runs on NumPy before a program is compiled
SHORT = 4  # programs of fewer operations are never compiled (a launch costs more)...
SHORT_RUNS = 64  # ...and once one has run this often, the operations that start it no longer
# start traces: its chain then begins one operation later, or not at all (the eager tier)
MAX_PROGRAMS = 100_000  # distinct structures recorded per process; beyond, nothing new traces

# ops the tier records: float64 in, float64 out, the same NumPy loop for any float64 operands
_CANDIDATES = having("trace")
_F8 = np.dtype(np.float64)


def _float64_loop(name: str) -> bool:
    op = OPS.get(name)
    if op is None or not op.is_ufunc or op.ref.nout != 1:
        return False
    try:
        return op.ref.resolve_dtypes((_F8,) * op.nin + (None,)) == (_F8,) * (op.nin + 1)
    except TypeError:
        return False


FLOAT_OPS = frozenset(n for n in _CANDIDATES if _float64_loop(n))
# float64 operands, a bool result: NumPy compares quietly (a NaN raises no flag)
COMPARISONS = frozenset({"greater", "greater_equal", "less", "less_equal", "equal",
                         "not_equal"})
# bool operands, a bool result: the masks made of comparisons (`(x > a) & (x < b)`, `~m`)
LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
                     "bitwise_or", "bitwise_xor", "invert"})
# the operators and ufuncs that record (`where` and `clip` record in _funcs.py)
TRACED = FLOAT_OPS | COMPARISONS | LOGICAL
_BOOL = np.dtype(bool)
# a program's result dtype: DTYPES[_KINDS[pid]] (2: a total; 3: a count, the sum of a bool
# large trace, as np.sum of bools gives)
DTYPES = (_F8, _BOOL, _F8, np.dtype(np.intp))

# the interned structures: id -> (op, operand ids), its number of operations, its kind
_KEYS: dict[tuple, int] = {}
_NODES: list[tuple] = [("leaf",), ("scalar",)]
_SIZES: list[int] = [0, 0]
_KINDS: list[int] = [0, 0]  # 0: float64, 1: bool, 2: a float64 total (0-d), 3: a count
_lock = threading.Lock()


# (reduction, operand kind) -> result kind: float64 sums and extrema; of a comparison, a count
# (np.sum of bools: np.intp), any and all
_REDUCED = {("add", 0): 0, ("maximum", 0): 0, ("minimum", 0): 0, ("add", 1): 3, ("or", 1): 1,
            ("and", 1): 1}


def _kind(key: tuple) -> int | None:
    """The result kind of the operation `key` on operands of known kinds; None when the tier
    does not record it (it then runs on the eager tier, which computes the operands)."""
    op, *operands = key
    kinds = [_KINDS[o] for o in operands]
    if type(op) is tuple:  # ("view", key) or ("reduce", ufunc name, axes, keepdims): large
        if operands[0] == SCALAR:  # traces only
            return None
        if op[0] == "view":
            return 0 if not kinds[0] else None
        return _REDUCED.get((op[1], kinds[0]))
    if op in FLOAT_OPS:  # (on a total: a one-argument ufunc's call, the distance's sqrt of its sum)
        return 0 if not any(kinds) else 2 if kinds == [2] else None
    if op == "total":  # np.sum of a tiny 1-d float64 trace: a float64 scalar (kind 2)
        return 2 if operands[0] != SCALAR and not kinds[0] else None
    if op in COMPARISONS:
        return 1 if not any(kinds) else None
    if op in LOGICAL:  # of bool traces only (a leaf and a scalar are float64)
        return 1 if all(k == 1 for k in kinds) else None
    if op == "where":  # where(bool, float64 or scalar, float64 or scalar)
        return 0 if kinds == [1, 0, 0] and operands[0] != SCALAR else None
    if op == "clip":  # clip(float64, scalar, scalar)
        return 0 if operands[0] != SCALAR and operands[1:] == [SCALAR, SCALAR] \
            and not kinds[0] else None
    return None


def dtype(pid: int) -> np.dtype:
    """The dtype of a trace's value."""
    return DTYPES[_KINDS[pid]]


NO_START: set[int] = set()  # one-operation programs that no longer start a trace


def view_id(pid: int, key: tuple) -> int | None:
    """The id of the slicing view `operand[key]` (ints, slices, None, Ellipsis) of the
    program `pid`: large traces only (a slice of a large computed array, `A[1:-1, :-2]`), so
    that the view is part of the structure a replay is remembered by."""
    parts = []  # (a loop, not a generator: one frame less per view on the hot path)
    for k in key:
        parts.append((0, k.start, k.stop, k.step) if type(k) is slice else (1, k))
    hkey = ("view", tuple(parts))
    key = (hkey, pid)
    pid = _KEYS.get(key)
    if pid is None and len(_VIEWS) < MAX_VIEWS:  # (a sliding window makes a view per step:
        pid = program_id(key)  # past MAX_VIEWS of them, views stay on the lazy tier)
        _VIEWS.add(hkey)
    return pid


MAX_VIEWS = 4096  # distinct slicing keys interned per process
_VIEWS: set[tuple] = set()


def _view_key(hkey: tuple) -> tuple:
    """The slicing key `view_id` interned, as NumPy takes it."""
    return tuple(slice(*k[1:]) if k[0] == 0 else k[1] for k in hkey)


def program_id(key: tuple) -> int | None:
    """The id of the structure `key` = (op, operand ids...), interned; None when the program
    would exceed MAX_OPS operations (or the table is full)."""
    pid = _KEYS.get(key)
    if pid is not None:
        return pid
    size = 1 + sum(_SIZES[o] for o in key[1:])
    kind = _kind(key)
    if size > MAX_OPS or len(_NODES) >= MAX_PROGRAMS or kind is None:
        return None
    with _lock:
        pid = _KEYS.get(key)
        if pid is None:
            pid = len(_NODES)
            _NODES.append(key)
            _SIZES.append(size)
            _KINDS.append(kind)
            _KEYS[key] = pid
    return pid


class Program:
    """One structure, lowered: its NumPy runner, its compiled launcher, how often it ran."""

    __slots__ = (
        "math",
        "dtype",
        "kernel",
        "leaves",
        "run",
        "run_recorded",
        "runs",
        "scalars",
        "starts",
        "steps",
        "sum_kernel",
        "sum_runs",
        "total",
    )

    def __init__(self, pid: int):
        self.steps: list[tuple[str, list[str]]] = []  # (op, operands: "L<j>", "S<k>", "r<m>")
        self.leaves = self.scalars = 0
        self.starts: set[int] = set()  # its operations on inputs only (where traces start)
        self._walk(pid)
        # a total's program: the step summing the elements, the last of the loop's steps
        # (the ones after it apply one-argument ufuncs to the sum)
        self.total = next((m for m, (op, _) in enumerate(self.steps) if op == "total"), -1)
        self.dtype = dtype(pid)
        self.math = _config_get().math  # (its kernel's source depends on it)
        self.runs = self.sum_runs = 0
        self.kernel = None  # the compiled loop's launcher (`_compile_graph`)
        self.sum_kernel = None  # (the loop's launcher, its sum's): `force_sum`
        self.run = self.run_recorded = None
        # views and reductions are recorded on large traces only: the lazy tier computes them
        if not any(type(op) is tuple for op, _ in self.steps):
            self.run, self.run_recorded = self._numpy_runners()

    @property
    def source(self) -> str | None:
        """The compiled kernels' source (the lazy tier's code generator wrote it), once built."""
        return None if self.kernel is None else "\n".join(e.source for e in self.kernel.entries)

    def _walk(self, pid: int) -> str:
        """Append the steps computing `pid`; its operand name. Inputs are numbered in the
        order recording appends them: operands left to right, then the op's own scalars."""
        if pid == LEAF:
            self.leaves += 1
            return f"L{self.leaves - 1}"
        op, *operands = _NODES[pid]
        if all(o in (LEAF, SCALAR) for o in operands):
            self.starts.add(pid)
        names = [None if o == SCALAR else self._walk(o) for o in operands]
        for j, o in enumerate(operands):
            if o == SCALAR:
                names[j] = f"S{self.scalars}"
                self.scalars += 1
        self.steps.append((op, names))
        return f"r{len(self.steps) - 1}"

    def _numpy_runners(self):
        """`run(L, S)`: NumPy's calls, one per step; `run_recorded(L, S, call)`: the same
        through `fpstate.call` (exact warnings)."""
        def arg(name: str) -> str:
            return f"{name[0]}[{name[1:]}]" if name[0] in "LS" else name

        fns = {f"f{m}": _NUMPY.get(op) or OPS[op].ref for m, (op, _) in enumerate(self.steps)}
        plain, recorded = [], []
        for m, (_, names) in enumerate(self.steps):
            args = ", ".join(map(arg, names))
            plain.append(f"    r{m} = f{m}({args})")
            recorded.append(f"    r{m} = call(f{m}, {args})")
        last = f"    return r{len(self.steps) - 1}"
        src = "\n".join(["def run(L, S):", *plain, last,
                         "def run_recorded(L, S, call):", *recorded, last])
        namespace = dict(fns)
        # generated from op names of the table, no user text
        exec(compile(src, "<lazyarray trace>", "exec"), namespace)  # noqa: S102
        return namespace["run"], namespace["run_recorded"]


# NumPy's functions for the ops that are not the table's ufuncs (clip: the ufunc np.clip
# calls for float bounds, without its Python wrapper; total: the reduction np.sum calls)
_NUMPY = {"where": np.where, "clip": np._core.umath.clip, "total": np.add.reduce}
_PROGRAMS: dict[int, Program] = {}
EXT_GET = fpstate._EXTOBJ.get if fpstate._EXTOBJ is not None else (lambda: None)
_EXT_SET = fpstate._EXTOBJ.set if fpstate._EXTOBJ is not None else None
_trace_kernel_run = stats.trace_kernel_run  # counts one run of a trace's kernel


MAX_LOWERED = 4096  # programs kept lowered (with their counts and kernels); beyond, start over


def _program(pid: int) -> Program:
    """The program `pid` lowers to, under the `math` option in effect."""
    prog = _PROGRAMS.get(pid)
    if prog is None or prog.math != _config_get().math:
        if len(_PROGRAMS) >= MAX_LOWERED:
            _PROGRAMS.clear()
        prog = _PROGRAMS[pid] = Program(pid)
    return prog


def _build(prog: Program, leaves, scalars: list) -> None:
    """The background job: compile the loop, then let the next run take it. Compiling a
    tiny-array chain's 100-step loop took 4.1 s here (0.5 s from the disk cache), so it never
    holds up the caller: until it is ready, the program keeps running on NumPy."""
    with config.options(math=prog.math):
        prog.kernel = _compile(prog, leaves, scalars)


def _build_sum(prog: Program, leaves, scalars: list) -> None:
    """`_build` for `force_sum`: the program's loop, then NumPy's pairwise sum of its values
    (one kernel each: the lazy tier's compiler makes two fusions of a value and its sum)."""
    with config.options(math=prog.math):
        loop = prog.kernel
        if loop is None or any(e.superseded for e in loop.entries):  # (see `_escalate`)
            loop = prog.kernel = _compile(prog, leaves, scalars)
        values = np.zeros(leaves[0].size)
        total = _compile_graph(lambda nodes, _: build.reduce(nodes[0], "add", (0,), False),
                               [values], [])
        prog.sum_kernel = None if loop is None or total is None else (loop, total)


def _compile(prog: Program, leaves, scalars: list):
    """The program's launcher (`_compile_graph`) over its leaves and scalars."""
    return _compile_graph(lambda nodes, boxes: _graph_of(prog, nodes, boxes), leaves, scalars)


def _compile_graph(make, leaves: list, scalars: list):
    """Compile a trace's graph with the lazy tier's compiler (lowering, the passes, the code
    generator, the kernel cache in memory and on disk: `runtime/kernels.py`), its kernels
    called directly: `launch(L, S, shape)` -> (its result, its count of places that may have
    raised a flag), L the leaves and S the scalars of a trace of this structure. `make(leaf
    nodes, scalar nodes)` builds the graph; each leaf and scalar is its own parameter (a
    stand-in: a later trace may hold other arrays where this one holds one twice), each scalar a
    0-d one, so the kernels read it as an argument (never a constant they are keyed on) and
    compile once for all values. A sum adds in NumPy's pairwise order (`Spec.pairwise`).
    None when the passes make anything but fusions (a fusion of several results: of
    shaped intermediates only), or the code generator declines one."""
    n = max(leaves[0].size, 2)  # (planned for one element, the loop would have rank 0;
    copies = [np.zeros(n) for _ in leaves]  # its kernel serves every size)
    boxes = [np.array(s, np.float64) for s in scalars]
    root = make([leaf(c) for c in copies], [leaf(b) for b in boxes])
    module, args = lower([root])
    optimized = engine.optimize(module)
    where: dict[int, str] = {}  # instruction -> its value in the launcher
    values: dict[int, np.ndarray] = {}  # instruction -> a stand-in of its value (to plan)
    lines, namespace, entries, result = [], {"empty": np.empty}, [], None
    parts: dict[int, list] = {}  # a fusion of several results -> (name, stand-in) of each
    for i, ins in enumerate(optimized.instrs):
        if ins.opcode == "parameter":
            values[i] = args[ins.attr("index")]
            k = next(k for k, c in enumerate(copies + boxes) if c is values[i])
            where[i] = f"L[{k}]" if k < len(copies) else f"S[{k - len(copies)}]"
            continue
        if ins.opcode == "get-tuple-element" and ins.operands[0] in parts:
            where[i], values[i] = parts[ins.operands[0]][ins.attr("index")]
            continue
        if ins.opcode != "fusion":
            return None
        last = i == optimized.outputs[0] and len(optimized.outputs) == 1
        if i == len(optimized.instrs) - 1 and not last:
            return None
        call = _kernel_call(ins.value, [values[o] for o in ins.operands],
                            [where[o] for o in ins.operands], n, f"k{i}", namespace)
        if call is None:
            return None
        entries.append(call[2])
        if len(call[0]) > 1:  # several results (a long chain's cut): intermediates each
            if last or any(not r.shape for r in call[0]):
                return None
            outs = {}
            for j, r in enumerate(call[0]):
                namespace[f"d{i}_{j}"] = r.dtype
                lines.append(f"    r{i}_{j} = empty(L[0].size, d{i}_{j})")
                outs[f"out{j}"] = f"r{i}_{j}"
            parts[i] = [(f"r{i}_{j}", r) for j, r in enumerate(call[0])]
            lines.append(f"    fpe {'+=' if entries[1:] else '='} {call[1].format(**outs)}")
            continue
        values[i] = call[0][0]
        out, dtype = f"r{i}", f"d{i}"
        namespace[dtype] = values[i].dtype
        if last and values[i].shape:  # the trace's shaped value
            lines += [f"    out = empty(shape, {dtype})",
                      "    r = out if len(shape) == 1 else out.reshape(-1)"]
            out, result = "r", "out"
        elif last:  # a total: its one value
            lines.append(f"    {out} = empty(1, {dtype})")
            result = f"{out}[0]"
        elif values[i].shape:  # an intermediate, of this call's size (not the stand-ins')
            lines.append(f"    {out} = empty(L[0].size, {dtype})")
        else:  # (a sum read by a later kernel: its operand would be a 0-d array, not a float)
            return None
        lines.append(f"    fpe {'+=' if entries[1:] else '='} {call[1].format(out0=out)}")
        where[i] = out
    if result is None:
        return None
    src = "\n".join(["def launch(L, S, shape):", *lines, f"    return {result}, fpe"])
    # generated from the kernels' parameter names, no user text
    exec(compile(src, "<lazyarray trace launch>", "exec"), namespace)  # noqa: S102
    launcher = namespace["launch"]
    launcher.entries = entries  # (their dispatchers own the code it runs: `entry.kernel`)
    stats.bump("trace_compiles")
    return launcher


def _kernel_call(comp, operands: list, names: list[str], n: int, fn: str, namespace: dict):
    """(stand-ins of the fusion `comp`'s results, the launcher's call of its kernel, with
    `{out0}`, `{out1}`, ... for their names, its kernel cache entry), its compiled function put in
    `namespace` as `fn`; the operands are stand-ins of its operands' values, `names` theirs
    in the launcher. None when the code generator declines it or its launch is not one loop
    over the n elements of the trace's leaves. Its function is linked from its native image
    where it has one, else compiled (or loaded) by Numba."""
    launch = plan(comp, operands, flat=True, pairwise=True)
    entry = kernel_entry(comp, launch)[0]
    sized = next((names[j] for j, a in enumerate(operands) if a.shape == (n,)), None)
    if entry.source is None or launch.empty or launch.spec.kind not in ("loop", "reduce") \
            or launch.sizes != (n,) or sized is None:
        return None
    results, head, tail = kernel_args(comp, launch)
    reads = scalar_reads(comp, launch, operands)
    sources = load_sources(launch.arrays, operands)
    if reads is None or any(type(j) is not int for j in sources):
        return None
    first = [*head, *launch.arrays, *tail]
    exprs = []
    for name, value in zip(kernel_params(comp, launch.spec), first, strict=True):
        if name[:3] == "out" and name[3:].isdigit():
            exprs.append("{" + name + "}")
        elif name[0] == "a" and name[1:].isdigit():
            exprs.append(names[sources[int(name[1:])]])
        elif name == "n0":
            exprs.append(f"{sized}.size")  # (an operand of the loop's size)
        else:
            exprs.append(f"{fn}_c{len(exprs)}")
            namespace[exprs[-1]] = value
    scalar_at = len(head) + len(launch.arrays)
    for k, j, _ in reads:  # the scalars read off the 0-d parameters
        exprs[scalar_at + k] = names[j]
    args = [plain(v) for v in first]
    sig = compile_service.describe(args)
    linked = native_pair(entry, sig, 1)  # (its native image: no Numba in this process)
    # (the C function itself, as Numba's `compile` gives: no Python frame per launch)
    namespace[fn] = linked[1].fn if linked is not None else _compiled(entry, args, sig)
    return results, f"{fn}({', '.join(exprs)})", entry


def _compiled(entry, args: list, sig: tuple | None):
    """The serial function of `entry`'s kernel for `args`, compiled (or loaded) by Numba,
    its native image written for the next process."""
    import numba

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaWarning)
        serial = ensure_kernel(entry, counter="trace_disk_writes")[1]
        types = tuple(numba.typeof(a) for a in args)
        compiled = serial.compile(types)
    if sig is not None:
        write_native(entry, serial, 1, sig, types, types=True)
    return compiled


def force(tr: tuple) -> np.ndarray:
    """The value of the trace `tr` (a fresh array of the trace's shape), computed under the
    NumPy error state it was recorded in (which only NumPy's calls depend on: the kernel
    counts the places to recheck, and a non-zero count runs the program on NumPy under that
    state)."""
    prog = _program(tr[0])
    launch = prog.kernel
    if launch is not None:
        _trace_kernel_run()  # counts the run
        out, fpe = launch(tr[1], tr[2], tr[4])
        if not fpe:  # (a total: a NumPy float64 scalar, as np.sum and the ufuncs give)
            return out if prog.total < 0 else _F8.type(out)
        stats.bump("fp_rechecks")
        _escalate(prog, launch.entries, tr)
    else:
        _count_run(prog, tr)
    out = _under(tr[5], _run_numpy, prog, tr[1], tr[2][:tr[3]])
    return out if prog.total >= 0 or len(tr[4]) == 1 else out.reshape(tr[4])


def _escalate(prog: Program, entries: list, tr: tuple, total: bool = False) -> None:
    """A launch of `prog`'s kernels flagged: kernels with cheap floating-point checks give way
    to exact ones (`kernels.escalate`), built in the background at once, which then replace
    them (a flagged run meanwhile is re-run on NumPy): data holding NaN would otherwise be
    re-run at every launch."""
    if any([escalate(e, None) for e in entries]):
        if total:
            prog.sum_kernel = None  # (`_build_sum` builds on the loop's launcher when it has one)
        background.submit(_build_sum if total else _build, prog, tr[1], tr[2][:tr[3]])


def _count_run(prog: Program, tr: tuple) -> None:
    """One more run of `prog` on NumPy: at PROMOTE runs its kernel is built in the
    background (a short program instead stops starting traces after SHORT_RUNS runs)."""
    prog.runs += 1
    if len(prog.steps) < SHORT and prog.total < 0:  # (a total's loop saves a call, at least)
        if prog.runs == SHORT_RUNS:
            NO_START.update(prog.starts)
    elif prog.runs >= PROMOTE:
        prog.runs = -(1 << 62)  # built once (a failed build is not tried again)
        background.submit(_build, prog, tr[1], tr[2][:tr[3]])


def _under(ext, fn, *args):
    """`fn(*args)` under NumPy's error state `ext`."""
    if EXT_GET() is ext:  # (the usual case: no state to switch)
        return fn(*args)
    token = _EXT_SET(ext)
    try:
        return fn(*args)
    finally:
        fpstate._EXTOBJ.reset(token)


def force_sum(tr: tuple) -> tuple[np.ndarray, np.float64]:
    """The 1-D trace `tr`'s value and its `np.add.reduce` (what `np.sum` gives, bit for bit),
    from two kernels once they are compiled: the loop, then the pairwise sum of its values."""
    prog = _program(tr[0])
    kernels = prog.sum_kernel
    if kernels is not None:
        _trace_kernel_run()
        out, fpe = kernels[0](tr[1], tr[2], tr[4])
        if not fpe:
            total, fpe = kernels[1]((out,), (), None)
            if not fpe:  # no flag in the loop, none the sum could raise (it is finite)
                return out, _F8.type(total)
        stats.bump("fp_rechecks")  # a flag, or inf/NaN in the sum: NumPy's warnings, exactly
        _escalate(prog, kernels[0].entries + kernels[1].entries, tr, total=True)
    else:
        prog.sum_runs += 1
        if prog.sum_runs >= PROMOTE:  # (short programs too: the sum saves a NumPy call)
            prog.sum_runs = -(1 << 62)
            background.submit(_build_sum, prog, tr[1], tr[2][:tr[3]])
    return _under(tr[5], _run_numpy, prog, tr[1], tr[2][:tr[3]], True)


_ADD_REDUCE = np.add.reduce


def _run_numpy(prog: Program, leaves, scalars, total: bool = False):
    """NumPy's calls, with the "warn" categories raising; when one raises, the program again
    with each call recorded, and the warnings issued at the user's line. `total`: the result
    and its sum (np.add.reduce)."""
    _, warn, raising = fpstate._warn_state()
    if not warn:
        out = prog.run(leaves, scalars)
        return (out, _ADD_REDUCE(out)) if total else out
    token = fpstate._EXTOBJ.set(raising)
    try:
        out = prog.run(leaves, scalars)
        return (out, _ADD_REDUCE(out)) if total else out
    except FloatingPointError:
        pass
    finally:
        fpstate._EXTOBJ.reset(token)
    with fpstate.recording() as rec:
        out = prog.run_recorded(leaves, scalars, fpstate.call)
        if total:
            out = (out, fpstate.call(_ADD_REDUCE, out))
    fpstate.emit(rec)
    return out


def graph(tr: tuple):
    """The trace `tr` as the graph node the lazy tiers would have built (nothing computed):
    what `lazyarray.explain` plans for a pending trace, and what a large trace becomes when
    anything but its value is asked of it."""
    return _lift(tr)[0]


def _lift(tr: tuple):
    """`graph(tr)`, and per leaf of `tr` the array its buffer node holds (one node per
    distinct leaf: `where(x > 0.5, x * 2, ...)` reads one parameter, as the lazy tier's)."""

    pid, leaves, scalars, n_scalars, shape = tr[:5]
    prog = _program(pid)
    flat = leaves[0].size < TINY and prog.total < 0
    nodes: dict[int, object] = {}
    for x in leaves:
        if id(x) not in nodes:
            # (a tiny trace's leaves are flat, of its shape; a total's are 1-d; a large
            # one's are whole arrays, a tiny one among them too: `array._joinable`)
            nodes[id(x)] = leaf(x.reshape(shape) if flat else x)
    node = _graph_of(prog, [nodes[id(x)] for x in leaves], scalars[:n_scalars])
    return node, [nodes[id(x)]._host for x in leaves]


def _graph_of(prog: Program, leaves: list, scalars: list):
    """The graph node of `prog` over the nodes `leaves` and the `scalars` (Python floats, or
    0-d nodes: `_compile_graph`)."""
    values = {f"L{j}": node for j, node in enumerate(leaves)}
    values.update({f"S{k}": s for k, s in enumerate(scalars)})
    for m, (op, names) in enumerate(prog.steps):
        args = [values[n] for n in names]
        if op == "where":
            values[f"r{m}"] = build.select(*args, _F8)
        elif op == "total":
            values[f"r{m}"] = build.reduce(args[0], "add", (0,), False)
        elif type(op) is tuple and op[0] == "reduce":  # ("reduce", name, axes, keepdims)
            x = args[0]
            if op[1] == "add" and x.dtype == _BOOL:  # a count: the bools added as np.intp
                x = build.convert(x, DTYPES[3])
            values[f"r{m}"] = build.reduce(x, op[1], op[2], op[3])
        elif type(op) is tuple:
            values[f"r{m}"] = build.getitem(args[0], _view_key(op[1]))
        else:
            values[f"r{m}"] = build.elementwise(op, *args)
    return values[f"r{len(prog.steps) - 1}"]


# ---- large traces ------------------------------------------------------------------------
# The same recording on large computed float64 arrays (at least `eager_limit` elements, see
# array.py): there the cost to beat is not NumPy's call per operation but the lazy tier's
# Python walk per evaluation (building the graph, lowering, planning: 0.1 ms warm, 0.3-0.6 ms
# right after a kernel has streamed 160 MB through the caches). Reductions are recorded here
# (`array.record_reduce`): float64 sums and extrema, and of a comparison a count (np.sum, kind
# 3, np.intp), any and all (`_REDUCED`). Anything but the value asked of a large trace (an
# operation, a view or a reduction the tier does not record) turns it into the graph it stands
# for (`graph`), so the lazy tier fuses it with what follows. Its value is computed by the
# lazy tier too: the first time a structure is evaluated, on its graph; when that evaluation
# ran compiled on the trace's leaves, its optimized module is remembered per `_replay_key` and
# later evaluations replay it on the new leaves (the same kernels, their prepared launches,
# NumPy's warnings): no graph, no lowering, no plan.


class Replay:
    """A remembered evaluation of a large trace: the optimized module, the leaf each of its
    arguments is, and the options and report of the evaluation it was taken from."""

    __slots__ = ("module", "operands", "opts", "report")

    def __init__(self, module, operands: tuple, opts, report):
        self.module, self.operands, self.opts, self.report = module, operands, opts, report


# _replay_key -> its replay (None: not replayable), least recently used first. A loop over
# pairs of columns (`np.sum(d[:, i] * d[:, j])`) makes one structure per pair, each met once
# a pass: the bound is above such a loop's (a covariance of 64 columns: 2,080), and the
# eviction drops the oldest, not all (a cleared table made each pass over more than the
# bound evaluate every pair afresh). About 6 KB an entry (its modules).
_REPLAYS: OrderedDict[tuple, Replay | None] = OrderedDict()
_ABSENT = object()
MAX_REPLAYS = 4096


def _replay_key(tr: tuple) -> tuple:
    """The structure, the scalars, the leaves' shapes (a view or a sum hides them) and which
    leaves are one array (`x * x` is one parameter, `x * y` two); with the scalars' signs
    when one is a zero (0.0 == -0.0, but x * -0.0 is not x * 0.0)."""
    scalars, leaves = tr[2][:tr[3]], tr[1]
    key = (tr[0], *scalars, *map(_SHAPE, leaves))  # (map: no comprehension frames, cheaper
    if len(leaves) > 1:  # with the caches cold)
        ids = list(map(id, leaves))
        key = (*key, *map(ids.index, ids))
    return key if 0.0 not in scalars else (*key, *[math.copysign(1.0, s) for s in scalars])


_SHAPE = operator.attrgetter("shape")


def force_large(tr: tuple, attach) -> None:
    """Compute the large trace `tr` on the lazy tier: by replaying the remembered module of
    an earlier evaluation, or on its graph (remembering the module). `attach(node)` receives
    the node that holds the value before anything can raise (a warning turned into an error
    leaves the value computed, as on the lazy tier)."""
    if _replay is None:
        _bind_engine()
    key = _replay_key(tr)
    r = _REPLAYS.get(key)
    if r is not None and ((opts := _config_get()) is r.opts or opts == r.opts) \
            and EXT_GET() is tr[5] and _TRACING_GET() is None:
        try:
            _REPLAYS.move_to_end(key)
        except KeyError:  # (another thread's evaluation evicted it meanwhile)
            pass
        leaves = tr[1]
        _replay(r.module, [leaves[j] for j in r.operands], r.report, attach)
    else:
        _evaluate_large(tr, attach)


def _bind_engine() -> None:
    """The engine's functions a replay calls, bound once (the engine imports this module:
    an import inside `force_large` cost each call a trip through the import machinery)."""
    global _replay, _TRACING_GET

    _replay, _TRACING_GET = engine.replay, engine.TRACING.get


_replay = _TRACING_GET = None


def _evaluate_large(tr: tuple, attach) -> None:
    """`force_large` on the trace's graph; the evaluation is remembered when it qualifies."""

    node, values = _lift(tr)
    attach(node)
    key = _replay_key(tr)
    opts = config.get()
    known = _REPLAYS.get(key, _ABSENT)  # (None: not replayable; other options: again)
    capture = (known is _ABSENT or known is not None and known.opts != opts) \
        and EXT_GET() is tr[5] and not debug.active()
    if capture:
        module, args = lower([node])
        optimized = engine.optimize(module)
    engine.materialize([node])
    if capture:
        report = engine.last_report()
        ok = (report is not None and report.after is optimized and not report.interpreted
              and config.get() is opts and all(v is x for v, x in zip(values, tr[1])))
        # (a tiny trace computed here, under a lower eager_threshold, has flat leaves that
        # its graph reshaped: not replayed)
        if ok:
            index = {id(v): j for j, v in enumerate(values)}
            operands = tuple(index.get(id(a)) for a in args)
            ok = None not in operands
        if len(_REPLAYS) >= MAX_REPLAYS:
            _REPLAYS.popitem(last=False)
        _REPLAYS[key] = Replay(optimized, operands, opts, engine.Report(
            report.before, optimized, planned=False)) if ok else None  # (its modules only)
