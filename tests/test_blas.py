"""Matrix products through lazyarray/runtime/blas.py: NumPy's answers for every layout and
dtype, NumPy's warnings, and np.matmul itself wherever the retuned OpenBLAS does not apply
(on a CPU without AVX-512, or where NumPy's OpenBLAS already runs AVX-512 kernels, that is
everywhere: the same tests then check the fallback)."""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np
import pytest

import lazyarray as la
from lazyarray.backends import numba_cpu
from lazyarray.runtime import blas, dispatch, native


def _layouts(x):
    return {"C": x, "F": np.asfortranarray(x), "rows": np.ascontiguousarray(
        np.repeat(x, 2, axis=0))[::2], "cols": np.repeat(x, 2, axis=1)[:, ::2]}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(64, 64, 64), (70, 50, 90), (1, 300, 900), (300, 1, 900),
                                   (520, 512, 530)])
def test_products_match_numpy_in_every_layout(dtype, shape):
    m, k, n = shape
    rng = np.random.default_rng(1)
    a0, b0 = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    for la_name, a in _layouts(a0).items():
        for lb_name, b in _layouts(b0).items():
            got = blas.matmul(a, b)
            want = np.matmul(a, b)
            assert got.dtype == want.dtype and got.shape == want.shape
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * k ** 0.5,
                                       err_msg=f"{la_name} @ {lb_name}")
            lazy = np.asarray(la.asarray(a) @ la.asarray(b))
            np.testing.assert_allclose(lazy, want, rtol=tol, atol=tol * k ** 0.5)


def test_integer_valued_products_are_exact():
    rng = np.random.default_rng(2)
    a = rng.integers(-8, 9, (530, 520)).astype(np.float64)
    b = rng.integers(-8, 9, (520, 510)).astype(np.float64)
    assert np.array_equal(blas.matmul(a, b), a @ b)


@pytest.mark.parametrize("a_shape, b_shape, dtype", [
    ((3, 4), (4, 5), np.float64),  # small: NumPy's call
    ((2, 80, 80), (80, 80), np.float64),  # batched
    ((100, 100), (100, 100), np.int64),  # integers
    ((100, 100), (100, 100), np.complex128),  # complex
    ((0, 100), (100, 100), np.float64),  # empty
])
def test_other_products_are_numpys(a_shape, b_shape, dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, a_shape).astype(dtype)
    b = rng.integers(-3, 4, b_shape).astype(dtype)
    got = blas.matmul(a, b)
    want = np.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


def test_mismatched_shapes_raise_numpys_error():
    with pytest.raises(ValueError, match="matmul"):
        blas.matmul(np.ones((600, 520)), np.ones((530, 600)))


def test_mixed_dtypes_go_to_numpy():
    a = np.ones((100, 100), np.float32)
    b = np.ones((100, 100), np.float64)
    got = np.asarray(la.asarray(a) @ la.asarray(b))
    assert got.dtype == np.float64 and np.array_equal(got, a @ b)


@pytest.mark.parametrize("fill, expected", [(1e200, "overflow encountered in matmul"),
                                            (np.inf, "invalid value encountered in matmul")])
def test_non_finite_products_warn_as_numpy_does(fill, expected):
    a = np.full((520, 520), fill)  # at least blas.MIN_WORK multiply-adds
    b = np.zeros((520, 520)) if fill == np.inf else a
    with warnings.catch_warnings(record=True) as got, np.errstate(all="warn"):
        warnings.simplefilter("always")
        value = np.asarray(la.asarray(a) @ la.asarray(b))
    with np.errstate(all="ignore"):
        want = a @ b
    assert np.array_equal(value, want, equal_nan=True)
    assert expected in [str(w.message) for w in got]
    assert all(w.filename == __file__ for w in got)


def test_option_keeps_numpys_blas():
    big = np.ones((520, 520))
    assert (blas._gemm(big, big) is not None) == blas.active()  # active: on an AVX-512 Zen 5
    assert blas._gemm(np.ones((256, 256)), np.ones((256, 256))) is None  # below MIN_WORK
    with la.options(blas="numpy"):
        assert not blas.active()
        assert blas._gemm(np.ones((520, 520)), np.ones((520, 520))) is None
    with pytest.raises(ValueError, match="blas"):
        with la.options(blas="mkl"):
            pass


