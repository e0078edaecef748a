"""Numba CPU backend: compile generated kernel source, with Numba's own disk cache.

Each kernel's source is written once (atomically) to `<folder>/lazyarray_kernel_<key>.py`
and imported under a registered module name, so `njit(cache=True)` can find it again in a new
process. Numba's cache files of a kernel (`__pycache__/lazyarray_kernel_<key>.*.nbi/.nbc`)
are sealed with their SHA-256 digests after every compile (`<key>.sums` beside them) and
checked before the kernel is imported: a file that a full disk, a killed writer or anything
else damaged is never loaded -- the kernel's entries are removed, rebuilt and counted
(`disk_damaged`). A source file that is not the kernel's text is rewritten.
"""

from __future__ import annotations

import contextlib
import copy
import glob
import hashlib
import importlib.util
import json
import logging
import os
import sys
import tempfile
import threading
import warnings
import weakref

import numba
import numpy as np

from lazyarray import stats
from lazyarray.backends import vector_width
from lazyarray.codegen import parts
from lazyarray.runtime.threads import thread_controls as _thread_controls

_PRELUDE = """import numpy as np
from numba import njit, prange
import lazyarray.backends.numba_scalar as _h
import lazyarray.backends.numba_parts as _p

"""
_lock = threading.Lock()
log = logging.getLogger("lazyarray")


class _ScopeSharingCopy:
    """The `copy` module as Numba's parfor pass sees it, except that a deep copy of one IR
    assignment shares the function's scope instead of copying it.

    Finding a parallel loop's reductions (`numba.parfors.parfor.get_parfor_reductions`)
    deep-copies every statement that feeds a reduction variable; each copy of a variable
    deep-copies its scope, i.e. every variable of the function, so the search is quadratic
    in the loop body's size. A kernel's floating-point check (`nfo = max(nfo, ...)`) reads
    most of the body: the vertical-mixing kernels spent 60% of a parallel compile there
    (4-10 s a kernel, 2.5-5 s with the scope shared). The copies are only read, to find the
    reduction operator, so sharing the scope changes nothing else.
    """

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(x, memo=None):
        if memo is None and isinstance(x, numba.core.ir.Assign):
            memo = {id(x.target.scope): x.target.scope}
        return copy.deepcopy(x, memo)


def _share_scopes_in_reduction_search() -> None:
    from numba.parfors import parfor

    if getattr(parfor, "copy", None) is copy:
        parfor.copy = _ScopeSharingCopy()


_share_scopes_in_reduction_search()


