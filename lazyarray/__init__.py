"""lazyarray: NumPy, lazily -- fused and compiled with Numba.

``import lazyarray as np`` and NumPy code runs unchanged: every operation records a node of a
deferred expression graph; when a value is needed the graph is lowered to an HLO-style IR,
optimized, fused into few kernels, compiled with Numba (cached by shape-free signature, in
memory and on disk) and run.
"""

from __future__ import annotations

import os as _os
import sys as _sys

from lazyarray.version import __version__  # noqa: F401

# Numba's OpenMP workers spin against OpenBLAS's on small machines unless told to yield soon
# (measured: 2 us kernel launches instead of milliseconds). Must happen before Numba loads.
_os.environ.setdefault("GOMP_SPINCOUNT", "10000")
# ... and OpenBLAS's idle workers spin ~0.1 s after every product, while a parallel kernel's
# workers wait for a core (0.5-8 ms per launch instead of 14 us): they park after 2**16
# cycles instead. OpenBLAS reads it when NumPy loads it, so only where lazyarray comes first;
# the executor keeps kernels after a product on one thread while they may spin
# (runtime/blas.py `spinning`; docs/performance.md, "Threading").
_blas_timeout = _os.environ.get("OPENBLAS_THREAD_TIMEOUT")
if _blas_timeout is None and "numpy" not in _sys.modules:
    _blas_timeout = _os.environ["OPENBLAS_THREAD_TIMEOUT"] = "16"

import functools as _functools  # noqa: E402
import types as _types  # noqa: E402

import numpy as _np  # noqa: E402

from lazyarray import backends as _backends  # noqa: E402
from lazyarray import engine as _engine  # noqa: E402
from lazyarray import passes as _passes  # noqa: E402
from lazyarray.runtime import background as _background, diskcache as _diskcache  # noqa: E402
from lazyarray.runtime.kernels import load_all as _load_all  # noqa: E402
from lazyarray import stats as _stats  # noqa: E402
from lazyarray._creation import (  # noqa: E402
    array, asanyarray, asarray, ascontiguousarray, asfortranarray, empty, empty_like, eye, full, full_like,
    identity, linspace, ones, ones_like, zeros, zeros_like, arange, from_dlpack,
    __array_namespace_info__,
)
from lazyarray._funcs import (  # noqa: E402
    allclose, argwhere, around, array_equal, array_equiv, average, clip, copyto, count_nonzero,
    flatnonzero, isclose, nan_to_num, nanmax, nanmean, nanmin, nanprod, nansum, nonzero, place,
    polyval, ptp, put, putmask, round, where,
)
from lazyarray._indexing import compress, take, take_along_axis  # noqa: E402
from lazyarray._manipulation import (  # noqa: E402
    array_split, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays, broadcast_shapes,
    broadcast_to, column_stack, concatenate, diag, diagonal, diff, dsplit, dstack,
    expand_dims, flip, fliplr, flipud, hsplit, hstack, matrix_transpose, meshgrid, moveaxis,
    ndim, pad, permute_dims, ravel, repeat, reshape, roll, rot90, row_stack, shape, size,
    split, squeeze, stack, swapaxes, tile, trace, transpose, tril, triu, vsplit, vstack,
    require, unstack,
)

