"""Array creation against NumPy: array/asarray, zeros/ones/full/empty and
*_like, arange, linspace, eye, identity; NumPy's dtype objects; copy-on-entry."""

import numpy as np
import pytest

import lazyarray as la
from helpers import ALL_DTYPES, assert_like_numpy, check_against_numpy, dtype_id


# --------------------------------------------------------------------------
# namespace: NumPy's own dtypes and scalar types
# --------------------------------------------------------------------------

SCALAR_TYPE_NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float16", "float32", "float64", "complex64", "complex128", "intp"]


@pytest.mark.parametrize("name", SCALAR_TYPE_NAMES)
def test_scalar_types_are_numpys(name):
    assert getattr(la, name) is getattr(np, name)


def test_array_type_names():
    assert la.Array is la.ndarray
    x = la.asarray([1.0, 2.0])
    assert isinstance(x, la.Array)
    assert x.dtype is np.dtype(np.float64) or x.dtype == np.float64
    assert isinstance(x.dtype, np.dtype)


# --------------------------------------------------------------------------
# array / asarray
# --------------------------------------------------------------------------

ARRAY_INPUTS = [
    ([1, 2, 3], "int list"),
    ([1.0, 2.5, -3.0], "float list"),
    ([1, 2.5], "mixed int float"),
    ([1, 1j], "int complex"),
    ([True, False], "bool list"),
    ([True, 2], "bool int"),
    ([[1, 2, 3], [4, 5, 6]], "nested"),
    ([[[1.5]], [[2.5]]], "nested 3d"),
    ((1, 2, 3), "tuple"),
    ([(1, 2), (3, 4)], "list of tuples"),
    ([], "empty list"),
    ([[]], "empty nested"),
    (5, "int scalar"),
    (2.5, "float scalar"),
    (1 + 2j, "complex scalar"),
    (True, "bool scalar"),
    (2**63, "uint64 range int"),
    (-(2**63), "int64 min"),
    (np.float32(1.5), "numpy float32 scalar"),
    (np.int8(-3), "numpy int8 scalar"),
    (np.arange(6).reshape(2, 3), "numpy int array"),
    (np.arange(6.0).reshape(3, 2).T, "numpy transposed array"),
    (np.arange(10, dtype=np.uint16)[::-3], "numpy strided array"),
    ([np.float32(1), np.float32(2)], "list of numpy float32"),
    ([[1, 2], [3]], "ragged"),  # ValueError in NumPy 2
]


@pytest.mark.parametrize("value", [v for v, _ in ARRAY_INPUTS], ids=[i for _, i in ARRAY_INPUTS])
@pytest.mark.parametrize("func", ["array", "asarray"])
def test_array_from_python_and_numpy(mode, func, value):
    check_against_numpy(lambda: getattr(np, func)(value), lambda: getattr(la, func)(value))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("func", ["array", "asarray"])
def test_array_dtype_argument(mode, func, dtype):
    for value in ([1, 0, 3], [[1.5, -2.0], [0.0, 7.25]], np.arange(4, dtype=np.int16), 3):
        if dtype.kind == "u" and isinstance(value, list) and np.any(np.asarray(value) < 0):
            continue  # negative -> unsigned: NumPy raises/ wraps depending on input kind
        check_against_numpy(
            lambda: getattr(np, func)(value, dtype=dtype),
            lambda: getattr(la, func)(value, dtype=dtype),
        )


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_asarray_numpy_arrays_of_every_dtype(mode, dtype):
    a = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    x = la.asarray(a)
    assert x.shape == a.shape and x.dtype == a.dtype and x.ndim == 2 and x.size == 12
    assert_like_numpy(x, a)


def test_asarray_of_lazy_array(mode):
    x = la.asarray(np.arange(5.0)) * 2
    y = la.asarray(x)
    assert isinstance(y, la.Array)
    assert_like_numpy(y, np.arange(5.0) * 2)
    assert_like_numpy(la.array(x, dtype=np.int32), (np.arange(5.0) * 2).astype(np.int32))


def test_asarray_copies_on_entry(mode):
    """Documented deviation from numpy.asarray: lazyarray copies, so later
    mutations of the NumPy source are never observed."""
    a = np.arange(6.0)
    x = la.asarray(a)
    y = la.array(a)
    z = x * 2 + 1              # built before the mutation, evaluated after
    a[:] = -100.0
    a[0] = 12345.0
    assert_like_numpy(x, np.arange(6.0))
    assert_like_numpy(y, np.arange(6.0))
    assert_like_numpy(z, np.arange(6.0) * 2 + 1)


def test_asarray_copies_views_of_numpy_arrays(mode):
    base = np.arange(12.0).reshape(3, 4)
    view = base[:, 1::2]
    x = la.asarray(view)
    base[...] = 0
    assert_like_numpy(x, np.arange(12.0).reshape(3, 4)[:, 1::2])


# --------------------------------------------------------------------------
# zeros / ones / full / empty and *_like
# --------------------------------------------------------------------------

