"""lazyarray.linalg, lazyarray.fft, lazyarray.random and lazyarray.testing against NumPy.

linalg.norm (and vector_norm/matrix_norm) are lazy and compared over orders, axes, keepdims
and dtypes, including NumPy's errors; the other linalg functions, the fft and the random
draws are fallbacks to NumPy and must return lazy arrays with NumPy's values (random streams
exactly NumPy's for the same seed); testing's assertions accept lazy arrays.
"""

import itertools
import pickle
import subprocess
import sys

import numpy as np
import pytest

import lazyarray as la
from helpers import assert_like_numpy

rng = np.random.default_rng(7)
A = rng.standard_normal((4, 4)) + 4 * np.eye(4)
B = rng.standard_normal((4, 2))
SYM = A @ A.T
C = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))


def _lazy(result):
    assert isinstance(result, la.Array), f"{type(result)} is not a lazy Array"
    return result


# ---- linalg.norm -----------------------------------------------------------------------------
NORM_INPUTS = {
    "f64_1d": rng.standard_normal(7),
    "f32_2d": rng.standard_normal((3, 4)).astype(np.float32),
    "c128_2d": C,
    "c64_3d": (rng.standard_normal((2, 3, 4)) + 1j).astype(np.complex64),
    "i64_2d": rng.integers(-5, 5, (4, 3)),
    "bool_1d": np.array([True, False, True]),
    "f64_3d": rng.standard_normal((2, 3, 4)),
    "nan_2d": np.array([[np.nan, 1.0], [2.0, -3.0]]),
    "empty_2d": np.zeros((0, 3)),
}
ORDS = [None, 2, -2, 1, -1, np.inf, -np.inf, 0, 3, 0.5, "fro", "nuc", "bogus"]
AXES = [None, 0, -1, (0, 1), (1, 0), (-1, -2), (0, 0), 5, (0, 1, 2)]


def _outcome(f):
    try:
        return np.asarray(f()), None
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return None, e


def _compare_outcomes(lazy_call, numpy_call, what):
    expected, e_err = _outcome(numpy_call)
    actual, a_err = _outcome(lazy_call)
    if e_err is not None or a_err is not None:
        assert type(a_err) is type(e_err) and str(a_err) == str(e_err), \
            f"{what}: NumPy raised {e_err!r}, lazyarray {a_err!r}"
        return
    assert_like_numpy(actual, expected, rtol=1e-5 if expected.dtype.itemsize <= 8 else None,
                      what=what)


@pytest.mark.parametrize("name", sorted(NORM_INPUTS))
def test_norm_all_orders_axes_keepdims(name):
    """Every (ord, axis, keepdims), values, dtypes and errors as NumPy (interpreter)."""
    x = NORM_INPUTS[name]
    lx = la.asarray(x)
    with la.options(backend="numpy"):
        for o, ax, kd in itertools.product(ORDS, AXES, (False, True)):
            _compare_outcomes(lambda: la.linalg.norm(lx, ord=o, axis=ax, keepdims=kd),
                              lambda: np.linalg.norm(x, ord=o, axis=ax, keepdims=kd),
                              f"norm({name}, ord={o!r}, axis={ax!r}, keepdims={kd})")


NORM_COMPILED = [
    ("f64_3d", None, None, False), ("f64_3d", 2, -1, True), ("f32_2d", np.inf, 1, False),
    ("f64_3d", -np.inf, 0, False), ("i64_2d", 0, 0, False), ("f64_3d", 3, 2, False),
    ("f64_3d", 1, (0, 2), True), ("f64_3d", -np.inf, (2, 1), False), ("c128_2d", "fro", None,
                                                                        False),
]


@pytest.mark.parametrize("name,o,ax,kd", NORM_COMPILED)
def test_norm_compiled(compiled, name, o, ax, kd):
    x = NORM_INPUTS[name]
    r = _lazy(la.linalg.norm(la.asarray(x), ord=o, axis=ax, keepdims=kd))
    assert_like_numpy(r, np.linalg.norm(x, ord=o, axis=ax, keepdims=kd))


