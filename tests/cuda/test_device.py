"""The CUDA backend on the simulator: device residency, counted transfers and fallbacks,
the kernel cache, library calls and writes (differential against NumPy throughout)."""

import os

import numpy as np
import pytest
from helpers import assert_like_numpy

import lazyarray as la
from lazyarray.backends import numba_cuda


@pytest.fixture(autouse=True)
def cuda_backend():
    with la.options(backend="cuda", eager_threshold=0):
        la.reset_stats()
        yield


def moved() -> dict:
    c = la.cache_info()
    return {k: c[k] for k in ("h2d_transfers", "d2h_transfers")}


def test_simulator_is_on_when_asked():
    assert numba_cuda.SIMULATOR == (os.environ.get("NUMBA_ENABLE_CUDASIM") == "1")


def test_chain_of_evaluations_moves_no_data():
    a = np.linspace(-2, 2, 300)
    x = la.asarray(a, device="cuda")
    assert x.device == "cuda" and moved() == {"h2d_transfers": 1, "d2h_transfers": 0}
    y = x
    for _ in range(3):  # each step is evaluated, its result stays on the device
        y = la.tanh(y) * 1.5 + y.mean()
        la.evaluate(y)
        assert y._node.device is not None and y._node.on_host is False
    assert moved() == {"h2d_transfers": 1, "d2h_transfers": 0}
    expected = a
    for _ in range(3):
        expected = np.tanh(expected) * 1.5 + expected.mean()
    assert_like_numpy(np.asarray(y), expected)
    c = la.cache_info()
    assert c["d2h_transfers"] == 1 and c["d2h_bytes"] == a.nbytes
    np.asarray(y)  # observed once: the host copy is kept
    assert la.cache_info()["d2h_transfers"] == 1


def test_numpy_inputs_are_uploaded_once_and_stay():
    a = la.asarray(np.arange(50.0))
    (a * 2).sum().item()
    (a + 1).max().item()
    c = la.cache_info()
    assert c["h2d_transfers"] == 1 and c["h2d_bytes"] == 400
    assert c["d2h_transfers"] == 2  # the two observed scalars


def test_device_attribute_and_to_device():
    with la.options(backend="cpu"):
        h = la.asarray(np.arange(6.0).reshape(2, 3))
        assert h.device == "cpu"
        d = h.to_device("cuda")
        assert d.device == "cuda" and h.device == "cpu"
        r = d.T * 2  # computation follows the data onto the GPU
        assert r.device == "cuda"
        assert_like_numpy(np.asarray(r), np.arange(6.0).reshape(2, 3).T * 2)
        back = r.to_device("cpu")
        assert back.device == "cpu"
        assert_like_numpy(np.asarray(back), np.arange(6.0).reshape(2, 3).T * 2)
    with pytest.raises(ValueError, match="unsupported device"):
        h.to_device("tpu")


def test_declined_fusion_runs_on_the_host_counted():
    a = np.arange(1, 9, dtype=np.float64)
    x = la.asarray(a, device="cuda")
    y = la.logaddexp(x, 1.0) * 2  # no CUDA template for logaddexp
    assert_like_numpy(np.asarray(y), np.logaddexp(a, 1.0) * 2)
    c = la.cache_info()
    assert c["host_fallbacks"] >= 1 and c["fallbacks"] >= 1
    assert c["d2h_transfers"] >= 2 and c["h2d_transfers"] >= 2  # there and back, counted


def test_library_calls_sort_fft_fall_back_to_the_host():
    a = np.array([3.0, 1.0, 2.0, 5.0])
    x = la.asarray(a, device="cuda")
    assert_like_numpy(np.asarray(la.sort(x * 2)), np.sort(a * 2))
    assert la.cache_info()["d2h_transfers"] >= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("shapes", [((5, 7), (7, 3)), ((1, 4), (4, 1)), ((33, 17), (17, 20))],
                         ids=str)
def test_matmul_tiled_kernel(dtype, shapes):
    rng = np.random.default_rng(1)
    a = (rng.random(shapes[0]) * 10).astype(dtype)
    b = (rng.random(shapes[1]) * 10).astype(dtype)
    x, y = la.asarray(a, device="cuda"), la.asarray(b, device="cuda")
    r = x @ y + 1
    assert_like_numpy(np.asarray(r), a @ b + 1, rtol=1e-5 if dtype == np.float32 else None)
    c = la.cache_info()
    assert c["library_calls"] == 1 and c["host_fallbacks"] == 0


