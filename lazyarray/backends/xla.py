"""XLA backend through JAX: each evaluation is one XLA program, buffers resident on the device.

`options(backend="xla")` (or ``LAZYARRAY_BACKEND=xla``) lowers every evaluation's optimized
module (`simplify` and `dce` only: XLA fuses by itself) to one `jax.jit`-compiled function
(`xla_lower.build`) and runs it on JAX's default device (a TPU, a GPU, or the host CPU). JAX
is imported with this module, which `backends.get("xla")` loads on first use, and runs with
64-bit types enabled (`jax_enable_x64`), so float64 stays float64 and int64 stays int64.

- Residency: a computed buffer stays a `jax.Array` in its node (`Node.realize_device(...,
  "xla")`); a NumPy input is uploaded once at its first use and the device copy kept in the
  node (`device_leaf`); a value reaches the host only when it is read (`node.value`, through
  `graph.node.FETCH["xla"]`). Every crossing is counted in `cache_info()`
  (`xla_to_device`/`xla_to_device_bytes`, `xla_to_host`/`xla_to_host_bytes`).
- Compiles: the program of a module structure, with constants masked (they are arguments),
  is compiled once (`xla_compiles`) and kept in `_cache`; a loop that changes a scalar or
  feeds new arrays of the same shapes compiles nothing. A new shape is a new structure and
  compiles (XLA's programs are shape-specialized), except that a family of modules that
  meets a third length of its leading axis runs in size buckets (`xla_buckets`: one program
  per bucket of lengths; see docs/xla.md).
- float64 matrix products run on the int8 matrix unit where float64 is emulated (a TPU:
  `xla_f64dot`); `options(xla_float64="float32")` computes float64 arrays in float32.
- Fallbacks: what XLA cannot compute as NumPy does runs on the host inside the program
  (`jax.pure_callback`: `xla_fallbacks`, `host_fallbacks`); value-dependent NumPy errors
  rerun the module on the reference interpreter, which raises them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import sys
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import jax
import numpy as np

from lazyarray import config, stats
from lazyarray.backends import Backend
from lazyarray.backends.xla_buckets import FAMILY_ROWS, bucketed, padded_to
from lazyarray.backends.xla_lower import build, host_module, host_only, positions, structure
from lazyarray.graph import node as graph_node
from lazyarray.ir.hlo import Module
from lazyarray.ir.interpret import interpret
from lazyarray.passes import dce, simplify
from lazyarray.runtime import diskcache, threads
from lazyarray.runtime.kernels import KernelRecord, Trace

jax.config.update("jax_enable_x64", True)
if importlib.util.find_spec("numba") is None:  # a machine with JAX and no Numba (a TPU
    threads.thread_controls = lambda: None  # host): the host's copies are NumPy's own

# programs that compiled faster than this are not written to disk: writing and looking an
# entry up cost about 57 ms a program on JAX's CPU client (73 ms to compile one); a TPU's
# compiles take longer
PERSIST_MIN_COMPILE_S = 0.1


def _persistent_cache() -> None:
    """JAX's compilation cache on disk, beside lazyarray's kernels (`<cache>/xla`): a new
    process loads the programs an earlier one compiled. A cache the user configured for JAX
    stays theirs."""
    if jax.config.jax_compilation_cache_dir or os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    jax.config.update("jax_compilation_cache_dir", os.path.join(diskcache.base_dir(), "xla"))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", PERSIST_MIN_COMPILE_S)


_persistent_cache()

NAME = "xla"
# XLA on CPU and TPU computes with subnormal floats flushed to zero. "check" (default): an
# evaluation whose float inputs hold a subnormal runs on the host interpreter (NumPy's
# values); "strict": also one where + - * / gave zero for a subnormal result (a check per
# such op, and each evaluation waits for it); "flush": XLA's values.
SUBNORMALS = os.environ.get("LAZYARRAY_XLA_SUBNORMALS", "check")
PASSES = (simplify, dce)  # XLA fuses, picks layouts and calls its own matmul
MAX_PROGRAMS = 512  # compiled programs kept (least recently used beyond this are dropped)
DONATE = os.environ.get("LAZYARRAY_XLA_DONATE", "1") != "0"  # dead versions' buffers to XLA
# size buckets (xla_buckets): "1" for lengths that vary, "always" from a family's first
# length (the differential suite runs so), "0" never
BUCKETS = os.environ.get("LAZYARRAY_XLA_BUCKETS", "1")


# ---- transfers -----------------------------------------------------------------------------

@dataclass
class RunInfo:
    """What one evaluation on XLA did (its `explain()` report lists it)."""

    device: str = ""
    key: str = ""
    status: str = ""  # "hit": compiled before; "miss": compiled now
    compile_s: float = 0.0
    fallbacks: list = field(default_factory=list)  # instructions run on the host
    transfers: list = field(default_factory=list)  # "to device f64[1000] 8000 bytes", ...
    donated: list = field(default_factory=list)  # arguments whose buffers took results
    rerun: str = ""  # why the module ran on the host interpreter after all
    bucket: tuple | None = None  # (rows in use, the bucket's rows) of a padded program
    narrowed: bool = False  # float64 computed in float32 (options(xla_float64="float32"))

    def __str__(self) -> str:
        lines = [f"xla program {self.key} on {self.device}: "
                 + ("compiled before" if self.status == "hit" else
                    f"compiled now in {self.compile_s * 1e3:.1f} ms")]
        if self.narrowed:
            lines.append("  float64 computed in float32 (xla_float64='float32')")
        if self.bucket is not None:
            lines.append(f"  {self.bucket[0]} rows in a program built for a size bucket of "
                         f"{self.bucket[1]} (lengths vary)")
        if self.fallbacks:
            lines.append("  on the host (counted fallbacks): " + ", ".join(self.fallbacks))
        lines += [f"  transfer {t}" for t in self.transfers] or ["  no transfers"]
        lines += [f"  donated {t} (written in place)" for t in self.donated]
        if self.status == "host":
            lines[0] = f"the module runs on the host interpreter (device {self.device})"
        if self.rerun:
            lines.append(f"  rerun on the host interpreter: {self.rerun}")
        return "\n".join(lines)


_uploads: list[str] = []  # transfers since the last run (`lower` uploads leaves first)
_last: list[RunInfo | None] = [None]
# (compiled program, arguments, constants) of the last run, kept only when a tool asks
# (`tools/xla_tpu` times the compiled program alone: the device time without dispatch)
KEEP_LAST_CALL = False
last_call: list[tuple | None] = [None]


def _describe(shape, dtype, nbytes: int, rows: int | None = None) -> str:
    """"float64[1000] 8000 bytes"; with `rows` (the rows in use of a size bucket's array):
    "float64[1000] in a bucket of 1024 rows, 8192 bytes"."""
    name = np.dtype(dtype).name
    if rows is None or not shape or rows == shape[0]:
        return f"{name}{list(shape)} {nbytes} bytes"
    return f"{name}{[rows, *shape[1:]]} in a bucket of {shape[0]} rows, {nbytes} bytes"


# Device arrays holding a subnormal float, by id (weakly): only uploads can hold one. A
# program XLA runs flushes every arithmetic result to zero (its host fallbacks' results too:
# they cross into XLA flushed), so when none of its inputs holds a subnormal none of its
# outputs does; an upload is checked on the host as it goes up. An evaluation whose inputs
# are all clean then needs no check on the device and no wait.
_subnormal_arrays: dict[int, weakref.ref] = {}


def to_device(host: np.ndarray, rows: int | None = None):
    """The same values in the default device's memory (a counted transfer; `rows`: those in
    use, when `host` is padded to a size bucket's)."""
    host = np.asarray(host)
    if host.nbytes:
        stats.bump("xla_to_device")
        stats.bump("xla_to_device_bytes", host.nbytes)
        _uploads.append("to device " + _describe(host.shape, host.dtype, host.nbytes, rows))
    arr = jax.device_put(host)
    if SUBNORMALS != "flush" and host.dtype.kind in "fc" and _host_subnormal(host):
        _mark_subnormal(arr)
    return arr


def _mark_subnormal(arr) -> None:
    key = id(arr)
    _subnormal_arrays[key] = weakref.ref(arr, lambda _, k=key: _subnormal_arrays.pop(k, None))


def holds_subnormal(x) -> bool:
    """Does device array `x` (or a host value) hold a subnormal float?"""
    if isinstance(x, jax.Array):
        ref = _subnormal_arrays.get(id(x))
        return ref is not None and ref() is x
    x = np.asarray(x)
    return x.dtype.kind in "fc" and _host_subnormal(x)


def to_host(array, rows: int | None = None) -> np.ndarray:
    """The host copy of a device array (a counted transfer), a NumPy array of its own
    (`rows`: those in use of a size bucket's array, for the report)."""
    out = np.array(array, copy=True)
    if out.nbytes:
        stats.bump("xla_to_host")
        stats.bump("xla_to_host_bytes", out.nbytes)
        last = _last[0]
        if last is not None:
            last.transfers.append("to host " + _describe(out.shape, out.dtype, out.nbytes,
                                                         rows))
    return out


def _fetch(node) -> np.ndarray:
    dev = node.device
    out = to_host(dev) if np.shape(dev) == node.shape else \
        to_host(dev, node.shape[0])[:node.shape[0]]  # (a size bucket's rows)
    # (float64 computed in float32 under xla_float64: widened as it is read)
    return out if out.dtype == node.dtype else out.astype(node.dtype)


graph_node.FETCH[NAME] = _fetch


class Upload:
    """A buffer node to upload when the program that reads it is known (`device_leaf`): its
    rows padded to a size bucket's when the program is bucketed (`_uploaded`)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


def device_leaf(node):
    """A buffer node's device array when resident, else an `Upload` of it, made when the
    evaluation runs and kept in the node while it lives (a buffer another backend holds is
    read through the host, not kept)."""
    dev = node.device
    if dev is not None and node.holder == NAME:
        return dev
    return Upload(node)


def _uploaded(args: list, params: dict) -> list:
    """`args` with every `Upload` made: its host value, padded with zero rows to its
    parameter's shape (`params`, by argument index) when a size bucket's is longer, in the
    parameter's dtype (float32 for float64 under ``xla_float64``)."""
    out = list(args)
    for k, a in enumerate(args):
        if type(a) is Upload:
            node, host, param = a.node, a.node.value, params[k]
            if param.dtype != host.dtype:
                host = host.astype(param.dtype)
            want = param.shape
            if want != host.shape and host.ndim and want[0] > host.shape[0]:
                rows = np.zeros(want, host.dtype)
                rows[:host.shape[0]] = host
                host = rows
            out[k] = to_device(host, node.shape[0] if host.shape != node.shape else None)
            if node.device is None:
                node.device, node.holder = out[k], NAME
    return out


def _host_args(module: Module, args: list) -> list:
    """The NumPy values of `args` at the module's parameter shapes (nothing uploaded)."""
    params = _params(module)
    out = []
    for k, a in enumerate(args):
        h = a.node.value if type(a) is Upload else to_host(a) if is_device_array(a) \
            else np.asarray(a)
        want, dtype = params[k].shape, params[k].dtype
        h = h if h.shape == want else h[:want[0]]
        out.append(h if h.dtype == dtype else h.astype(dtype))
    return out


def _params(module: Module) -> dict:
    """The module's parameter instructions by argument index."""
    return {i.attr("index"): i for i in module.instrs if i.opcode == "parameter"}


_NARROW = {np.dtype(np.float64): np.dtype(np.float32),
           np.dtype(np.complex128): np.dtype(np.complex64)}


def _narrowed(module: Module) -> Module:
    """`module` with float64 computed in float32 and complex128 in complex64
    (``options(xla_float64="float32")``)."""
    return dataclasses.replace(module, key=None, instrs=tuple(
        dataclasses.replace(i, dtype=_NARROW[i.dtype]) if i.dtype in _NARROW else i
        for i in module.instrs))


def peek_leaf(node):
    """For `explain`: the device array if resident, else the host array (nothing moves)."""
    return node.device if node.device is not None and node.holder == NAME else node.value


def is_device_array(x) -> bool:
    return isinstance(x, jax.Array)


# ---- compiled programs ---------------------------------------------------------------------

@dataclass
class Program:
    key: str
    lowered: object  # xla_lower.Lowered
    donated: tuple = ()  # argument indices whose buffers XLA may write its results into
    compiled: object = None  # jax's Compiled for the argument signature (its HLO: tools)
    jitted: object = None  # the `jax.jit` function it was compiled from: calls go through it
    compile_s: float = 0.0

    def call(self, args: list, consts: list, pos: np.ndarray) -> tuple:
        """(outputs, check): the compiled program on `args` (donated ones apart), called
        through `jax.jit`'s dispatch, which finds the executable compiled ahead of time
        (`_compile`; no second compile: `tests/test_xla_backend.py::
        test_compiles_counted_are_the_compiles_jax_does`)."""
        d = set(self.donated)
        return self.jitted([args[k] for k in self.donated],
                           [a for k, a in enumerate(args) if k not in d], consts, pos)


_cache: OrderedDict[tuple, Program] = OrderedDict()
_structures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Module -> structure
_lock = threading.Lock()


def cache_clear() -> None:
    """Forget every compiled program (`lazyarray.cache_clear`)."""
    with _lock:
        _cache.clear()
        _lengths.clear()
        _decided.clear()


def _structure(module: Module) -> tuple:
    s = _structures.get(module)
    if s is None:
        s = _structures[module] = structure(module)
    return s


def _program(module: Module, donated: tuple = (), padded: frozenset = frozenset(),
             reshaped: tuple = ()) -> tuple[Program, bool]:
    """The program of `module` (`padded`: its size bucket's rows, `xla_buckets`; `reshaped`:
    (index, shape) of device arguments whose rows differ from their parameter's)."""
    k = (_structure(module), SUBNORMALS, donated, padded, reshaped)
    with _lock:
        p = _cache.get(k)
        if p is not None:
            _cache.move_to_end(k)
            return p, True
    p = Program(hashlib.sha256(repr(k).encode()).hexdigest()[:16],
                build(module, SUBNORMALS, padded), donated)
    with _lock:
        p = _cache.setdefault(k, p)
        while len(_cache) > MAX_PROGRAMS:
            _cache.popitem(last=False)
    return p, False


# family -> the lengths it has met (at most EXACT_LENGTHS), or None once they vary more
_lengths: OrderedDict[tuple, tuple | None] = OrderedDict()
EXACT_LENGTHS = 2  # a family runs exact programs for this many lengths, then buckets


def _lengths_vary(b) -> bool:
    """Has the family of `b`'s module (its structure with the bucketed length masked) met
    more than `EXACT_LENGTHS` lengths? Until then it runs exact programs, as `jax.jit`
    would (one shape, or two unrelated arrays through the same small program, pay no
    padding); from its third length on, the buckets' programs."""
    masked = Module(tuple(padded_to(ins, FAMILY_ROWS) if k in b.padded else ins
                          for k, ins in enumerate(b.module.instrs)), b.module.outputs)
    family = structure(masked)
    with _lock:
        seen = _lengths.get(family, ())
        if seen is not None and b.n not in seen:
            seen = (*seen, b.n) if len(seen) < EXACT_LENGTHS else None
        _lengths[family] = seen
        _lengths.move_to_end(family)
        while len(_lengths) > 4 * MAX_PROGRAMS:
            _lengths.popitem(last=False)
    return seen is None


# exact structure -> does a module of it run in its bucket? Decided at its first evaluation
# (a structure of a length met before its family varied keeps its exact program)
_decided: OrderedDict[tuple, bool] = OrderedDict()


def _in_buckets(module: Module) -> bool:
    """Does `module` run in a size bucket's program? (`bucketed` and `_lengths_vary` once
    per exact structure: repeated evaluations pay a dictionary lookup.)"""
    key = _structure(module)
    with _lock:
        found = _decided.get(key)
    if found is None:
        b = bucketed(module, host_only)
        found = b is not None and (BUCKETS == "always" or _lengths_vary(b))
        with _lock:
            _decided[key] = found
            while len(_decided) > 4 * MAX_PROGRAMS:
                _decided.popitem(last=False)
    return found


def _arrives_padded(module: Module, args: list) -> bool:
    """Does an argument come padded (a bucket's result, or an upload in one)? A program of
    its bucket reads it as it is; an exact one would first cut every such argument to its
    rows (measured on a TPU: +21 % for a float64 elementwise program at 1e7)."""
    params = None
    for k, a in enumerate(args):
        if is_device_array(a) and a.ndim:
            params = params or _params(module)
            if a.shape[0] != (params[k].shape or (None,))[0]:
                return True
    return False


def _donatable(module: Module, args: list, free: frozenset) -> tuple:
    """The arguments among `free` (nothing else observes them) that an update writes into
    (donated, XLA updates them in place instead of copying them first) and whose buffers can
    hold an output: a device array of an output's shape and dtype, at most one per output
    (XLA warns about a donated buffer it cannot use)."""
    instrs = module.instrs
    bases = set()
    for ins in instrs:
        if ins.opcode == "update":
            b = instrs[ins.operands[0]]
            while b.opcode == "update":
                b = instrs[b.operands[0]]
            if b.opcode == "parameter":
                bases.add(b.attr("index"))
    want: dict = {}
    for o in module.outputs:
        i = instrs[o]
        want[(i.shape, i.dtype)] = want.get((i.shape, i.dtype), 0) + 1
    out = []
    for k in sorted(free & bases):
        a = args[k]
        key = (tuple(np.shape(a)), np.dtype(a.dtype)) if is_device_array(a) else None
        if want.get(key):
            want[key] -= 1
            out.append(k)
    return tuple(out)


def _compile(p: Program, args: list, consts: list, pos: np.ndarray) -> None:
    t0 = time.perf_counter()
    spec = ([jax.ShapeDtypeStruct(np.shape(a), a.dtype) for a in args],
            [jax.ShapeDtypeStruct(np.shape(c), np.asarray(c).dtype) for c in consts],
            None if pos is None else jax.ShapeDtypeStruct(pos.shape, pos.dtype))
    if p.donated and jax.eval_shape(p.lowered.fn, *spec)[1] is not None:
        p.donated = ()  # a failed check reruns the module on the host from its arguments
    d, fn = set(p.donated), p.lowered.fn

    def given_kept(given: list, kept: list, cs: list, ps):
        it_given, it_kept = iter(given), iter(kept)
        return fn([next(it_given) if k in d else next(it_kept) for k in range(len(args))],
                  cs, ps)

    split = ([s for k, s in enumerate(spec[0]) if k in d],
             [s for k, s in enumerate(spec[0]) if k not in d], spec[1], spec[2])
    p.jitted = jax.jit(given_kept, donate_argnums=(0,))
    p.compiled = p.jitted.lower(*split).compile()
    p.compile_s = time.perf_counter() - t0
    stats.bump("xla_compiles")
    stats.bump("compiles")


def device_name() -> str:
    d = jax.devices()[0]
    return f"{d.platform}:{d.id} ({d.device_kind})"


def execute(module: Module, args: list, trace: Trace | None = None, dry: bool = False,
            free: frozenset = frozenset()) -> list:
    """Run an optimized module on device arrays `args`; returns one `jax.Array` per output.
    With `dry` (explain), only looks the program up and records what would run. `free`:
    indices of arguments nothing else observes, whose buffers XLA may write results into
    (donation: an update of a dead version writes in place)."""
    if host_module(module):  # subnormal results are its point: NumPy's, on the host
        info = RunInfo(device_name(), "-", "host", fallbacks=["the whole module"])
        info.transfers, _uploads[:] = list(_uploads), []
        if trace is not None:
            trace.kernels.append(KernelRecord(f"{NAME}.0", NAME, "-", "interpreted", info,
                                              module))
        if dry:
            return [None for _ in module.outputs]
        _last[0] = info
        return _on_host(module, args)
    b = None
    if BUCKETS != "0" and (_in_buckets(module) or _arrives_padded(module, args)):
        b = bucketed(module, host_only)
    run = module if b is None else b.module  # (its leading extents the bucket's)
    narrow = config.get().xla_float64 == "float32" and any(
        i.dtype in _NARROW for i in module.instrs)
    if narrow:
        run = _narrowed(run)
    params = _params(run)
    if not dry:
        args = _uploaded(args, params)
    reshaped = tuple((k, a.shape, a.dtype.str) for k, a in enumerate(args)
                     if is_device_array(a) and (a.shape != params[k].shape
                                                or a.dtype != params[k].dtype))
    p, hit = _program(run, _donatable(run, args, free) if free and DONATE else (),
                      frozenset() if b is None else b.padded, reshaped)
    consts = [np.asarray(i.value, dtype=i.dtype) for i in run.instrs if i.opcode == "constant"]
    pos = positions(module)
    if b is not None:  # the rows in use, last
        pos = np.append(pos, np.int64(b.n))
    if not len(pos):
        pos = None  # (no argument at all: the program's parameters are the user's arrays)
    subnormal = SUBNORMALS != "flush" and any(map(holds_subnormal, [*args, *consts]))
    info = RunInfo(device_name(), p.key, "hit" if hit and p.compiled is not None else "miss",
                   fallbacks=list(p.lowered.fallbacks), narrowed=narrow,
                   bucket=None if b is None else (b.n, b.size))
    info.transfers, _uploads[:] = list(_uploads), []
    if trace is not None:  # (the report prints the run as it is when printed: `source`)
        trace.kernels.append(KernelRecord(f"{NAME}.0", NAME, p.key, info.status, info, module))
    if dry:
        return [None for _ in module.outputs]
    if subnormal:  # NumPy's values, from its own loops
        _last[0] = info
        info.rerun = "a float input holds a subnormal (XLA would read it as zero)"
        return _on_host(module, args)
    if p.compiled is None:
        _compile(p, args, consts, pos)
        info.compile_s = p.compile_s
    stats.bump("xla_runs")
    stats.bump("kernels_launched")
    if b is not None:
        stats.bump("xla_bucketed")
    if p.lowered.fallbacks:
        stats.bump("host_fallbacks", len(p.lowered.fallbacks))
    if p.donated:
        stats.bump("buffers_donated", len(p.donated))
        params = _params(module)
        info.donated = [_describe(np.shape(args[k]), args[k].dtype, args[k].nbytes,
                                  (params[k].shape or (None,))[0]) for k in p.donated]
    elif KEEP_LAST_CALL:
        last_call[0] = (p, list(args), consts, pos)
    outs, bad = p.call(list(args), consts, pos)
    _last[0] = info
    if bad is not None and bool(bad):  # NumPy's values or NumPy's error, from its own call
        info.rerun = ("a value-dependent check failed (an index out of bounds, a negative "
                      "integer power, a subnormal result)")
        return _on_host(module, args)
    return list(outs)


def _on_host(module: Module, args: list) -> list:
    """`module` on the reference interpreter: its arguments fetched, its results uploaded
    (counted transfers and a counted fallback)."""
    stats.bump("fallbacks")
    stats.bump("xla_fallbacks")
    host = _host_args(module, args)
    with np.errstate(all="ignore"):
        outs = interpret(module, host)
    return [to_device(np.asarray(r, order="C").astype(module.instrs[o].dtype, copy=False)
                      .reshape(module.instrs[o].shape))
            for r, o in zip(outs, module.outputs, strict=True)]


def _host_subnormal(c: np.ndarray) -> bool:
    if c.dtype.kind == "c":
        return _host_subnormal(c.real) or _host_subnormal(c.imag)
    return bool(np.any((c != 0) & (np.abs(c) < np.finfo(c.dtype).tiny)))


def last_run() -> RunInfo | None:
    """What the last evaluation on XLA did, with the transfers since (for explain)."""
    return _last[0]


BACKEND = Backend(NAME, PASSES, execute, leaf=device_leaf, to_device=to_device, donates=True,
                  device_results=True, module=sys.modules[__name__])

__all__ = ["BACKEND", "cache_clear", "device_leaf", "execute", "last_run", "peek_leaf",
           "to_device", "to_host"]
