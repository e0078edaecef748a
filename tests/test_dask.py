"""The dask backend: fused chunk tasks against NumPy, on the threaded scheduler and (slow) on a
two-worker LocalCluster. Chunks are uneven on purpose (a short last chunk in every dim)."""

import os

import dask
import dask.array as da
import distributed
import numpy as np
import pytest
from helpers import assert_like_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyarray as la
from lazyarray.backends import dask_backend
from lazyarray.tools.workloads import w1, w2, w3, w6, w7

RNG = np.random.default_rng(7)
V = RNG.uniform(-2, 2, 47)  # chunks of 6: (6, ..., 6, 5)
U = RNG.uniform(-2, 2, 47)
M = RNG.uniform(-2, 2, (23, 17))  # chunks (10, 6): (10, 10, 3) x (6, 6, 5)
NANS = np.where(RNG.random(47) < 0.2, np.nan, V)
NANS[3], NANS[30] = np.inf, -np.inf
I32 = RNG.integers(-50, 50, 47).astype(np.int32)
F32 = V.astype(np.float32)
B = RNG.random((23, 17)) < 0.5


def write(xp, A):
    B = A * 1.5
    B[2:9, ::3] = 7.0  # an update: runs gathered
    return B - 1


def stencil1d(xp, x):
    return x[2:] - 2.0 * x[1:-1] + x[:-2]


PROGRAMS = {
    # loop fusions
    "w1": (lambda xp, a, b: w1(xp, a, b, a * 0.5, b, a), (V, U)),
    "mixed_dtypes": (lambda xp, i, f: (i * 3 + f) / 2 - 1, (I32, F32)),
    "compare": (lambda xp, a, b: xp.where(a > b, a, -b) >= 0.5, (V, U)),
    "nan_inf": (lambda xp, x: xp.nan_to_num(x * 2.0, nan=-1.0) + xp.isnan(x), (NANS,)),
    "broadcast": (lambda xp, A, v: A * v[:17] + v[:23, None], (M, V)),
    "transpose": (lambda xp, A: (A.T * 2.0)[::2] - xp.exp(A[::-1, :5]).T.sum(), (M,)),
    "reshape": (lambda xp, A: xp.sin(A.T.reshape(-1)[::3]) + A.reshape(17, 23)[0, 0], (M,)),
    "stencil_1d": (stencil1d, (V,)),
    "w7_stencil": (w7, (M,)),
    "stencil_and_views": (lambda xp, A: A[1:, :-1] - A[:-1, 1:] * A.T[:-1, :16].T[:, :16]
                          + A[::-1][1:, 1:], (M[:17, :17],)),
    "matmul": (lambda xp, A: xp.maximum(A @ A.T + 1.0, 0.0), (M,)),
    # input fusions: partials per chunk, a tree of combines, the epilogue after it
    "w2_sum_sqrt": (w2, (V, U)),
    "sum_axis0": (lambda xp, A: (A * A).sum(axis=0), (M,)),
    "sum_neg_axis_keepdims": (lambda xp, A: xp.exp(A).sum(axis=-1, keepdims=True) / 3, (M,)),
    "prod_max_min": (lambda xp, A: A.prod(axis=1) + A.max(axis=0)[:1] - (A - 1).min(), (M,)),
    "siblings": (lambda xp, a, b: (a * b).sum() / (a + b).sum(), (V, U)),
    "any_all": (lambda xp, X: xp.any(X, axis=0) ^ xp.all(~X, axis=1)[:17], (B,)),
    "float32_sum": (lambda xp, x: (x * x).sum(), (F32,)),
    "int_sum": (lambda xp, i: (i * i).sum(axis=0), (I32,)),
    "nan_sum_max": (lambda xp, x: xp.stack([x.sum(), x.max(), x.min()]), (NANS,)),
    "mean_var": (lambda xp, A: A.mean(axis=0) + A.var(axis=0) + A.std(), (M,)),
    "w3_softmax": (w3, (M,)),
    "w6_standardize": (w6, (M,)),
    "argmax_rows": (lambda xp, A: xp.argmax(A * 2 - 1, axis=1), (M,)),
    "argmin_cols": (lambda xp, A: xp.argmin(A, axis=0), (M,)),
    "argmax_nan": (lambda xp, x: xp.argmax(x) + xp.argmin(x[::-1]), (NANS,)),
    "argmax_flat": (lambda xp, A: xp.argmax(A.T), (M,)),
    # scans: the operand per chunk, dask's cumreduction across chunks
    "cumsum": (lambda xp, A: xp.cumsum(A * 2, axis=1), (M,)),
    "cumsum_axis0_int": (lambda xp, i: xp.cumsum(i[:45].reshape(5, 9) * 3, axis=0), (I32,)),
    "cumprod_flat": (lambda xp, A: xp.cumprod(A * 0.1 + 1.0), (M,)),
    # runs gathered in one task, or is 0-d
    "write_gathered": (write, (M,)),
    "scalar_epilogue": (lambda xp, x: x.sum() * 2 + 1, (V,)),
}


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kernels"))  # fresh per run, shared by this module


