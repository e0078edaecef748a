"""NumPy's own inner loops for its float math, found so that compiled kernels can call them.

NumPy chooses the loop of `exp`, `log`, `sin`, `power`, ... for float32 and float64 when it is
imported, by the CPU it finds: Intel's SVML or its own AVX-512 code on one machine, libm's
functions on another. Their last bits differ (NumPy's float64 `exp` differs from libm's on
about one argument in twenty on an AVX-512 machine), so no formula of ours gives NumPy's
values everywhere. Calling the loop NumPy itself calls does: a kernel hands it a block of
arguments (`codegen/body.vector_block`) or one argument (`backends/numba_ufunc`) and gets
NumPy's answers bit for bit, on any CPU.

The loops are read from NumPy's public C struct of a ufunc (`PyUFuncObject`: its `functions`,
`data` and `types` tables, as ufuncobject.h lays them out) through ctypes, and each one is
tried against the ufunc itself on arguments that cover its special cases before it is used:
a NumPy whose struct or loop does not behave as expected gives no loop for that op, and the
kernels compute it with lazyarray's own formulas instead (within 1 ulp, docs/semantics.md).
Nothing here imports Numba.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib

import numpy as np

from lazyarray.ops.table import OPS, having

LOOP_OPS = having("numpy_loop")
DTYPES = ("float32", "float64")


class _UfuncHead(ctypes.Structure):
    """The start of NumPy's `PyUFuncObject`, up to its `types` table."""

    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int),
                ("identity", ctypes.c_int), ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)), ("ntypes", ctypes.c_int),
                ("reserved1", ctypes.c_int), ("name", ctypes.c_char_p),
                ("types", ctypes.POINTER(ctypes.c_char))]


# NumPy's loop signature: void loop(char **args, npy_intp const *n, npy_intp const *steps,
# void *data)
_LOOP = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p),
                         ctypes.POINTER(ctypes.c_ssize_t), ctypes.POINTER(ctypes.c_ssize_t),
                         ctypes.c_void_p)


def _find(ufunc: np.ufunc, dtype: np.dtype) -> tuple[int, int] | None:
    """(the address of `ufunc`'s loop taking and giving `dtype` only, its data pointer), or
    None."""
    if ctypes.sizeof(ctypes.c_void_p) != 8 or not isinstance(ufunc, np.ufunc):
        return None
    head = _UfuncHead.from_address(id(ufunc))
    if head.name != ufunc.__name__.encode() or head.ntypes != ufunc.ntypes \
            or (head.nin, head.nout) != (ufunc.nin, ufunc.nout) or head.nargs != ufunc.nargs:
        return None
    want = dtype.char * ufunc.nin + "->" + dtype.char * ufunc.nout
    for k, sig in enumerate(ufunc.types):
        if sig == want:
            codes = bytes(head.types[k * ufunc.nargs + j][0] for j in range(ufunc.nargs))
            if codes != bytes([dtype.num]) * ufunc.nargs or not head.functions[k]:
                return None
            return head.functions[k], head.data[k] or 0
    return None


def _probe_args(nin: int, dtype: np.dtype) -> list[np.ndarray]:
    """Arguments that reach a loop's special cases: signed zeros, infinities, NaN, tiny and
    huge values, and a spread of ordinary ones (an odd count: the SIMD loops' remainders)."""
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310,
               1e-30, 700.0, -700.0, 1e300, -1e300, 3.0e38, 89.0, -104.0, 1e22, np.pi]
    rng = np.random.default_rng(12345)
    with np.errstate(all="ignore"):
        spread = [rng.uniform(-4, 4, 1001), rng.uniform(-800, 800, 501), np.exp(rng.uniform(
            -60, 60, 301))]
        first = np.concatenate([np.array(special), *spread]).astype(dtype)
    return [first] if nin == 1 else [first, np.roll(first, 7)]


def _agrees(loop: tuple[int, int], ufunc: np.ufunc, dtype: np.dtype) -> bool:
    """Does calling `loop` (address, data) give `ufunc`'s results, bit for bit?"""
    ins = _probe_args(ufunc.nin, dtype)
    out = np.empty_like(ins[0])
    arrays = [*ins, out]
    argv = (ctypes.c_void_p * len(arrays))(*(a.ctypes.data for a in arrays))
    steps = (ctypes.c_ssize_t * len(arrays))(*(a.itemsize for a in arrays))
    with np.errstate(all="ignore"):
        _LOOP(loop[0])(argv, (ctypes.c_ssize_t * 1)(out.size), steps, loop[1] or None)
        want = ufunc(*ins)
    return want.dtype == dtype and want.tobytes() == out.tobytes()


@functools.cache
def numpy_loops() -> dict[tuple[str, str], tuple[int, int]]:
    """(op name, dtype name) -> (the address of NumPy's loop for it in this process, the loop's
    data pointer or 0), for the ops with the `numpy_loop` trait whose loop was found and
    agrees with the ufunc."""
    found = {}
    for name in sorted(LOOP_OPS):
        ufunc = OPS[name].ref
        for dt in DTYPES:
            loop = _find(ufunc, np.dtype(dt))
            if loop and _agrees(loop, ufunc, np.dtype(dt)):
                found[(name, dt)] = loop
    return found


def has_loop(name: str, dtype: np.dtype) -> bool:
    return (name, np.dtype(dtype).name) in numpy_loops()


@functools.cache
def loops_tag() -> str:
    """What the generated kernels depend on: NumPy's version and which loops were found (a
    kernel rendered with NumPy's loop in one process calls it by name in the next)."""
    text = np.__version__ + "\n" + "\n".join(f"{n}:{d}" for n, d in sorted(numpy_loops()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def symbol(name: str, dtype: str) -> str:
    """The linker name under which the loop is given to compiled kernels (its data pointer:
    this name + "_data", a symbol at that address)."""
    return f"lazyarray_numpy_loop_{name}_{dtype}"