def test_norm_is_lazy_and_dispatched():
    x = la.asarray(NORM_INPUTS["f64_3d"])
    before = la.cache_info()["fallbacks"]
    with la.options(eager_threshold=0):  # (a tiny computed x: NumPy's norm, at once)
        for o, ax in [(None, None), (1, -1), (np.inf, (0, 1)), ("fro", (1, 2)), (0, 0)]:
            n = _lazy(la.linalg.norm(x, ord=o, axis=ax))
            assert n._val is None and n._st.node.op != "buffer"  # pending
        assert la.cache_info()["fallbacks"] == before  # none ran NumPy
        _lazy(la.linalg.norm(x, ord=2, axis=(1, 2)))  # singular values: NumPy's
        assert la.cache_info()["fallbacks"] == before + 1
    # NumPy's own norm on a lazy array runs lazyarray's (__array_function__)
    r = np.linalg.norm(x, axis=-1)
    _lazy(r)
    assert_like_numpy(r, np.linalg.norm(NORM_INPUTS["f64_3d"], axis=-1))


@pytest.mark.parametrize("name", ["f64_1d", "f64_3d", "c64_3d", "i64_2d", "empty_2d"])
def test_vector_and_matrix_norm(name):
    x = NORM_INPUTS[name]
    lx = la.asarray(x)
    with la.options(backend="numpy"):
        for ax, o, kd in itertools.product([None, 0, -1, (0, 1), (-1, 0)],
                                           [2, 1, np.inf, -np.inf, 0, 3, "fro"], (False, True)):
            _compare_outcomes(lambda: la.linalg.vector_norm(lx, axis=ax, ord=o, keepdims=kd),
                              lambda: np.linalg.vector_norm(x, axis=ax, ord=o, keepdims=kd),
                              f"vector_norm({name}, axis={ax!r}, ord={o!r}, keepdims={kd})")
        for o, kd in itertools.product(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf, 3],
                                       (False, True)):
            _compare_outcomes(lambda: la.linalg.matrix_norm(lx, ord=o, keepdims=kd),
                              lambda: np.linalg.matrix_norm(x, ord=o, keepdims=kd),
                              f"matrix_norm({name}, ord={o!r}, keepdims={kd})")


def test_norm_of_array_likes():
    assert_like_numpy(la.linalg.norm([3, 4]), np.linalg.norm([3, 4]))
    assert_like_numpy(la.linalg.norm(np.eye(3), axis=0), np.linalg.norm(np.eye(3), axis=0))
    with pytest.raises(TypeError, match="'axis' must be None"):
        la.linalg.norm(la.ones(3), axis=[0])


# ---- linalg fallbacks ------------------------------------------------------------------------
def test_solve_inv_det():
    la_a, la_b = la.asarray(A), la.asarray(B)
    x = _lazy(la.linalg.solve(la_a, la_b))
    assert_like_numpy(x, np.linalg.solve(A, B))
    assert_like_numpy(la_a @ x, B)  # the result composes lazily
    assert_like_numpy(_lazy(la.linalg.inv(la_a)), np.linalg.inv(A))
    assert float(la.linalg.det(la_a)) == pytest.approx(np.linalg.det(A), rel=1e-12)
    with pytest.raises(la.linalg.LinAlgError):  # a tiny computed input: NumPy's call, now
        la.linalg.inv(la.zeros((3, 3)))
    with la.options(eager_threshold=0):
        singular = la.linalg.inv(la.zeros((3, 3)))  # lazy: the values decide, when computed
    with pytest.raises(la.linalg.LinAlgError):
        np.asarray(singular)
    assert la.linalg.LinAlgError is np.linalg.LinAlgError


