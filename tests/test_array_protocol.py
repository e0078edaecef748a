"""The Python/NumPy object protocol of lazy arrays: repr/str, tolist, item,
float/int/bool/complex/__index__, iteration, len, __array__, operators
(incl. reflected and unary), NumPy scalars and arrays as the other operand,
in-place operators."""

import operator

import numpy as np
import pytest

import lazyarray as la
from helpers import assert_like_numpy, check_against_numpy, error_category, run_numpy


def _sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        v = rng.random(shape) < 0.5
    elif dtype.kind in "iu":
        v = rng.integers(0 if dtype.kind == "u" else -50, 50, size=shape)
    elif dtype.kind == "c":
        v = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        v = rng.standard_normal(shape) * 100
    return np.asarray(v).astype(dtype)


def same_python_result(fn, a_np, a_la):
    """``fn`` observes a value (float(), repr(), ...): same result and type,
    or the same exception class, as NumPy."""
    status, expected = run_numpy(lambda: fn(a_np))
    if status == "error":
        with pytest.raises(error_category(expected)):
            fn(a_la)
        return
    got = fn(a_la)
    assert type(got) is type(expected), f"type {type(got)} != numpy's {type(expected)}"
    if expected != expected:  # NaN (float or complex): compare the spelling
        assert repr(got) == repr(expected), f"{got!r} != numpy's {expected!r}"
    else:
        assert got == expected, f"{got!r} != numpy's {expected!r}"


# --------------------------------------------------------------------------
# repr / str
# --------------------------------------------------------------------------

REPR_CASES = [
    ((), "float64"), ((), "int32"), ((), "bool"), ((), "complex128"), ((), "float32"),
    ((5,), "float64"), ((5,), "float32"), ((5,), "int8"), ((5,), "uint64"), ((5,), "bool"),
    ((5,), "complex64"), ((5,), "float16"), ((2, 3), "float64"), ((2, 3), "int64"),
    ((2, 2, 2), "int16"), ((0,), "float64"), ((3, 0), "int32"), ((0,), "bool"),
    ((2000,), "float64"), ((40, 40), "int64"), ((1, 1, 1), "complex128"),
]


@pytest.mark.parametrize("shape, dtype", REPR_CASES, ids=lambda v: str(v))
def test_repr_and_str(mode, shape, dtype):
    a = _sample(shape, dtype)
    x = la.asarray(a)
    assert repr(x) == repr(a)
    assert str(x) == str(a)


def test_repr_special_values_and_expressions(mode):
    a = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-20, 123456789.0])
    x = la.asarray(a)
    assert repr(x) == repr(a)
    assert str(x) == str(a)
    assert repr(x.astype(np.float32)) == repr(a.astype(np.float32))
    assert repr(x * 2) == repr(a * 2)
    assert repr((x[::2] > 0)) == repr(a[::2] > 0)
    assert repr(la.asarray(np.array([1 + 2j, np.nan]))) == repr(np.array([1 + 2j, np.nan]))


# --------------------------------------------------------------------------
# tolist / item / Python scalar conversions / __index__
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool", "complex128"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0,), (2, 0)], ids=str)
def test_tolist(mode, shape, dtype):
    a = _sample(shape, dtype)
    x = la.asarray(a)
    got, expected = x.tolist(), a.tolist()
    assert got == expected

    def types(v):
        return [types(i) for i in v] if isinstance(v, list) else type(v)

    assert types(got) == types(expected)
    assert (x + x).tolist() == (a + a).tolist()


ITEM_CASES = [((), ()), ((1,), ()), ((1, 1), ()), ((4,), (2,)), ((4,), (-1,)), ((2, 3), (4,)),
              ((2, 3), (1, 2)), ((2, 3), ()), ((4,), (9,)), ((2, 3), (2, 0))]


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex64"])
@pytest.mark.parametrize("shape, args", ITEM_CASES, ids=lambda v: str(v))
def test_item(mode, shape, args, dtype):
    a = _sample(shape, dtype)
    same_python_result(lambda v: v.item(*args), a, la.asarray(a))


CONVERSIONS = {"float": float, "int": int, "bool": bool, "complex": complex,
               "index": operator.index}
CONVERSION_VALUES = [
    np.array(2.75), np.array(-3), np.array(0), np.array(True), np.array(1 + 2j), np.array(np.nan),
    np.array(7, np.uint8), np.array(2.0, np.float32), np.array([1.5]), np.array([[2]]),
    np.array([1, 2]), np.array([]), np.array([0]), np.array(np.inf),
]


