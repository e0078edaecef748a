"""Differential tests of every NumPy ufunc against lazyarray.

Table-driven: the op list is NumPy's own (every ``np.ufunc`` in ``dir(np)``),
crossed with dtypes.  Where NumPy rejects a dtype (TypeError / UFuncTypeError)
lazyarray must reject it too, while *building* the operation.

Cost model: on the compiled backend every distinct (op, dtypes, rank,
broadcast pattern) is one Numba compile (~0.3-1 s); sizes and values of the
same structure reuse the kernel.  So the default run

* checks result dtype/shape/errors for the *full* dtype cross product and
  every Python-scalar kind -- without materializing anything, so no compiles;
* checks values for a *sample* of dtype combos per op (float64, float32,
  int64, int8 or uint8, bool, complex128 and one mixed pair), 1-D arrays of
  varying length drawn by hypothesis (one kernel per case);
* checks shapes (0-d, empty, broadcasting) and Python scalars on a
  representative subset of ops;

and ``-m slow`` checks values for the full dtype cross product.
"""

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import settings, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from helpers import (
    ALL_DTYPES,
    assert_like_numpy,
    assert_meta_like_numpy,
    assert_raises_lazily,
    check_against_numpy,
    dtype_id,
    elements,
    error_category,
    run_numpy,
    special_floats,
)

# --------------------------------------------------------------------------
# the op table
# --------------------------------------------------------------------------

ALL_UFUNC_NAMES = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc))

# The only ufuncs left out, and why:
SKIPPED_UFUNCS = {
    # Generalized ufuncs with core dimensions ((n,k),(k,m)->(n,m) etc.):
    # linear algebra, not elementwise; their contract is not part of the
    # elementwise/broadcasting semantics tested here.
    "matmul": "gufunc with core dimensions (linear algebra), not elementwise",
    "matvec": "gufunc with core dimensions (linear algebra), not elementwise",
    "vecmat": "gufunc with core dimensions (linear algebra), not elementwise",
    "vecdot": "gufunc with core dimensions (linear algebra), not elementwise",
    # Only defined for datetime64/timedelta64, none of which is in the
    # tested dtype list (NumPy raises TypeError for every tested dtype).
    "isnat": "defined only for datetime64/timedelta64 (not in the dtype list)",
}

UFUNCS = [n for n in ALL_UFUNC_NAMES if n not in SKIPPED_UFUNCS]
UNARY = [n for n in UFUNCS if getattr(np, n).nin == 1]
BINARY = [n for n in UFUNCS if getattr(np, n).nin == 2]
assert len(UNARY) + len(BINARY) == len(UFUNCS)

F64, F32, F16 = np.dtype("float64"), np.dtype("float32"), np.dtype("float16")
I8, I16, I32, I64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
U8, U64 = np.dtype("uint8"), np.dtype("uint64")
B, C64, C128 = np.dtype("bool"), np.dtype("complex64"), np.dtype("complex128")

INT_DIVISION = {"floor_divide", "remainder", "mod", "fmod", "divmod"}
SHIFTS = {"left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift"}

# Real-float results that are exactly determined (IEEE correctly-rounded
# operations, or operations NumPy defines bit-exactly) -- compared with rtol=0.
EXACT_FLOAT_OPS = {
    "absolute", "abs", "fabs", "negative", "positive", "conjugate", "conj", "sign",
    "copysign", "floor", "ceil", "trunc", "rint", "maximum", "minimum", "fmax", "fmin",
    "nextafter", "spacing", "frexp", "ldexp", "modf", "heaviside",
    "add", "subtract", "multiply", "divide", "true_divide", "square", "reciprocal", "sqrt",
    "fmod", "floor_divide", "remainder", "mod", "divmod",
}


def numpy_accepts(name, dtypes):
    """Whether NumPy's ufunc has a loop for these operand dtypes."""
    ufunc = getattr(np, name)
    args = [np.ones(2, dtype=d) for d in dtypes]
    with np.errstate(all="ignore"):
        try:
            ufunc(*args)
        except TypeError:
            return False
    return True


def _sampled_dtypes(name):
    """The default-run dtype sample for one op (see module docstring)."""
    small_int = I8 if UFUNCS.index(name) % 2 == 0 else U8
    singles = [F64, F32, I64, small_int, B, C128]
    nin = getattr(np, name).nin
    combos = [(d,) * nin for d in singles]
    if nin == 2:
        for mixed in [(I32, F32), (U8, I16), (I64, U64)]:
            if numpy_accepts(name, mixed):
                combos.append(mixed)
                break
        combos += EXTRA_COMBOS.get(name, [])
    return [c for c in combos if numpy_accepts(name, c)]


# Ops whose natural operand types are mixed (the same-dtype sample misses them).
EXTRA_COMBOS = {
    "ldexp": [(F64, I64), (F32, I32), (F16, I8)],
}


def _case_id(name, dtypes):
    return f"{name}-{'-'.join(dtype_id(d) for d in dtypes)}"


SAMPLED_CASES = [
    pytest.param(name, dtypes, id=_case_id(name, dtypes))
    for name in UFUNCS
    for dtypes in _sampled_dtypes(name)
]

FULL_CASES = [
    pytest.param(name, dtypes, id=_case_id(name, dtypes))
    for name in UFUNCS
    for dtypes in (
        [(d,) for d in ALL_DTYPES]
        if getattr(np, name).nin == 1
        else [(d1, d2) for d1 in ALL_DTYPES for d2 in ALL_DTYPES]
    )
    if numpy_accepts(name, dtypes)
]


# --------------------------------------------------------------------------
# value domains
# --------------------------------------------------------------------------

# Floats: mostly [-50, 50]; functions with a restricted domain get a range
# that covers it (plus a little outside, to see NaN produced the same way).
FLOAT_RANGES = {
    "arcsin": (-1.2, 1.2), "asin": (-1.2, 1.2),
    "arccos": (-1.2, 1.2), "acos": (-1.2, 1.2),
    "arctanh": (-1.2, 1.2), "atanh": (-1.2, 1.2),
    "arccosh": (0.5, 50.0), "acosh": (0.5, 50.0),
    "log": (-1.0, 50.0), "log2": (-1.0, 50.0), "log10": (-1.0, 50.0),
    "log1p": (-1.5, 50.0),
}


