"""Shape manipulation, basic indexing, views of lazy expressions, astype,
copy, where and clip -- against NumPy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from helpers import (
    ALL_DTYPES,
    assert_like_numpy,
    assert_meta_like_numpy,
    check_against_numpy,
    run_numpy,
)


def _data(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10).round(3).astype(dtype)


def _both(fn, *arrays, **kw):
    """Run ``fn(xp, *arrays)`` with NumPy and with lazyarray and compare."""
    np_args = arrays
    la_args = [la.asarray(a) for a in arrays]
    return check_against_numpy(lambda: fn(np, *np_args), lambda: fn(la, *la_args), **kw)


# --------------------------------------------------------------------------
# reshape / ravel / flatten
# --------------------------------------------------------------------------

RESHAPE_CASES = [
    ((2, 3, 4), (6, 4), "C"),
    ((2, 3, 4), (-1,), "C"),
    ((2, 3, 4), (4, -1), "C"),
    ((2, 3, 4), (2, -1, 2), "C"),
    ((2, 3, 4), (24, 1, 1), "C"),
    ((6,), (2, 3), "F"),
    ((2, 3, 4), (4, 6), "F"),
    ((2, 3, 4), (-1, 2), "F"),
    ((0, 3), (3, 0), "C"),
    ((0, 3), (-1,), "C"),
    ((0, 3), (5, -1), "C"),
    ((), (1, 1), "C"),
    ((1,), (), "C"),
    ((1, 1, 1), (-1,), "C"),
]


@pytest.mark.parametrize("shape, newshape, order", RESHAPE_CASES, ids=lambda v: str(v))
def test_reshape(mode, shape, newshape, order):
    x = _data(shape)
    _both(lambda xp, a: xp.reshape(a, newshape, order=order), x)
    _both(lambda xp, a: a.reshape(newshape, order=order), x)
    # of an expression (the reshape must see the computed values)
    _both(lambda xp, a: (a * 2 + 1).reshape(newshape, order=order), x)


def test_reshape_varargs_and_transposed_source(mode):
    x = _data((3, 4))
    _both(lambda xp, a: a.reshape(2, 6), x)
    _both(lambda xp, a: a.reshape(2, -1) - 1, x)
    _both(lambda xp, a: a.T.reshape(12), x)            # a copy in NumPy
    _both(lambda xp, a: (a.T + 1).reshape(2, 2, 3), x)
    _both(lambda xp, a: a[:, ::2].reshape(-1), x)


@pytest.mark.parametrize("order", ["C", "F"])
def test_ravel_and_flatten(mode, order):
    x = _data((2, 3, 4))
    _both(lambda xp, a: xp.ravel(a, order=order), x)
    _both(lambda xp, a: a.ravel(order=order), x)
    _both(lambda xp, a: a.flatten(order=order), x)
    _both(lambda xp, a: a.transpose(2, 0, 1).ravel(order=order), x)
    _both(lambda xp, a: (a[:, ::-1] * 3).flatten(order=order), x)


# --------------------------------------------------------------------------
# transpose / broadcast_to / expand_dims / squeeze
# --------------------------------------------------------------------------

TRANSPOSE_AXES = [None, (0, 1, 2), (1, 0, 2), (2, 0, 1), (-1, 0, 1), (0, -1, -2)]


@pytest.mark.parametrize("axes", TRANSPOSE_AXES, ids=str)
def test_transpose(mode, axes):
    x = _data((2, 3, 4))
    _both(lambda xp, a: xp.transpose(a, axes), x)
    _both(lambda xp, a: a.transpose(axes), x)
    if axes is not None:
        _both(lambda xp, a: a.transpose(*axes), x)
    _both(lambda xp, a: xp.transpose(a + 1, axes) * 2, x)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 3, 4), (0, 3)], ids=str)
def test_dot_T(mode, shape):
    x = _data(shape)
    _both(lambda xp, a: a.T, x)
    _both(lambda xp, a: (a - 1).T.T, x)
    assert la.asarray(x).T.shape == x.T.shape


BROADCAST_CASES = [((3,), (2, 3)), ((3, 1), (3, 4)), ((), (2, 2)), ((1, 1), (5, 2, 3)),
                   ((0,), (4, 0)), ((2, 1, 3), (2, 5, 3)), ((4,), (4,))]


@pytest.mark.parametrize("shape, target", BROADCAST_CASES, ids=lambda v: str(v))
def test_broadcast_to(mode, shape, target):
    x = _data(shape)
    _both(lambda xp, a: xp.broadcast_to(a, target), x)
    _both(lambda xp, a: xp.broadcast_to(a * 2, target) + 1, x)


EXPAND_CASES = [((3,), 0), ((3,), -1), ((3,), 1), ((2, 3), (0, 2)), ((2, 3), (-1, 0)), ((), 0),
                ((2, 3), (0, 1, 4))]


@pytest.mark.parametrize("shape, axis", EXPAND_CASES, ids=lambda v: str(v))
def test_expand_dims(mode, shape, axis):
    x = _data(shape)
    _both(lambda xp, a: xp.expand_dims(a, axis), x)
    _both(lambda xp, a: xp.expand_dims(a - 3, axis) * 2, x)


SQUEEZE_CASES = [((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), -1), ((1, 3, 1), (0, 2)),
                 ((1,), None), ((), None), ((1, 1), (0, 1)), ((2, 1, 0), 1)]


@pytest.mark.parametrize("shape, axis", SQUEEZE_CASES, ids=lambda v: str(v))
def test_squeeze(mode, shape, axis):
    x = _data(shape)
    _both(lambda xp, a: xp.squeeze(a, axis=axis), x)
    _both(lambda xp, a: a.squeeze(axis=axis), x)
    _both(lambda xp, a: (a + 1).squeeze(axis), x)


# --------------------------------------------------------------------------
# basic indexing
# --------------------------------------------------------------------------

INDICES = [
    0, -1, 3, -4,
    (1, 2), (-1, -1, -1), (0, 0, 0),
    slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(3, 0, -2),
    slice(-2, None), slice(10, 20), slice(-100, 100), slice(2, 2), slice(None, None, 3),
    (slice(None), 1), (slice(None, None, -1), slice(1, None, 2), -2),
    Ellipsis, (Ellipsis, 0), (0, Ellipsis), (Ellipsis, slice(None, None, -2)), (1, Ellipsis, 2),
    None, (None, 0), (slice(None), None, 2), (None, Ellipsis, None),
    (0, None, slice(1, 4), None, -1), (slice(3, None, -1), None, Ellipsis),
    (), (slice(None), slice(None), slice(None)),
]


def _idx_id(idx):
    def one(i):
        if isinstance(i, slice):
            f = lambda v: "" if v is None else str(v)  # noqa: E731
            return f"{f(i.start)}:{f(i.stop)}" + (f":{i.step}" if i.step is not None else "")
        if i is Ellipsis:
            return "..."
        if i is None:
            return "None"
        return str(i)
    if isinstance(idx, tuple):
        return "[" + ",".join(one(i) for i in idx) + "]"
    return "[" + one(idx) + "]"


@pytest.mark.parametrize("idx", INDICES, ids=_idx_id)
def test_basic_indexing(mode, idx):
    x = _data((4, 5, 6))
    y = _data((4, 5, 6), seed=1)
    _both(lambda xp, a: a[idx], x)
    _both(lambda xp, a, b: (a * 2 - b)[idx], x, y)      # view of an expression
    _both(lambda xp, a, b: a[idx] + b[idx] * 3, x, y)


@pytest.mark.parametrize("idx", [0, -1, (), Ellipsis, None, (None, Ellipsis)], ids=_idx_id)
def test_indexing_1d_and_0d(mode, idx):
    x1 = _data((7,))
    _both(lambda xp, a: a[idx], x1)
    x0 = np.array(3.5)
    _both(lambda xp, a: a[idx], x0)   # ints on 0-d: IndexError, as in NumPy


def test_views_of_lazy_expressions(mode):
    a = _data((6, 4), seed=1)
    b = _data((6, 4), seed=2)
    c = _data((3,), seed=3)
    d = _data((4, 3), seed=4)
    _both(lambda xp, a, b, c: (a + b)[::2].T * c, a, b, c)
    _both(lambda xp, a, b, d: ((a - b).T[::-1, 1::2] + d[:, ::-1]) / 2, a, b, d)
    _both(lambda xp, a, b: xp.sin(a[1:-1, ::-1]) * b[:-2, None, 0], a, b)
    _both(lambda xp, a, b: (a * b).reshape(3, 8)[:, ::3].T, a, b)
    _both(lambda xp, a: xp.expand_dims(a[::2, 1], 0).T - a[:3, :], a)
    _both(lambda xp, a, c: xp.broadcast_to(c, (4, 3)).T[::-1] + a[:3], a, c)
    _both(lambda xp, a: (a[..., None] * a[:, None, :]).sum(axis=-1)[::-2], a)


@st.composite
def shape_and_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    idx = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    return shape, idx


@settings(max_examples=max(5, settings().max_examples // 2))
@given(case=shape_and_index())
def test_random_basic_indices(mode, case):
    shape, idx = case
    x = _data(shape)
    _both(lambda xp, a: a[idx], x)
    _both(lambda xp, a: (a + 1)[idx] * 2, x)


# --------------------------------------------------------------------------
# astype / copy
# --------------------------------------------------------------------------


def _astype_source(src, dst):
    """Values whose conversion NumPy defines portably (no NaN/inf/out-of-
    range float->int, which is undefined behaviour in C and differs between
    platforms)."""
    src, dst = np.dtype(src), np.dtype(dst)
    vals = [0, 1, 2, 3, 7, 100, 127]
    if src.kind in "ifcb" and not (src.kind in "fc" and dst.kind == "u"):
        vals += [-1, -2, -100, -128]
    if src.kind in "fc":
        vals += [0.5, 2.75, 99.9]
        if dst.kind != "u":
            vals += [-3.9, -0.0, -127.5]
        if dst.kind in "fcb":
            vals += [np.nan, np.inf, -np.inf, 1e30, 3e-42]
            if src.itemsize >= 8:
                vals += [1e300, -1e300, 1e-310]
    if src.kind in "iu":
        info = np.iinfo(src)
        vals += [int(info.min), int(info.max), int(info.max) - 1]
        vals = [v for v in vals if info.min <= v <= info.max]
    if src.kind == "b":
        return np.array([True, False, True, True])
    arr = np.array(vals, dtype=np.float64 if src.kind in "fc" else object).astype(src)
    if src.kind == "c":
        arr = arr + (1j * arr[::-1]).astype(src)
    return arr


ASTYPE_PAIRS = [(s, d) for s in ALL_DTYPES for d in ALL_DTYPES]
ASTYPE_SAMPLE = [
    (np.dtype(s), np.dtype(d))
    for s, d in [
        ("float64", "int64"), ("float64", "float32"), ("float32", "float64"), ("int64", "float64"),
        ("int64", "int8"), ("uint8", "int8"), ("int8", "uint64"), ("int32", "float32"),
        ("float64", "uint8"), ("float32", "int16"), ("bool", "float64"), ("float64", "bool"),
        ("int64", "bool"), ("complex128", "float64"), ("float64", "complex64"),
        ("complex64", "complex128"), ("complex128", "int32"), ("uint64", "float64"),
        ("int16", "complex128"), ("bool", "uint16"), ("float64", "float64"), ("uint32", "int64"),
    ]
]


def _check_astype(src, dst):
    x = _astype_source(src, dst)
    _both(lambda xp, a: a.astype(dst), x)
    _both(lambda xp, a: (a[::-1]).astype(dst)[::-1], x)


@pytest.mark.parametrize("src, dst", ASTYPE_SAMPLE, ids=lambda d: d.name)
def test_astype(mode, src, dst):
    _check_astype(src, dst)


@pytest.mark.parametrize("src, dst", ASTYPE_PAIRS, ids=lambda d: d.name)
def test_astype_all_pairs_interpreter(src, dst):
    """Every dtype pair on the interpreter (no compiles); the compiled
    backend gets the sample above and, with -m slow, every pair."""
    with la.options(backend="numpy"):
        _check_astype(src, dst)


@pytest.mark.slow
@pytest.mark.parametrize("src, dst", ASTYPE_PAIRS, ids=lambda d: d.name)
def test_astype_all_pairs_compiled(compiled, src, dst):
    _check_astype(src, dst)


def test_astype_spellings(mode):
    x = _data((5,))
    for spelling in ["float32", "f4", np.float32, la.float32, np.dtype("float32"), "i2", int, float,
                     bool, complex]:
        _both(lambda xp, a: a.astype(spelling), x)


def test_copy(mode):
    x = _data((3, 4))
    _both(lambda xp, a: a.copy(), x)
    _both(lambda xp, a: (a + 1).copy().T, x)
    _both(lambda xp, a: a[::2].copy(), x)
    y = la.asarray(x)
    z = y.copy()
    assert z is not y
    assert_like_numpy(z, x)


# --------------------------------------------------------------------------
# where / clip
# --------------------------------------------------------------------------

WHERE_CASES = [
    # (cond shape, x, y) where x/y are shapes or Python scalars
    ((5,), (5,), (5,)),
    ((3, 1), (4,), (3, 4)),
    ((), (2, 3), (2, 3)),
    ((2, 3), 1.5, (3,)),
    ((2, 3), (2, 3), 0),
    ((4,), -2, 7.25),
    ((0, 3), (3,), 1.0),
]


@pytest.mark.parametrize("dtype", ["float64", "int32", "float32"])
@pytest.mark.parametrize("cshape, xs, ys", WHERE_CASES, ids=lambda v: str(v))
def test_where(mode, cshape, xs, ys, dtype):
    rng = np.random.default_rng(2)
    cond = rng.random(cshape) < 0.5
    xv = _data(xs, dtype, 1) if isinstance(xs, tuple) else xs
    yv = _data(ys, dtype, 2) if isinstance(ys, tuple) else ys
    to_la = lambda v: la.asarray(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    check_against_numpy(lambda: np.where(cond, xv, yv),
                        lambda: la.where(la.asarray(cond), to_la(xv), to_la(yv)))
    # a lazy condition
    check_against_numpy(lambda: np.where(np.asarray(xv) > 0, xv, yv),
                        lambda: la.where(to_la(np.asarray(xv)) > 0, to_la(xv), to_la(yv)))


def test_where_dtype_promotion():
    """Result dtypes (NEP 50 weak Python scalars, mixed arrays) without
    materializing."""
    before = la.cache_info()["materializations"]
    cond = np.array([True, False, True])
    problems = []
    for dx in ALL_DTYPES:
        for other in [np.ones(3, np.int16), np.ones(3, np.float32), 2, 2.5, 1j, True]:
            xv = np.ones(3, dx)
            st_, exp = run_numpy(lambda: np.where(cond, xv, other))
            o = la.asarray(other) if isinstance(other, np.ndarray) else other
            try:
                got = la.where(la.asarray(cond), la.asarray(xv), o)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"where({dx}, {other!r}): lazyarray raised {exc!r}, numpy {exp!r}")
                continue
            if st_ == "error":
                problems.append(f"where({dx}, {other!r}): numpy raised {exp!r}")
                continue
            try:
                assert_meta_like_numpy(got, exp, what=f"where({dx}, {other!r})")
            except AssertionError as e:
                problems.append(str(e))
    assert not problems, "\n".join(problems)
    assert la.cache_info()["materializations"] == before


CLIP_CASES = [
    (0.0, 1.0), (-1, 2), (None, 0.5), (-0.5, None), (2.0, -2.0), ("arr", "arr"), ("arr", None),
    (None, "arr"), (np.float32(0.25), 3),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16"])
@pytest.mark.parametrize("lo, hi", CLIP_CASES, ids=lambda v: str(v))
def test_clip(mode, lo, hi, dtype):
    x = _data((4, 5), dtype)
    lo_np = _data((5,), dtype, 3) if isinstance(lo, str) else lo
    hi_np = _data((4, 1), dtype, 4) + 5 if isinstance(hi, str) else hi
    to_la = lambda v: la.asarray(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    check_against_numpy(lambda: np.clip(x, lo_np, hi_np),
                        lambda: la.clip(la.asarray(x), to_la(lo_np), to_la(hi_np)))
    check_against_numpy(lambda: x.clip(lo_np, hi_np),
                        lambda: la.asarray(x).clip(to_la(lo_np), to_la(hi_np)))


def test_clip_nan_and_no_bounds(mode):
    x = np.array([np.nan, -np.inf, np.inf, 0.5, -3.0, 7.0])
    check_against_numpy(lambda: np.clip(x, -1, 1), lambda: la.clip(la.asarray(x), -1, 1))
    check_against_numpy(lambda: np.clip(x, np.nan, 1), lambda: la.clip(la.asarray(x), np.nan, 1))
    check_against_numpy(lambda: np.clip(x, None, None), lambda: la.clip(la.asarray(x), None, None))
    xi = np.arange(-5, 5, dtype=np.int8)
    check_against_numpy(lambda: np.clip(xi, -2, 1000), lambda: la.clip(la.asarray(xi), -2, 1000))


def test_shape_ops_do_not_materialize():
    x = la.asarray(_data((2, 3, 4)))
    before = la.cache_info()["materializations"]
    y = (x + 1).reshape(6, 4).T[::2, None].squeeze(1)
    y = la.expand_dims(la.broadcast_to(y, (5, 2, 6)), 0).astype(np.float32).ravel()
    assert y.shape == (60,) and y.dtype == np.float32 and y.ndim == 1 and y.size == 60
    assert la.cache_info()["materializations"] == before
    assert_like_numpy(
        y,
        np.expand_dims(
            np.broadcast_to(((np.asarray(x) + 1).reshape(6, 4).T[::2, None]).squeeze(1), (5, 2, 6)), 0
        ).astype(np.float32).ravel(),
    )



_SHAPE = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)


@given(st.one_of(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=0)
                 .map(lambda b: b.input_shapes), st.tuples(_SHAPE, _SHAPE)))
def test_two_shapes_broadcast_as_numpy_broadcasts_them(shapes):
    """The graph builder's broadcast of two shapes (its fast path) is NumPy's, and the pairs
    NumPy refuses are refused with NumPy's error."""
    from lazyarray.graph.build import _broadcast_two

    try:
        want = np.broadcast_shapes(*shapes)
    except ValueError:
        assert _broadcast_two(*shapes) is None
        a, b = (np.zeros(s) for s in shapes)
        with pytest.raises(ValueError, match="could not be broadcast together"):
            la.asarray(a) + la.asarray(b)
        return
    assert _broadcast_two(*shapes) == want
    a, b = (np.ones(s) for s in shapes)
    assert_like_numpy(la.asarray(a) + la.asarray(b), a + b)
