"""Differential tests of the data-dependent index functions on lazyarray's parallel scan
(`runtime.threads.nonzero`): nonzero, where(cond), argwhere, flatnonzero, compress and
boolean-mask indexing and assignment, against NumPy: masks of 1-3 axes, empty ones, every
density (none, sparse, the SPARSE boundary, half, all), non-bool inputs (NaN, -0.0,
complex), bool bytes other than 0 and 1, non-contiguous masks, and chunks of a few
elements (the module's sizes patched down) so that hypothesis's small arrays cross chunk
boundaries anywhere."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

import lazyarray as la
from helpers import assert_like_numpy, check_against_numpy
from lazyarray.runtime import thread_kernels, threads


@pytest.fixture
def small_chunks(monkeypatch):
    """Every mask through the parallel scan, in chunks of 8 elements."""
    monkeypatch.setattr(threads, "NONZERO_MIN", 0)
    monkeypatch.setattr(threads, "NONZERO_CHUNK", 8)


def _masks(rng, shape):
    size = int(np.prod(shape))
    out = [np.zeros(shape, bool), np.ones(shape, bool)]
    for p in (0.001, 1 / thread_kernels.SPARSE, 0.1, 0.5, 0.99):
        out.append(rng.random(shape) < p)
    if size:
        one = np.zeros(size, bool)
        one[[0, size // 2, size - 1]] = True  # the first, a middle and the last element
        out.append(one.reshape(shape))
    return out


INDEX_FUNCS = {
    "nonzero": lambda xp, m: xp.nonzero(m),
    "where": lambda xp, m: xp.where(m),
    "argwhere": lambda xp, m: xp.argwhere(m),
    "flatnonzero": lambda xp, m: xp.flatnonzero(m),
    "method": lambda xp, m: m.nonzero(),
}


@pytest.mark.parametrize("shape", [(70_001,), (300, 257), (3, 129, 257), (2, 0, 40_000),
                                   (40_000, 3)], ids=str)
@pytest.mark.parametrize("func", list(INDEX_FUNCS))
def test_large_masks_match_numpy(func, shape):
    rng = np.random.default_rng(len(shape) + shape[-1])
    f = INDEX_FUNCS[func]
    for m in _masks(rng, shape):
        assert_like_numpy(f(la, la.asarray(m)), f(np, m), what=f"{func}{shape}")


@given(m=hnp.arrays(bool, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=20)))
@settings(max_examples=60, deadline=None)
def test_masks_in_small_chunks_match_numpy(small_chunks, m):
    for name, f in INDEX_FUNCS.items():
        assert_like_numpy(f(la, la.asarray(m)), f(np, m), what=name)


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint16", "float32", "float64",
                                   "complex128"])
def test_values_count_as_numpy_counts_them(small_chunks, dtype):
    """Non-bool input: NaN is non-zero, -0.0 is zero, a complex number with only an
    imaginary part is non-zero; computed input fuses its mask (`x * 2`)."""
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, (40, 37)).astype(dtype)
    if x.dtype.kind == "f":
        x[rng.random(x.shape) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.1] = -0.0
    if x.dtype.kind == "c":
        x[rng.random(x.shape) < 0.2] = 3j
    for name, f in INDEX_FUNCS.items():
        assert_like_numpy(f(la, la.asarray(x)), f(np, x), what=name)
        assert_like_numpy(f(la, la.asarray(x) * 2), f(np, x * 2), what=f"{name} of x * 2")
    assert_like_numpy(la.nonzero(x), np.nonzero(x), what="a NumPy array")


def test_bool_bytes_other_than_one_are_true(small_chunks):
    raw = np.random.default_rng(3).integers(0, 4, 5000).astype(np.uint8)
    raw[::7] = 255
    m = raw.view(bool)
    assert_like_numpy(la.nonzero(la.asarray(m)), np.nonzero(m))
    assert_like_numpy(la.nonzero(m), np.nonzero(m))


def test_non_contiguous_masks(small_chunks):
    m = np.random.default_rng(5).random((200, 300)) < 0.3
    for view in (m.T, m[::2, 1::3], m[:, ::-1]):
        assert_like_numpy(la.nonzero(la.asarray(view)), np.nonzero(view))
        assert_like_numpy(la.nonzero(la.asarray(m).T), np.nonzero(m.T))


def test_zero_dim_and_errors_as_numpy():
    check_against_numpy(lambda: np.nonzero(np.array(True)), lambda: la.nonzero(la.asarray(True)))
    assert_like_numpy(la.argwhere(la.asarray(3.0)), np.argwhere(np.array(3.0)))
    assert_like_numpy(la.argwhere(la.asarray(0.0)), np.argwhere(np.array(0.0)))
    with pytest.raises(ValueError):
        la.where(la.asarray([True]), la.asarray([1.0]))  # one of x and y


@pytest.mark.parametrize("density", [0.0, 0.01, 0.5, 1.0])
def test_mask_indexing_and_compress(density):
    """x[mask], x[mask] = v, compress and x[mask2d] on the parallel scan's indices."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((400, 300))
    m = rng.random(x.shape) < density
    rows = rng.random(400) < density
    lx = la.asarray(x)
    assert_like_numpy(lx[la.asarray(m)], x[m], what="x[mask]")
    assert_like_numpy(lx[m], x[m], what="x[NumPy mask]")
    assert_like_numpy(lx[rows], x[rows], what="x[row mask]")
    assert_like_numpy(lx[lx > 0.5], x[x > 0.5], what="x[x > 0.5]")
    assert_like_numpy(la.compress(rows, lx, axis=0), np.compress(rows, x, axis=0))
    assert_like_numpy(la.compress(rows.astype(int), lx, axis=0),
                      np.compress(rows.astype(int), x, axis=0))
    y, ly = x.copy(), la.asarray(x)
    y[m] = -1.0
    ly[la.asarray(m)] = -1.0
    assert_like_numpy(ly, y, what="x[mask] = -1")
