"""Matrix products on NumPy's own OpenBLAS, with the kernels this CPU can run.

NumPy's wheels ship OpenBLAS built for every x86-64 CPU (DYNAMIC_ARCH): at load it picks the
kernels for the CPU it detects. Versions before OpenBLAS's fix for AMD's family 1Ah (Zen 5:
OpenMathLib/OpenBLAS issue 6029, fixed in September 2026, after the 0.3.31 that NumPy 2.4's
wheels carry) file such a CPU under Haswell, whose AVX2 kernels reach half of what the CPU
does with AVX-512 (measured here: a 2048^2 float64 product in 149 ms with them, 89 ms with
the SkylakeX kernels, JAX 118-136 ms).

When NumPy's OpenBLAS runs AVX2 kernels on a CPU that has the AVX-512 subsets the SkylakeX
kernels use, lazyarray loads a second instance of the same library file (a private copy in
its cache directory: the dynamic loader shares one instance per file) with
OPENBLAS_CORETYPE=SkylakeX, which is read once, when the library loads, and sends 2-D float32
and float64 products of at least MIN_WORK multiply-adds there. Everything else, and every
other machine, stays on np.matmul; so does a product whose result holds an inf or a NaN
(computed again by NumPy, for its values and warnings).
LAZYARRAY_BLAS=numpy (or `la.options(blas="numpy")`) turns this off.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import math
import os
import shutil
import sys
import threading
import time

import numpy as np

from lazyarray import config
from lazyarray.runtime import diskcache, pool

log = logging.getLogger("lazyarray")

# features the SkylakeX kernels use (LLVM's names for them)
_SKYLAKEX = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
# multiply-adds below which products stay on NumPy's instance: there the second instance
# gained 20% alone (256^2: 408 us against 498), but lost 1.8x right after a NumPy product,
# whose idle workers spin ~0.1 s on the cores this one needs
MIN_WORK = 512 ** 3
_lock = threading.Lock()


def _spin_seconds(timeout: str | None) -> float:
    """How long NumPy's OpenBLAS workers spin after a product before they sleep: 2**t cycles
    of the time-stamp counter (OPENBLAS_THREAD_TIMEOUT as it loaded, clamped to 4..30 as
    OpenBLAS does; 28 when unset or unreadable), taken at 2 GHz: the slow end."""
    try:
        t = min(max(int(timeout), 4), 30)
    except (TypeError, ValueError):
        t = 28
    return 2.0 ** t / 2e9


SPIN_S = _spin_seconds(sys.modules["lazyarray"]._blas_timeout)
_last_product = -math.inf  # time.perf_counter() when the last product ended


def spinning() -> bool:
    """Whether NumPy's OpenBLAS workers may still spin from lazyarray's last product, taking
    the cores a parallel kernel's workers then wait for (0.5-8 ms per launch on 2 cores
    instead of 14 us, for ~0.1 s after a product unless lazyarray set their timeout)."""
    return time.perf_counter() - _last_product < SPIN_S


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.matmul(a, b)`, by the retuned OpenBLAS when it applies (see the module's doc)."""
    global _last_product
    try:
        return _matmul(a, b)
    finally:
        _last_product = time.perf_counter()


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    gemm = _gemm(a, b)
    if gemm is None:
        return _numpy_matmul(a, b)
    (m, k), n = a.shape, b.shape[1]
    ta, lda = _layout(a)
    tb, ldb = _layout(b)
    if ta is None or tb is None:
        return _numpy_matmul(a, b)
    out = pool.empty((m, n), a.dtype)
    scalar = ctypes.c_double if a.dtype == np.float64 else ctypes.c_float
    gemm(_ROW_MAJOR, ta, tb, m, n, k, scalar(1.0), a.ctypes.data, lda, b.ctypes.data, ldb,
         scalar(0.0), out.ctypes.data, n)
    with np.errstate(all="ignore"):
        finite = np.isfinite(out.sum())  # not: an inf or NaN in it (or a sum that overflows)
    # NumPy's own call then, for its warnings (overflow, invalid) and its exact NaN/inf results
    return out if finite else np.matmul(a, b)