def op_elements(name, argi, dtype):
    """Hypothesis elements for argument ``argi`` of ufunc ``name``."""
    dtype = np.dtype(dtype)
    kind = dtype.kind
    bits = dtype.itemsize * 8
    if kind == "f" or kind == "c":
        lo, hi = FLOAT_RANGES.get(name, (-50.0, 50.0))
        if name in ("power", "pow", "float_power") and argi == 1:
            lo, hi = -8.0, 8.0
        if name == "ldexp" and argi == 0:
            lo, hi = -1e3, 1e3
        return elements(dtype, lo, hi)
    if kind in "iu":
        info = np.iinfo(dtype)
        if name in ("power", "pow") and argi == 1:
            # A negative integer exponent is a *value-dependent* ValueError in
            # NumPy; lazyarray can only notice it at materialization.
            return elements(dtype, 0, 2 * bits)
        if name in ("float_power",) and argi == 1:
            return elements(dtype, -8, 8)
        if name in SHIFTS and argi == 1:
            # Shift counts >= the bit width / negative ones: test_integer_edge_values.
            return elements(dtype, 0, bits - 1)
        if name == "ldexp" and argi == 1:
            return elements(dtype, -1100, 1100)
        if name == "lcm":
            # lcm overflows otherwise; the wrapped value depends on the
            # evaluation order, which NumPy does not document.
            half = 2 ** (bits // 2 - 1)
            return elements(dtype, -half if kind == "i" else 0, half)
        if name == "gcd" and kind == "i":
            # gcd(INT_MIN, 0) = |INT_MIN| overflows.
            return elements(dtype, info.min + 1, info.max)
        if name in INT_DIVISION:
            # Division by zero and INT_MIN // -1 are checked in a subprocess
            # (test_integer_division_edge_values): in native code they can
            # trap (SIGFPE) and would kill the whole test run.
            if argi == 1:
                return elements(dtype).filter(lambda v: v != 0)
            if kind == "i":
                return elements(dtype, info.min + 1, info.max)
        if name == "reciprocal":
            # NumPy's integer reciprocal(0) is platform/dtype dependent.
            return elements(dtype).filter(lambda v: v != 0)
        return elements(dtype)
    return elements(dtype)


def _array(name, argi, dtype, n):
    return hnp.arrays(np.dtype(dtype), (n,), elements=op_elements(name, argi, dtype))


def args_strategy(name, dtypes, min_len=2, max_len=12):
    """Same-length 1-D arrays, one per operand (so the case is one kernel)."""
    return st.integers(min_len, max_len).flatmap(
        lambda n: st.tuples(*[_array(name, i, d, n) for i, d in enumerate(dtypes)])
    )


def rtol_for(name, expected, dtypes):
    """rtol override: 0 for exactly-defined real float ops, else the table."""
    res = expected[0] if isinstance(expected, tuple) else expected
    res_kind = np.asarray(res).dtype.kind
    if name in EXACT_FLOAT_OPS and res_kind == "f" and all(np.dtype(d).kind != "c" for d in dtypes):
        return 0.0
    return None


def _atol_for(rtol):
    return 0.0 if rtol == 0.0 else None


def check_ufunc(name, np_args, la_args=None):
    """Run ufunc ``name`` with NumPy and lazyarray and compare."""
    ufunc = getattr(np, name)
    la_ufunc = getattr(la, name)
    if la_args is None:
        la_args = [la.asarray(a) if isinstance(a, np.ndarray) else a for a in np_args]
    status, expected = run_numpy(lambda: ufunc(*np_args))
    if status == "error":
        assert_raises_lazily(error_category(expected), lambda: la_ufunc(*la_args), what=name)
        return
    dtypes = [np.asarray(a).dtype for a in np_args]
    rtol = rtol_for(name, expected, dtypes)
    actual = la_ufunc(*la_args)
    assert_like_numpy(actual, expected, rtol=rtol, atol=_atol_for(rtol), what=name)


# --------------------------------------------------------------------------
# namespace
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", UFUNCS)
def test_namespace_has_ufunc(name):
    assert callable(getattr(la, name))


def test_skip_list_is_small_and_documented():
    assert set(SKIPPED_UFUNCS) <= set(ALL_UFUNC_NAMES)
    assert len(UFUNCS) >= 95, "NumPy lost ufuncs? the table should cover them all"


def test_every_ufunc_has_value_cases():
    """Each ufunc gets at least one dtype combo NumPy accepts in the sample."""
    covered = {p.values[0] for p in SAMPLED_CASES}
    assert covered == set(UFUNCS), sorted(set(UFUNCS) - covered)


# --------------------------------------------------------------------------
# dtype rules and errors: full cross product, metadata only (no compiles)
# --------------------------------------------------------------------------


def _meta_mismatches(name, np_args, la_args):
    ufunc, la_ufunc = getattr(np, name), getattr(la, name)
    status, expected = run_numpy(lambda: ufunc(*np_args))
    label = "(" + ", ".join(
        f"{a.dtype}[{a.shape}]" if isinstance(a, np.ndarray) else repr(a) for a in np_args
    ) + ")"
    if status == "error":
        cat = error_category(expected)
        try:
            got = la_ufunc(*la_args)
        except cat:
            return []
        except Exception as exc:  # noqa: BLE001
            return [f"{name}{label}: numpy raises {cat.__name__}, lazyarray {type(exc).__name__}: {exc}"]
        return [f"{name}{label}: numpy raises {cat.__name__} ({expected}), lazyarray built "
                f"a {getattr(got, 'dtype', type(got))} result"]
    try:
        got = la_ufunc(*la_args)
    except Exception as exc:  # noqa: BLE001
        return [f"{name}{label}: numpy ok, lazyarray raised {type(exc).__name__}: {exc}"]
    try:
        assert_meta_like_numpy(got, expected, what=f"{name}{label}")
    except AssertionError as exc:
        return [str(exc)]
    return []


@pytest.mark.parametrize("name", UFUNCS)
def test_result_dtype_and_errors_all_dtype_combos(name):
    """Every dtype combo: same result dtype and shape as NumPy, or the same
    error class raised while building.  Nothing is materialized."""
    nin = getattr(np, name).nin
    combos = [(d,) for d in ALL_DTYPES] if nin == 1 else [
        (d1, d2) for d1 in ALL_DTYPES for d2 in ALL_DTYPES
    ]
    before = la.cache_info()["materializations"]
    problems = []
    for dtypes in combos:
        np_args = [np.ones(3, dtype=d) for d in dtypes]
        la_args = [la.asarray(a) for a in np_args]
        problems += _meta_mismatches(name, np_args, la_args)
    assert not problems, "\n".join(problems[:40]) + f"\n({len(problems)} problems)"
    assert la.cache_info()["materializations"] == before, "dtype/shape inference materialized"


# Python scalars, including ints out of range for the array dtype (NumPy 2
# raises OverflowError for those, except in comparisons), NEP 50 weak
# promotion for int/float/complex.
PY_SCALARS = [0, 3, -3, True, 200, 1000, -129, 2**40, 2**63, -(2**63) - 1, 2**70, 2.5, -0.0, 1e300, 1 + 2j]


@pytest.mark.parametrize("name", BINARY)
def test_result_dtype_and_errors_python_scalars(name):
    before = la.cache_info()["materializations"]
    problems = []
    for dt in ALL_DTYPES:
        arr = np.ones(3, dtype=dt)
        x = la.asarray(arr)
        for s in PY_SCALARS:
            problems += _meta_mismatches(name, [arr, s], [x, s])
            problems += _meta_mismatches(name, [s, arr], [s, x])
    assert not problems, "\n".join(problems[:40]) + f"\n({len(problems)} problems)"
    assert la.cache_info()["materializations"] == before


# --------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------


def _value_case(name, dtypes, data):
    np_args = data.draw(args_strategy(name, dtypes), label="args")
    check_ufunc(name, list(np_args))


@pytest.mark.parametrize("name, dtypes", SAMPLED_CASES)
@given(data=st.data())
def test_ufunc_values(mode, name, dtypes, data):
    _value_case(name, dtypes, data)


@pytest.mark.slow
@pytest.mark.parametrize("name, dtypes", FULL_CASES)
@settings(max_examples=3)  # breadth over dtype pairs; depth is test_ufunc_values' job
@given(data=st.data())
def test_ufunc_values_full_dtype_product(mode, name, dtypes, data):
    _value_case(name, dtypes, data)


# NaN / inf / signed zeros / subnormals / extremes, for every ufunc that
# accepts floats.  1-D same-shape operands, so the kernels are the same ones
# test_ufunc_values compiled.
FLOAT_SPECIAL_CASES = [
    pytest.param(name, dt, id=f"{name}-{dtype_id(dt)}")
    for name in UFUNCS
    for dt in (F64, F32)
    if numpy_accepts(name, (dt,) * getattr(np, name).nin)
]


@pytest.mark.parametrize("name, dtype", FLOAT_SPECIAL_CASES)
def test_ufunc_special_float_values(mode, name, dtype):
    vals = special_floats(dtype)
    if getattr(np, name).nin == 1:
        check_ufunc(name, [vals])
    else:
        a, b = np.meshgrid(vals, vals, indexing="ij")
        check_ufunc(name, [a.ravel(), b.ravel()])


def _complex_specials():
    parts = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, 1e300])
    re, im = np.meshgrid(parts, parts, indexing="ij")
    return (re + 1j * im).ravel().astype(np.complex128)