@pytest.mark.parametrize("value", CONVERSION_VALUES, ids=lambda a: f"{a.dtype}{list(a.shape)}={a.tolist()}")
@pytest.mark.parametrize("conv", list(CONVERSIONS), ids=str)
def test_python_scalar_conversions(mode, conv, value):
    """Includes NumPy's errors: ValueError for the truth value of several
    elements, TypeError for int()/float() of a multi-element array,
    TypeError for __index__ of a float array, ..."""
    fn = CONVERSIONS[conv]
    same_python_result(fn, value, la.asarray(value))
    # and of a lazy expression
    same_python_result(fn, np.asarray(value * 1), la.asarray(value) * 1)


def test_index_protocol_in_python_sequences(mode):
    seq = [10, 20, 30, 40]
    i = la.asarray(np.array(2)) + 1
    assert seq[i] == 40
    assert seq[la.asarray(np.array(-1))] == 40
    assert list(range(10))[la.asarray(np.array(1)):la.asarray(np.array(4))] == [1, 2, 3]
    with pytest.raises(TypeError):
        seq[la.asarray(np.array(1.0))]


def test_comparison_as_python_bool(mode):
    x = la.asarray(np.array([1.0, 5.0]))
    assert bool(x[1] > 3) is True
    assert (x[0] > 3) or True
    if x[0] < x[1]:
        pass
    else:  # pragma: no cover
        pytest.fail("x[0] < x[1] should be truthy")
    with pytest.raises(ValueError):
        if x > 0:  # noqa: SIM108 - truth value of several elements
            pass


# --------------------------------------------------------------------------
# iteration / len
# --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4,), (3, 2), (0,), (0, 3), (2, 0), (1, 2, 3)], ids=str)
def test_iteration_and_len(mode, shape):
    a = _sample(shape, "float64")
    x = la.asarray(a)
    assert len(x) == len(a)
    rows = list(x * 2)
    assert len(rows) == len(a)
    for got, expected in zip(rows, a * 2):
        assert_like_numpy(got, expected)


def test_iteration_yields_scalars_like_numpy(mode):
    a = np.array([1.5, -2.0, 3.0])
    x = la.asarray(a)
    got = [float(v) for v in x]
    assert got == [1.5, -2.0, 3.0]
    assert [v.item() if hasattr(v, "item") else v for v in la.asarray(np.arange(3))] == [0, 1, 2]


def test_len_and_iter_of_0d_are_type_errors(mode):
    x = la.asarray(np.array(3.0))
    with pytest.raises(TypeError):
        len(x)
    with pytest.raises(TypeError):
        iter(x)
    with pytest.raises(TypeError):
        len(x + 1)


def test_len_does_not_materialize():
    x = la.asarray(np.ones((5, 2))) * 3
    before = la.cache_info()["materializations"]
    assert len(x) == 5
    assert x.shape == (5, 2) and x.ndim == 2 and x.size == 10 and x.dtype == np.float64
    assert x.T.shape == (2, 5)
    assert la.cache_info()["materializations"] == before


# --------------------------------------------------------------------------
# __array__
# --------------------------------------------------------------------------


def test_array_protocol(mode):
    a = _sample((3, 4), "float64")
    x = la.asarray(a) + 1
    expected = a + 1
    r = np.asarray(x)
    assert isinstance(r, np.ndarray) and type(r) is np.ndarray
    assert_like_numpy(r, expected)
    assert_like_numpy(np.asarray(x, dtype=np.float32), expected.astype(np.float32))
    assert_like_numpy(x.__array__(), expected)
    assert_like_numpy(x.__array__(np.int16), expected.astype(np.int16))
    assert_like_numpy(x.__array__(dtype=np.complex128), expected.astype(np.complex128))
    c = np.array(x, copy=True)
    assert_like_numpy(c, expected)
    c[...] = -1  # a copy: the lazy array keeps its value
    assert_like_numpy(x, expected)
    c2 = x.__array__(copy=True)
    c2[...] = -2
    assert_like_numpy(x, expected)


def test_numpy_functions_accept_lazy_arrays(mode):
    a = _sample((3, 4), "float64")
    x = la.asarray(a)
    assert_like_numpy(np.array(x * 2), a * 2)
    assert_like_numpy(np.concatenate([np.asarray(x), np.asarray(x)]), np.concatenate([a, a]))
    assert np.allclose(np.asarray(la.sin(x)), np.sin(a))