def test_layout_reads_strides():
    x = np.zeros((6, 8))
    assert blas._layout(x) == (blas._NO_TRANS, 8)
    assert blas._layout(np.asfortranarray(x)) == (blas._TRANS, 6)
    assert blas._layout(x[:, :5]) == (blas._NO_TRANS, 8)
    assert blas._layout(x[:, ::2]) == (None, 0)
    assert blas._layout(x.T[:5]) == (blas._TRANS, 8)


_WARN = dict(over="warn", invalid="warn", divide="warn")  # NumPy's default error state


def _bias_relu(xp, a, b, bias):
    return xp.maximum(a @ b + bias, 0)


@pytest.mark.parametrize("n", [24, 300])  # (from 17 on a product stays BLAS: passes/products.py)
def test_epilogue_writes_over_the_product_and_warns_as_numpy(compiled, n):
    """W5's bias + relu runs in place over the product's buffer (a donated buffer) under
    NumPy's default error state too; where the addition overflows, the kernel's check would
    read the overwritten product, so the recheck computes the product again: NumPy's values
    and exactly NumPy's warnings, at the user's line."""
    rng = np.random.default_rng(n)
    a, b, bias = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
    before = la.cache_info()["buffers_donated"]
    with np.errstate(**_WARN):
        got = np.asarray(_bias_relu(la, la.asarray(a), la.asarray(b), la.asarray(bias)))
    assert la.cache_info()["buffers_donated"] - before == 1
    assert np.array_equal(got, _bias_relu(np, a, b, bias))
    rechecks = la.cache_info()["fp_rechecks"]
    for big in ([1.7e308, -1.7e308], [np.inf, -np.inf], [np.nan, 1.0]):
        hot = bias.copy()
        hot[: len(big)] = big
        for a2 in (a, a * 1e306):  # (the sum overflows only with the larger product)
            with warnings.catch_warnings(record=True) as seen, np.errstate(**_WARN):
                warnings.simplefilter("always")
                got = np.asarray(_bias_relu(la, la.asarray(a2), la.asarray(b),
                                            la.asarray(hot)))
            with warnings.catch_warnings(record=True) as ref, np.errstate(**_WARN):
                warnings.simplefilter("always")
                want = _bias_relu(np, a2, b, hot)
            assert np.array_equal(got, want, equal_nan=True)
            assert sorted(str(w.message) for w in seen) == sorted(str(w.message) for w in ref)
            assert all(w.filename == __file__ for w in seen)
            donated = la.cache_info()["buffers_donated"]
    assert donated - before == 7
    assert la.cache_info()["fp_rechecks"] > rechecks


def _one_thread_calls(monkeypatch) -> list:
    """A list that gets each `numba_cpu.OneThread` called from now on (one thread runs), or
    its twin for a kernel linked from a native image (`native.OneThread`)."""
    calls = []
    for cls in (numba_cpu.OneThread, native.OneThread):
        def counted(self, *args, real=cls.__call__):
            calls.append(self)
            return real(self, *args)

        monkeypatch.setattr(cls, "__call__", counted)
    return calls


@pytest.mark.parametrize("n", [32, 64, 300])
def test_a_small_epilogue_in_place_runs_vectorized_on_one_thread(compiled, monkeypatch, n):
    """Right after a product (BLAS's workers still spin) a small epilogue runs on the calling
    thread. Written over the product from VECTOR_MIN elements on, that is the parallel
    dispatcher on one thread (its loops vectorize in place, the serial one's do not); below,
    the serial one. Both give NumPy's bits, on the first launch and on its replays."""
    calls = _one_thread_calls(monkeypatch)
    rng = np.random.default_rng(n)
    a, b, bias = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
    threads = numba.get_num_threads()
    for _ in range(2):
        got = np.asarray(_bias_relu(la, la.asarray(a), la.asarray(b), la.asarray(bias)))
        assert np.array_equal(got, _bias_relu(np, a, b, bias))
    assert numba.get_num_threads() == threads
    small = n * n < dispatch.VECTOR_MIN
    assert n * n < dispatch.PARALLEL_MIN_AFTER_BLAS
    safe = numba_cpu._thread_controls() is not None  # (omp or tbb: not workqueue)
    assert len(calls) == (0 if small or not safe else 2)


@numba.njit(parallel=True)
def _threads_inside(fail):
    seen = np.zeros(64, np.int64)
    for i in numba.prange(64):
        seen[i] = numba.get_num_threads()
    if fail:
        raise ValueError("raised inside the kernel")
    return seen.max()