@pytest.fixture
def threaded(kernel_dir):
    with la.options(backend="dask", chunks=(10, 6), eager_threshold=0, cache_dir=kernel_dir), \
            dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_threaded(threaded, name):
    f, inputs = PROGRAMS[name]
    expected = f(np, *inputs)
    actual = f(la, *(la.asarray(x) for x in inputs))
    assert_like_numpy(actual, expected, what=name)


@settings(max_examples=10)
@given(rows=st.integers(1, 30), cols=st.integers(1, 12), rchunk=st.integers(1, 9),
       cchunk=st.integers(1, 9), axis=st.sampled_from([None, 0, 1, -1]),
       seed=st.integers(0, 2**16))
def test_random_chunks(rows, cols, rchunk, cchunk, axis, seed):
    A = np.random.default_rng(seed).uniform(-3, 3, (rows, cols))
    with la.options(backend="dask", chunks=(rchunk, cchunk), eager_threshold=0), \
            dask.config.set(scheduler="threads"):
        x = la.asarray(A)
        assert_like_numpy(la.tanh(x) * 2 - x.T.T, np.tanh(A) * 2 - A)
        assert_like_numpy((x * x + 1).sum(axis=axis), (A * A + 1).sum(axis=axis))
        assert_like_numpy(x.argmax(axis=axis), A.argmax(axis=axis))
        if rows > 2:
            assert_like_numpy(x[2:] - x[:-2] + x[1:-1], A[2:] - A[:-2] + A[1:-1])


def test_multi_output_loop(threaded):
    before = la.cache_info()["gathered"]
    a, b = la.asarray(V), la.asarray(U)
    y = a * b + 1.0
    z = y * 2.0 - a
    with la.options(backend="cpu"):
        assert "ROOT tuple" in la.explain(y, z).hlo_after.split("ENTRY")[0]  # one kernel, 2 roots
    la.evaluate(y, z)
    assert_like_numpy(y, V * U + 1.0)
    assert_like_numpy(z, (V * U + 1.0) * 2.0 - V)
    assert la.cache_info()["gathered"] == before


def test_uneven_dask_chunks_kept():
    x = da.from_array(M, chunks=((4, 11, 8), (9, 8)))
    y = la.from_dask(x)
    assert y.to_dask() is x
    out = (y * 2.0 + la.sin(y)).to_dask()
    assert isinstance(out, da.Array)
    assert out.chunks == x.chunks  # a loop fusion keeps its input's chunks
    with dask.config.set(scheduler="threads"):
        assert_like_numpy(out.compute(), M * 2.0 + np.sin(M))
        assert_like_numpy(la.from_dask(x).sum(axis=0).to_dask().compute(), M.sum(axis=0))


def test_stencil_uses_overlap(threaded):
    out = w7(la, la.asarray(M)).to_dask()
    layers = "".join(out.dask.layers)
    assert "overlap" in layers
    # the output keeps the input's chunking (a 1-row sliver joins its neighbour), rather than
    # the slivers that aligning five shifted slices would cut
    assert out.chunks == ((10, 11), (6, 6, 3))
    assert_like_numpy(out.compute(), w7(np, M))