# --------------------------------------------------------------------------
# operators
# --------------------------------------------------------------------------

ARITH_OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"]
BIT_OPS = ["and_", "or_", "xor", "lshift", "rshift"]
CMP_OPS = ["lt", "le", "eq", "ne", "gt", "ge"]

OP_DTYPES = {
    **{op: ["float64", "int64"] for op in ARITH_OPS},
    **{op: ["int32", "bool"] for op in BIT_OPS},
    **{op: ["float64", "uint8"] for op in CMP_OPS},
}
OP_DTYPES["lshift"] = OP_DTYPES["rshift"] = ["int32", "uint8"]


def _operand_values(op, dtype, seed):
    a = _sample((2, 5), dtype, seed)
    if op in ("floordiv", "mod", "truediv") and a.dtype.kind in "iu":
        a = np.where(a == 0, 3, a).astype(dtype)
    if op == "pow" and a.dtype.kind in "iu":
        a = (np.abs(a) % 4).astype(dtype)
    if op in ("lshift", "rshift"):
        a = (np.abs(a.astype(np.int64)) % 7).astype(dtype)
    if op == "pow" and a.dtype.kind == "f":
        a = np.abs(a) / 50
    return a


@pytest.mark.parametrize(
    "op, dtype", [(op, dt) for op, dts in OP_DTYPES.items() for dt in dts], ids=lambda v: str(v)
)
def test_binary_operators(mode, op, dtype):
    fn = getattr(operator, op)
    a = _operand_values(op, dtype, 1)
    b = _operand_values(op, dtype, 2)
    x, y = la.asarray(a), la.asarray(b)
    scalar = {"bool": True}.get(dtype, 2 if np.dtype(dtype).kind in "iu" or op == "pow" else 2.5)
    check_against_numpy(lambda: fn(a, b), lambda: fn(x, y), what=f"x {op} y")
    check_against_numpy(lambda: fn(a, scalar), lambda: fn(x, scalar), what=f"x {op} {scalar!r}")
    # reflected: `2 - x`, `2 ** x`, `1 / x`
    check_against_numpy(lambda: fn(scalar, b), lambda: fn(scalar, y), what=f"{scalar!r} {op} y")
    # broadcasting against a row and a 0-d array
    check_against_numpy(lambda: fn(a, b[0]), lambda: fn(x, y[0]), what=f"x {op} y[0]")


@pytest.mark.parametrize("scalar", [np.float64(0.5), np.float32(0.5), np.int8(3), np.int64(-2),
                                    np.complex64(1 + 1j), np.bool_(True)], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_numpy_scalars_on_either_side(mode, scalar, dtype):
    a = _sample((6,), dtype, 3)
    x = la.asarray(a)
    for op in (operator.mul, operator.add, operator.sub):
        check_against_numpy(lambda: op(scalar, a), lambda: op(scalar, x), what=f"{scalar!r} {op.__name__} x")
        check_against_numpy(lambda: op(a, scalar), lambda: op(x, scalar), what=f"x {op.__name__} {scalar!r}")


def test_numpy_array_on_either_side(mode):
    a = _sample((3, 4), "float64", 4)
    b = _sample((4,), "float64", 5)
    x = la.asarray(a)
    for op in (operator.mul, operator.add, operator.sub, operator.truediv, operator.gt):
        assert_like_numpy(op(x, b), op(a, b), what=f"lazy {op.__name__} numpy")
        assert_like_numpy(np.asarray(op(b, x)), op(b, a), what=f"numpy {op.__name__} lazy")


UNARY = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert, "abs": abs}


@pytest.mark.parametrize("dtype", ["float64", "int8", "uint16", "bool", "complex128"])
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_operators(mode, op, dtype):
    fn = UNARY[op]
    a = _sample((7,), dtype, 6)
    check_against_numpy(lambda: fn(a), lambda: fn(la.asarray(a)), what=op)


def test_builtin_divmod_and_pow(mode):
    a = np.array([7.5, -7.5, 3.0, -1.0])
    x = la.asarray(a)
    assert_like_numpy(divmod(x, 2), divmod(a, 2))
    assert_like_numpy(divmod(7, x), divmod(7, a))
    assert_like_numpy(pow(x, 2), pow(a, 2))
    assert_like_numpy(pow(2, x), pow(2, a))