SHAPES = [3, (3,), (2, 3), (), (0,), (2, 0, 4), [2, 2]]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("func", ["zeros", "ones"])
def test_zeros_ones(mode, func, shape):
    check_against_numpy(lambda: getattr(np, func)(shape), lambda: getattr(la, func)(shape))
    for dt in ("int8", np.uint32, np.complex64, bool, la.float32):
        check_against_numpy(lambda: getattr(np, func)(shape, dtype=dt),
                            lambda: getattr(la, func)(shape, dtype=dt))


@pytest.mark.parametrize(
    "fill, dtype",
    [(7, None), (2.5, None), (True, None), (1 + 2j, None), (np.float32(1.5), None),
     (np.int8(3), None), (2.7, "int32"), (-1, "int8"), (300, "uint8"), (np.nan, None),
     (3, "float32"), (np.inf, "float16")],
    ids=str,
)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 2)], ids=str)
def test_full(mode, shape, fill, dtype):
    check_against_numpy(lambda: np.full(shape, fill, dtype=dtype),
                        lambda: la.full(shape, fill, dtype=dtype))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_empty_has_shape_and_dtype(shape):
    for dt in (None, np.int16, "complex128"):
        expected = np.empty(shape, dtype=dt)
        got = la.empty(shape, dtype=dt)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert np.asarray(got).shape == expected.shape  # materializable


LIKE_SOURCES = [
    np.arange(6, dtype=np.int16).reshape(2, 3),
    np.linspace(0, 1, 4, dtype=np.float32),
    np.array(2.5),
    np.zeros((0, 3), np.complex128),
    np.array([True, False]),
]


@pytest.mark.parametrize("src", LIKE_SOURCES, ids=lambda a: f"{a.dtype}{list(a.shape)}")
def test_like_functions(mode, src):
    x = la.asarray(src)
    for name in ("zeros_like", "ones_like"):
        check_against_numpy(lambda: getattr(np, name)(src), lambda: getattr(la, name)(x))
        check_against_numpy(lambda: getattr(np, name)(src, dtype=np.float64),
                            lambda: getattr(la, name)(x, dtype=np.float64))
        # of a lazy expression
        check_against_numpy(lambda: getattr(np, name)(src[..., None]),
                            lambda: getattr(la, name)(x[..., None]))
    for fill in (3, 2.7, True):
        check_against_numpy(lambda: np.full_like(src, fill), lambda: la.full_like(x, fill))
    check_against_numpy(lambda: np.full_like(src, 2.7, dtype=np.float32),
                        lambda: la.full_like(x, 2.7, dtype=np.float32))
    e = la.empty_like(x)
    assert e.shape == src.shape and e.dtype == src.dtype
    e2 = la.empty_like(x, dtype=np.int8)
    assert e2.shape == src.shape and e2.dtype == np.int8


def test_like_functions_accept_numpy_arrays(mode):
    src = np.arange(4.0)
    check_against_numpy(lambda: np.ones_like(src), lambda: la.ones_like(src))
    check_against_numpy(lambda: np.full_like(src, 9), lambda: la.full_like(src, 9))


# --------------------------------------------------------------------------
# arange / linspace / eye / identity
# --------------------------------------------------------------------------

ARANGE_CASES = [
    ((5,), {}), ((2, 10), {}), ((10, 2, -3), {}), ((0, 1, 0.1), {}), ((5,), {"dtype": "float32"}),
    ((-3.5, 2), {}), ((0,), {}), ((5, 2), {}), ((1, 2, 0.3), {}), ((3, -3, -1), {"dtype": "int8"}),
    ((0, 10, 3), {"dtype": "float64"}), ((2.5,), {}), ((1, 8, 2), {"dtype": "uint16"}),
    ((-1.0, 1.0, 0.25), {"dtype": "float32"}), ((10**10, 10**10 + 5), {}),
]


@pytest.mark.parametrize("args, kwargs", ARANGE_CASES, ids=lambda v: str(v))
def test_arange(mode, args, kwargs):
    check_against_numpy(lambda: np.arange(*args, **kwargs), lambda: la.arange(*args, **kwargs))


def test_arange_expression(mode):
    check_against_numpy(lambda: np.arange(10) * 2 - np.arange(10)[::-1],
                        lambda: la.arange(10) * 2 - la.arange(10)[::-1])
    check_against_numpy(lambda: np.arange(0, 1, 0.125).reshape(2, 4).T,
                        lambda: la.arange(0, 1, 0.125).reshape(2, 4).T)


LINSPACE_CASES = [
    ((0, 1, 5), {}), ((0, 1, 5), {"endpoint": False}), ((2, 3, 1), {}), ((2, 3, 0), {}),
    ((-5, 5, 11), {}), ((1, -1, 7), {}), ((0, 10, 5), {"dtype": int}),
    ((0, 1, 4), {"dtype": "float32"}), ((0, 1, 7), {}), ((0.5, 0.5, 3), {}),
    ((0, 1, 1), {"endpoint": False}), ((0, 1j, 3), {}),
]