COMPLEX_SPECIAL_CASES = [
    pytest.param(name, id=name)
    for name in UFUNCS
    if numpy_accepts(name, (C128,) * getattr(np, name).nin)
]


@pytest.mark.parametrize("name", COMPLEX_SPECIAL_CASES)
def test_ufunc_special_complex_values(mode, name):
    vals = _complex_specials()
    if getattr(np, name).nin == 1:
        check_ufunc(name, [vals])
    else:
        # a subset keeps the pair count moderate
        sub = vals[::3]
        a, b = np.meshgrid(sub, sub, indexing="ij")
        check_ufunc(name, [a.ravel(), b.ravel()])


# --------------------------------------------------------------------------
# integers: wrap-around, shifts, division edge cases
# --------------------------------------------------------------------------


def _int_edges(dtype):
    info = np.iinfo(dtype)
    vals = {info.min, info.min + 1, -7, -2, -1, 0, 1, 2, 7, info.max - 1, info.max}
    return np.array(sorted(v for v in vals if info.min <= v <= info.max), dtype=dtype)


WRAP_OPS = ["add", "subtract", "multiply", "square", "negative", "absolute", "power",
            "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "maximum", "minimum",
            "sign", "positive", "bitwise_count"]


@pytest.mark.parametrize("dtype", [I8, U8, I64, U64], ids=dtype_id)
@pytest.mark.parametrize("name", WRAP_OPS)
def test_integer_wraparound(mode, name, dtype):
    vals = _int_edges(dtype)
    if getattr(np, name).nin == 1:
        check_ufunc(name, [vals])
        return
    a, b = np.meshgrid(vals, vals, indexing="ij")
    a, b = a.ravel(), b.ravel()
    if name == "power":
        b = np.abs(b % 70).astype(dtype)  # non-negative exponents only
    check_ufunc(name, [a, b])


@pytest.mark.parametrize("dtype", [I8, U8, I32, I64, U64], ids=dtype_id)
@pytest.mark.parametrize("name", ["left_shift", "right_shift"])
def test_shift_counts_out_of_range(mode, name, dtype):
    """NumPy defines shifts by >= the bit width (and by negative counts) as
    0 (or -1 for right shifts of negative numbers) -- not the hardware's
    count-modulo-width."""
    bits = dtype.itemsize * 8
    vals = _int_edges(dtype)
    counts = [0, 1, bits - 1, bits, bits + 1, 2 * bits, 100]
    if dtype.kind == "i":
        counts += [-1, -bits]
    counts = np.array([c for c in counts if c <= np.iinfo(dtype).max], dtype=dtype)
    a, b = np.meshgrid(vals, counts, indexing="ij")
    check_ufunc(name, [a.ravel(), b.ravel()])


_DIVISION_SCRIPT = textwrap.dedent(
    """
    import sys, warnings
    sys.path.insert(0, {tests_dir!r})
    import numpy as np
    import lazyarray as la
    from helpers import assert_like_numpy
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    failures = []
    with la.options(**{options!r}):
        for dt in ["int8", "uint8", "int32", "int64", "uint64"]:
            info = np.iinfo(dt)
            vals = sorted(v for v in {{info.min, info.min + 1, -7, -2, -1, 0, 1, 2, 7, info.max}}
                          if info.min <= v <= info.max)
            vals = np.array(vals, dtype=dt)
            a, b = np.meshgrid(vals, vals, indexing="ij")
            a, b = a.ravel(), b.ravel()
            for name in ["floor_divide", "remainder", "fmod", "divmod", "true_divide"]:
                expected = getattr(np, name)(a, b)
                try:
                    got = getattr(la, name)(la.asarray(a), la.asarray(b))
                    assert_like_numpy(got, expected, what=name + "/" + dt)
                except Exception as exc:
                    failures.append(f"{{name}}/{{dt}}: {{type(exc).__name__}}: {{exc}}"[:600])
            x = vals[vals != 0]
            try:
                assert_like_numpy(la.reciprocal(la.asarray(x)), np.reciprocal(x), what="reciprocal/" + dt)
            except Exception as exc:
                failures.append(f"reciprocal/{{dt}}: {{type(exc).__name__}}: {{exc}}"[:600])
    print("\\n".join(failures))
    sys.exit(1 if failures else 0)
    """
)


