"""Numba CUDA backend: run an optimized module on the GPU, buffers resident there.

Every buffer is a flat C-ordered device array. A value inside an evaluation is a `DView`:
a flat device buffer plus an element offset, a shape and element strides, so the movement
ops (slice, transpose, broadcast, reshape) cost nothing: NumPy computes them on a *proxy*, a
host array over calloc'ed (never touched) pages laid out like the device buffer, and the
kernel receives the offset and strides as arguments.

Data crosses the bus only when it must, and every crossing is counted in `cache_info()`
(`h2d_transfers`, `h2d_bytes`, `d2h_transfers`, `d2h_bytes`): a NumPy input uploaded once
(then resident: `node.device`), a value observed on the host (`node.value`), and the host
fallbacks (`host_fallbacks`): a fusion the CUDA code generator declines, a library call
without a device implementation (sort, FFT, LAPACK, batched or complex matmul).

Kernels are cached in memory by (masked HLO text, Spec, block size, scalar placement) and on
disk as generated source files compiled with `cuda.jit(cache=True)` (Numba keeps the compiled
code beside them), in the same versioned directory as the CPU kernels.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from numba import config as _numba_config
from numba import cuda
from numpy.lib.stride_tricks import as_strided

from lazyarray import stats
from lazyarray.backends import Backend, cuda_scalar
from lazyarray.backends.numba_cpu import import_source
from lazyarray.codegen import cuda as cg
from lazyarray.graph import node as graph_node
from lazyarray.ir.hlo import MOVEMENT, Module, split_update
from lazyarray.ir.interpret import apply_movement, interpret
from lazyarray.ops import library
from lazyarray.ir.text import print_computation
from lazyarray.ops.table import reduce_init
from lazyarray.passes import DEVICE_PIPELINE
from lazyarray.runtime import diskcache
from lazyarray.runtime.executor import KernelRecord, Trace
from lazyarray.codegen.layout import load_points, plan

SIMULATOR = bool(_numba_config.ENABLE_CUDASIM)
# threads per block (a power of two: the shared-memory trees halve it). The simulator runs
# every thread as a Python thread, so it gets small blocks and few of them.
BLOCK = 4 if SIMULATOR else 256
MAX_BLOCKS = 2 if SIMULATOR else 4096
SPLIT_TARGET = 4 if SIMULATOR else 1024  # blocks a reduction aims to spread over
COLUMNS_MIN = 8 if SIMULATOR else 4096  # kept elements from which column sums run per thread
log = logging.getLogger("lazyarray")
# tests: a kernel that fails to build or run raises instead of falling back to the host
STRICT = os.environ.get("LAZYARRAY_CUDA_STRICT") == "1"
PREFIX = diskcache.PREFIX + "cuda_"  # counted, evicted and cleared with the CPU kernels


def _simulator_shared_arrays_thread_safe() -> None:
    """The simulator allocates a block's shared array on the first thread that asks, with a
    check-then-insert that two threads can interleave (each then holds its own array, and the
    tree reduction reads garbage). Same keying (caller's file and line), under a lock."""
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return original(self, shape, dtype, alignment)
        if not isinstance(dtype, np.dtype):
            dtype = numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    original = kernelapi.FakeCUDAShared.array
    kernelapi.FakeCUDAShared.array = array


if SIMULATOR:
    _simulator_shared_arrays_thread_safe()


# ---- transfers -----------------------------------------------------------------------------

def to_device(host: np.ndarray):
    """A flat device copy of a host array (a counted transfer)."""
    flat = np.ascontiguousarray(host).reshape(-1)
    if flat.nbytes:
        stats.bump("h2d_transfers")
        stats.bump("h2d_bytes", flat.nbytes)
    return cuda.to_device(flat)


def to_host(flat, shape, dtype) -> np.ndarray:
    """The host copy of a flat device array (a counted transfer)."""
    if math.prod(shape) == 0:
        return np.empty(shape, dtype)
    out = flat.copy_to_host()
    stats.bump("d2h_transfers")
    stats.bump("d2h_bytes", out.nbytes)
    return out.reshape(shape)


def _fetch(node) -> np.ndarray:
    return to_host(node.device, node.shape, node.dtype)


graph_node.FETCH["cuda"] = _fetch


def device_leaf(node):
    """A buffer node's device array: resident already, or uploaded now and kept."""
    if node.device is None:
        node.device = to_device(node.value)
    return node.device


def peek_leaf(node):
    """For `explain`: the device array if resident, else the host array (nothing moves)."""
    return node.device if node.device is not None else node.value


def empty(n: int, dtype) -> object:
    return cuda.device_array(max(n, 0), dtype)


# ---- device views --------------------------------------------------------------------------

@dataclass
class DView:
    base: object  # flat device array (or, for explain, a host array)
    offset: int
    shape: tuple
    strides: tuple  # in elements
    dtype: np.dtype
    fresh: bool = False  # allocated by this evaluation: may be donated to an update

    @classmethod
    def whole(cls, base, shape, dtype, fresh=False) -> DView:
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        return cls(base, 0, tuple(shape), tuple(reversed(strides)), np.dtype(dtype), fresh)

    @property
    def is_whole(self) -> bool:
        return self.offset == 0 and self == DView.whole(self.base, self.shape, self.dtype,
                                                        self.fresh) and \
            _size(self.base) == math.prod(self.shape)


def _size(base) -> int:
    return int(base.size) if hasattr(base, "size") else int(base.shape[0])


class _Proxies:
    """Host stand-ins with the device buffers' layouts (calloc'ed: untouched pages cost no
    memory), so NumPy computes views and the layout plan."""

    def __init__(self):
        # id(device buffer) -> (the buffer, kept alive so that its id is not reused; proxy)
        self._bases: dict[int, tuple[object, np.ndarray]] = {}

    def base(self, v: DView) -> np.ndarray:
        hit = self._bases.get(id(v.base))
        if hit is None:
            hit = self._bases[id(v.base)] = (v.base, np.zeros(_size(v.base), v.dtype))
        return hit[1]

    def of(self, v: DView) -> np.ndarray:
        b = self.base(v)
        item = v.dtype.itemsize
        return as_strided(b[v.offset:], v.shape, tuple(s * item for s in v.strides))

    def view_of(self, v: DView, proxy_view: np.ndarray) -> DView | None:
        """The DView laid out like `proxy_view`, a view of v's proxy (None: NumPy copied)."""
        b = self.base(v)
        item = v.dtype.itemsize
        lo = b.__array_interface__["data"][0]
        ptr = proxy_view.__array_interface__["data"][0]
        if not np.shares_memory(b, proxy_view) and proxy_view.size:
            return None
        return DView(v.base, (ptr - lo) // item, proxy_view.shape,
                     tuple(s // item for s in proxy_view.strides), v.dtype)


# ---- kernel cache and launch ---------------------------------------------------------------

@dataclass
class Entry:
    key: str
    source: str | None
    module: object = None
    reason: str = ""


MAX_KERNELS_IN_MEMORY = 2048  # least recently used entries beyond this are dropped
_cache: OrderedDict[tuple, Entry] = OrderedDict()
_lock = threading.Lock()


def cache_clear() -> None:
    with _lock:
        _cache.clear()


def _entry(k: tuple, make) -> tuple[Entry, bool]:
    with _lock:
        e = _cache.get(k)
        if e is not None:
            _cache.move_to_end(k)
    if e is not None:
        return e, True
    key = hashlib.sha256(f"cuda{cg.CUDA_CODEGEN_VERSION}\n{_helpers_hash()}\n{k}".encode()
                         ).hexdigest()[:24]
    try:
        e = Entry(key, make())
    except cg.Unsupported as why:
        e = Entry(key, None, reason=str(why))
    with _lock:
        e = _cache.setdefault(k, e)
        while len(_cache) > MAX_KERNELS_IN_MEMORY:
            _cache.popitem(last=False)
    return e, False


@functools.lru_cache(maxsize=1)
def _helpers_hash() -> str:
    """The device functions kernels call: Numba's cache does not see changes in them."""
    with open(cuda_scalar.__file__, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:8]


def _module(entry: Entry):
    """Import the kernel module (writing its source file first), once per process."""
    if entry.module is None:
        text = f"# lazyarray CUDA kernel {entry.key}\n" + cg.PRELUDE + entry.source
        name = PREFIX + entry.key
        folder = diskcache.kernel_folder(diskcache.cache_dir(), entry.key)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        entry.module = import_source(name, os.path.join(folder, name + ".py"), text)
        diskcache.evict_now_and_then(diskcache.cache_dir())
    return entry.module


def _grid(work: int, block: int = BLOCK) -> int:
    return max(1, min(MAX_BLOCKS, -(-work // block)))


def _launch(kernel, grid, block, args) -> None:
    before = len(getattr(kernel, "overloads", ()))
    kernel[grid, block](*args)
    if len(getattr(kernel, "overloads", ())) > before:
        stats.bump("compiles")
    stats.bump("kernels_launched")


def _fixed(name: str, source) -> object:
    """A fixed kernel (copy, fill, matmul) from the same cache."""
    entry, _ = _entry(("fixed", name), source)
    return _module(entry).kernel


# ---- movement, copies, updates -------------------------------------------------------------

def copy_into(dst: DView, src: DView | np.ndarray) -> None:
    """dst[...] = src on the device (src: a view of the same shape, or a host scalar)."""
    n = math.prod(dst.shape)
    if n == 0:
        return
    if isinstance(src, DView):
        kernel = _fixed(f"copy{len(dst.shape)}", lambda: cg.render_copy(len(dst.shape)))
        args = [dst.base, dst.offset, *dst.strides, src.base, src.offset, *src.strides,
                *dst.shape]
    else:
        kernel = _fixed(f"fill{len(dst.shape)}", lambda: cg.render_fill(len(dst.shape)))
        args = [dst.base, dst.offset, *dst.strides, dst.dtype.type(np.asarray(src).reshape(-1)[0]),
                *dst.shape]
    _launch(kernel, _grid(n), BLOCK, args)


def contiguous(v: DView) -> DView:
    """v itself when it is a whole C-ordered buffer, else a gathered copy (on the device)."""
    if v.is_whole:
        return v
    out = DView.whole(empty(math.prod(v.shape), v.dtype), v.shape, v.dtype, fresh=True)
    copy_into(out, v)
    return out


def _move(ins, v, proxies: _Proxies, dry: bool):
    if not isinstance(v, DView):  # a host constant
        return apply_movement(ins, v)
    out = proxies.view_of(v, apply_movement(ins, proxies.of(v)))
    if out is None:  # a reshape NumPy cannot express as a view: gather first
        v = v if dry else contiguous(v)
        if dry:
            v = DView.whole(v.base, v.shape, v.dtype)
        out = proxies.view_of(v, apply_movement(ins, proxies.of(v)))
    return out


def _host(v) -> np.ndarray:
    """A value on the host (a counted transfer for device data)."""
    if not isinstance(v, DView):
        return np.asarray(v)
    c = contiguous(v)
    return to_host(c.base, c.shape, c.dtype)


def _upload(x) -> DView:
    x = np.asarray(x)
    return DView.whole(to_device(x), x.shape, x.dtype, fresh=True)


# ---- fusions -------------------------------------------------------------------------------

def run_fusion(ins, operands: list, proxies: _Proxies, trace: Trace | None, dry: bool) -> list:
    comp: Module = ins.value
    host_ops = [proxies.of(v) if isinstance(v, DView) else np.asarray(v) for v in operands]
    source_of: dict[int, object] = {}  # load point -> its DView (or host value)
    for p in load_points(comp):
        _load_value(comp, p, operands, proxies, dry, source_of)
    seeded = {p: proxies.of(v) if isinstance(v, DView) else v for p, v in source_of.items()}
    launch = plan(comp, host_ops, seeded)
    spec = launch.spec
    scalar_points = [p for p, dims in spec.loads if dims is None]
    dev = tuple(isinstance(source_of[p], DView) for p in scalar_points)
    masked = print_computation(comp, masked=True)
    entry, hit = _entry(("fusion", masked, spec, BLOCK, dev),
                        lambda: cg.render(comp, spec, BLOCK, dev))
    if trace is not None:
        status = "interpreted" if entry.source is None or launch.empty else (
            "hit" if hit else "miss")
        trace.kernels.append(KernelRecord(f"fusion.{len(trace.kernels)}", ins.attr("kind"),
                                          entry.key, status, entry.source, comp,
                                          ins.attr("reason", "")))
    outs = [comp.instrs[o] for o in comp.outputs]
    if dry:
        return [DView.whole(np.empty(math.prod(o.shape), o.dtype), o.shape, o.dtype)
                for o in outs]
    if entry.source is None or launch.empty:  # declined, or nothing to iterate: the host
        stats.bump("fallbacks" if entry.source is None else "interpreter_runs")
        if entry.source is None:
            stats.bump("host_fallbacks")
        return [_upload(r) for r in interpret(comp, [_host(v) for v in operands])]
    stats.bump("hits" if hit else "misses")
    try:
        return _launch_fusion(entry, comp, launch, source_of, scalar_points, dev, proxies)
    except Exception as exc:  # never a wrong answer: the host runs it, with a warning
        if STRICT:
            raise
        log.warning("lazyarray: CUDA kernel %s failed (%s); running it on the host",
                    entry.key, exc)
        entry.source, entry.reason = None, str(exc)
        stats.bump("fallbacks")
        stats.bump("host_fallbacks")
        return [_upload(r) for r in interpret(comp, [_host(v) for v in operands])]


def _load_value(comp: Module, p: int, operands: list, proxies: _Proxies, dry: bool,
                memo: dict):
    """A load point's value: its view chain applied to a device view, step by step (a step
    NumPy cannot express as a view is gathered on the device first)."""
    if p not in memo:
        ins = comp.instrs[p]
        if ins.opcode == "parameter":
            memo[p] = operands[ins.attr("index")]
        elif ins.opcode == "constant":
            memo[p] = ins.value
        else:
            src = _load_value(comp, ins.operands[0], operands, proxies, dry, memo)
            memo[p] = _move(ins, src, proxies, dry)
    return memo[p]


def _launch_fusion(entry, comp, launch, source_of, scalar_points, dev, proxies):
    """Allocate the outputs on the device and launch the fusion's kernel(s)."""
    spec = launch.spec
    outs = [comp.instrs[o] for o in comp.outputs]
    module = _module(entry)
    sizes = launch.sizes
    results = [DView.whole(empty(math.prod(o.shape), o.dtype), o.shape, o.dtype, fresh=True)
               for o in outs]
    args = [r.base for r in results]
    load_args, k, s = [], 0, 0
    for p, dims in spec.loads:
        if dims is None:
            continue
        arr = launch.arrays[k]
        v = source_of[p]
        view = proxies.view_of(v, arr)
        load_args += [v.base, view.offset, *view.strides]
        k += 1
    for p, on_device in zip(scalar_points, dev, strict=True):
        if on_device:
            v = source_of[p]  # its first element is where the view starts
            load_args += [v.base, v.offset]
        else:
            load_args.append(launch.scalars[s])
        s += 1
    kept = [n for n, r in zip(sizes, spec.reduced, strict=True) if not r]
    if spec.kind == "loop":
        _launch(module.kernel, _grid(math.prod(sizes)), BLOCK, args + load_args + list(sizes))
    elif spec.kind == "scan":
        scan = next(i for i in comp.instrs if i.opcode == "scan")
        name = scan.attr("to_apply")
        init = reduce_init(name, cg.acc_dtype(name, scan.dtype))
        rows = math.prod(sizes[:-1])
        _launch(module.kernel, _grid(rows), BLOCK, args + load_args + list(sizes) + [init])
    elif spec.kind == "argreduce":
        rows = math.prod(sizes[:-1])
        _launch(module.kernel, max(1, min(MAX_BLOCKS, rows)), BLOCK,
                args + load_args + list(sizes))
    else:
        nkept = math.prod(kept)
        nred = math.prod(n for n, r in zip(sizes, spec.reduced, strict=True) if r)
        if spec.reduced and not spec.reduced[-1] and nkept >= COLUMNS_MIN:  # coalesced reads
            _launch(module.kernel_columns, _grid(nkept), BLOCK,
                    args + [empty(1, np.asarray(i).dtype) for i in _inits(comp)] + load_args
                    + list(sizes) + _inits(comp) + [1])
            return results
        nsplit = split_count(nkept, nred)
        inits = _inits(comp)
        parts = [empty(nsplit * nkept, np.asarray(i).dtype) for i in inits]
        _launch(module.kernel, max(1, min(MAX_BLOCKS, nkept * nsplit)), BLOCK,
                args + parts + load_args + list(sizes) + inits + [nsplit])
        scal = load_args[len(load_args) - _scalar_arg_count(dev):]
        _launch(module.kernel_combine, _grid(nkept), BLOCK, args + parts + scal + [nkept, nsplit])
    return results


def _inits(comp: Module) -> list:
    """Start values of a fusion's reductions, in their accumulator dtypes."""
    return [reduce_init(r.attr("to_apply"), cg.acc_dtype(r.attr("to_apply"), r.dtype))
            for r in comp.instrs if r.opcode == "reduce"]


def _scalar_arg_count(dev) -> int:
    return sum(2 if d else 1 for d in dev)


def split_count(nkept: int, nred: int) -> int:
    """Blocks per output element of a reduction: enough blocks in all to fill the GPU, and a
    count that depends only on the sizes (so sums are deterministic run to run)."""
    if nkept >= SPLIT_TARGET:
        return 1
    return max(1, min(-(-nred // (BLOCK * 8)), SPLIT_TARGET // max(nkept, 1)))


# ---- library calls -------------------------------------------------------------------------

def _vendor_matmul():
    try:
        import cupy
    except Exception:
        return None
    return cupy


def dot(ins, a: DView, b: DView) -> DView:
    """matmul on the device: CuPy's (cuBLAS) when installed, else the tiled kernel for 2-D
    real operands; anything else on the host (a counted fallback)."""
    if len(a.shape) == 2 and len(b.shape) == 2 and ins.dtype.kind in "biuf" and \
            a.dtype == b.dtype == ins.dtype:
        m, k = a.shape
        n = b.shape[1]
        a, b = contiguous(a), contiguous(b)
        cupy = _vendor_matmul()
        out = empty(m * n, ins.dtype)
        if cupy is not None and ins.dtype.kind == "f" and not SIMULATOR:
            ca = cupy.asarray(a.base).reshape(m, k)
            cb = cupy.asarray(b.base).reshape(k, n)
            cupy.matmul(ca, cb, out=cupy.asarray(out).reshape(m, n))
            stats.bump("kernels_launched")
        elif m and n:
            t = cg.MATMUL_TILE
            kernel = _fixed(f"matmul_{ins.dtype.name}", lambda: cg.render_matmul(ins.dtype))
            if k == 0:
                copy_into(DView.whole(out, (m, n), ins.dtype), np.zeros((), ins.dtype))
            else:
                _launch(kernel, (-(-n // t), -(-m // t)), (t, t), [out, a.base, b.base, m, n, k])
        stats.bump("library_calls")
        return DView.whole(out, (m, n), ins.dtype, fresh=True)
    stats.bump("library_calls")
    stats.bump("host_fallbacks")
    return _upload(np.matmul(_host(a), _host(b)))


# ---- the module ----------------------------------------------------------------------------

def execute(m: Module, args: list, trace: Trace | None = None, dry: bool = False) -> list:
    """Run an optimized module on device buffers `args`; returns flat device arrays (one per
    output, C order). With `dry`, only plans and renders kernels (for explain)."""
    proxies = _Proxies()
    vals: list = [None] * len(m.instrs)
    last_use = [-1] * len(m.instrs)
    for i, ins in enumerate(m.instrs):
        for o in ins.operands:
            last_use[o] = i
    calls: dict = {}  # multi-result library calls: run once
    for i, ins in enumerate(m.instrs):
        op = ins.opcode
        if op == "parameter":
            a = args[ins.attr("index")]
            if isinstance(a, np.ndarray):  # explain: a host array not uploaded yet
                a = a.reshape(-1)
            vals[i] = DView.whole(a, ins.shape, ins.dtype)
        elif op == "constant":
            vals[i] = ins.value
        elif op in MOVEMENT:
            vals[i] = _move(ins, vals[ins.operands[0]], proxies, dry)
        elif op == "fusion" and ins.attr("kind") == "update":  # the value, then the copy
            fusion, k, write = split_update(ins)
            value = run_fusion(fusion, [vals[o] for o in ins.operands], proxies, trace, dry)[0]
            vals[i] = _update(m, i, ins.operands[k], write, vals, value, last_use, trace, dry)
        elif op == "fusion":
            out = run_fusion(ins, [vals[o] for o in ins.operands], proxies, trace, dry)
            vals[i] = out[0] if len(out) == 1 else tuple(out)
        elif op == "get-tuple-element":
            vals[i] = vals[ins.operands[0]][ins.attr("index")]
        elif op == "dot":
            a, b = (vals[o] for o in ins.operands)
            vals[i] = (DView.whole(np.empty(math.prod(ins.shape), ins.dtype), ins.shape,
                                   ins.dtype) if dry else dot(ins, _dv(a), _dv(b)))
        elif op == "custom-call":  # sort, LAPACK, FFT: NumPy's, on the host (counted)
            if dry:
                vals[i] = DView.whole(np.empty(math.prod(ins.shape), ins.dtype), ins.shape,
                                      ins.dtype)
                continue
            stats.bump("host_fallbacks")
            xs = [_host(vals[o]) for o in ins.operands]
            vals[i] = _upload(library.call(ins, xs, calls, ins.operands))
        elif op == "update":
            vals[i] = _update(m, i, ins.operands[0], ins, vals, vals[ins.operands[1]], last_use,
                              trace, dry)
        else:
            raise AssertionError(f"unfused {op} at top level")
    if dry:
        return [None for _ in m.outputs]
    return [_flat(vals[o]) for o in m.outputs]


def _dv(v) -> DView:
    """A device view of v; a host constant broadcast (all strides 0) is filled on the device,
    not uploaded."""
    if isinstance(v, DView):
        return v
    v = np.asarray(v)
    if v.size > 1 and not any(v.strides):
        out = DView.whole(empty(v.size, v.dtype), v.shape, v.dtype, fresh=True)
        copy_into(out, v.reshape(-1)[:1])
        return out
    return _upload(v)


def _flat(v):
    """An output as the flat device array of a whole buffer (gathered if it is a view)."""
    return contiguous(_dv(v)).base


def _update(m: Module, i: int, o: int, ins, vals: list, value, last_use: list, trace,
            dry: bool) -> DView:
    """`ins` (an update) writing `value` over the module's instruction `o`, run by i."""
    base = vals[o]
    base = _dv(base) if not dry or isinstance(base, DView) else base
    inplace = (m.instrs[o].opcode not in ("parameter", "constant") and last_use[o] == i
               and o not in m.outputs and isinstance(base, DView) and base.fresh
               and base.is_whole)
    if trace is not None:
        trace.updates.append("in place" if inplace else "copy")
    if dry:
        return base
    stats.bump("updates_in_place" if inplace else "updates_copied")
    out = base if inplace else contiguous_copy(base)
    region = DView(out.base, ins.attr("offset"), tuple(np.shape(value) if not isinstance(
        value, DView) else value.shape), tuple(ins.attr("strides")), out.dtype)
    if isinstance(value, DView):
        copy_into(region, value)
    else:  # a host constant (possibly broadcast): every element the same
        v = np.asarray(value)
        if v.size and np.all(v == v.reshape(-1)[0]):
            copy_into(region, v.reshape(-1)[:1])
        else:
            copy_into(region, _upload(v))
    return out


def contiguous_copy(v: DView) -> DView:
    out = DView.whole(empty(math.prod(v.shape), v.dtype), v.shape, v.dtype, fresh=True)
    copy_into(out, v)
    return out


BACKEND = Backend("cuda", DEVICE_PIPELINE, execute, leaf=device_leaf, to_device=to_device,
                  device_results=True, module=sys.modules[__name__])