def test_stencil_on_narrow_chunks(threaded):
    # a chunk narrower than the stencil's reach: the slices align as plain loads instead
    before = la.cache_info()["gathered"]
    x = la.from_dask(da.from_array(V, chunks=((2, 20, 25),)))
    out = (x[4:] - x[:-4]).to_dask()
    assert "overlap" not in "".join(out.dask.layers)
    assert_like_numpy(out.compute(), V[4:] - V[:-4])
    assert la.cache_info()["gathered"] == before


def test_one_compile_per_kernel_threaded(threaded):
    la.cache_clear()
    a, b = la.asarray(V), la.asarray(U)
    assert_like_numpy(w1(la, a, b, a, b, a), w1(np, V, U, V, U, V))
    info = la.cache_info()
    assert info["kernels_launched"] == 8  # one per chunk: 47 = 7 * 6 + 5
    assert info["compiles"] + info["disk_hits"] == 1
    assert list(dask_backend.kernel_builds().values()) == [1]


def test_fallback_counted(threaded):
    before = la.cache_info()["gathered"]
    assert_like_numpy(la.cumsum(la.asarray(M), axis=0), np.cumsum(M, axis=0))
    assert la.cache_info()["gathered"] == before  # scans are chunked
    z = la.asarray(M.copy())
    z[2:9, ::3] = 7.0
    ref = M.copy()
    ref[2:9, ::3] = 7.0
    assert_like_numpy(z * 2, ref * 2)
    assert la.cache_info()["gathered"] == before + 1  # the write ran gathered


def test_empty_and_0d(threaded):
    e = np.zeros((0, 5))
    assert_like_numpy(la.asarray(e).sum(axis=0) + 1, e.sum(axis=0) + 1)
    assert_like_numpy(la.asarray(np.float64(3.0)) * la.asarray(V).sum(), 3.0 * V.sum())


def test_to_dask_is_lazy_and_reusable(threaded):
    x = la.asarray(V)
    y = x * 2.0 + 1.0
    d = y.to_dask()
    assert not y._node.realized  # nothing computed
    assert isinstance(d, da.Array) and d.chunks == ((6,) * 7 + (5,),)
    assert_like_numpy((d[::2] - 1).sum().compute(), (V * 2.0 + 1.0)[::2].sum() - 24)


def test_from_dask_on_other_backends():
    x = la.from_dask(da.from_array(V, chunks=9))
    assert_like_numpy(x * 3.0 - 1, V * 3.0 - 1)
    x[::4] = 0.0  # a write on the cpu backend: the dask leaf is computed first
    ref = V.copy()
    ref[::4] = 0.0
    assert_like_numpy(x, ref)
    with la.options(backend="numpy"):
        assert_like_numpy(la.from_dask(da.from_array(V, chunks=9)).sum(), V.sum())


def test_dask_from_array_of_lazy_array():
    y = la.asarray(M) * 2.0
    d = da.from_array(y, chunks=(10, 6))
    with dask.config.set(scheduler="threads"):
        assert_like_numpy(np.asarray((d + 1).sum(axis=0).compute()), (M * 2.0 + 1).sum(axis=0))


def test_errors():
    with pytest.raises(TypeError, match="dask.array.Array"):
        la.from_dask(np.zeros(3))
    with pytest.raises(TypeError, match="unsupported dtype"):
        la.from_dask(da.from_array(np.array(["a", "b"])))
    with pytest.raises(TypeError, match="NumPy chunks"):  # a dask array of lazy arrays
        la.from_dask(da.from_array(la.asarray(V), chunks=10))
    with pytest.raises(ValueError, match="known chunk sizes"):
        x = da.from_array(V, chunks=10)
        la.from_dask(x[x > 0])
    with pytest.raises(ValueError, match="unknown backend"), la.options(backend="dusk"):
        pass


