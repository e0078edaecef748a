"""Every kernel the CUDA code generator emits compiles to real PTX for compute capability 9.0.

No GPU is needed: the CUDA backend runs a catalogue of programs with its launches recorded
instead of run (buffers are host arrays), and each recorded kernel is compiled with
`numba.cuda.compile_ptx` for the argument types of its launch. The catalogue covers every
kernel kind (loop of ranks 0-3, reduce + combine with and without an epilogue, argreduce,
scan, strided copy, fill, tiled matmul), every elementwise template over each dtype class,
and scalars passed by value and read from device buffers.
"""

import inspect
import sys

import numba
import numpy as np
import pytest
from numba import cuda

import lazyarray as la
from lazyarray import engine
from lazyarray.backends import numba_cuda
from lazyarray.codegen import cuda as cg

CC = (9, 0)

UNARY = ["negative", "positive", "absolute", "fabs", "square", "sqrt", "exp", "expm1", "exp2",
         "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
         "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc",
         "deg2rad", "rad2deg", "radians", "degrees", "isnan", "isinf", "isfinite", "signbit",
         "sign", "logical_not", "conjugate"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power",
          "arctan2", "hypot", "copysign", "maximum", "minimum", "fmax", "fmin", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
          "logical_or", "logical_xor"]
INT_ONLY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]


def _data(dtype, shape=(6, 5)):
    rng = np.random.default_rng(0)
    return (rng.random(shape) * 4).astype(dtype)


def _programs():
    """(name, thunk returning the arrays to evaluate) for the catalogue."""
    progs = []
    for dt in ("float64", "float32"):
        def ops(dt=dt):
            x, y = la.asarray(_data(dt)), la.asarray(_data(dt) + 1)
            outs = [getattr(la, u)(x) for u in UNARY]
            outs += [getattr(la, b)(x, y) for b in BINARY]
            return outs + [la.where(x > 1, x, y), la.clip(x, 0.5, 2.0), x.astype(np.int32)]
        progs.append((f"ops-{dt}", ops))
    for dt in ("int8", "int32", "int64", "uint8", "uint64"):
        def iops(dt=dt):
            x, y = la.asarray(_data(dt)), la.asarray(_data(dt) + 1)
            outs = [getattr(la, b)(x, y) for b in BINARY + INT_ONLY
                    if b not in ("divide", "power", "arctan2", "hypot", "copysign", "fmax",
                                 "fmin")]
            return outs + [la.invert(x), la.absolute(x), la.negative(x), la.square(x),
                           x.astype(np.float64), la.sign(x)]
        progs.append((f"ops-{dt}", iops))

    def bool_ops():
        x = la.asarray(_data(np.float64) > 2)
        y = la.asarray(_data(np.float64) < 1)
        return [x & y, x | y, x ^ y, ~x, la.logical_and(x, y), x + y, x * y,
                la.maximum(x, y), la.minimum(x, y), x.astype(np.float32)]

    def complex_ops():
        x = la.asarray(_data(np.float64) + 1j * _data(np.float64))
        return [x + x, x * x, x - 1j, -x, la.conjugate(x), x == x, la.isnan(x),
                x.sum(), x.sum(axis=0), x.imag * 2]

    def shapes():
        x = la.asarray(_data(np.float64, (3, 4, 5)))
        s = la.asarray(np.float64(2.0))
        return [la.asarray(np.float64(3.0)) * 2, x * 2, x.transpose(1, 0, 2) + x[0][:, None, :],
                x[:, ::2, 1:] - 1, x * s, x[:, None, 1] + x[1]]

    def reductions():
        x = la.asarray(_data(np.float64, (4, 5, 6)))
        f = la.asarray(_data(np.float32, (4, 5, 6)))
        b = x > 1
        return [x.sum(), x.sum(axis=0), x.sum(axis=-1), x.sum(axis=(0, 2)), x.prod(axis=1),
                x.max(), x.min(axis=1), la.sqrt((x * x).sum(axis=-1)), f.sum(axis=0),
                b.any(axis=0), b.all(), x.mean(axis=-1), x - x.max(axis=-1, keepdims=True),
                la.argmax(x, axis=-1), la.argmin(x, axis=0), la.argmax(b, axis=1),
                la.cumsum(x, axis=-1), la.cumprod(f, axis=0), la.asarray(_data(np.int32)).sum()]

    def library():
        outs = []
        for dt in ("float64", "float32", "int64"):
            a = la.asarray(_data(dt, (5, 7)))
            outs.append(a @ la.asarray(_data(dt, (7, 3))))
        a = la.asarray(_data(np.float64))
        a[1:3, ::2] = 7.0  # an update of a fresh buffer: fill
        b = la.asarray(_data(np.float64))
        b[0] = b[1] * 2  # copy
        return outs + [a + 0, b + 0, la.asarray(_data(np.int64)).T.copy()]

    progs += [("bool", bool_ops), ("complex", complex_ops), ("shapes", shapes),
              ("reductions", reductions), ("library", library)]
    return progs