concat = concatenate
from lazyarray._products import dot, inner, matmul, outer, vdot, vecdot  # noqa: E402
from lazyarray._library import (  # noqa: E402
    argpartition, argsort, choose, convolve, correlate, digitize, histogram, interp, isin,
    lexsort, median, partition, percentile, quantile, ravel_multi_index, searchsorted, sort,
    sort_complex, unravel_index,
)
from lazyarray._composite import (  # noqa: E402
    angle, append, astype, bartlett, blackman, block, common_type, copy, corrcoef, cov, cross, diagflat,
    ediff1d, einsum, fix, gradient, hamming, hanning, indices, iscomplex, iscomplexobj, isfortran,
    imag, isneginf, isposinf, isreal, isrealobj, isscalar, kron, logspace, matvec, nancumprod,
    nancumsum, nanstd, nanvar, real, resize, rollaxis, select, sinc, tensordot, trapezoid, tri,
    vecmat,
)
from lazyarray._reductions import (  # noqa: E402
    all, amax, amin, any, argmax, argmin, cumprod, cumsum, cumulative_prod, cumulative_sum, max,
    mean, min, prod, std, sum, var,
)
from lazyarray._ufuncs import *  # noqa: E402,F403
from lazyarray.array import Array, may_share_memory, shares_memory, ufunc  # noqa: E402
from lazyarray.array import numpy_fallback as _fallback  # noqa: E402
from lazyarray.array import NonNumeric as _NonNumeric  # noqa: E402
from lazyarray import _methods  # noqa: E402,F401  (the methods that are namespace functions)
from lazyarray.config import options  # noqa: E402
from lazyarray.jit import JitWarning, jit  # noqa: E402
from lazyarray._visualize import visualize  # noqa: E402
from lazyarray.runtime.executor import cache_clear as _kernel_cache_clear  # noqa: E402

ndarray = Array

# dtypes, scalar types and constants are NumPy's own objects
from numpy import (  # noqa: E402
    bool_, byte, cdouble, complex64, complex128, csingle, double, dtype, e, euler_gamma,
    finfo, float16, float32, float64, iinfo, inf, int8, int16, int32, int64, intc, intp,
    longlong, nan, newaxis, pi, short, single, ubyte, uint, uint8, uint16, uint32, uint64,
    uintc, uintp, ulonglong, ushort, can_cast, promote_types, result_type, issubdtype, errstate,
    generic, number, integer, signedinteger, unsignedinteger, floating, complexfloating,
    inexact, set_printoptions, get_printoptions, printoptions,
)
from numpy import bool  # noqa: E402,A004

float_ = float64
int_ = int64
complex_ = complex128


def evaluate(*arrays) -> None:
    """Materialize several arrays in one fused pass (shared inputs are read once)."""
    arrays = [a for a in arrays if isinstance(a, Array)]
    _engine.materialize(list({id(a._storage): a._storage.node for a in arrays}.values()))
    _engine.materialize([a._node for a in arrays if a._chain])


def explain(*arrays):
    """Report how `arrays` would be evaluated, or how the last evaluation ran.

    Parameters
    ----------
    *arrays : Array
        The arrays to plan: nothing is computed. With no arrays, the report of the last
        evaluation that actually ran (in this process) is returned instead.

    Returns
    -------
    Report
        ``str()`` shows the line that forced the evaluation, the HLO before and after
        optimization and, per kernel: why its fusion ends where it does, its signature, its
        cache status (on a miss: how the nearest cached signature differs), its build time,
        the bytes of intermediates it never writes and its generated source.
        ``.num_kernels`` counts compiled kernels launched, ``.kernels`` holds the records.
    """
    if not arrays:
        report = _engine.last_report()
        if report is None:
            raise ValueError("explain(): nothing has been evaluated yet; pass arrays to plan")
        return report
    return _engine.explain([a._planned_node() for a in arrays if isinstance(a, Array)])


def from_dask(darr, /) -> Array:
    """A lazy array over a `dask.array.Array`, keeping its chunks.

    Operations on it are recorded as usual; with ``options(backend="dask")`` they run as
    fused chunk tasks on the dask scheduler, and ``to_dask()`` returns the dask array of a
    result. Other backends compute the dask array first.

    Parameters
    ----------
    darr : dask.array.Array
        With known chunk sizes.

    Returns
    -------
    Array
    """
    return Array(_backends.get("dask").module.from_dask(darr))