def test_integer_division_edge_values(mode):
    """Integer division by zero gives 0 in NumPy (with a RuntimeWarning),
    INT_MIN // -1 wraps to INT_MIN, floor semantics for negative operands.
    Run in a subprocess: in native code these can trap (SIGFPE) and kill the
    interpreter -- which is then a test failure, not a crashed run."""
    o = la.config.get()  # the options the `mode` fixture put in force
    script = _DIVISION_SCRIPT.format(
        tests_dir=str(Path(__file__).parent),
        options=dict(backend=o.backend, eager_threshold=o.eager_threshold),
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, (
        f"return code {proc.returncode} (negative = killed by signal)\n"
        f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    )


def test_float_floor_divide_and_remainder_are_pythons(mode):
    """floor_divide/remainder for floats follow Python's divmod (1 // 0.1 is
    9.0, not floor(1 / 0.1) = 10.0)."""
    a = np.array([1.0, -1.0, 1.0, -1.0, 7.5, -7.5, 0.0, -0.0, 5.0])
    b = np.array([0.1, 0.1, -0.1, -0.1, 2.0, 2.0, 3.0, 3.0, -0.0])
    for name in ["floor_divide", "remainder", "divmod", "fmod"]:
        check_ufunc(name, [a, b])


# --------------------------------------------------------------------------
# shapes: 0-d, empty, broadcasting
# --------------------------------------------------------------------------

SHAPE_UNARY_OPS = [("negative", F64), ("sin", F64), ("isnan", F32), ("invert", I64), ("frexp", F64)]
UNARY_SHAPES = [(), (0,), (3, 0), (1,), (5, 1), (2, 3, 4)]

SHAPE_BINARY_OPS = [("add", F64), ("multiply", I64), ("true_divide", I32), ("greater", F64),
                    ("maximum", F32), ("divmod", F64), ("bitwise_xor", U8)]
BINARY_SHAPES = [
    ((), ()), ((), (3,)), ((3,), ()), ((0,), (0,)), ((0,), ()), ((3, 0), (0,)), ((3, 0), (1,)),
    ((3, 1), (4,)), ((4,), (3, 1)), ((2, 1, 3), (4, 1)), ((1,), (5,)), ((2, 3), (2, 3)),
    ((0, 3), (1, 3)), ((1, 1), (1,)),
]


def _values(dtype, shape, seed):
    """Arrays (0-d arrays for shape ``()``, never NumPy scalars)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = rng.standard_normal(shape) * 10
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True)
    elif dtype.kind == "b":
        v = rng.random(shape) < 0.5
    else:
        v = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return np.asarray(v).astype(dtype)


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("name, dtype", SHAPE_UNARY_OPS, ids=lambda v: getattr(v, "name", v))
def test_unary_shapes(mode, name, dtype, shape):
    check_ufunc(name, [_values(dtype, shape, 0)])


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name, dtype", SHAPE_BINARY_OPS, ids=lambda v: getattr(v, "name", v))
def test_binary_broadcasting(mode, name, dtype, shapes):
    a = _values(dtype, shapes[0], 1)
    b = _values(dtype, shapes[1], 2)
    if name == "true_divide":
        b = np.where(b == 0, 3, b).astype(dtype)
    check_ufunc(name, [a, b])


@pytest.mark.parametrize(
    "shapes", [((3,), (4,)), ((2, 3), (3, 2)), ((0,), (2,)), ((3, 1), (2, 4))], ids=str
)
def test_binary_broadcast_error(shapes):
    a, b = (np.ones(s) for s in shapes)
    check_against_numpy(lambda: np.add(a, b), lambda: la.add(la.asarray(a), la.asarray(b)))


@pytest.mark.parametrize("name", ["add", "sin", "arctan2", "equal", "divmod"])
def test_numpy_scalar_and_0d_inputs(mode, name):
    """0-d arrays and NumPy scalars as operands."""
    ufunc = getattr(np, name)
    args = [np.float64(0.75), np.array(2.0)][: ufunc.nin]
    check_ufunc(name, args, la_args=[args[0], la.asarray(args[1])][: ufunc.nin] if ufunc.nin == 2
                else [la.asarray(args[0])])


@pytest.mark.parametrize("args", [(2, 3), (2.5, 3), (1, 2.5j), (7, -2)], ids=str)
def test_python_scalars_only(mode, args):
    """la.<ufunc>(python scalars) computes like NumPy (0-d result)."""
    for name in ["add", "floor_divide", "power", "true_divide"]:
        if name == "power" and isinstance(args[1], int) and args[1] < 0:
            continue  # value-dependent ValueError for integer powers
        status, expected = run_numpy(lambda: getattr(np, name)(*args))
        if status == "error":  # e.g. floor_divide with complex
            assert_raises_lazily(error_category(expected), lambda: getattr(la, name)(*args))
            continue
        assert_like_numpy(getattr(la, name)(*args), expected, what=name)


# --------------------------------------------------------------------------
# Python scalar operands (values; dtype rules are covered above)
# --------------------------------------------------------------------------


def _scalar_value_cases():
    cases = []
    float_choices = [(F32, 2.5, "right"), (F64, -1.5, "left"), (C128, 1 - 2j, "right")]
    int_choices = [(I8, 3, "left"), (I64, -2, "right"), (U8, 7, "right"), (B, True, "left")]
    for name in BINARY:
        for choices in (float_choices, int_choices):
            for dt, s, side in choices:
                args = [np.ones(2, dt), s] if side == "right" else [s, np.ones(2, dt)]
                if run_numpy(lambda: getattr(np, name)(*args))[0] == "ok":
                    cases.append(pytest.param(name, dt, s, side, id=f"{name}-{dt.name}-{s!r}-{side}"))
                    break
    return cases


@pytest.mark.parametrize("name, dtype, scalar, side", _scalar_value_cases())
@given(data=st.data())
def test_python_scalar_operand_values(mode, name, dtype, scalar, side, data):
    argi = 0 if side == "right" else 1
    arr = data.draw(
        st.integers(2, 10).flatmap(lambda n: _array(name, argi, dtype, n)), label="array"
    )
    if side == "right":
        np_args, la_args = [arr, scalar], [la.asarray(arr), scalar]
    else:
        if name in INT_DIVISION and arr.dtype.kind in "iub":
            arr = np.where(arr == 0, 1, arr).astype(arr.dtype)
        if name in ("power", "pow") and arr.dtype.kind in "iu":
            arr = np.abs(arr % 16).astype(arr.dtype)
        if name in SHIFTS:
            arr = (np.abs(arr % 8)).astype(arr.dtype)
        np_args, la_args = [scalar, arr], [scalar, la.asarray(arr)]
    check_ufunc(name, np_args, la_args=la_args)


@pytest.mark.parametrize(
    "dtype, scalar",
    [(I8, 128), (I8, -129), (U8, -1), (U8, 256), (I64, 2**63), (U64, -1), (I32, 2**40)],
    ids=str,
)
@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "bitwise_and"])
def test_out_of_range_python_int_is_overflow_error(name, dtype, scalar):
    arr = np.ones(3, dtype)
    check_against_numpy(
        lambda: getattr(np, name)(arr, scalar),
        lambda: getattr(la, name)(la.asarray(arr), scalar),
    )


@pytest.mark.parametrize("op", ["less", "equal", "greater_equal", "not_equal"])
def test_out_of_range_python_int_in_comparison(mode, op):
    """NumPy 2 compares with out-of-range Python ints exactly (no error)."""
    arr = np.array([-128, 0, 127], np.int8)
    for s in (1000, -1000, 2**70):
        check_ufunc(op, [arr, s], la_args=[la.asarray(arr), s])


def _ulp_distance(a, b):
    ib = np.dtype(f"i{a.itemsize}")
    d = np.abs(a.view(ib).astype(np.int64) - b.view(ib).astype(np.int64))
    d[np.isnan(a) & np.isnan(b)] = 0
    return d


EXP_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 709.782712893384, 709.7827128933841,
             -745.1332191019411, -745.1332191019412, -708.4, 1e-300, -1e-300, 5e-324, 88.72283,
             88.72284, -103.97, -87.33, 1.0, -1.0, 0.5]


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_exp_is_within_an_ulp(dtype):
    """The CPU kernels' exp is lazyarray's own vectorizable polynomial (no libm call): within
    one ulp of NumPy in float64 (two in float32, where NumPy's own SIMD exp is the less
    accurate: ours rounds a float64 result), with the same inf, 0, NaN and subnormal results."""
    with la.options(backend="cpu", eager_threshold=0):
        _check_exp(dtype)


def _check_exp(dtype):
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-750, 750, 200_000), rng.uniform(-1, 1, 100_000),
                        rng.uniform(-110, 90, 100_000), EXP_EDGES]).astype(dtype)
    with np.errstate(all="ignore"):
        got = np.asarray(la.exp(la.asarray(x)))
        want = np.exp(x)
    assert got.dtype == want.dtype
    d = _ulp_distance(got, want)
    assert d.max() <= (1 if dtype == np.float64 else 2), x[d.argmax()]
    edges = np.asarray(EXP_EDGES, dtype)
    with np.errstate(all="ignore"):
        e_got, e_want = np.asarray(la.exp(la.asarray(edges)) * 1), np.exp(edges)
    assert np.array_equal(np.isnan(e_got), np.isnan(e_want))
    assert np.array_equal(np.isinf(e_got), np.isinf(e_want))
    assert np.array_equal(e_got == 0, e_want == 0)
    if dtype == np.float32:
        exact = np.exp(x.astype(np.float64)).astype(np.float32)
        assert _ulp_distance(got, exact).max() <= 1


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("scalef", [False, True])
def test_both_forms_of_exp_are_within_an_ulp(scalef):
    """Kernels scale exp's result by llvm.ldexp (vscalefpd) where the CPU has AVX-512 and by
    two factors built from bits elsewhere: both forms, whatever this CPU is, against NumPy."""
    from lazyarray.backends.numba_scalar import exp_impl

    f = numba.njit(exp_impl(np.float64, scalef))

    @numba.njit
    def run(a, out):
        for i in range(a.size):
            out[i] = f(a[i])

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-750, 710, 50_000), rng.uniform(-746, -708, 20_000),
                        rng.uniform(-1, 1, 20_000), EXP_EDGES])
    got = np.empty_like(x)
    run(x, got)
    with np.errstate(all="ignore"):
        want = np.exp(x)
    assert _ulp_distance(got, want).max() <= 1
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(got == 0, want == 0)


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("scalef", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp_of_a_nonpositive_argument_is_exp(scalef, dtype):
    """The form for arguments the code generator knows are <= 0 or NaN (no upper clamp, and
    its power of two built from n in one piece where the plain form splits it) gives exp's bits
    on every such argument, subnormal results included."""
    from lazyarray.backends.numba_scalar import exp_impl

    plain, nonpositive = (numba.njit(exp_impl(dtype, scalef, nonpositive=k)) for k in (False, True))

    @numba.njit
    def run(f, a, out):
        for i in range(a.size):
            out[i] = f(a[i])

    rng = np.random.default_rng(6)
    edges = [v for v in EXP_EDGES if not v > 0]
    x = np.concatenate([-rng.uniform(0, 750, 20_000), -rng.exponential(1, 20_000),
                        -rng.uniform(708, 746, 20_000), edges])  # (subnormal results)
    x = x.astype(dtype)
    want, got = np.empty_like(x), np.empty_like(x)
    run(plain, x, want)
    run(nonpositive, x, got)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


# --------------------------------------------------------------------------
# sin, cos, log: lazyarray's own vectorizable forms in compiled kernels
# --------------------------------------------------------------------------

VMATH = {"sin": np.sin, "cos": np.cos, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
         "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "log2": np.log2, "log10": np.log10,
         "arctanh": np.arctanh, "arcsinh": np.arcsinh, "arccosh": np.arccosh, "cbrt": np.cbrt,
         "arctan": np.arctan, "arcsin": np.arcsin, "arccos": np.arccos, "exp2": np.exp2,
         "tan": np.tan}
TRIG_BIG = 2.0 ** 30  # numba_scalar.TRIG_BIG: above it sin/cos take libm (the fix-up pass)
VMATH_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 1e-310, -1e-310,
               2.2250738585072014e-308, 1.4901161193847656e-08, 1.49e-08, 1e-300, 1.0, -1.0,
               np.pi / 4, np.pi / 2, np.pi, 2 * np.pi, 1e5, 1e6, 1e9, TRIG_BIG,
               np.nextafter(TRIG_BIG, np.inf), -TRIG_BIG, 2.0 ** 52, 1e22, 1e300, -1e300,
               1.7976931348623157e308, -1.7976931348623157e308, 3.4028234663852886e38,
               6381956970095103.0 * 2.0 ** 797,  # the double nearest a multiple of pi/2
               0.7071067811865476, 0.7071067811865475, 1.4142135623730951, 1.0000000000000002,
               0.9999999999999999]


def _libm_tan(x):
    """libm's tan (Python's math.tan) of each element, rounded to x's dtype."""
    with np.errstate(all="ignore"):
        return np.array([math.tan(v) if math.isfinite(v) else math.nan for v in x.tolist()],
                        np.float64).astype(x.dtype)