def test_svd_qr_eigh_lstsq():
    la_a = la.asarray(A)
    u, s, vh = la.linalg.svd(la_a)
    eu, es, evh = np.linalg.svd(A)
    for got, ref in [(u, eu), (s, es), (vh, evh)]:
        assert_like_numpy(_lazy(got), ref)
    assert_like_numpy((u * s) @ vh, A)
    q, r = la.linalg.qr(la_a)
    eq, er = np.linalg.qr(A)
    assert_like_numpy(_lazy(q), eq)
    assert_like_numpy(_lazy(r), er)
    w, v = la.linalg.eigh(la.asarray(SYM))
    ew, ev = np.linalg.eigh(SYM)
    assert_like_numpy(_lazy(w), ew)
    assert_like_numpy(_lazy(v), ev)
    sol, res, rank, sv = la.linalg.lstsq(la.asarray(B), la.asarray(A[:, 0]), rcond=None)
    esol, eres, erank, esv = np.linalg.lstsq(B, A[:, 0], rcond=None)
    assert_like_numpy(_lazy(sol), esol)
    assert_like_numpy(res, eres)
    assert rank == erank
    assert_like_numpy(sv, esv)


def test_linalg_named_results():
    res = la.linalg.svd(la.asarray(A))
    assert_like_numpy(res.S, np.linalg.svd(A).S)
    assert_like_numpy(la.linalg.eigh(la.asarray(SYM)).eigenvalues, np.linalg.eigh(SYM).eigenvalues)


def test_matrix_transpose_is_a_lazy_view():
    x = la.asarray(rng.standard_normal((2, 3, 4)))
    t = la.linalg.matrix_transpose(x)
    assert t.shape == (2, 4, 3) and t.base is x
    assert_like_numpy(t, np.linalg.matrix_transpose(np.asarray(x)))


# ---- fft -------------------------------------------------------------------------------------
SIGNAL = rng.standard_normal(16)
IMAGE = rng.standard_normal((6, 8))


def test_fft_matches_numpy_and_round_trips():
    x = la.asarray(SIGNAL)
    f = _lazy(la.fft.fft(x))
    assert_like_numpy(f, np.fft.fft(SIGNAL))
    assert_like_numpy(la.fft.ifft(f).real, SIGNAL)
    r = _lazy(la.fft.rfft(x))
    assert_like_numpy(r, np.fft.rfft(SIGNAL))
    assert_like_numpy(la.fft.irfft(r, n=16), SIGNAL)
    # what follows a transform is lazy arithmetic on its result
    h = np.exp(-np.arange(9.0))
    assert_like_numpy(la.fft.irfft(la.fft.rfft(x) * la.asarray(h)),
                      np.fft.irfft(np.fft.rfft(SIGNAL) * h))


def test_fft2_fftn_and_helpers():
    img = la.asarray(IMAGE)
    f2 = _lazy(la.fft.fft2(img))
    assert_like_numpy(f2, np.fft.fft2(IMAGE))
    assert_like_numpy(la.fft.ifft2(f2).real, IMAGE)
    assert_like_numpy(la.fft.fftn(img, axes=(0,)), np.fft.fftn(IMAGE, axes=(0,)))
    assert_like_numpy(la.fft.rfft2(img), np.fft.rfft2(IMAGE))
    assert_like_numpy(_lazy(la.fft.fftfreq(8, d=0.5)), np.fft.fftfreq(8, d=0.5))
    assert_like_numpy(la.fft.rfftfreq(9), np.fft.rfftfreq(9))
    assert_like_numpy(la.fft.fftshift(img, axes=1), np.fft.fftshift(IMAGE, axes=1))
    # NumPy's own fft on a lazy array dispatches here and stays lazy
    assert_like_numpy(_lazy(np.fft.fft(la.asarray(SIGNAL))), np.fft.fft(SIGNAL))


# ---- random ----------------------------------------------------------------------------------
def _exact(actual, expected):
    if isinstance(expected, np.ndarray):
        _lazy(actual)
        a = np.asarray(actual)
        assert a.dtype == expected.dtype and a.shape == expected.shape
        np.testing.assert_array_equal(a, expected)
    else:
        assert type(actual) is type(expected) and actual == expected


LEGACY = [
    ("rand", (3, 2), {}), ("randn", (5,), {}), ("randint", (0, 10), {"size": 6}),
    ("normal", (1.0, 2.0, (2, 3)), {}), ("random_sample", (4,), {}), ("choice", (5, 3), {}),
    ("permutation", (6,), {}), ("uniform", (), {"size": 3}), ("rand", (), {}),
]