def _numpy_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul(a, b); a large 2-D result goes into a pooled buffer (`pool`), whose pages
    are faulted in already (the dense layer at 2048: a fresh 32 MB result each call cost ~7 ms
    here)."""
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype and (
            a.dtype.kind in "fc" and a.shape[0] * b.shape[1] * a.itemsize >= pool.MIN_BYTES):
        return np.matmul(a, b, out=pool.empty((a.shape[0], b.shape[1]), a.dtype))
    return np.matmul(a, b)


def _gemm(a, b):
    if (a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype
            or a.dtype not in (np.float64, np.float32)
            or a.shape[0] * a.shape[1] * b.shape[1] < MIN_WORK
            or config.get().blas == "numpy"):
        return None
    lib = _library()
    if lib is None:
        return None
    return lib.scipy_cblas_dgemm64_ if a.dtype == np.float64 else lib.scipy_cblas_sgemm64_


def _layout(x: np.ndarray) -> tuple[int | None, int]:
    """(transpose flag, leading dimension) of a matrix BLAS reads in place, else (None, 0)."""
    s0, s1, size = x.strides[0], x.strides[1], x.itemsize
    rows, cols = x.shape
    if s1 == size and s0 % size == 0 and s0 // size >= max(1, cols):
        return _NO_TRANS, s0 // size
    if s0 == size and s1 % size == 0 and s1 // size >= max(1, rows):
        return _TRANS, s1 // size
    return None, 0


@functools.lru_cache(maxsize=1)
def _library():
    with _lock:
        try:
            return _load()
        except Exception as exc:  # never worse than np.matmul
            log.debug("lazyarray: keeping NumPy's BLAS (%s)", exc)
            return None


def _load():
    found = glob.glob(os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs",
                                   "libscipy_openblas64_*.so"))
    if len(found) != 1 or not _has_skylakex_features():
        return None
    numpys = ctypes.CDLL(found[0])  # already loaded by NumPy: the same instance
    numpys.scipy_openblas_get_corename64_.restype = ctypes.c_char_p
    if numpys.scipy_openblas_get_corename64_().decode() not in ("Haswell", "Zen"):
        return None  # it runs AVX-512 kernels already, or this is not the case we know

    # in the versioned kernel directory: private to the user (checked), gone with this NumPy
    copy = os.path.join(diskcache.cache_dir(), "blas", os.path.basename(found[0]))
    if not os.path.exists(copy) or os.path.getsize(copy) != os.path.getsize(found[0]):
        os.makedirs(os.path.dirname(copy), mode=0o700, exist_ok=True)
        tmp = f"{copy}.{os.getpid()}.tmp"
        shutil.copyfile(found[0], tmp)
        os.replace(tmp, copy)
    # read once, as the library loads: the kernels, and how long idle workers spin before
    # they sleep (2**24 cycles, a few ms, not OpenBLAS's 2**28, ~0.1 s: they would take the
    # cores from the kernel that runs next, the dense layer's bias + relu, and from NumPy's own
    # OpenBLAS workers; never spinning made each product wait for its workers to wake)
    settings = {"OPENBLAS_CORETYPE": "SkylakeX", "OPENBLAS_THREAD_TIMEOUT": "24"}
    before = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        lib = ctypes.CDLL(copy, mode=os.RTLD_LOCAL | os.RTLD_NOW)
    finally:
        for k, v in before.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    lib.scipy_openblas_get_corename64_.restype = ctypes.c_char_p
    if lib.scipy_openblas_get_corename64_().decode() != "SkylakeX":
        return None
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    for name, real in (("scipy_cblas_dgemm64_", ctypes.c_double),
                       ("scipy_cblas_sgemm64_", ctypes.c_float)):
        fn = getattr(lib, name)
        fn.restype = None
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, real, ptr, i64,
                       ptr, i64, real, ptr, i64]
    log.debug("lazyarray: 2-D float products on OpenBLAS's SkylakeX kernels (%s)", copy)
    return lib


def _has_skylakex_features() -> bool:
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    return all(features.get(f) for f in _SKYLAKEX)


def active() -> bool:
    """Are 2-D float products running on the retuned OpenBLAS in this process?"""
    return config.get().blas != "numpy" and _library() is not None