def _wider(dtype):
    """The reference precision for `dtype`'s results: float64 for float32; long double for
    float64 where it has more bits (x86's 80-bit format), else float64 itself."""
    if dtype == np.float32:
        return np.float64
    return np.longdouble if np.finfo(np.longdouble).nmant > 52 else np.float64


def _vmath_inputs(name, dtype, n=100_000):
    """Arguments over the ranges that matter, plus the values next to multiples of pi/2
    (the hardest reductions: a huge cancellation) and the edges."""
    rng = np.random.default_rng(5)
    if name in ("log", "log2", "log10"):  # (and every power of two and of ten: exact)
        parts = [np.exp(rng.uniform(-745, 709, n)), rng.uniform(0.5, 2.0, n),
                 rng.uniform(0, 1e-308, n // 10), -rng.uniform(0, 10, 100),
                 2.0 ** np.arange(-1074, 1024), 10.0 ** np.arange(-323, 309)]
    elif name == "exp2":  # every binade of the result, the subnormals, every integer power
        k = np.arange(-1080.0, 1030.0)
        parts = [rng.uniform(-1, 1, n), rng.uniform(-1080, 1030, n),
                 rng.uniform(-1076, -1020, n // 10), k, np.nextafter(k, 0), k + 0.5]
    elif name == "expm1":
        parts = [rng.uniform(-0.35, 0.35, n), rng.uniform(-3, 3, n), rng.uniform(-750, 710, n),
                 rng.uniform(709, 709.79, n // 10), rng.uniform(-1e-8, 1e-8, n),
                 [-45.0, -46.0, 709.782712893384, 709.7827128933841, 2.0 ** -54]]
    elif name == "tanh":  # small (t = 2x), the expm1 range, the tail, where it rounds to 1
        parts = [rng.uniform(-1e-3, 1e-3, n), rng.uniform(-3, 3, n), rng.uniform(-25, 25, n),
                 np.exp(rng.uniform(-745, 3, n)) * rng.choice([-1, 1], n),
                 [18.7, 19.06, 20.0, -20.0, 20.000000000000004, 0.5493061443340549,
                  2.0 ** -28, 2.0 ** -27, 2.0 ** -54]]
    elif name == "cbrt":  # every magnitude, subnormals, the scaling thresholds, exact cubes
        parts = [np.exp(rng.uniform(-745, 709, n)) * rng.choice([-1, 1], n),
                 rng.uniform(-10, 10, n), rng.uniform(0, 2.2e-308, n // 10),
                 np.arange(-1000.0, 1000.0) ** 3, 2.0 ** np.arange(-1074, 1024),
                 [2.0 ** -960, 2.0 ** 960, np.nextafter(2.0 ** -960, 0),
                  np.nextafter(2.0 ** 960, np.inf)]]
    elif name == "arcsinh":  # tiny (x itself), moderate, the log(2|x|) range, huge
        parts = [rng.uniform(-1e-3, 1e-3, n), rng.uniform(-3, 3, n),
                 np.exp(rng.uniform(-745, 709, n)) * rng.choice([-1, 1], n),
                 [2.0 ** 28, 2.0 ** 28 - 1, 1.4901161193847656e-08, 1.0]]
    elif name == "arccosh":  # just above 1, moderate, the log(2x) range, below 1
        parts = [1 + np.exp(rng.uniform(-37, 0, n)), rng.uniform(1, 5, n),
                 np.exp(rng.uniform(0, 709, n)), rng.uniform(-2, 1, n // 10),
                 [1.0, 1.0000000000000002, 0.9999999999999999, 2.0 ** 28, 2.0 ** 28 + 1]]
    elif name == "arctanh":  # the domain, its ends from both sides, tiny, then outside it
        parts = [rng.uniform(-1e-3, 1e-3, n), rng.uniform(-1, 1, n),
                 (1 - np.exp(rng.uniform(-37, -1, n))) * rng.choice([-1, 1], n),
                 np.exp(rng.uniform(-745, -1, n)) * rng.choice([-1, 1], n),
                 rng.uniform(-3, 3, n // 10),
                 [1.0, -1.0, 0.9999999999999999, 1.0000000000000002, 0.5, 2.0 ** -54]]
    elif name in ("sinh", "cosh"):  # the expm1 forms below 22, then e**|x|/2 to the overflow
        parts = [rng.uniform(-1e-3, 1e-3, n), rng.uniform(-3, 3, n), rng.uniform(-30, 30, n),
                 rng.uniform(-712, 712, n), rng.uniform(700, 710.48, n // 10),
                 np.exp(rng.uniform(-745, 3, n)) * rng.choice([-1, 1], n),
                 [22.0, 21.999999999999996, -22.0, 710.4758600739439, 710.475860073944,
                  711.0, 2.0 ** -28, 2.0 ** -54]]
    elif name == "arctan":  # each eighth's neighbourhood (the reduction), 1/x above 1, tiny
        parts = [rng.uniform(-1.1, 1.1, n), np.exp(rng.uniform(-745, 709, n)) * rng.choice(
            [-1, 1], n), np.arange(-9, 10) / 8.0, np.nextafter(np.arange(-9, 10) / 8.0, 0),
                 8.0 / np.arange(1, 9), [1 / 16, 3 / 16, 2.0 ** -28, 2.0 ** 54, 2.0 ** 1023]]
    elif name in ("arcsin", "arccos"):  # the domain, its ends, tiny, then outside it
        parts = [rng.uniform(-1, 1, n), (1 - np.exp(rng.uniform(-37, 0, n))) * rng.choice(
            [-1, 1], n), np.exp(rng.uniform(-745, 0, n)) * rng.choice([-1, 1], n),
                 rng.uniform(-3, 3, n // 10), [0.5, -0.5, 0.7071067811865476, 2.0 ** -28]]
    elif name == "log1p":
        parts = [np.exp(rng.uniform(-745, 709, n)) * rng.choice([-1, 1], n),
                 rng.uniform(-1, 1, n), rng.uniform(-1e-8, 1e-8, n), -1 - rng.uniform(0, 10, 100),
                 [-1.0, -0.9999999999999999, 2.0 ** -54, -(2.0 ** -54), 2.0 ** -53]]
    else:
        k = rng.integers(1, int(TRIG_BIG / np.pi * 2), n)
        parts = [rng.uniform(-1e-3, 1e-3, n), rng.uniform(-np.pi, np.pi, n),
                 rng.uniform(-1e3, 1e3, n), rng.uniform(-1e6, 1e6, n),
                 rng.uniform(-TRIG_BIG, TRIG_BIG, n),
                 np.exp(rng.uniform(np.log(1e6), np.log(1e300), n)) * rng.choice([-1, 1], n),
                 k * (np.pi / 2), np.nextafter(k * (np.pi / 2), 0)]
    x = np.concatenate([*parts, VMATH_EDGES])
    with np.errstate(all="ignore"):
        return x.astype(dtype)


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(VMATH))
def test_compiled_vmath_is_within_an_ulp(name, dtype):
    """The CPU kernels' sin, cos, log, log2, log10, log1p, expm1, exp2, tanh, sinh, cosh,
    arcsinh, arccosh, arctanh, cbrt, arctan, arcsin and arccos are lazyarray's own (no libm call in
    the vectorized loop;
    sin/cos take libm above 2**30 in a fix-up pass): over small, moderate and huge arguments
    within one ulp of a reference one precision wider (float32: computed in float64; float64:
    in long double where it is wider), and never more than one ulp further from NumPy's result
    than NumPy's own result is from that reference (NumPy's float32 SIMD log/sin/cos and some
    libms' float64 cbrt, cosh, arccosh, ... are off by 2-3 ulp themselves); the edges bit for
    bit."""
    x = _vmath_inputs(name, dtype)
    with la.options(backend="cpu", eager_threshold=0), np.errstate(all="ignore"):
        got = np.asarray(getattr(la, name)(la.asarray(x)))
        want = VMATH[name](x)
        exact = VMATH[name](x.astype(_wider(dtype))).astype(dtype)
    assert got.dtype == want.dtype
    if name == "tan":  # above 2**30 libm's tan (NumPy's own code differs near the poles)
        big = np.abs(x) > TRIG_BIG
        assert np.array_equal(got[big], _libm_tan(x[big]), equal_nan=True)
        x, got, want, exact = x[~big], got[~big], want[~big], exact[~big]
    big = np.abs(x) > TRIG_BIG
    near = _ulp_distance(got, exact)
    if name in ("sin", "cos"):  # above 2**30 NumPy's own libm call (checked below)
        near = near[~big]
    assert near.max() <= 1
    d = np.maximum(_ulp_distance(got, want) - _ulp_distance(want, exact), 0)
    assert d.max() <= 1, (x[d.argmax()], got[d.argmax()], want[d.argmax()])
    if name in ("sin", "cos"):  # the slow path is libm's float64 call: the same bits
        with np.errstate(all="ignore"):
            libm = VMATH[name](x[big].astype(np.float64)).astype(dtype)
        assert np.array_equal(got[big], libm, equal_nan=True)
    edges = np.isinf(want) | (np.abs(want) < np.finfo(dtype).tiny)  # +-0, subnormals, +-inf
    if name == "exp2":  # NumPy's own subnormals are not all correctly rounded (float32's
        # 2**-149.6 is 0): ours are within an ulp, zeros and infinities the correct ones
        want = exact if dtype == np.float32 else want
        edges = np.isinf(want) | (want == 0)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[edges], want[edges])  # bit for bit, -0.0 included
    assert np.array_equal(np.signbit(got[edges]), np.signbit(want[edges]))
    assert np.array_equal(np.isinf(got), np.isinf(want))


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_arctan2_is_within_an_ulp(dtype):
    """arctan2 (lazyarray's own: the quotient as a double-double, then arctan's reduction):
    within one ulp of NumPy over every quadrant and ratio, and every pair of signed zeros,
    infinities, NaN, subnormals and extremes bit for bit (NumPy's table of special cases)."""
    rng = np.random.default_rng(8)
    n = 100_000
    mag = lambda k: np.exp(rng.uniform(-k, k, n)) * rng.choice([-1, 1], n)  # noqa: E731
    y = np.concatenate([rng.standard_normal(n), mag(20), mag(700), rng.uniform(-1, 1, n)])
    x = np.concatenate([rng.standard_normal(n), mag(20), mag(700), y[-n:] * (
        1 + rng.uniform(-1e-3, 1e-3, n))])  # (the last: |y| near |x|, the swap's edge)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -5e-324, 1e-310,
                      -1e-310, 1.7976931348623157e308, -1.7976931348623157e308, 3.0])
    ey, ex = (a.ravel() for a in np.meshgrid(edges, edges))
    y, x = np.concatenate([y, ey]).astype(dtype), np.concatenate([x, ex]).astype(dtype)
    _assert_binary_within_an_ulp("arctan2", y, x, lambda y, x, want: ~(  # 0, inf, NaN operands
        np.isfinite(y) & np.isfinite(x) & (y != 0) & (x != 0)))


def _assert_binary_within_an_ulp(name, a, b, special):
    """The compiled la.<name>(a, b) within one ulp of NumPy's (float32: of the correctly
    rounded value, and no further from NumPy's than NumPy's own is from it); where
    `special(a, b, want)` is true, NumPy's bits (signed zeros, infinities; NaN where NumPy's
    is, of either sign)."""
    f = getattr(np, name)
    with la.options(backend="cpu", eager_threshold=0), np.errstate(all="ignore"):
        got = np.asarray(getattr(la, name)(la.asarray(a), la.asarray(b)))
        want = f(a, b)
        exact = f(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    assert got.dtype == want.dtype
    assert _ulp_distance(got, exact).max() <= 1
    d = _ulp_distance(got, want)
    if a.dtype == np.float32:
        d = np.maximum(d - _ulp_distance(want, exact), 0)
    assert d.max() <= 1, (a[d.argmax()], b[d.argmax()], got[d.argmax()], want[d.argmax()])
    sp = special(a, b, want)
    assert np.array_equal(got[sp], want[sp], equal_nan=True)
    sp &= ~np.isnan(want)  # a NaN's sign is the libm's choice (glibc and SVML differ)
    assert np.array_equal(np.signbit(got[sp]), np.signbit(want[sp]))


POW_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5,
             3.0, -3.0, 2.5, -2.5, 5e-324, -5e-324, 1e-310, 1.7976931348623157e308, -1.7976931348623157e308,
             2.0 ** 53, -(2.0 ** 53), 2.0 ** 53 + 2, 2.0 ** 52 + 1, -(2.0 ** 52 + 1), 1e300,
             1023.0, 1024.0, -1074.0, -1075.0, 0.9999999999999999, 1.0000000000000002]


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_power_is_within_an_ulp(dtype):
    """power of floats (lazyarray's own: log|x| as a double-double, exp of the product):
    within one ulp of NumPy for moderate and huge exponents, bases near 1, results near
    overflow and in the subnormals, negative bases to integer powers; every pair of signed
    zeros, infinities, NaN, +-1, subnormals, extremes and odd/even/huge integers bit for bit
    wherever the result is 0, inf or NaN."""
    rng = np.random.default_rng(13)
    n = 50_000
    wide = np.exp(rng.uniform(-700, 700, n))
    x = np.concatenate([rng.uniform(0.1, 10, n), rng.uniform(0.5, 2, n), wide, wide,
                        1 + rng.uniform(-1e-9, 1e-9, n), -rng.uniform(0.1, 10, n),
                        rng.uniform(1, 3, n), rng.uniform(1e-310, 1e-300, n)])
    y = np.concatenate([rng.uniform(-3, 3, n), rng.uniform(-700, 700, n), rng.uniform(-1, 1, n),
                        rng.uniform(-700, 700, n) / np.abs(np.log(wide)),
                        rng.uniform(-1e11, 1e11, n), np.round(rng.uniform(-40, 40, n)),
                        rng.uniform(-1100, -400, n), rng.uniform(0.5, 1, n)])
    ey, ex = (a.ravel() for a in np.meshgrid(POW_EDGES, POW_EDGES))
    with np.errstate(all="ignore"):
        x, y = np.concatenate([x, ex]).astype(dtype), np.concatenate([y, ey]).astype(dtype)
    _assert_binary_within_an_ulp("power", x, y, lambda x, y, want: ~np.isfinite(want) | (
        want == 0))


@pytest.mark.parametrize("dtypes", [("float64", "int64"), ("int32", "float32"),
                                    ("float32", "float32"), ("bool", "float64")], ids=str)
def test_compiled_power_of_mixed_operands(dtypes):
    """A float power of an integer or boolean operand takes NumPy's result type, within an
    ulp of NumPy; inside a fused expression and a reduction too."""
    rng = np.random.default_rng(14)
    a = (rng.uniform(0, 5, 40_000) > 2.5) if dtypes[0] == "bool" else \
        rng.uniform(0.1, 5, 40_000).astype(dtypes[0]) if dtypes[0][0] == "f" else \
        rng.integers(1, 50, 40_000).astype(dtypes[0])
    b = rng.integers(-5, 5, 40_000).astype(dtypes[1]) if dtypes[1][0] == "i" else \
        rng.uniform(-3, 3, 40_000).astype(dtypes[1])
    with la.options(backend="cpu", eager_threshold=0):
        got = np.asarray(la.asarray(a) ** la.asarray(b))
        want = a ** b
        assert got.dtype == want.dtype and _ulp_distance(got, want).max() <= 1
        fused = np.asarray((la.asarray(a) ** la.asarray(b)) * 2 + 1)
        assert _ulp_distance(fused, got * 2 + 1).max() <= 1
        total = float(np.asarray((la.asarray(a) ** la.asarray(b)).sum()))
        assert np.isclose(total, float(want.sum()), rtol=1e-5)  # (inf: 0 ** -k)


def test_compiled_power_warns_as_numpy():
    """The floating-point warnings of power are NumPy's, at the line that needs the value."""
    x = np.full(40_000, -2.0)
    x[7] = 0.0
    with la.options(backend="cpu", eager_threshold=0), np.errstate(all="warn"):
        with pytest.warns(RuntimeWarning, match="invalid value encountered in power"):
            got = np.asarray(la.asarray(x) ** 1.5)
        assert np.isnan(got[0]) and got[7] == 0.0
        with pytest.warns(RuntimeWarning, match="divide by zero encountered in power"):
            got = np.asarray(la.asarray(x) ** -3.0)
        assert got[7] == np.inf and got[0] == -0.125
        with pytest.warns(RuntimeWarning, match="overflow encountered in power"):
            got = np.asarray(la.asarray(np.full(40_000, 10.0)) ** 400.0)
        assert np.isinf(got).all()


@pytest.mark.usefixtures("fast_math")
def test_compiled_log2_of_a_power_of_two_is_exact():
    """log2(2**k) is k and log10(10**k) NumPy's value, bit for bit, for every k a double
    holds (subnormal powers of two included)."""
    p2, p10 = 2.0 ** np.arange(-1074, 1024), 10.0 ** np.arange(-323, 309)
    with la.options(backend="cpu", eager_threshold=0):
        got2 = np.asarray(la.log2(la.asarray(p2)))
        got10 = np.asarray(la.log10(la.asarray(p10)))
    np.testing.assert_array_equal(got2, np.arange(-1074.0, 1024.0))
    np.testing.assert_array_equal(got10, np.log10(p10))


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("name", sorted(VMATH))
@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(1, 200),
                    elements=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)))
def test_compiled_vmath_hypothesis(name, x):
    """Any float64 (NaN, inf, subnormal, huge, signed zero) in any position of a block: within
    one ulp of NumPy, beyond NumPy's own distance from a wider reference; and inside a fused
    expression and a reduction."""
    with la.options(backend="cpu", eager_threshold=0), np.errstate(all="ignore"):
        f = getattr(la, name)
        got = np.asarray(f(la.asarray(x)))
        want = VMATH[name](x)
        off = _ulp_distance(want, VMATH[name](x.astype(_wider(x.dtype))).astype(x.dtype))
        if name in ("tan", "sin", "cos"):  # above 2**30 libm's float64 call
            big = np.abs(x) > TRIG_BIG
            off[big] = 0
        if name == "tan":  # (`test_compiled_vmath_is_within_an_ulp`)
            assert np.array_equal(got[big], _libm_tan(x[big]), equal_nan=True)
            want = np.where(big, got, want)
        assert (_ulp_distance(got, want) - off).max() <= 1
        assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))
        fused = np.asarray(f(la.asarray(x)) * 2.0 + 1.0)
        # the fused kernel does the same arithmetic on the same values (comparing with
        # `want * 2 + 1` would amplify the one-ulp difference wherever `* 2 + 1` cancels,
        # e.g. log1p(-1/3) * 2 + 1: 4 ulp)
        assert _ulp_distance(fused, got * 2.0 + 1.0).max() <= 1
        if not np.isnan(want).any() and not np.isinf(want).any():
            s = float(np.asarray(f(la.asarray(x)).sum()))
            assert abs(s - want.sum()) <= 1e-12 * max(1.0, np.abs(want).sum())


_BIG_MATH_SAMPLE = ("power", "arctan2", "arccosh", "expm1", "tan_fast")


@pytest.mark.usefixtures("fast_math")
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=() if n in _BIG_MATH_SAMPLE else pytest.mark.slow)
    for n in ("power", "arctan2", "cbrt", "exp2", "expm1", "tan_fast", "arcsin", "arccos",
              "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh")])