def test_batched_matmul_falls_back_counted():
    a = np.arange(24.0).reshape(2, 3, 4)
    b = np.arange(8.0).reshape(2, 4, 1)
    r = la.asarray(a, device="cuda") @ la.asarray(b, device="cuda")
    assert_like_numpy(np.asarray(r), a @ b)
    assert la.cache_info()["host_fallbacks"] == 1


def test_writes_on_the_device():
    a = np.arange(20.0).reshape(4, 5)
    x = la.asarray(a, device="cuda")
    y = x * 2
    y[1:3, ::2] = -1.0
    y[0] = x[3]
    e = a * 2
    e[1:3, ::2] = -1.0
    e[0] = a[3]
    assert_like_numpy(np.asarray(y), e)
    assert_like_numpy(np.asarray(x), a)  # the input is untouched
    c = la.cache_info()
    assert c["h2d_transfers"] == 1  # no round trip for the writes
    assert c["updates_in_place"] + c["updates_copied"] == 2


def test_views_of_device_results():
    a = np.arange(60.0).reshape(3, 4, 5)
    x = la.asarray(a, device="cuda")
    y = (x + 1)[:, ::-2, 1:].transpose(2, 0, 1)
    assert_like_numpy(np.asarray(y), (a + 1)[:, ::-2, 1:].transpose(2, 0, 1))
    z = y.reshape(-1)  # a reshape that is not a view: gathered on the device
    assert_like_numpy(np.asarray(z), (a + 1)[:, ::-2, 1:].transpose(2, 0, 1).reshape(-1))


def test_kernel_cache_shape_polymorphic():
    for n in (10, 37, 64):
        x = la.asarray(np.arange(float(n)), device="cuda")
        np.asarray(x * 3 + 1)
    c = la.cache_info()
    assert c["misses"] == 1 and c["hits"] == 2


def test_explain_shows_cuda_kernels():
    x = la.asarray(np.arange(8.0), device="cuda")
    r = la.explain(la.sqrt((x * x).sum()))
    text = str(r)
    assert r.num_kernels == 1
    assert "cuda.shared.array" in text and "def kernel_combine" in text
    assert la.cache_info()["h2d_transfers"] == 1  # explain moves nothing


