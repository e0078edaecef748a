"""Errors are raised where the user wrote the mistake.

Shapes and dtypes are known without computing anything, so a bad shape,
axis, dtype or index must raise NumPy's exception class *when the operation
is built* -- by the lazyarray call itself, before (and without) any
materialization.  Every case is checked against NumPy: NumPy must raise the
expected class too (so the test documents NumPy's behaviour), and lazyarray
must raise it from a pending (never materialized) expression.
"""

import numpy as np
import pytest

import lazyarray as la
from helpers import assert_raises_lazily, error_category, run_numpy

AxisError = np.exceptions.AxisError


@pytest.fixture(autouse=True)
def _no_eager_evaluation():
    """eager_threshold=0: no operation is evaluated while it is built, so
    the expressions below really are pending when the bad op is applied."""
    with la.options(backend="cpu", eager_threshold=0):
        yield


def _pending(shape, dtype=np.float64):
    """A NumPy array and an *unevaluated* lazy expression with its value."""
    a = (np.arange(int(np.prod(shape))).reshape(shape) % 7).astype(dtype)
    return a, la.asarray(a) * 1  # a pending multiply node


def check_error(expected_exc, np_call, la_call):
    """NumPy raises ``expected_exc`` (documents NumPy), and lazyarray raises
    the same class while building, without materializing."""
    status, exc = run_numpy(np_call)
    assert status == "error", "the test is wrong: NumPy accepts this"
    assert isinstance(exc, expected_exc), f"NumPy raised {type(exc).__name__}: {exc}"
    info = assert_raises_lazily(error_category(exc), la_call)
    assert isinstance(info.value, expected_exc)
    assert str(info.value), "the error needs a message"


# --------------------------------------------------------------------------
# broadcasting
# --------------------------------------------------------------------------

BAD_BROADCASTS = [((3,), (4,)), ((2, 3), (3, 2)), ((0,), (2,)), ((3, 1), (2, 4)),
                  ((2, 3, 4), (3, 3))]


@pytest.mark.parametrize("s1, s2", BAD_BROADCASTS, ids=lambda v: str(v))
def test_bad_broadcast_in_ufuncs_and_operators(s1, s2):
    a, x = _pending(s1)
    b, y = _pending(s2)
    check_error(ValueError, lambda: np.add(a, b), lambda: la.add(x, y))
    check_error(ValueError, lambda: a * b, lambda: x * y)
    check_error(ValueError, lambda: a < b, lambda: x < y)
    check_error(ValueError, lambda: np.arctan2(a, b), lambda: la.arctan2(x, y))
    check_error(ValueError, lambda: np.divmod(a, b), lambda: la.divmod(x, y))


def test_bad_broadcast_where_clip_broadcast_to():
    a, x = _pending((2, 3))
    b, y = _pending((4,))
    c, z = _pending((2,))
    check_error(ValueError, lambda: np.where(a > 1, a, b), lambda: la.where(x > 1, x, y))
    check_error(ValueError, lambda: np.where(c > 1, a, 0), lambda: la.where(z > 1, x, 0))
    check_error(ValueError, lambda: np.clip(a, b, 5), lambda: la.clip(x, y, 5))
    check_error(ValueError, lambda: np.broadcast_to(a, (3,)), lambda: la.broadcast_to(x, (3,)))
    check_error(ValueError, lambda: np.broadcast_to(a, (2, 4)), lambda: la.broadcast_to(x, (2, 4)))
    check_error(ValueError, lambda: np.broadcast_to(a, (3, 3)), lambda: la.broadcast_to(x, (3, 3)))


# --------------------------------------------------------------------------
# axes
# --------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "mean", "min", "max", "amin", "amax", "argmin", "argmax", "any",
              "all", "std", "var"]


@pytest.mark.parametrize("axis", [2, -3, 10], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_axis_out_of_range(op, axis):
    a, x = _pending((2, 3))
    check_error(AxisError, lambda: getattr(np, op)(a, axis=axis), lambda: getattr(la, op)(x, axis=axis))
    if op not in ("amin", "amax"):
        check_error(AxisError, lambda: getattr(a, op)(axis=axis), lambda: getattr(x, op)(axis=axis))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "any", "std"])
def test_reduction_bad_axis_tuples(op):
    a, x = _pending((2, 3, 4))
    check_error(AxisError, lambda: getattr(np, op)(a, axis=(0, 5)), lambda: getattr(la, op)(x, axis=(0, 5)))
    check_error(ValueError, lambda: getattr(np, op)(a, axis=(1, 1)), lambda: getattr(la, op)(x, axis=(1, 1)))
    check_error(ValueError, lambda: getattr(np, op)(a, axis=(0, -3)), lambda: getattr(la, op)(x, axis=(0, -3)))