def _write_atomic(path: str, text: str, replace: bool) -> bool:
    """Write `text` to `path` whole or not at all; False when it did not. Without `replace`,
    a file another process put there first stays: Numba's cache index records the source
    file's modification time, and rewriting the same text would make the other process's
    entries stale."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError:  # a file system without hard links
                os.replace(tmp, path)
        return True
    finally:  # (an error or ^C too: never leave a partial file behind)
        try:
            os.remove(tmp)
        except OSError:
            pass


def _cache_files(path: str) -> tuple[str, list[str]]:
    """(the seal's path, Numba's cache files) of the kernel module at `path`."""
    folder, name = os.path.split(path)
    stem = os.path.join(folder, "__pycache__", name[:-3])
    return stem + ".sums", sorted(glob.glob(glob.escape(stem) + ".*.nb[ic]"))


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _verify(path: str) -> None:
    """Before the kernel at `path` is imported: when its cache files are not exactly those
    its seal lists, with those digests (a damaged file, a foreign one, no seal), remove them
    all, so that Numba compiles the kernel again instead of loading them."""
    seal, files = _cache_files(path)
    if not files:
        return
    try:
        with open(seal, "rb") as f:
            sealed = json.loads(f.read().decode())
        good = sealed == {os.path.basename(p): _digest(p) for p in files}
    except (OSError, ValueError):  # (no seal, or a damaged one)
        good = False
    if not good:
        for p in [*files, seal, *glob.glob(glob.escape(seal[:-len(".sums")]) + ".*.built")]:
            with contextlib.suppress(OSError):
                os.remove(p)
        stats.bump("disk_damaged")


def _seal(kernel) -> None:
    """After a compile of `kernel` (saved by Numba into its cache files): seal the files."""
    kernel = getattr(kernel, "parallel", kernel)  # (a `OneThread`: its dispatcher's files)
    module = sys.modules.get(getattr(kernel, "__module__", ""), None)
    path = getattr(module, "__file__", None)
    if not path:
        return
    seal, files = _cache_files(path)
    try:
        text = json.dumps({os.path.basename(p): _digest(p) for p in files})
        _write_atomic(seal, text, replace=True)
    except OSError:  # (another process removed them meanwhile: no seal, rebuilt next time)
        pass


def import_source(name: str, path: str, text: str, counter: str = "disk_writes"):
    """Import `text` as module `name` from the file `path`, (re)writing the file first when it
    is absent or holds something else (corrupt, foreign): Numba's `cache=True` needs a real
    file to key its cache on."""
    existing = None
    if os.path.exists(path):
        with open(path, "rb") as f:  # (bytes: a damaged file need not be text)
            existing = f.read()
    if existing != text.encode() and _write_atomic(path, text, replace=existing is not None):
        stats.bump(counter)
    _verify(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def compile_kernel(key: str, source: str, folder: str, counter: str = "disk_writes"):
    """(parallel, serial) dispatchers for `source`, which defines `kernel`, its module kept in
    `folder` (the cache's `diskcache.kernel_folder`; a new source file is counted under
    `counter`).

    The first runs its parallel loops as part functions (`codegen/parts.py`), compiled
    serially; a source whose loops cannot be rewritten so, or any under `LAZYARRAY_PARTS=0`,
    is compiled with Numba's parfor pass. Small launches take the serial one: waking the
    worker threads costs more than it saves. The first is compiled with 512-bit vectors
    where the CPU has them (see `vector_width`).
    """
    split = parts.split_parallel_loops(source) if "prange(" in source and parts.ENABLED \
        else None
    parallel = "prange(" in source and split is None
    # (no C-callable wrapper: kernels are called through Numba's Python wrapper or their
    # native image's; Numba builds and optimizes that other wrapper for every function, about
    # a tenth of a small kernel's compile)
    deco = ("@njit(parallel={}, error_model='numpy', cache=True, nogil=True, "
            "no_cfunc_wrapper=True)\n")
    serial = source.replace("def kernel(", "def kernel_serial(", 1)
    main = split.replace("\ndef kernel(", "\n" + deco.format(False) + "def kernel(", 1) \
        if split is not None else deco.format(parallel) + source
    text = (f"# lazyarray kernel {key}\n" + _PRELUDE + main + "\n\n"
            + deco.format(False) + serial)
    name = f"lazyarray_kernel_{key}"
    _keep_loaded_object_code()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, name + ".py")
    with _lock:
        module = import_source(name, path, text, counter)
    if vector_width.enabled():
        _wide.add(module.kernel)
    return module.kernel, module.kernel_serial


_wide: weakref.WeakSet = weakref.WeakSet()  # dispatchers compiled with 512-bit vectors


def _width(kernel):
    """The vector-width context compiling `kernel` needs."""
    kernel = getattr(kernel, "parallel", kernel)
    return vector_width.wide() if kernel in _wide else contextlib.nullcontext()


class OneThread:
    """A parallel dispatcher run on the calling thread alone (`one_thread`).

    Numba compiles each `prange` loop of a parallel kernel into a function whose array
    arguments are declared not to alias, which lets LLVM vectorize it even when the result
    is written over an operand; the serial dispatcher of the same source keeps runtime alias
    checks that an in-place launch fails, and runs scalar (the dense layer's bias + relu at 256^2:
    44 us against 15; docs/performance.md, "One thread, vectorized").
    """

    def __init__(self, parallel):
        self.parallel = parallel
        self.overloads = parallel.overloads  # (the same dict: new specializations show)

    def __getattr__(self, name):  # stats, compile, ...: the dispatcher's
        return getattr(self.parallel, name)

    def __call__(self, *args):
        get, set_ = _thread_controls()
        n = get()
        set_(1)
        try:
            return self.parallel(*args)
        finally:
            set_(n)


def one_thread(parallel) -> OneThread | None:
    """`parallel` as a dispatcher that runs on the calling thread only; None under Numba's
    workqueue threading layer, which may not be entered from two threads at once (the dask
    backend's tasks run kernels from several)."""
    try:
        return parallel.lazyarray_one_thread  # (kept on the dispatcher: they die together)
    except AttributeError:
        one = parallel.lazyarray_one_thread = (
            OneThread(parallel) if _thread_controls() is not None else None)
        return one


_first_call = threading.Lock()


def launch(kernel, args) -> tuple[str, int]:
    """Run `kernel(*args)`; returns ("compiled" or "disk" when this call built a specialization,
    else "", the kernel's count of possible floating-point events). A first call compiles: one
    thread does it, the others wait (exact counts)."""
    types = tuple(a.flags.c_contiguous + 2 * a.flags.writeable if isinstance(a, np.ndarray)
                  else type(a) for a in args)
    known = _seen.setdefault(kernel, set())
    stats.bump("kernels_launched")
    if types in known:  # a specialization this process already has: no bookkeeping
        return "", kernel(*args)
    with _first_call:
        return _counted_call(kernel, args, known, types)


def _counted_call(kernel, args, known: set, types: tuple) -> tuple[str, int]:
    before = len(kernel.overloads)
    hits = sum(kernel.stats.cache_hits.values())
    with warnings.catch_warnings(), _width(kernel):
        warnings.simplefilter("ignore", numba.NumbaWarning)
        flagged = kernel(*args)
    known.add(types)
    if len(kernel.overloads) > before:  # a new specialization: loaded from disk, or compiled
        disk = sum(kernel.stats.cache_hits.values()) > hits
        stats.bump("disk_hits" if disk else "compiles")
        if not disk:
            _seal(kernel)
        return ("disk" if disk else "compiled"), flagged
    return "", flagged


def build(kernel, args) -> str:
    """Compile (or load from disk) the specialization of `kernel` for `args` without running
    it; "compiled", "disk", or "" when it already existed."""
    return build_signature(kernel, tuple(numba.typeof(a) for a in args))


def numba_signature(sig) -> tuple:
    """Numba's argument types from `compile_service.describe`'s description."""
    from numba.core import types

    out = []
    for d in sig:
        if d[0] == "a":
            _, dtype, ndim, layout, readonly, aligned = d
            out.append(types.Array(numba.from_dtype(np.dtype(dtype)), ndim, layout,
                                   readonly=readonly, aligned=aligned))
        elif d[0] == "g":
            out.append(numba.typeof(np.dtype(d[1]).type(0)))
        else:
            out.append(numba.typeof({"bool": True, "int": 0, "float": 0.0,
                                     "complex": 0j}[d[1]]))
    return tuple(out)


def build_signature(kernel, sig: tuple) -> str:
    """`build` for Numba argument types `sig` (the compile worker's jobs)."""
    before = len(kernel.overloads)
    hits = sum(kernel.stats.cache_hits.values())
    with warnings.catch_warnings(), _width(kernel):
        warnings.simplefilter("ignore", numba.NumbaWarning)
        kernel.compile(sig)
    if len(kernel.overloads) == before:
        return ""
    disk = sum(kernel.stats.cache_hits.values()) > hits
    stats.bump("disk_hits" if disk else "compiles")
    if not disk:
        _seal(kernel)
    return "disk" if disk else "compiled"


_seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # dispatcher -> argument kinds


def _keep_loaded_object_code() -> None:
    """Keep the object code of each specialization Numba loads from its disk cache on its
    library (`_lazyarray_object`): Numba hands it to LLVM and drops it, and a native image
    of a kernel loaded so (an image lost, or a cache older than images) needs it. Numba's
    engine asks its object cache through this attribute at each load."""
    from numba.core.registry import cpu_target

    engine = cpu_target.target_context.codegen()._engine._ee
    get = engine._object_cache_getbuffer
    if getattr(get, "keeps_object_code", False):
        return

    def getbuffer(module):
        buf = get(module)
        library = getattr(module, "_CPUCodeLibrary__library", None)
        if buf is not None and library is not None:
            library._lazyarray_object = buf
        return buf

    getbuffer.keeps_object_code = True
    engine._object_cache_getbuffer = getbuffer


def image_parts(kernel, args_or_sig, sig: bool = False) -> tuple | None:
    """What the native image (`runtime.native`) of `kernel`'s specialization for `args` (or,
    with `sig`, for Numba argument types) holds: (its object code, the names of Numba's
    Python wrapper of it and of its environment's variable, the machine it was compiled
    for); None where it has none (it is then loaded through Numba). Never raises."""
    kernel = getattr(kernel, "parallel", kernel)
    try:
        types_ = tuple(args_or_sig) if sig else tuple(numba.typeof(a) for a in args_or_sig)
        cres = kernel.overloads.get(types_)
        if cres is None or cres.environment is None or cres.environment.consts:
            return None  # (an environment with constants: Numba restores them, we would not)
        library = cres.library
        code = getattr(library, "_lazyarray_object", None) or library._get_compiled_object()
        return (code, cres.fndesc.llvm_cpython_wrapper_name,
                cres.fndesc.env_name, library.codegen.magic_tuple())
    except Exception as exc:  # noqa: BLE001 - (no object code kept): no image
        log.debug("lazyarray: no native image of %s: %s", kernel, exc)
        return None