def test_operator_dtype_promotion_with_python_scalars():
    """NEP 50 on operators, without materializing."""
    before = la.cache_info()["materializations"]
    for dt in ["int8", "uint8", "float32", "bool"]:
        a = np.ones(3, dt)
        x = la.asarray(a)
        for s in [1, 1.5, 1j, True]:
            for fn in (operator.add, operator.mul, operator.truediv, operator.lt):
                st_, exp = run_numpy(lambda: fn(a, s))
                if st_ == "error":
                    with pytest.raises(error_category(exp)):
                        fn(x, s)
                    continue
                got = fn(x, s)
                assert got.dtype == exp.dtype, f"{dt} {fn.__name__} {s!r}: {got.dtype} != {exp.dtype}"
                got = fn(s, x)
                assert got.dtype == fn(s, a).dtype
    assert la.cache_info()["materializations"] == before


# --------------------------------------------------------------------------
# in-place operators and item assignment (NumPy aliasing semantics)
# --------------------------------------------------------------------------


def test_inplace_operators(mode):
    a = np.arange(6.0)
    x = la.asarray(a)
    y = x            # same object, as in NumPy
    before = x * 1   # computed before the write: keeps the old value
    x += 1
    x *= 2
    assert y is x
    assert_like_numpy(x, (np.arange(6.0) + 1) * 2)
    assert_like_numpy(before, np.arange(6.0))
    xi = la.asarray(np.arange(5))
    xi += 1
    assert_like_numpy(xi, np.arange(5) + 1)
    with pytest.raises(TypeError):   # float result cannot be cast to int in place (UFuncTypeError)
        xi += 1.5


def test_setitem_through_views(mode):
    a = np.arange(10.0)
    x = la.asarray(a)
    v = x[::2]
    old = x + 0
    v[1:3] = -1.0
    a_ref = np.arange(10.0)
    a_ref[::2][1:3] = -1.0
    assert_like_numpy(x, a_ref)
    assert_like_numpy(v, a_ref[::2])
    assert_like_numpy(old, np.arange(10.0))
    x[0] = 100
    a_ref[0] = 100
    assert_like_numpy(v, a_ref[::2])


def test_array_api_namespace_and_info():
    x = la.asarray(np.arange(6.0)).reshape(2, 3)
    assert x.__array_namespace__() is la
    assert x.__array_namespace__(api_version="2024.12") is la
    with pytest.raises(ValueError, match="not supported"):
        x.__array_namespace__(api_version="2019.01")
    info = la.__array_namespace_info__()
    ref = np.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] and info.capabilities()["data-dependent shapes"]
    assert info.default_device() == "cpu" and info.devices() == ["cpu"] and x.device == "cpu"
    assert info.default_dtypes() == ref.default_dtypes()
    assert info.dtypes(kind="integral") == ref.dtypes(kind="integral")


def test_dlpack_round_trips_both_ways():
    x = la.asarray(np.arange(6.0)).reshape(2, 3) * 2  # pending: exporting computes it
    assert x.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(x)  # NumPy's consumer (versioned DLPack: read-only flag honoured)
    np.testing.assert_array_equal(y, np.arange(6.0).reshape(2, 3) * 2)
    legacy = x.__dlpack__()  # a legacy consumer cannot be told "read-only": it gets a copy
    assert type(legacy).__name__ == "PyCapsule"
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)
    z = la.from_dlpack(np.arange(4, dtype=np.int32))
    assert isinstance(z, la.ndarray) and z.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(z + 1), np.arange(4) + 1)
    with pytest.raises(ValueError, match="device"):
        la.from_dlpack(np.arange(3), device="tpu")


def test_every_ndarray_method_resolves():
    missing = [m for m in dir(np.ndarray) if not m.startswith("_") and not hasattr(la.ndarray, m)]
    assert missing == []


@pytest.mark.parametrize("name, call", [
    ("sort", lambda a: a.sort(axis=0)),
    ("partition", lambda a: a.partition(1, axis=1)),
    ("put", lambda a: a.put([0, 5], [-1.0, -2.0])),
    ("setflags", lambda a: a.setflags(write=False)),
    ("resize", lambda a: a.resize((2, 2), refcheck=False)),
    ("flat_set", lambda a: a.flat.__setitem__(slice(1, 4), 9.0)),
])
def test_mutating_methods_match_numpy(name, call):
    ref = np.random.default_rng(3).standard_normal((3, 4))
    a, n = la.asarray(ref), ref.copy()
    call(a)
    call(n)
    np.testing.assert_array_equal(np.asarray(a), n)
    assert a.flags.writeable == n.flags.writeable
    if name == "setflags":
        with pytest.raises(ValueError, match="read-only"):
            a[0, 0] = 1.0