def test_arg_reduction_rejects_tuple_axis():
    a, x = _pending((2, 3))
    check_error(TypeError, lambda: np.argmax(a, axis=(0, 1)), lambda: la.argmax(x, axis=(0, 1)))
    check_error(TypeError, lambda: a.argmin(axis=(0,)), lambda: x.argmin(axis=(0,)))


def test_reduction_of_empty_without_identity():
    a, x = _pending((3, 0))
    for op in ("min", "max", "amin", "amax", "argmin", "argmax"):
        check_error(ValueError, lambda: getattr(np, op)(a), lambda: getattr(la, op)(x))
        check_error(ValueError, lambda: getattr(np, op)(a, axis=1), lambda: getattr(la, op)(x, axis=1))


def test_shape_functions_bad_axis():
    a, x = _pending((2, 1, 3))
    check_error(AxisError, lambda: np.expand_dims(a, 4), lambda: la.expand_dims(x, 4))
    check_error(AxisError, lambda: np.expand_dims(a, -5), lambda: la.expand_dims(x, -5))
    check_error(ValueError, lambda: np.expand_dims(a, (0, 0)), lambda: la.expand_dims(x, (0, 0)))
    check_error(AxisError, lambda: np.squeeze(a, axis=3), lambda: la.squeeze(x, axis=3))
    check_error(ValueError, lambda: np.squeeze(a, axis=0), lambda: la.squeeze(x, axis=0))
    check_error(ValueError, lambda: a.squeeze(axis=(1, 2)), lambda: x.squeeze(axis=(1, 2)))
    check_error(ValueError, lambda: np.transpose(a, (0, 1)), lambda: la.transpose(x, (0, 1)))
    check_error(ValueError, lambda: np.transpose(a, (0, 0, 1)), lambda: la.transpose(x, (0, 0, 1)))
    check_error(AxisError, lambda: np.transpose(a, (0, 1, 3)), lambda: la.transpose(x, (0, 1, 3)))
    check_error(ValueError, lambda: a.transpose(1, 0), lambda: x.transpose(1, 0))


# --------------------------------------------------------------------------
# reshape
# --------------------------------------------------------------------------

BAD_RESHAPES = [((2, 3), (4,)), ((2, 3), (-1, -1)), ((2, 3), (4, -1)), ((0, 3), (-1, 0)),
                ((2, 3), (7,)), ((), (2,))]


@pytest.mark.parametrize("shape, newshape", BAD_RESHAPES, ids=lambda v: str(v))
def test_bad_reshape(shape, newshape):
    a, x = _pending(shape)
    check_error(ValueError, lambda: np.reshape(a, newshape), lambda: la.reshape(x, newshape))
    check_error(ValueError, lambda: a.reshape(newshape), lambda: x.reshape(newshape))


def test_bad_reshape_order():
    a, x = _pending((2, 3))
    check_error(ValueError, lambda: a.reshape((6,), order="X"), lambda: x.reshape((6,), order="X"))


# --------------------------------------------------------------------------
# indexing
# --------------------------------------------------------------------------

BAD_INDICES = [
    (IndexError, 4), (IndexError, -5), (IndexError, (0, 3)), (IndexError, (0, -4)),
    (IndexError, (0, 0, 0)), (IndexError, (Ellipsis, Ellipsis)), (IndexError, 1.5),
    (IndexError, "a"), (ValueError, slice(None, None, 0)), (IndexError, (slice(None), 1.0)),
    (IndexError, (None, 0, 0, 0)),
]


@pytest.mark.parametrize("exc, idx", BAD_INDICES, ids=lambda v: getattr(v, "__name__", repr(v)))
def test_bad_index(exc, idx):
    a, x = _pending((4, 3))
    check_error(exc, lambda: a[idx], lambda: x[idx])


def test_bad_index_0d():
    a, x = _pending(())
    check_error(IndexError, lambda: a[0], lambda: x[0])
    check_error(IndexError, lambda: a[:], lambda: x[:])


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

