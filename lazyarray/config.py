"""Options: environment variables at import, `options(...)` context manager to override.

    LAZYARRAY_BACKEND           "cpu" (Numba, default), "numpy" (the reference interpreter) or
                                "dask" (chunk tasks of a Dask graph: docs/dask.md) or
                                "cuda" (Numba CUDA kernels, data resident on the GPU) or
                                "xla" (one XLA program per evaluation through JAX, data
                                resident on JAX's default device: docs/xla.md)
    LAZYARRAY_EAGER_THRESHOLD   element count below which the interpreter runs a graph
    LAZYARRAY_CACHE_DIR         where compiled kernels persist (default: the user cache dir)
    LAZYARRAY_DEBUG             0-4: what each materialization logs (docs/debugging.md)
    LAZYARRAY_DUMP_DIR          every compile writes a replayable snapshot here
    LAZYARRAY_COMPILE           "background" (default: kernels compile in a worker process
                                while the interpreter answers), "thread" (the same on a
                                thread of this process) or "now" (wait for each compile)
    LAZYARRAY_BACKGROUND_COMPILE  1: the same as LAZYARRAY_COMPILE=thread
    LAZYARRAY_NATIVE            "0": kernels load from the disk cache through Numba only, not
                                from native images (read once; lazyarray/runtime/native.py)
    LAZYARRAY_BLAS              "auto" (default) or "numpy": "numpy" keeps every matrix product
                                on np.matmul (lazyarray/runtime/blas.py)
    LAZYARRAY_VECTOR_BITS       "256": no 512-bit vectors in large-launch kernels on AVX-512
                                CPUs (read once; lazyarray/backends/vector_width.py)
    LAZYARRAY_PARTS             "0": parallel loops through Numba's parfor pass instead of
                                part functions (read once; lazyarray/codegen/parts.py)
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from dataclasses import dataclass, field, replace

BACKENDS = ("cpu", "numpy", "dask", "cuda", "xla")
COMPILE_MODES = ("background", "thread", "now")
# elements: an operation on computed inputs smaller than this runs at once, through NumPy (the
# eager tier), when eager_threshold allows it. As large as the default compile threshold: below
# it the lazy interpreter tier runs the same NumPy calls and only adds the graph's cost
TINY = 32_768


@dataclass(frozen=True)
class Options:
    backend: str = "cpu"
    # measured (docs/performance.md): below ~3e4 elements NumPy's per-op calls beat a kernel launch
    eager_threshold: int = 32_768
    cache_dir: str | None = None
    debug: int = 0  # 1 kernels and timings, 2 + final HLO, 3 + HLO after each pass, 4 + source
    dump_dir: str | None = None
    background_compile: bool = False  # build kernels off-thread; the interpreter answers meanwhile
    compile: str = "background"  # "background" (a worker process), "thread" or "now"
    trace: bool = True  # record chains of tiny float64 operations (lazyarray/trace_tier.py)
    chunks: object = "auto"  # dask backend: how NumPy inputs are chunked (docs/dask.md)
    blas: str = "auto"  # "numpy": products never on the retuned OpenBLAS (runtime/blas.py)
    math: str = "numpy"  # "fast": compiled float math by lazyarray's own formulas (ops/loops.py)
    xla_float64: str = "float64"  # "float32": the xla backend computes float64 in float32
    # min(TINY, eager_threshold), read by every tiny-array operator (derived, not an option)
    eager_limit: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "eager_limit", min(TINY, self.eager_threshold))


def _from_env() -> Options:
    o = Options()
    if "LAZYARRAY_BACKEND" in os.environ:
        o = replace(o, backend=os.environ["LAZYARRAY_BACKEND"])
    if "LAZYARRAY_EAGER_THRESHOLD" in os.environ:
        o = replace(o, eager_threshold=int(os.environ["LAZYARRAY_EAGER_THRESHOLD"]))
    if "LAZYARRAY_CACHE_DIR" in os.environ:
        o = replace(o, cache_dir=os.environ["LAZYARRAY_CACHE_DIR"])
    if "LAZYARRAY_DEBUG" in os.environ:
        o = replace(o, debug=int(os.environ["LAZYARRAY_DEBUG"] or 0))
    if os.environ.get("LAZYARRAY_DUMP_DIR"):
        o = replace(o, dump_dir=os.environ["LAZYARRAY_DUMP_DIR"])
    if os.environ.get("LAZYARRAY_BACKGROUND_COMPILE"):
        o = replace(o, background_compile=os.environ["LAZYARRAY_BACKGROUND_COMPILE"] not in
                    ("0", "false", "False", "no"))
    if os.environ.get("LAZYARRAY_COMPILE"):
        o = replace(o, compile=os.environ["LAZYARRAY_COMPILE"])
    if os.environ.get("LAZYARRAY_BLAS"):
        o = replace(o, blas=os.environ["LAZYARRAY_BLAS"])
    if os.environ.get("LAZYARRAY_MATH"):
        o = replace(o, math=os.environ["LAZYARRAY_MATH"])
    if os.environ.get("LAZYARRAY_XLA_FLOAT64"):
        o = replace(o, xla_float64=os.environ["LAZYARRAY_XLA_FLOAT64"])
    if os.environ.get("LAZYARRAY_TRACE"):
        o = replace(o, trace=os.environ["LAZYARRAY_TRACE"] not in ("0", "false", "False", "no"))
    _check(o)
    return o


def _check(o: Options) -> None:
    if o.backend not in BACKENDS:
        raise ValueError(f"unknown backend {o.backend!r}; expected one of {BACKENDS}")
    if o.eager_threshold < 0:
        raise ValueError("eager_threshold must be >= 0")
    if o.compile not in COMPILE_MODES:
        raise ValueError(f"compile must be one of {COMPILE_MODES}, got {o.compile!r}")
    if o.blas not in ("auto", "numpy"):
        raise ValueError(f"blas must be 'auto' or 'numpy', got {o.blas!r}")
    if o.math not in ("numpy", "fast"):
        raise ValueError(f"math must be 'numpy' or 'fast', got {o.math!r}")
    if o.xla_float64 not in ("float64", "float32"):
        raise ValueError(f"xla_float64 must be 'float64' or 'float32', got {o.xla_float64!r}")
    if o.debug not in range(5):
        raise ValueError(f"debug must be an int from 0 to 4, got {o.debug!r}")


_current: contextvars.ContextVar[Options] = contextvars.ContextVar("lazyarray_options",
                                                                  default=_from_env())
# How many option sets with an eager_threshold below TINY are in effect (the environment's,
# and `options` contexts in any thread). While one is, the operators that take an eager value
# (an Array's `_val`, smaller than TINY) check its size against the caller's eager_limit;
# otherwise it is below the limit by construction and they skip the check (array.py).
LOWERED = [int(_current.get().eager_limit < TINY)]
_lowered_lock = threading.Lock()


def get() -> Options:
    return _current.get()


@contextlib.contextmanager
def options(**overrides):
    """Temporarily override options, e.g. ``with lazyarray.options(backend="numpy"): ...``.

    Parameters
    ----------
    backend : {"cpu", "numpy", "dask", "cuda", "xla"}
        Where materialization runs: Numba kernels, NumPy's reference interpreter, chunk
        tasks of a Dask graph (the same Numba kernels per chunk; see docs/dask.md), Numba
        CUDA kernels on the GPU (see docs/cuda.md), or one XLA program per evaluation through
        JAX on its default device (TPU, GPU or CPU; results stay there: see docs/xla.md).
    eager_threshold : int
        Graphs whose largest array has fewer elements run on the interpreter (0: always
        compile on the cpu backend).
    cache_dir : str
        Directory for compiled kernels.
    debug : int
        0 (default) to 4: what each materialization logs on the ``lazyarray.debug`` logger
        (1 kernels and timings, 2 + the optimized HLO, 3 + the HLO after each pass,
        4 + the generated kernel source).
    dump_dir : str
        Directory where every evaluation that compiles a kernel writes a replayable snapshot
        (``python -m lazyarray replay DIR``).
    compile : {"background", "thread", "now"}
        How a kernel that is not built yet gets built. "background" (default): a worker
        process compiles it into the disk cache while its fusion runs on the NumPy
        interpreter, and later evaluations load and launch it; a kernel already on disk is
        loaded at once. The first run of a program then costs about what NumPy costs instead
        of waiting on the compiler (docs/performance.md, "First runs"). "thread": the same
        on a background thread of this process. "now": the evaluation waits for the compile
        (what tests of kernel counts want). `lazyarray.wait_compiles()` waits for the
        builds in flight.
    background_compile : bool
        True: the same as ``compile="thread"``.
    trace : bool
        Record chains of operations on tiny float64 arrays as traces, run on NumPy when
        needed and as one compiled loop once a chain's structure has recurred (default True;
        ``LAZYARRAY_TRACE=0`` turns it off; see docs/performance.md, "The trace tier").
    chunks : int, str, tuple or dict
        dask backend: chunks of the NumPy inputs, as `dask.array.from_array` takes them
        ("auto", a block size, a dict {axis: size}); a tuple applies to an input's trailing
        axes, as broadcasting aligns them. Inputs that are dask arrays keep their chunks.
    math : {"numpy", "fast"}
        How compiled kernels compute float math (`exp`, `log`, `sin`, `power`, ...):
        "numpy" (default) calls NumPy's own loops from inside the fused kernel, so the
        values are NumPy's bit for bit on any CPU; "fast" uses lazyarray's own vectorized
        formulas, fused into the loop (float64 within 1 ulp of NumPy, float32 correctly
        rounded on every argument measured; up to 2-4x faster where `sin` or `log` dominate;
        ``LAZYARRAY_MATH=fast``). See docs/semantics.md, deviation 6.
    xla_float64 : {"float64", "float32"}
        xla backend: how float64 (and complex128) arrays are computed on the device.
        "float64" (default): in float64, emulated by XLA where the chip has no float64
        hardware (a TPU). "float32": in float32 (complex64), kept on the device so, and
        widened back when read on the host: several times faster on a TPU, with float32's
        precision; the arrays' dtype stays float64 (``LAZYARRAY_XLA_FLOAT64=float32``; see
        docs/xla.md).
    """
    new = replace(get(), **overrides)
    _check(new)
    low = new.eager_limit < TINY
    if low:
        with _lowered_lock:
            LOWERED[0] += 1
    token = _current.set(new)
    try:
        yield new
    finally:
        _current.reset(token)
        if low:
            with _lowered_lock:
                LOWERED[0] -= 1