def test_value_methods_match_numpy():
    ref = np.arange(12.0).reshape(3, 4)
    a = la.asarray(ref)
    assert a.tobytes() == ref.tobytes() and a.strides == ref.strides
    assert a[:, ::2].strides == ref[:, ::2].strides and a.T.strides == ref.T.strides
    assert list(a.flat) == list(ref.flat) and float(a.flat[5]) == ref.flat[5]
    np.testing.assert_array_equal(np.asarray(a.flat.copy()), ref.flat.copy())
    for m, args in (("argsort", ()), ("argpartition", (2,)), ("repeat", (2,)),
                    ("diagonal", (1,)), ("trace", ()), ("searchsorted", (5.5,)),
                    ("nonzero", ())):
        src, nsrc = (a[0], ref[0]) if m == "searchsorted" else (a, ref)
        got, want = getattr(src, m)(*args), getattr(nsrc, m)(*args)
        for g, w in zip(got if isinstance(want, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(np.asarray(g), w)
    with pytest.raises(ValueError, match="does not own its data"):
        a[1:].resize((2,))


# --------------------------------------------------------------------------
# scalars: what NumPy returns from full reductions, 0-d indexing and dot
# --------------------------------------------------------------------------

SCALAR_MAKERS = {
    "sum": lambda xp, a: a.sum(),
    "max": lambda xp, a: xp.max(a),
    "index": lambda xp, a: a[1],
    "dot": lambda xp, a: xp.dot(a, a),
    "sum_plus_one": lambda xp, a: a.sum() + 1,
}


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "bool",
                                   "complex128"])
@pytest.mark.parametrize("make", list(SCALAR_MAKERS))
@pytest.mark.parametrize("size", [5, 300_000])
def test_scalars_print_format_and_hash_as_numpys(make, dtype, size):
    a_np = _sample((size,), dtype, seed=3)
    s_np = SCALAR_MAKERS[make](np, a_np)
    s_la = SCALAR_MAKERS[make](la, la.asarray(a_np))
    if np.asarray(s_np).dtype.kind in "fc" and size > 5:
        # a large float sum may differ in its last bits (summation order: docs/semantics.md):
        # NumPy's scalar type of the same value prints and hashes as lazyarray's must
        np.testing.assert_allclose(np.asarray(s_la), s_np, rtol=1e-12)
        s_np = type(s_np)(np.asarray(s_la)[()])
    for fn in (repr, str, hash, lambda s: f"{s}", lambda s: {s: "k"}.get(s_np)):
        same_python_result(fn, s_np, s_la)
    if np.asarray(s_np).dtype.kind in "iu":
        same_python_result(lambda s: f"{s:>6d}", s_np, s_la)
    if np.asarray(s_np).dtype.kind == "f":
        same_python_result(lambda s: f"{s:.3f}", s_np, s_la)


def test_arrays_stay_unhashable():
    for a in (la.arange(3), la.asarray(3.0), la.zeros(())):
        with pytest.raises(TypeError, match="unhashable"):
            hash(a)


SCALAR_FUNCTIONS = {
    "median": lambda xp, a: xp.median(a), "percentile": lambda xp, a: xp.percentile(a, 30),
    "quantile": lambda xp, a: xp.quantile(a, 0.7), "nanvar": lambda xp, a: xp.nanvar(a),
    "nanstd": lambda xp, a: xp.nanstd(a), "count_nonzero": lambda xp, a: xp.count_nonzero(a),
    "norm": lambda xp, a: xp.linalg.norm(a), "vector_norm": lambda xp, a: xp.linalg.vector_norm(a),
    "matrix_norm": lambda xp, a: xp.linalg.matrix_norm(a),
    "searchsorted": lambda xp, a: xp.searchsorted(xp.sort(a.ravel()), 0.5),
    "interp": lambda xp, a: xp.interp(2.5, [1, 2, 3], [3, 2, 0]), "fix": lambda xp, a: xp.fix(3.7),
    "einsum": lambda xp, a: xp.einsum("ij,ij", a, a), "nan_to_num": lambda xp, a: xp.nan_to_num(
        np.inf), "matrix_rank": lambda xp, a: xp.linalg.matrix_rank(a),
}