@pytest.mark.parametrize("fn,args,kwargs", LEGACY, ids=[f"{f}{a}" for f, a, _ in LEGACY])
def test_legacy_stream_is_numpys(fn, args, kwargs):
    la.random.seed(1234)
    got = getattr(la.random, fn)(*args, **kwargs)
    again = getattr(la.random, fn)(*args, **kwargs)
    np.random.seed(1234)
    _exact(got, getattr(np.random, fn)(*args, **kwargs))
    _exact(again, getattr(np.random, fn)(*args, **kwargs))


def test_legacy_global_state_is_numpys():
    np.random.seed(5)
    got = la.random.rand(4)
    la.random.seed(5)
    _exact(got, np.random.rand(4))
    assert la.random.seed is np.random.seed
    state = la.random.get_state()
    a = la.random.randn(3)
    la.random.set_state(state)
    _exact(a, np.random.randn(3))


GENERATOR = [
    ("random", (3,), {}), ("random", ((2, 2),), {"dtype": np.float32}), ("random", (), {}),
    ("standard_normal", ((2, 3),), {}), ("standard_normal", (4,), {"dtype": np.float32}),
    ("integers", (0, 100, 8), {}), ("integers", (5,), {"size": (2, 2), "dtype": np.uint8}),
    ("integers", (-3, 3), {"endpoint": True, "size": 5}), ("normal", (2.0, 0.5, 5), {}),
    ("normal", ([0.0, 10.0, 100.0],), {}), ("choice", (10, 4), {"replace": False}),
    ("choice", ([1.5, 2.5, 3.5], (2, 2)), {"p": [0.2, 0.3, 0.5]}), ("permutation", (7,), {}),
    ("permutation", (np.arange(12.0).reshape(3, 4),), {"axis": 1}),
    ("exponential", (2.0, 3), {}), ("poisson", (3.0, 4), {}), ("binomial", (10, 0.3, 4), {}),
    ("multivariate_normal", ([0.0, 1.0], [[1.0, 0.5], [0.5, 2.0]], 3), {}),
]


@pytest.mark.parametrize("method,args,kwargs", GENERATOR,
                         ids=[f"{m}{i}" for i, (m, _, _) in enumerate(GENERATOR)])
def test_generator_stream_is_numpys(method, args, kwargs):
    g, ref = la.random.default_rng(2024), np.random.default_rng(2024)
    for _ in range(2):
        _exact(getattr(g, method)(*args, **kwargs), getattr(ref, method)(*args, **kwargs))


def test_generator_accepts_lazy_parameters_and_writes_lazy_out():
    g, ref = la.random.default_rng(9), np.random.default_rng(9)
    loc = np.array([0.0, 10.0, 100.0])
    _exact(g.normal(la.asarray(loc), scale=la.asarray(2.0)), ref.normal(loc, scale=2.0))
    pool = np.arange(10) * 3
    _exact(g.choice(la.asarray(pool), 4), ref.choice(pool, 4))
    _exact(g.permutation(la.asarray(pool)), ref.permutation(pool))
    out, ref_out = la.zeros((2, 3)), np.zeros((2, 3))
    assert g.standard_normal(out=out) is out
    ref.standard_normal(out=ref_out)
    _exact(out, ref_out)
    _exact(g.permuted(la.asarray(pool).reshape(2, 5), axis=1),
           ref.permuted(pool.reshape(2, 5), axis=1))


def test_shuffle_in_place_of_lazy_arrays_and_views():
    g, ref = la.random.default_rng(3), np.random.default_rng(3)
    x, y = la.arange(10.0), np.arange(10.0)
    v = x[2:8]
    g.shuffle(v)
    ref.shuffle(y[2:8])
    _exact(x, y)  # written through the view into its base
    m, n = la.asarray(np.arange(12).reshape(4, 3)), np.arange(12).reshape(4, 3)
    g.shuffle(m, axis=1)
    ref.shuffle(n, axis=1)
    _exact(m, n)
    items, ref_items = [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]
    g.shuffle(items)
    ref.shuffle(ref_items)
    assert items == ref_items
    z, w = la.arange(6), np.arange(6)
    la.random.seed(11)
    la.random.shuffle(z)
    np.random.seed(11)
    np.random.shuffle(w)
    _exact(z, w)