def test_one_thread_runs_one_thread_and_restores_the_count():
    one = numba_cpu.one_thread(_threads_inside)
    if one is None:  # the workqueue layer: one_thread declines, the serial kernel runs
        assert numba_cpu._thread_controls() is None
        return
    before = numba.get_num_threads()
    assert one(False) == 1
    assert numba.get_num_threads() == before
    assert _threads_inside(False) == before
    with pytest.raises(ValueError, match="raised inside the kernel"):
        one(True)
    assert numba.get_num_threads() == before
    assert numba_cpu.one_thread(_threads_inside) is one  # one wrapper per dispatcher


def test_kernels_run_on_one_thread_while_blas_workers_may_spin(compiled, monkeypatch):
    """After a product, NumPy's OpenBLAS workers spin for `blas.SPIN_S`: a parallel kernel
    launched in that window, by another evaluation too, and on its replays, runs on the
    calling thread below PARALLEL_MIN_NEAR_BLAS iterations (parallel workers would wait for
    the cores); in parallel once the window is over. NumPy's values either way."""
    calls = _one_thread_calls(monkeypatch)
    monkeypatch.setattr(dispatch, "PAUSE_S", math.inf)  # (no launch counts as after a pause)
    safe = numba_cpu._thread_controls() is not None  # (omp or tbb: not workqueue)
    x = np.random.default_rng(7).standard_normal((256, 256))
    assert dispatch.PARALLEL_MIN <= x.size < dispatch.PARALLEL_MIN_NEAR_BLAS
    for spin, on_one in ((3600.0, 2 if safe else 0), (0.0, 0), (3600.0, 2 if safe else 0)):
        monkeypatch.setattr(blas, "SPIN_S", spin)
        product = np.asarray(la.asarray(x) @ la.asarray(x))
        assert blas.spinning() == (spin > 0)
        calls.clear()
        for _ in range(2):  # the first launch, then its replay
            got = la.maximum(la.asarray(product) + 1.0, 0.0) * 0.5 + la.asarray(x)
            assert np.array_equal(np.asarray(got), np.maximum(x @ x + 1.0, 0.0) * 0.5 + x)
        assert len(calls) == on_one
    kernel = ("parallel", "serial")
    assert dispatch.while_blas_spins("serial", kernel, 1 << 16) is None
    assert dispatch.while_blas_spins("parallel", kernel, dispatch.PARALLEL_MIN_NEAR_BLAS) is None


@pytest.mark.parametrize("value, seconds", [(None, 2.0 ** 28 / 2e9), ("16", 2.0 ** 16 / 2e9),
                                            ("2", 2.0 ** 4 / 2e9), ("99", 2.0 ** 30 / 2e9),
                                            ("soon", 2.0 ** 28 / 2e9)])
def test_spin_window_follows_openblas_reading_of_its_timeout(value, seconds):
    assert blas._spin_seconds(value) == seconds


_IMPORT_ORDER = """
import os, sys
seen = []
class Spy:  # what the environment holds when NumPy (and its OpenBLAS) loads
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and not seen:
            seen.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
sys.meta_path.insert(0, Spy())
if sys.argv[1] == "numpy-first":
    import numpy
import lazyarray
from lazyarray.runtime import blas
print(seen[0], os.environ.get("OPENBLAS_THREAD_TIMEOUT"), blas.SPIN_S)
"""


@pytest.mark.parametrize("order, env, expected", [
    ("lazyarray-first", None, "16 16 %r" % (2.0 ** 16 / 2e9)),
    ("lazyarray-first", "24", "24 24 %r" % (2.0 ** 24 / 2e9)),
    ("numpy-first", None, "None None %r" % (2.0 ** 28 / 2e9)),
])
def test_import_parks_openblas_workers_soon_when_it_comes_first(order, env, expected):
    """`import lazyarray` before NumPy sets OPENBLAS_THREAD_TIMEOUT=16 in time for OpenBLAS to
    read it; a value of the user's wins; after NumPy it is too late, and the executor's spin
    window is OpenBLAS's default."""
    import os
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if env is not None:
        environ["OPENBLAS_THREAD_TIMEOUT"] = env
    out = subprocess.run([sys.executable, "-c", _IMPORT_ORDER, order], env=environ,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == expected.split()