@pytest.fixture(scope="module")
def recorded():
    """Run the catalogue on the CUDA backend with host buffers, recording every launch."""
    launches = {}

    def record(kernel, grid, block, args):
        sig = tuple(numba.typeof(a) for a in args)
        fn = kernel.py_func
        launches.setdefault((fn.__module__, fn.__name__, sig), fn)
        columns = getattr(sys.modules[fn.__module__], "kernel_columns", None)
        if fn.__name__ == "kernel" and columns is not None:  # same parameters, other sizes
            launches.setdefault((fn.__module__, "kernel_columns", sig), columns.py_func)

    saved = (numba_cuda._launch, numba_cuda.empty, numba_cuda.to_device)
    numba_cuda._launch = record
    numba_cuda.empty = lambda n, dtype: np.empty(max(n, 0), dtype)
    numba_cuda.to_device = lambda host: np.ascontiguousarray(host).reshape(-1).copy()
    la.reset_stats()
    try:
        with la.options(backend="cuda", eager_threshold=0):
            for _, thunk in _programs():
                outs = thunk()
                engine.materialize([o._storage.node for o in outs])
                engine.materialize([o._node for o in outs])
    finally:
        numba_cuda._launch, numba_cuda.empty, numba_cuda.to_device = saved
    assert la.cache_info()["host_fallbacks"] == 0  # every op of the catalogue has a template
    return launches


def test_catalogue_covers_every_kernel_kind(recorded):
    texts = "\n".join(inspect.getsource(fn) for fn in recorded.values())
    for marker in ("cuda.shared.array(", "def kernel_combine(", "shv = cuda.shared.array(",
                   "def kernel_columns(",
                   "acc = init0", "dst[doff", "value", "sa[ty, tx]", "s0[so0]"):
        assert marker in texts, marker
    assert len(recorded) > 40


class _Target:
    """Stands in for the current device where Numba asks for one (device functions are
    compiled for the current device's compute capability): sm_90, with no driver."""

    compute_capability = CC


def test_every_recorded_kernel_compiles_to_sm90_ptx(recorded, monkeypatch):
    from numba.cuda import dispatcher

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _Target())
    failures = []
    for (module, name, sig), fn in recorded.items():
        try:
            ptx, _ = cuda.compile_ptx(fn, sig, cc=CC)
            assert ".target sm_90" in ptx
        except Exception as exc:  # collect them all: one report
            failures.append(f"{module}.{name}{sig}: {type(exc).__name__}: {exc}"[:600])
    assert not failures, "\n".join(failures)


def test_every_elementwise_template_is_exercised():
    """The catalogue above reaches every op the CUDA code generator has a template for."""
    covered = set(UNARY) | set(BINARY) | set(INT_ONLY) | {"invert", "clip", "imag"}
    templated = set(cg.TEMPLATED)
    assert templated <= covered
