"""Kernels loaded from the disk cache as machine code, without importing Numba.

Numba compiles a kernel once (in the compile worker, or on the calling thread); beside its
own cache files a *native image* of each specialization is then written (`write`, from
`numba_cpu.image_parts`): the kernel's object code as Numba caches it, with the names of
Numba's Python wrapper of the kernel and of its environment's variable. A later process
links the image with llvmlite -- a few milliseconds, where loading through Numba costs its
import and the readying of its compiler (about a second) -- and calls the wrapper as Numba's
dispatcher does: arguments unboxed in C, the GIL released, exceptions raised by Numba's C
helpers.

What the machine code calls is linked here, by name (`runtime`): Numba's C helpers, its
memory runtime and its OpenMP threading layer (the extension modules themselves, loaded
without the `numba` package; a later `import numba` finds the same modules), NumPy's loops
(`ops/loops.py`), the C library's math, Python's C API.

An image is checked on load (its digest; the machine it was compiled for); a damaged one is
removed and counted (`disk_damaged`), and the kernel is then loaded through Numba.
"""

from __future__ import annotations

import builtins
import ctypes
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading


from lazyarray import stats
from lazyarray.ops import loops

FORMAT = 1
ENABLED = os.environ.get("LAZYARRAY_NATIVE", "1") != "0"  # write and link images (read once)
_MAGIC = b"lazyarray-native"
_lock = threading.Lock()


class ImageError(Exception):
    """An image that cannot be used (damaged, for another machine, without its entry)."""