# ---- a real two-process LocalCluster (slow: starting it takes seconds) -------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = os.path.dirname(os.path.dirname(os.path.abspath(la.__file__)))
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "LAZYARRAY_CACHE_DIR")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, saved["PYTHONPATH"]) if p)
    os.environ["LAZYARRAY_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernels"))
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, host="127.0.0.1") as c, \
                distributed.Client(c) as client:
            yield client
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_distributed(cluster, name):
    f, inputs = PROGRAMS[name]
    with la.options(backend="dask", chunks=(10, 6), eager_threshold=0):
        actual = f(la, *(la.asarray(x) for x in inputs))
        assert_like_numpy(actual, f(np, *inputs), what=name)


@pytest.mark.slow
def test_interop_distributed(cluster):
    with la.options(backend="dask", chunks=(10, 6), eager_threshold=0):
        d = (la.asarray(M) * 2.0).to_dask()
    assert_like_numpy((d.T @ d).compute(), (M * 2.0).T @ (M * 2.0))  # plain dask from here on
    lazy_chunks = da.from_array(la.asarray(M) + 1.0, chunks=(10, 6))
    assert_like_numpy(np.asarray(lazy_chunks.sum(axis=1).compute()), (M + 1.0).sum(axis=1))


@pytest.mark.slow
def test_one_compile_per_kernel_per_worker(cluster):
    workers = list(cluster.scheduler_info()["workers"])
    assert len(workers) == 2
    earlier = cluster.run(dask_backend.kernel_builds)
    before = cluster.run(la.cache_info)
    big = RNG.uniform(-1, 1, 4000)
    with la.options(backend="dask", chunks=400, eager_threshold=0):  # 10 chunks, both workers
        for _ in range(3):
            x = la.asarray(big)
            assert_like_numpy(la.sqrt(((x * 1.5 - 0.25) ** 2).sum()),
                              np.sqrt(((big * 1.5 - 0.25) ** 2).sum()))
            assert_like_numpy(la.cos(x) * x + 2.0, np.cos(big) * big + 2.0)
    builds = cluster.run(dask_backend.kernel_builds)
    after = cluster.run(la.cache_info)
    for w in workers:
        new = {k: n for k, n in builds[w].items() if k not in earlier[w]}
        assert new and set(new.values()) == {1}, builds  # each new kernel built once
        assert all(builds[w][k] == n for k, n in earlier[w].items())  # old ones not again
        # every build is a specialization some kernel kept: none was compiled twice
        assert after[w]["compiles"] + after[w]["disk_hits"] == sum(builds[w].values())
        launched = after[w]["kernels_launched"] - before[w]["kernels_launched"]
        assert launched > len(new)  # reused across chunks and evaluations
    assert sum(after[w]["kernels_launched"] - before[w]["kernels_launched"]
               for w in workers) == 3 * 2 * 10  # two kernels, ten chunks, three evaluations


@pytest.mark.slow
def test_workers_share_the_disk_cache(cluster):
    w1_, w2_ = sorted(cluster.scheduler_info()["workers"])
    x = RNG.uniform(-1, 1, 300)
    with la.options(backend="dask", chunks=100, eager_threshold=0):
        first = (la.arctan(la.asarray(x)) * 3.25 - 0.5).to_dask()
        second = (la.arctan(la.asarray(x[::-1])) * 3.25 - 0.5).to_dask()  # same kernel
    before = cluster.run(la.cache_info)
    assert_like_numpy(cluster.compute(first, workers=[w1_]).result(), np.arctan(x) * 3.25 - 0.5)
    assert_like_numpy(cluster.compute(second, workers=[w2_]).result(),
                      np.arctan(x[::-1]) * 3.25 - 0.5)
    after = cluster.run(la.cache_info)
    delta = {w: {k: after[w][k] - before[w][k] for k in ("compiles", "disk_hits")}
             for w in (w1_, w2_)}
    assert delta[w1_] == {"compiles": 1, "disk_hits": 0}, delta  # the first worker compiles
    assert delta[w2_] == {"compiles": 0, "disk_hits": 1}, delta  # the second loads its file