def test_big_math_is_inlined_by_llvm_and_vectorizes(name):
    """The big math helpers are compiled once and inlined by LLVM (not on Numba's IR): a loop
    over one has no call into backends/numba_scalar left, and LLVM vectorized it."""
    import re

    from lazyarray.backends import numba_scalar as h

    f = getattr(h, name)
    if h._INLINED_BY_LLVM[name] == 1:
        @numba.njit(error_model="numpy")
        def loop(out, a, b):
            for i in range(a.size):
                out[i] = f(a[i])
    else:
        @numba.njit(error_model="numpy")
        def loop(out, a, b):
            for i in range(a.size):
                out[i] = f(a[i], b[i])
    a, b = np.linspace(0.1, 0.9, 64) + (name == "arccosh"), np.linspace(-3, 3, 64)
    out = np.empty(64)
    loop(out, a, b)
    want = np.tan if name == "tan_fast" else getattr(np, name)
    np.testing.assert_allclose(out, want(a) if h._INLINED_BY_LLVM[name] == 1 else want(a, b),
                               rtol=5e-16)
    ir = loop.inspect_llvm(loop.signatures[0])
    assert not [c for c in re.findall(r"call [^@]*@([\w.$]+)", ir) if re.search(r"numba_(scalar|fp|exp|log|trig|loops)", c)]
    assert re.search(r"<(4|8) x double>", ir)