def cache_info() -> dict:
    """Counters: hits, misses (in-memory kernel cache), compiles, disk_hits, disk_writes,
    disk_damaged (kernels whose disk cache files failed their checksum: removed and rebuilt),
    kernels_launched, interpreter_runs, fallbacks, materializations, updates_in_place,
    updates_copied (writes into the old buffer / into a new version, the rest copied from
    the old one), updates_filled (writes into a new version whose old one was a constant:
    `zeros_like(a)` then `z[0] = ...`, the rest filled, no buffer copied), updates_fused (writes
    stored by the kernel computing their value), buffers_donated, library_calls, eager_ops
    (operations on tiny arrays: run at once, or recorded in a trace), trace_kernel_runs
    (traces computed by their compiled loop, see lazyarray/trace_tier.py), trace_compiles and
    trace_disk_writes (those loops built, and their source files written; apart from
    compiles and disk_writes, which count the graph's kernels), trace_replays (large traces
    computed by replaying the module of an earlier evaluation, without a graph), plan_hits
    (evaluations on the compiled tier that took the plan of an earlier graph of the same
    structure: neither lowered nor optimized again), gathered (dask
    backend: instructions run gathered in one task), fp_rechecks (fusions or traces re-run on
    NumPy's loops because a kernel met a possible floating-point error while NumPy's error
    state warns), checks_escalated (fusions whose kernel with cheap floating-point checks
    counted one: compiled with exact checks from then on, docs/semantics.md 7)."""
    return _stats.snapshot()


def wait_compiles(timeout: float | None = None) -> bool:
    """Wait for the kernels being built in the background: by the compile worker process
    (``options(compile="background")``, the default) and on the build thread.

    Parameters
    ----------
    timeout : float, optional
        Seconds to wait for the builds in flight; None waits until they are done.

    Returns
    -------
    bool
        True when no build is left in flight.
    """
    return _load_all(timeout) and _background.wait(timeout)


def reset_stats() -> None:
    """Reset the counters of `cache_info` (the kernel caches are kept)."""
    _stats.reset()


def cache_clear(disk: bool = False) -> None:
    """Forget the in-memory kernel and plan caches and reset the counters; with ``disk=True``
    also delete the compiled kernels on disk."""
    _kernel_cache_clear()
    for name in ("cuda", "xla"):
        device = _backends.loaded(name)
        if device is not None:
            device.module.cache_clear()
    _passes.clear_plans()
    _engine._graphs.clear()
    _stats.reset()
    if disk:
        _diskcache.clear()


def __getattr__(name: str):
    """Any other public NumPy name: NumPy's object, or its function run on materialized inputs
    (a counted fallback) so code never stops on a missing name."""
    if (name.startswith("_") and name not in _np.__all__) or not hasattr(_np, name):
        raise AttributeError(f"module 'lazyarray' has no attribute {name!r}")
    obj = getattr(_np, name)
    if callable(obj) and not isinstance(obj, type):
        wrapper = _functools.wraps(obj)(_functools.partial(_fallback, obj))
        globals()[name] = wrapper
        return wrapper
    return obj


def _numpy_for_non_numeric(fn, numpy_fn):
    """`fn`, running NumPy's `numpy_fn` (a counted fallback) where an operand's dtype is one
    the compiler does not handle: string, object or structured arrays are NumPy's own."""

    @_functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _NonNumeric:
            return _fallback(numpy_fn, *args, **kwargs)

    return call


# the functions of hot loops keep their direct call (a wrapper costs them 0.1-0.4 us): on a
# non-numeric array they raise `NonNumeric` (a TypeError) with its dtype
_HOT = frozenset({"where", "sum", "mean", "prod", "max", "min", "amax", "amin", "clip", "dot",
                  "matmul", "argmax", "argmin", "any", "all", "std", "var", "cumsum",
                  "cumprod", "round", "asarray", "array", "evaluate",
                  "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                  "full_like", "arange", "linspace", "explain"})
for _name, _obj in list(globals().items()):
    if (type(_obj) is _types.FunctionType and not _name.startswith("_") and _name not in _HOT
            and _obj.__module__.startswith("lazyarray._") and callable(getattr(_np, _name, None))):
        globals()[_name] = _numpy_for_non_numeric(_obj, getattr(_np, _name))
del _name, _obj


# submodules (`import ... as`: a plain `from lazyarray import x` would find __getattr__'s NumPy x)
import lazyarray.export as export  # noqa: E402
import lazyarray.fft as fft  # noqa: E402
import lazyarray.linalg as linalg  # noqa: E402
import lazyarray.random as random  # noqa: E402
import lazyarray.testing as testing  # noqa: E402