def _extension(name: str):
    """Numba's C extension module `name`, loaded without importing the `numba` package (the
    same module object a later `import numba` uses)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("Numba is not installed")
    base = os.path.join(spec.submodule_search_locations[0], *name.split(".")[1:])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if os.path.exists(base + suffix):
            loader = importlib.machinery.ExtensionFileLoader(name, base + suffix)
            module = importlib.util.module_from_spec(
                importlib.util.spec_from_file_location(name, base + suffix, loader=loader))
            loader.exec_module(module)
            sys.modules[name] = module
            return module
    raise ImportError(f"no extension module {name}")


def _threads() -> int:
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _pool():
    """(the threading layer Numba runs parallel kernels on, started -- OpenMP or TBB, None
    for the workqueue layer, which may not be entered from two threads at once --, whether
    it was started here)."""
    if "numba" in sys.modules:  # Numba chose one already (or will): take the same
        from numba.np.ufunc import parallel

        parallel._launch_threads()  # (once; it sets the thread count itself)
        layer = parallel._threading_layer
        return (sys.modules[f"numba.np.ufunc.{layer}pool"] if layer in ("omp", "tbb")
                else None), False
    want = os.environ.get("NUMBA_THREADING_LAYER", "default").lower()
    if want not in ("default", "omp", "threadsafe"):
        return None, False  # (tbb's version checks, workqueue: left to Numba)
    pool = _extension("numba.np.ufunc.omppool")
    os.environ.setdefault("NUMBA_THREADING_LAYER", "omp")  # a later `import numba` agrees
    return pool, True


@functools.cache
def runtime():
    """Link names for machine code, once per process: (llvmlite's binding, the threading
    layer's get and set of the calling thread's thread count). Raises ImportError where
    images cannot be loaded."""
    import llvmlite.binding as llvm

    pool, start = _pool()
    if pool is None:
        raise ImportError("the threading layer is not OpenMP")
    helper, dynfunc = _extension("numba._helperlib"), _extension("numba._dynfunc")
    nrt = _extension("numba.core.runtime._nrt_python")
    for name, address in [*helper.c_helpers.items(), *dynfunc.c_helpers.items()]:
        llvm.add_symbol("numba_" + name, address)
    for name, address in nrt.c_helpers.items():
        llvm.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
    nrt.memsys_use_cpython_allocator()
    llvm.add_symbol("_Py_NoneStruct", id(None))
    for obj in builtins.__dict__.values():
        if isinstance(obj, type) and issubclass(obj, BaseException):
            llvm.add_symbol("PyExc_" + obj.__name__, id(obj))
    for name in ("do_scheduling_signed", "do_scheduling_unsigned", "allocate_sched",
                 "deallocate_sched", "get_num_threads", "set_num_threads", "get_thread_id",
                 "set_parallel_chunksize", "get_parallel_chunksize", "get_sched_size"):
        llvm.add_symbol(name, getattr(pool, name))
    llvm.add_symbol("numba_parallel_for", pool.parallel_for)
    set_threads = ctypes.CFUNCTYPE(None, ctypes.c_int)(pool.set_num_threads)
    if start:  # (never over a thread count the program set through Numba)
        n = _threads()
        ctypes.CFUNCTYPE(None, ctypes.c_int)(pool.launch_threads)(n)
        set_threads(n)
    for (name, dtype), (address, data) in loops.numpy_loops().items():
        llvm.add_symbol(loops.symbol(name, dtype), address)
        if data:
            llvm.add_symbol(loops.symbol(name, dtype) + "_data", data)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm, ctypes.CFUNCTYPE(ctypes.c_int)(pool.get_num_threads), set_threads


def _machine(llvm):
    """A target machine for one engine (the engine owns it, and disposes of it)."""
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        codemodel="jitdefault", jit=True)


class Kernel:
    """One specialization's machine code, called as its Numba dispatcher is: `kernel(*args)`
    runs Numba's own Python wrapper of the kernel (arguments unboxed in C, the GIL released,
    exceptions raised as Numba raises them) and returns the kernel's value. The wrapper does
    not check argument types: callers launch it only with the argument description it was
    built for (`compile_service.describe`)."""

    __slots__ = ("fn", "engine", "env", "one", "__weakref__")
    overloads: dict = {}  # (as a dispatcher's: launches compare its size before and after)

    def __init__(self, engine, fn, env):
        self.engine, self.fn, self.env = engine, fn, env
        self.one = None

    def __call__(self, *args):
        return self.fn(*args)

    @property
    def native_one(self) -> "OneThread":
        """This (parallel) kernel run on the calling thread alone (`dispatch.one_thread`)."""
        if self.one is None:
            self.one = OneThread(self)
        return self.one


class OneThread:
    """A parallel native kernel on the calling thread (as `numba_cpu.OneThread`)."""

    __slots__ = ("parallel",)
    overloads: dict = {}

    def __init__(self, parallel: Kernel):
        self.parallel = parallel

    def __call__(self, *args):
        _, get, set_ = runtime()
        n = get()
        set_(1)
        try:
            return self.parallel.fn(*args)
        finally:
            set_(n)


@functools.cache
def host() -> list:
    """What machine code this process runs, as Numba names what it compiled for (its
    `magic_tuple`: triple, CPU, features); None where Numba is told to compile for another
    CPU than this one (images are then not used)."""
    if any(os.environ.get(v) for v in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES",
                                       "NUMBA_ENABLE_AVX")):
        return None
    import llvmlite.binding as llvm

    return [llvm.get_process_triple(), llvm.get_host_cpu_name(),
            llvm.get_host_cpu_features().flatten()]


def write(path: str, parts: tuple | None) -> bool:
    """Write an image to `path`, whole or not at all: `parts` = (the kernel's object code,
    the names of Numba's Python wrapper of it and of its environment's variable, the machine
    it was compiled for: `numba_cpu.image_parts`). False where there is none to write (no
    parts, a full disk); never raises."""
    if parts is None:
        return False
    code, wrapper, env, compiled_for = parts
    head = json.dumps({"format": FORMAT, "wrapper": wrapper, "env": env,
                       "host": list(compiled_for),
                       "sha256": hashlib.sha256(code).hexdigest()}).encode()
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(_MAGIC + b"\n" + head + b"\n" + code)
        os.replace(tmp, path)
    except OSError:
        return False
    finally:
        try:
            os.remove(tmp)
        except OSError:
            pass
    stats.bump("native_writes")
    return True


def load(path: str) -> Kernel:
    """The image at `path`, linked into this process. FileNotFoundError when there is none;
    ImageError (the file removed, counted as `disk_damaged`) when it is damaged."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        magic, head, body = data.split(b"\n", 2)
        meta = json.loads(head)
        if magic != _MAGIC or meta["format"] != FORMAT \
                or hashlib.sha256(body).hexdigest() != meta["sha256"]:
            raise ValueError("digest")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        try:
            os.remove(path)
        except OSError:
            pass
        stats.bump("disk_damaged")
        raise ImageError(f"damaged native image {path}") from None
    if meta.get("host") != host():  # (a cache shared with another CPU's machines)
        raise ImageError(f"native image {path} is for another machine")
    with _lock:
        llvm = runtime()[0]
        dynfunc = _extension("numba._dynfunc")
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _machine(llvm))
        engine.add_object_file(llvm.ObjectFileRef.from_data(body))
        engine.finalize_object()
        address = engine.get_function_address(meta["wrapper"])
        slot = engine.get_global_value_address(meta["env"])
    if not address or not slot:
        raise ImageError(f"no entry in native image {path}")
    env = dynfunc.Environment({"__name__": __name__})
    ctypes.c_void_p.from_address(slot).value = id(env)
    # (the engine's object file reads `body`, which llvmlite does not keep: kept with it)
    fn = dynfunc.make_function(sys.modules[__name__], "kernel", "a lazyarray kernel", address,
                               env, (engine, body))
    stats.bump("native_loads")
    return Kernel(engine, fn, env)