def test_generator_object():
    g = la.random.default_rng(42)
    assert isinstance(g, la.random.Generator)
    assert la.random.default_rng(g) is g
    assert isinstance(g.bit_generator, np.random.PCG64)
    g2 = la.random.Generator(la.random.PCG64(42))
    _exact(g2.random(3), np.random.Generator(np.random.PCG64(42)).random(3))
    kids, ref_kids = g.spawn(2), np.random.default_rng(42).spawn(2)
    assert all(isinstance(k, la.random.Generator) for k in kids)
    _exact(kids[1].integers(0, 1000, 5), ref_kids[1].integers(0, 1000, 5))
    g.random(3)
    copy = pickle.loads(pickle.dumps(g))
    _exact(copy.random(4), np.asarray(g.random(4)))
    ss = la.random.default_rng(np.random.SeedSequence(8))
    _exact(ss.random(2), np.random.default_rng(np.random.SeedSequence(8)).random(2))
    assert "normal" in dir(g) and g.normal.__doc__


def test_random_state_object():
    rs, ref = la.random.RandomState(17), np.random.RandomState(17)
    assert isinstance(rs, la.random.RandomState)
    _exact(rs.rand(2, 3), ref.rand(2, 3))
    _exact(rs.randint(0, 50, size=4), ref.randint(0, 50, size=4))
    _exact(rs.normal(size=3), ref.normal(size=3))
    state = rs.get_state()
    assert isinstance(state[1], np.ndarray)  # state stays NumPy's
    a = rs.randn(2)
    _exact(a, ref.randn(2))
    rs.set_state(state)
    _exact(rs.randn(2), np.asarray(a))


def test_draws_are_counted_fallbacks():
    g = la.random.default_rng(0)
    before = la.cache_info()["fallbacks"]
    g.random(3)
    la.random.rand(2)
    assert la.cache_info()["fallbacks"] == before + 2


# ---- testing ---------------------------------------------------------------------------------
def test_assertions_accept_lazy_arrays():
    x = la.arange(5.0) * 2
    ref = np.arange(5.0) * 2
    la.testing.assert_allclose(x, ref)
    la.testing.assert_allclose(ref, x + 1e-9, rtol=1e-6, atol=1e-8)
    la.testing.assert_array_equal(x, [0, 2, 4, 6, 8])
    la.testing.assert_array_almost_equal(x, ref + 1e-9)
    la.testing.assert_array_less(x, x + 1)
    la.testing.assert_equal({"a": x, "b": [x, 3]}, {"a": ref, "b": [ref, 3]})
    la.testing.assert_almost_equal(x.sum(), 20.0)


@pytest.mark.parametrize("check", [
    lambda x: la.testing.assert_allclose(x, x + 1e-3),
    lambda x: la.testing.assert_array_equal(x, np.arange(5.0)),
    lambda x: la.testing.assert_array_almost_equal(x, x + 0.1),
    lambda x: la.testing.assert_array_less(x, x),
    lambda x: la.testing.assert_equal([x], [x * 3]),
], ids=["allclose", "array_equal", "array_almost_equal", "array_less", "equal"])
def test_assertions_raise_on_mismatch(check):
    with pytest.raises(AssertionError):
        check(la.arange(5.0) * 2)


def test_testing_other_names_are_numpys():
    np_testing = pytest.importorskip("numpy.testing")
    assert la.testing.assert_raises is np_testing.assert_raises
    assert la.testing.suppress_warnings is np_testing.suppress_warnings
    assert set(la.testing.__all__) == set(np_testing.__all__)
    for name in np_testing.__all__:
        getattr(la.testing, name)
    with la.testing.assert_raises(la.linalg.LinAlgError):
        np.asarray(la.linalg.inv(la.zeros((2, 2))))


def test_importing_lazyarray_does_not_import_numpy_testing():
    code = "import sys, lazyarray; print('numpy.testing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