@pytest.mark.parametrize("n", [1, 15, 16, 17, 100, 1000])
def test_reductions_sizes_around_the_block(n):
    a = np.random.default_rng(n).standard_normal(n)
    a[n // 2] = np.nan if n > 50 else a[n // 2]
    x = la.asarray(a, device="cuda")
    for f in ("sum", "prod", "max", "min", "argmax", "argmin"):
        assert_like_numpy(np.asarray(getattr(la, f)(x)), getattr(np, f)(a))
    assert_like_numpy(np.asarray(la.cumsum(x)), np.cumsum(a))


def test_argmax_ties_and_nan_first():
    a = np.array([[1.0, 3.0, 3.0, 0.0] * 9, [np.nan, 2.0, np.nan, 9.0] * 9])
    x = la.asarray(a, device="cuda")
    assert_like_numpy(np.asarray(la.argmax(x, axis=1)), np.argmax(a, axis=1))
    assert_like_numpy(np.asarray(la.argmin(x, axis=1)), np.argmin(a, axis=1))
    b = np.array([[5, 7, 7, 1] * 10] * 3, dtype=np.int16)
    assert_like_numpy(np.asarray(la.argmax(la.asarray(b), axis=1)), np.argmax(b, axis=1))


def test_softmax_and_normalization_rows():
    a = np.random.default_rng(3).standard_normal((6, 40)).astype(np.float32)
    x = la.asarray(a, device="cuda")
    e = la.exp(x - x.max(axis=-1, keepdims=True))
    sm = e / e.sum(axis=-1, keepdims=True)
    ea = np.exp(a - a.max(axis=-1, keepdims=True))
    assert_like_numpy(np.asarray(sm), ea / ea.sum(axis=-1, keepdims=True))
    z = (x - x.mean(axis=-1, keepdims=True)) / x.std(axis=-1, keepdims=True)
    assert_like_numpy(np.asarray(z), (a - a.mean(axis=-1, keepdims=True))
                      / a.std(axis=-1, keepdims=True), rtol=1e-4)
    assert la.cache_info()["host_fallbacks"] == 0


def test_where_clip_astype_on_device():
    a = np.array([-3.5, -0.5, 0.0, 0.5, np.nan, 7.25])
    x = la.asarray(a, device="cuda")
    assert_like_numpy(np.asarray(la.where(x > 0, x, -x)), np.where(a > 0, a, -a))
    assert_like_numpy(np.asarray(la.clip(x, -1, 1)), np.clip(a, -1, 1))
    assert_like_numpy(np.asarray((x * 2).astype(np.int16)[1:]), (a * 2).astype(np.int16)[1:])
    assert la.cache_info()["host_fallbacks"] == 0
    # integer-array indexing (a gather) has no CUDA kernel yet: it runs on the host, counted
    assert_like_numpy(np.asarray((x * 2).astype(np.int16)[[0, 1, 2, 3, 5]]),
                      (a * 2).astype(np.int16)[[0, 1, 2, 3, 5]])
    assert la.cache_info()["host_fallbacks"] == 1


def test_kernels_persist_on_disk(tmp_path):
    import glob

    from lazyarray.runtime import diskcache

    with la.options(cache_dir=str(tmp_path)):
        la.cache_clear()
        x = la.asarray(np.arange(12.0), device="cuda")
        np.asarray(la.cos(x) - 3)
        files = glob.glob(f"{diskcache.cache_dir()}/*/{numba_cuda.PREFIX}*.py")
        with open(files[0]) as f:
            assert len(files) == 1 and "def kernel(" in f.read()
        writes = la.cache_info()["disk_writes"]
        la.cache_clear()  # a fresh in-memory cache finds the same file: not rewritten
        np.asarray(la.cos(x) - 4)
        c = la.cache_info()
        assert c["misses"] == 1 and c["disk_writes"] == 0 and writes == 1
        assert diskcache.info()["kernels"] == 1


def test_a_kernel_that_fails_runs_on_the_host(monkeypatch, caplog):
    def broken(entry):
        raise RuntimeError("no such kernel")

    monkeypatch.setattr(numba_cuda, "_module", broken)
    monkeypatch.setattr(numba_cuda, "STRICT", False)
    a = np.arange(7.0)
    x = la.asarray(a, device="cuda")
    with caplog.at_level("WARNING", logger="lazyarray"):
        r = np.asarray(la.arctan(x) * 3 - 0.25)
    assert_like_numpy(r, np.arctan(a) * 3 - 0.25)
    assert "running it on the host" in caplog.text
    assert la.cache_info()["host_fallbacks"] == 1


def test_creation_on_the_device():
    z = la.zeros((3, 4), dtype=np.int32, device="cuda")
    o = la.ones(5, device="cuda")
    f = la.full((2, 2), 7.5, device="cuda")
    r = la.arange(6, device="cuda")
    assert z.device == o.device == f.device == r.device == "cuda"
    assert la.cache_info()["h2d_transfers"] == 1  # arange's data; the fills run on the device
    assert_like_numpy(np.asarray(z), np.zeros((3, 4), np.int32))
    assert_like_numpy(np.asarray(o + r[:5]), np.ones(5) + np.arange(5))
    assert_like_numpy(np.asarray(f), np.full((2, 2), 7.5))
    with pytest.raises(ValueError, match="unsupported device"):
        la.zeros(3, device="npu")


@pytest.mark.parametrize("shape, axis", [((7, 40), 0), ((3, 5, 12), (0, 1)), ((5, 3, 9), 1),
                                         ((4, 6), 0)], ids=str)
def test_column_reductions_one_thread_per_output(shape, axis):
    """Many kept elements along the innermost dim: each thread loops over its column (the
    path is taken from COLUMNS_MIN kept elements; (4, 6) stays on the block path)."""
    a = np.random.default_rng(2).standard_normal(shape)
    x = la.asarray(a, device="cuda")
    assert_like_numpy(np.asarray(x.sum(axis=axis)), a.sum(axis=axis))
    assert_like_numpy(np.asarray(la.sqrt((x * x).mean(axis=axis))),
                      np.sqrt((a * a).mean(axis=axis)))
    assert_like_numpy(np.asarray(x.max(axis=axis) - x.min(axis=axis)),
                      a.max(axis=axis) - a.min(axis=axis))