BAD_DTYPE_CALLS = [
    ("bitwise_and", ("float64", "float64")), ("bitwise_or", ("float32", "int32")),
    ("bitwise_xor", ("complex128", "int8")), ("invert", ("float64",)), ("bitwise_not", ("float32",)),
    ("left_shift", ("float64", "int64")), ("right_shift", ("int64", "float32")),
    ("subtract", ("bool", "bool")), ("negative", ("bool",)), ("gcd", ("float64", "int64")),
    ("lcm", ("int8", "float32")), ("floor_divide", ("complex128", "complex128")),
    ("remainder", ("complex64", "float64")), ("fmod", ("complex128", "int8")),
    ("arctan2", ("complex128", "float64")), ("isnat", ("float64",)), ("ldexp", ("float64", "float64")),
    ("logaddexp", ("complex128", "complex128")), ("spacing", ("complex128",)),
    ("signbit", ("complex64",)), ("heaviside", ("complex128", "float64")), ("cbrt", ("complex128",)),
    ("bitwise_count", ("float64",)), ("floor", ("complex128",)),
    ("nextafter", ("float32", "complex64")),
]


@pytest.mark.parametrize("name, dtypes", BAD_DTYPE_CALLS, ids=lambda v: v if isinstance(v, str) else "-".join(v))
def test_ufunc_rejects_dtypes(name, dtypes):
    np_args = [np.ones(3, dtype=d) for d in dtypes]
    la_args = [la.asarray(a) * 1 if a.dtype != bool else la.asarray(a) & True for a in np_args]
    check_error(TypeError, lambda: getattr(np, name)(*np_args), lambda: getattr(la, name)(*la_args))


def test_operators_reject_dtypes():
    f, x = _pending((3,))
    b = np.ones(3, bool)
    y = la.asarray(b) | False
    check_error(TypeError, lambda: f & f, lambda: x & x)
    check_error(TypeError, lambda: f | 1, lambda: x | 1)
    check_error(TypeError, lambda: ~f, lambda: ~x)
    check_error(TypeError, lambda: f << 2, lambda: x << 2)
    check_error(TypeError, lambda: 2 >> f, lambda: 2 >> x)
    check_error(TypeError, lambda: -b, lambda: -y)
    check_error(TypeError, lambda: b - b, lambda: y - y)
    check_error(TypeError, lambda: f % (1 + 1j), lambda: x % (1 + 1j))


def test_out_of_range_python_int():
    i8 = np.arange(3, dtype=np.int8)
    x = la.asarray(i8) + 1
    check_error(OverflowError, lambda: i8 + 1000, lambda: x + 1000)
    check_error(OverflowError, lambda: np.multiply(i8, -129), lambda: la.multiply(x, -129))
    u8 = np.arange(3, dtype=np.uint8)
    y = la.asarray(u8) + 1
    check_error(OverflowError, lambda: u8 - (-1), lambda: y - (-1))
    check_error(OverflowError, lambda: np.maximum(u8, 256), lambda: la.maximum(y, 256))


def test_bad_dtype_names():
    a, x = _pending((3,))
    check_error(TypeError, lambda: a.astype("float99"), lambda: x.astype("float99"))
    check_error(TypeError, lambda: np.sum(a, dtype="float99"), lambda: la.sum(x, dtype="float99"))
    check_error(TypeError, lambda: np.zeros(3, dtype="nope"), lambda: la.zeros(3, dtype="nope"))


# --------------------------------------------------------------------------
# creation
# --------------------------------------------------------------------------


def test_creation_errors():
    check_error(ValueError, lambda: np.zeros(-1), lambda: la.zeros(-1))
    check_error(ValueError, lambda: np.ones((2, -3)), lambda: la.ones((2, -3)))
    check_error(ValueError, lambda: np.full((-1,), 2.0), lambda: la.full((-1,), 2.0))
    check_error(ValueError, lambda: np.eye(-1), lambda: la.eye(-1))
    check_error(ValueError, lambda: np.linspace(0, 1, -1), lambda: la.linspace(0, 1, -1))
    check_error(ZeroDivisionError, lambda: np.arange(0, 10, 0), lambda: la.arange(0, 10, 0))
    check_error(ValueError, lambda: np.array([[1, 2], [3]]), lambda: la.array([[1, 2], [3]]))


# --------------------------------------------------------------------------
# nothing was evaluated along the way
# --------------------------------------------------------------------------


def test_errors_leave_the_graph_usable(mode):
    """After a failed build the inputs are still fine."""
    a, x = _pending((2, 3))
    with pytest.raises(ValueError):
        x + la.asarray(np.ones(4))
    with pytest.raises(AxisError):
        x.sum(axis=5)
    np.testing.assert_array_equal(np.asarray(x + 1), a + 1)