@pytest.mark.usefixtures("fast_math")
def test_compiled_trig_huge_arguments_in_fused_blocks():
    """Huge arguments scattered through blocks of a fused 1-d loop, a 2-d strided loop, a
    reduction and a nested sin(cos(...)): each element as NumPy has it (within an ulp; the
    huge ones bit for bit), none of the others disturbed."""
    rng = np.random.default_rng(3)
    n = 5_000
    e = rng.uniform(-10, 10, n)
    e[::97] = rng.uniform(1e10, 1e300, len(e[::97]))
    e[5], e[6], e[7], e[200] = np.inf, np.nan, -0.0, -np.inf
    a = rng.uniform(-1, 1, n)
    big = np.abs(e) > TRIG_BIG
    with la.options(backend="cpu", eager_threshold=0), np.errstate(all="ignore"):
        A, E = la.asarray(a), la.asarray(e)
        got = np.asarray(A * 3.0 - la.sin(E) + la.cos(E))
        want = a * 3.0 - np.sin(e) + np.cos(e)
        assert np.array_equal(got[big], want[big], equal_nan=True)
        assert np.allclose(got, want, rtol=0, atol=1e-15, equal_nan=True)
        assert np.array_equal(np.asarray(la.sin(E))[big], np.sin(e)[big], equal_nan=True)
        got_tan = np.asarray(la.tan(E) + A * 0.0)
        assert np.array_equal(got_tan[big], _libm_tan(e[big]), equal_nan=True)
        assert _ulp_distance(got_tan[~big], np.tan(e[~big])).max() <= 1
        m = e.reshape(50, 100)
        got2 = np.asarray(la.sin(la.asarray(m)[:, ::2] * 1.0))
        assert _ulp_distance(got2, np.sin(m[:, ::2])).max() <= 1
        fin = np.where(np.isfinite(e), e, 1.0)
        s = float(np.asarray(la.cos(la.asarray(fin)).sum()))
        assert abs(s - np.cos(fin).sum()) < 1e-10
        rows = np.asarray(la.sin(la.asarray(fin.reshape(50, 100))).sum(axis=1))
        assert np.allclose(rows, np.sin(fin.reshape(50, 100)).sum(axis=1), rtol=0, atol=1e-12)
        nested = np.asarray(la.sin(la.cos(la.asarray(fin)) * 2.0))
        assert _ulp_distance(nested, np.sin(np.cos(fin) * 2.0)).max() <= 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_maximum_minimum_clip_bit_for_bit(dtype):
    """Compiled maximum, minimum and clip give NumPy's bits on every pair of specials: NaN
    (the first operand's, then the second's) wins, and a tie of 0.0 and -0.0 gives the second
    operand (Numba's np.maximum returned the first). clip with array bounds is NumPy's array
    loop, minimum(maximum(x, lo), hi), bit for bit (NumPy's loop for scalar bounds keeps x on
    a tie of zeros: the scalar bounds below are not zeros)."""
    sp = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 0.1, 0.3, 1.0, -1.0], dtype)
    a, b = (g.ravel() for g in np.meshgrid(sp, sp))
    c = np.roll(np.repeat(sp, len(sp)), 3)
    reps = 40_000 // a.size + 1  # large enough for a compiled kernel
    a, b, c = np.tile(a, reps), np.tile(b, reps), np.tile(c, reps)
    ib = np.dtype(f"i{a.itemsize}")
    with la.options(eager_threshold=0):
        for f in (np.maximum, np.minimum):
            got = np.asarray(getattr(la, f.__name__)(la.asarray(a), la.asarray(b)))
            assert got.dtype == dtype and np.array_equal(got.view(ib), f(a, b).view(ib)), f
        got = np.asarray(la.clip(la.asarray(a), la.asarray(b), la.asarray(c)))
        assert np.array_equal(got.view(ib), np.clip(a, b, c).view(ib))
        got = np.asarray(la.clip(la.asarray(a), dtype(0.1), dtype(0.3)))
        assert np.array_equal(got.view(ib), np.clip(a, dtype(0.1), dtype(0.3)).view(ib))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("eager", [True, False], ids=["eager", "compiled"])