@pytest.mark.parametrize("args, kwargs", LINSPACE_CASES, ids=lambda v: str(v))
def test_linspace(mode, args, kwargs):
    check_against_numpy(lambda: np.linspace(*args, **kwargs), lambda: la.linspace(*args, **kwargs))


@pytest.mark.parametrize("args, kwargs", [((0, 1, 5), {}), ((0, 1, 1), {}), ((0, 2, 0), {}),
                                          ((3, 1, 5), {"endpoint": False})], ids=lambda v: str(v))
def test_linspace_retstep(mode, args, kwargs):
    exp_arr, exp_step = np.linspace(*args, retstep=True, **kwargs)
    got = la.linspace(*args, retstep=True, **kwargs)
    assert isinstance(got, tuple) and len(got) == 2
    got_arr, got_step = got
    assert_like_numpy(got_arr, exp_arr)
    assert_like_numpy(np.asarray(got_step), np.asarray(exp_step))


EYE_CASES = [((3,), {}), ((3, 4), {}), ((4, 2), {}), ((3,), {"k": 1}), ((3, 5), {"k": -2}),
             ((3,), {"k": 5}), ((0,), {}), ((3,), {"dtype": int}), ((2, 3), {"k": 2, "dtype": bool}),
             ((1,), {})]


@pytest.mark.parametrize("args, kwargs", EYE_CASES, ids=lambda v: str(v))
def test_eye(mode, args, kwargs):
    check_against_numpy(lambda: np.eye(*args, **kwargs), lambda: la.eye(*args, **kwargs))


@pytest.mark.parametrize("n, dtype", [(3, None), (1, None), (0, None), (4, "int32"), (2, bool)],
                         ids=str)
def test_identity(mode, n, dtype):
    check_against_numpy(lambda: np.identity(n, dtype=dtype), lambda: la.identity(n, dtype=dtype))


def test_creation_is_lazy():
    before = la.cache_info()["materializations"]
    xs = [la.zeros((3, 3)), la.ones(4), la.full((2,), 3.0), la.arange(10), la.linspace(0, 1, 5),
          la.eye(3), la.identity(2), la.zeros_like(la.ones(3))]
    shapes = [x.shape for x in xs]
    assert shapes == [(3, 3), (4,), (2,), (10,), (5,), (3, 3), (2, 2), (3,)]
    assert la.cache_info()["materializations"] == before


@pytest.mark.parametrize("args", [(70_000,), (5, 200_005), (200_000, 5, -3), (3, 300_001, 4),
                                  (-(1 << 40), -(1 << 40) + 7 * 100_000, 7), (0, 1 << 17, 1),
                                  ((1 << 52) - 100_000, 1 << 52), (10, 0), (70_000.0,),
                                  (0, 100_000, True)], ids=str)
def test_large_int_aranges_filled_by_all_threads(args):
    """arange of Python ints from ARANGE_MIN elements on is filled in parallel into a pooled
    buffer (values beyond 2**52, floats and bools stay NumPy's): the same values and dtype;
    a write into one leaves the next one, which may reuse its buffer, as NumPy's."""
    from lazyarray.runtime import threads

    want = np.arange(*args)
    a = la.arange(*args)
    assert_like_numpy(a, want)
    if want.size > threads.ARANGE_MIN:
        a[5] = -1
        want = want.copy()
        want[5] = -1
        assert_like_numpy(a, want)
        del a
        assert_like_numpy(la.arange(*args), np.arange(*args))


def test_ndarray_constructor_is_numpys():
    """`np.ndarray(shape, dtype=..., buffer=..., offset=..., strides=..., order=...)`, the
    constructor NumPy benchmark code calls: NumPy's shape, dtype, layout and values (zeros
    without a buffer, as `empty`), NumPy's errors; the buffer is copied (deviation 1)."""
    a = la.ndarray(5, dtype=np.float64)
    assert type(a) is la.ndarray and a.shape == (5,) and a.dtype == np.float64
    assert np.array_equal(a, np.zeros(5))
    f = la.ndarray((2, 3), dtype="int32", order="F")
    assert f.dtype == np.int32 and f.flags.f_contiguous and not f.flags.c_contiguous
    buf = np.arange(12.0)
    got = la.ndarray((2, 3), buffer=buf, offset=8, strides=(48, 8))
    want = np.ndarray((2, 3), buffer=buf, offset=8, strides=(48, 8))
    assert np.array_equal(got, want) and got.dtype == want.dtype
    buf[1] = -1.0  # a copy: later changes to the buffer are not seen
    assert float(got[0, 0]) == 1.0
    assert np.array_equal(la.ndarray((3,), buffer=la.arange(3.0)), [0.0, 1.0, 2.0])
    assert la.ndarray((2,)).dtype == np.float64
    for args, kwargs in [(((-1,),), {}), (((4,),), {"buffer": np.arange(2.0)})]:
        with pytest.raises(Exception) as want_err:
            np.ndarray(*args, **kwargs)
        with pytest.raises(want_err.type):
            la.ndarray(*args, **kwargs)