@pytest.mark.parametrize("value", [1 + 2j, 2.5, 3, np.complex64(1 - 2j), np.float32(4.0)])
@pytest.mark.parametrize("part", ["real", "imag"])
def test_real_and_imag_of_scalars_are_numpys(part, value):
    """np.real/np.imag of a Python or NumPy scalar is its own attribute (a float, not a 0-d
    array), as NumPy's."""
    same_python_result(repr, getattr(np, part)(value), getattr(la, part)(value))


@pytest.mark.parametrize("name", list(SCALAR_FUNCTIONS))
def test_functions_return_numpys_scalars(name):
    """Where NumPy returns a scalar for a 0-d result, lazyarray's is a scalar too: it prints as
    NumPy's, hashes, and item assignment raises NumPy's TypeError."""
    a_np = np.array([[10.0, 7, 4], [3, 2, 1]]) / 10
    s_np, s_la = SCALAR_FUNCTIONS[name](np, a_np), SCALAR_FUNCTIONS[name](la, la.asarray(a_np))
    same_python_result(repr, s_np, s_la)
    same_python_result(hash, s_np, s_la)
    with pytest.raises(TypeError):
        s_la[...] = 0


@pytest.mark.parametrize("n", [3, 100_000])
def test_ufunc_outputs_by_position_are_numpys(n):
    """`np.isinf(x, y)`, `np.cos(x, out1)`, `np.divmod(a, b, q, r)`: outputs given by
    position are written and returned, as NumPy's; given twice, NumPy's TypeError."""
    x = np.linspace(-2.0, 2.0, n)
    x[0], x[-1] = -np.inf, np.inf
    for name, ins, outs in (("isinf", (x,), (np.zeros(n, np.int64),)),
                            ("cos", (x,), (np.zeros(n),)),
                            ("add", (x, 1.0), (np.zeros(n),)),
                            ("divmod", (x, 3.0), (np.zeros(n), np.zeros(n)))):
        la_outs = tuple(la.asarray(o) for o in outs)
        with np.errstate(all="ignore"):
            want = getattr(np, name)(*ins, *outs)
            got = getattr(la, name)(*(la.asarray(i) if isinstance(i, np.ndarray) else i
                                      for i in ins), *la_outs)
        if len(outs) == 1:
            assert got is la_outs[0]
        else:
            assert isinstance(got, tuple) and all(g is o for g, o in zip(got, la_outs))
        for o, w in zip(la_outs, outs):  # (compiled cos: within an ulp, docs/semantics.md)
            np.testing.assert_allclose(np.asarray(o), w, rtol=4e-16, atol=0)
    with pytest.raises(TypeError, match="both a positional and keyword"):
        la.cos(la.asarray(x), la.zeros(n), out=la.zeros(n))
    for bad in (3, [1.0] * n):  # an output that is not an array: NumPy's TypeError, not a crash
        with pytest.raises(TypeError, match="ArrayType"):
            la.add(la.asarray(x), 1.0, bad)
        with pytest.raises(TypeError, match="ArrayType"):
            la.add(la.asarray(x), 1.0, out=bad)


def test_numpys_own_functions_called_on_lazy_arrays_do_not_recurse():
    """`numpy.result_type(3, lazy)` (lazyarray re-exports NumPy's own result_type) gives
    NumPy's dtype without computing anything; `numpy.can_cast` of a lazy array too."""
    x = la.arange(3.0) * 2
    before = la.cache_info()["materializations"]
    assert np.result_type(3, x) == np.result_type(3, np.arange(3.0))
    assert la.result_type(3, la.arange(3, dtype=np.int8)) == np.int8
    assert la.cache_info()["materializations"] == before
    assert np.can_cast(x, np.int8) == np.can_cast(np.arange(3.0), np.int8)


@pytest.mark.parametrize("name, kwargs, out", [
    ("all", {}, np.empty((), bool)), ("any", {"axis": 1}, np.zeros(3, int)),
    ("sum", {"axis": 0}, np.zeros(3)), ("max", {"axis": 1}, np.zeros(3, np.float32))])
def test_reductions_write_into_numpys_own_out(name, kwargs, out):
    """A reduction with a NumPy array as `out=` writes into it and returns it, as NumPy."""
    data = np.arange(9.0).reshape(3, 3) - 2
    want_out, got_out = out.copy(), out.copy()
    want = getattr(np, name)(data > 0 if name in ("all", "any") else data, out=want_out, **kwargs)
    arg = la.asarray(data)
    got = getattr(la, name)(arg > 0 if name in ("all", "any") else arg, out=got_out, **kwargs)
    assert want is want_out and got is got_out
    assert got_out.tobytes() == want_out.tobytes()