def test_pow_by_scalars_takes_ndarray_pows_fast_paths(dtype, eager):
    """x ** 2, 0.5, -1 and 1 are square, sqrt, reciprocal and positive in NumPy's operator,
    whose bits differ from pow's (x*x, 1/x, a complex 1/z); on complex arrays only for a
    Python int exponent, or the float 0.5; NumPy scalar exponents promote first. Bit for
    bit, signed zeros, infinities and NaN included."""
    rng = np.random.default_rng(12)
    x = np.concatenate([[-0.0, 0.0, -np.inf, np.inf, -2.0, 2.0, np.nan, 1e-310, 3.0],
                        np.exp(rng.uniform(-30, 30, 1500))])
    if dtype.startswith("complex"):
        x = x + 1j * np.exp(rng.uniform(-5, 5, x.size)) * rng.choice([-1, 1], x.size)
    x = x.astype(dtype)
    exps = [-1, 1, -1.0, 1.0, 2, 2.0, 0.5, np.float64(-1), np.int64(1), np.float64(2),
            np.float32(0.5), np.int8(2), np.float64(0.5), np.float16(2)]
    with np.errstate(all="ignore"), la.options(**({} if eager else {"eager_threshold": 0})):
        for e in exps:
            got, want = np.asarray(la.asarray(x) ** e), x ** e
            assert got.dtype == want.dtype, (e, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want, err_msg=repr(e))
            assert np.array_equal(np.signbit(got.real), np.signbit(want.real)), repr(e)


def test_float64_arithmetic_compiles_as_operators_with_numpys_bits():
    """float64 + - * / of float64 operands is written as Python's operators in the kernel
    (`OpDef.f8`: cheaper for Numba to type than NumPy's ufunc on two scalars), with the same
    IEEE result as NumPy's loop: signed zeros, infinities, NaN, subnormals, x / 0."""
    x = np.array([1.5, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e308, 5e-324, -2.0, 3.0] * 5000)
    y = np.array([0.0, -0.0, 2.0, np.inf, 1.0, 1.0, 1e308, 0.5, -0.0, 7.0] * 5000)
    want = (x + y) * (x - y) / y - x * 3.0 / (y - y)
    with la.options(eager_threshold=0), np.errstate(all="ignore"):
        a, b = la.asarray(x), la.asarray(y)
        expr = (a + b) * (a - b) / b - a * 3.0 / (b - b)
        source = "".join(k.source for k in la.explain(expr).kernels)
        got = np.asarray(expr)
    assert " / " in source and " * " in source and "np.divide(" not in source
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # (NaN where NumPy has NaN)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()
    x32, y32 = x.astype(np.float32), y.astype(np.float32)  # other dtypes: NumPy's ufunc
    with la.options(eager_threshold=0), np.errstate(all="ignore"):
        e32 = la.asarray(x32) * la.asarray(y32) - la.asarray(x32) / la.asarray(y32)
        assert "np.divide(" in "".join(k.source for k in la.explain(e32).kernels)
        got32 = np.asarray(e32)
    want32 = x32 * y32 - x32 / y32
    assert got32.dtype == want32.dtype == np.float32 and got32.shape == want32.shape
    np.testing.assert_array_equal(got32, want32)
