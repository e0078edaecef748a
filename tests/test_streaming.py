"""Streaming stores: a 1-d or 2-d loop kernel with an output larger than the caches stores it
by non-temporal stores (`Spec.stream`): straight from registers when its one float output is
computed by operations that vectorize (`_h.store_stream`, from each piece's first 64-byte
line), else (1-d only) through a buffer in L1 (`_h.stream`). Same bits as the plain loop,
every dtype, shape, length and alignment; the same warnings."""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings

import lazyarray as la
import lazyarray.backends.numba_scalar as _h
from lazyarray.codegen import layout

from helpers import assert_like_numpy, fresh_launches
from test_programs import (code_line, compare, execute, perturbed_runs, plan, programs,
                           rounding_floors)


@numba.njit
def _heads_and_copies(buf, src, offsets, counts):
    """For each offset: stream_head of buf[offset:] at flat 0; then each count copied by
    `stream` into buf[offset:] from src (the head's copy first, as a kernel does)."""
    heads = np.empty(len(offsets), np.int64)
    for k in range(len(offsets)):
        out = buf[offsets[k]:]
        heads[k] = _h.stream_head(out, 0)
        at = 0
        for c in counts:
            _h.stream(out, at, src[at:], c)
            at += c
    _h.stream_fence()
    return heads


@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.float32, np.float64, np.complex128])
def test_stream_helpers_at_every_alignment(dtype):
    """`stream_head` counts elements to the next 64-byte line; `stream` copies exactly `count`
    elements wherever it starts (non-temporal stores or a plain copy): never a byte outside."""
    item = np.dtype(dtype).itemsize
    counts = np.array([0, 1, 64 // item, 3, 64, 2 * 64 // item, 65, 130], np.int64)
    total = int(counts.sum())
    src = np.arange(1, total + 1).astype(dtype)
    raw = np.zeros(total + 256 // item + 64, dtype)
    base = (-raw.ctypes.data % 64) // item  # the first element on a line
    offsets = np.arange(base, base + 64 // item + 1, dtype=np.int64)
    for off in offsets:
        raw[:] = 0
        heads = _heads_and_copies(raw, src, np.array([off]), counts)
        assert heads[0] == (-(raw.ctypes.data + off * item) % 64) // item
        np.testing.assert_array_equal(raw[off:off + total], src)
        assert not raw[:off].any() and not raw[off + total:].any()


@pytest.fixture
def streaming(compiled, monkeypatch):
    """Every 1-d and 2-d loop kernel streams its outputs (the thresholds at 0), on fresh
    launches."""
    monkeypatch.setattr(layout, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(layout, "STREAM_ROW_MIN_BYTES", 0)
    with fresh_launches():
        yield


def _streamed(direct: bool | None = None) -> bool:
    """Did every kernel of the last evaluation stream (`direct`: from registers, or through a
    buffer; None: either)?"""
    kinds = {"_h.store_stream(" in k.source or ("_h.stream(" in k.source and "buffer")
             for k in la.explain().kernels}
    want = {True, "buffer"} if direct is None else {True if direct else "buffer"}
    return bool(kinds) and kinds <= want


LENGTHS = [1, 7, 63, 64, 65, 129, 1000, 70_001]  # the last: several parallel iterations


@pytest.mark.parametrize("n", LENGTHS)
def test_streamed_elementwise_programs_match_numpy(streaming, n):
    rng = np.random.default_rng(n)
    xn = rng.standard_normal(n + 3)
    for k in range(3):  # loads starting at other alignments than the output
        x = la.asarray(xn)[k:]
        ref = xn[k:]
        got = la.where(x > 0.5, x * 2, la.clip(x, 0.1, 0.3))
        assert_like_numpy(got, np.where(ref > 0.5, ref * 2, np.clip(ref, 0.1, 0.3)))
        assert _streamed(direct=True)
    got = la.sin(x) * 3 - la.cos(x)  # the slow-path math in blocks, through a buffer
    assert_like_numpy(got, np.sin(ref) * 3 - np.cos(ref))
    assert _streamed(direct=False)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.float32, np.complex128])
def test_streamed_outputs_of_every_dtype(streaming, dtype):
    for n in (5, 77, 70_001):
        an = (np.arange(n) % 11).astype(dtype)
        a = la.asarray(an)
        assert_like_numpy(a * a + a, an * an + an)
        assert _streamed()
        assert_like_numpy(a == a[::-1], an == an[::-1])
        assert _streamed()


def test_streamed_multi_output_fusion(streaming):
    n = 70_001
    xn = np.linspace(-3, 3, n)
    x = la.asarray(xn)
    y, z = x * 2 + 1, (x > 0)
    la.evaluate(y, z)
    assert _streamed()
    assert_like_numpy(y, xn * 2 + 1)
    assert_like_numpy(z, xn > 0)


def test_streamed_kernel_warns_like_numpy(streaming):
    xn = np.array([1.0, 1e300, -2.0, np.inf] * 50)
    x = la.asarray(xn)
    with np.errstate(all="warn", under="ignore"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = np.asarray(x * 1e10 - x)  # overflow, then inf - inf
    assert _streamed()
    with np.errstate(all="warn", under="ignore"), warnings.catch_warnings(record=True) as ref:
        warnings.simplefilter("always")
        want = xn * 1e10 - xn
    assert_like_numpy(got, want)
    assert sorted(str(m.message) for m in w) == sorted(str(m.message) for m in ref)
    assert all(m.filename == __file__ for m in w)


def _source(*arrays) -> str:
    return "".join(k.source for k in la.explain(*arrays).kernels)


def test_only_large_loops_stream(compiled):
    """The default threshold: 16 MiB of output; a reduction never streams; a 2-d loop streams
    its rows from registers when its body vectorizes, else not at all."""
    big = la.asarray(np.ones(layout.STREAM_MIN_BYTES // 8 + 1))
    small = la.asarray(np.ones(1000))
    assert "_h.store_stream(" in _source(big * 2 + 1)
    assert "_h.stream(" in _source(la.exp(big))  # (not vectorized as a whole: a buffer)
    assert "stream" not in _source(small * 2 + 1)
    assert "stream" not in _source((big * 2).sum())
    grid = la.asarray(np.ones((3000, 1000)))[:, 1:]  # 2-d: not merged into one dim
    assert "_h.store_stream(" in _source(grid * 2)
    assert "stream" not in _source(la.exp(grid))
    assert "stream" not in _source(grid[:1000] * 2)  # 8 MB
    narrow = la.asarray(np.ones((3_000_000, 8)))  # rows of 64 bytes: not streamed
    assert "stream" not in _source(narrow - la.asarray(np.arange(8.0)))
    assert_like_numpy(big * 2 + 1, np.full(big.shape, 3.0))


SHAPES = [(1, 2), (3, 7), (5, 8), (4, 9), (7, 64), (3, 65), (2, 1000), (70, 1001), (33, 130)]


@pytest.mark.parametrize("shape", SHAPES)
def test_streamed_rows_match_numpy(streaming, shape):
    """2-d loops streaming their rows from registers: every row starts at another alignment
    of the output (rows of any length), the loads at others again (views at offsets)."""
    rng = np.random.default_rng(shape[1])
    an = rng.standard_normal((shape[0] + 2, shape[1] + 2))
    a = la.asarray(an)
    jacobi = lambda xp, a: 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]
                                  + a[:-2, 1:-1])
    assert_like_numpy(jacobi(la, a), jacobi(np, an))
    assert _streamed(direct=True)
    for view in (np.s_[1:, 2:], np.s_[:-1, ::-1], np.s_[::2, 1:]):
        v, vn = a[view], an[view]
        got = la.where(v > 0.25, la.sqrt(la.abs(v)), la.clip(v, -0.5, 0.5) * 3.0)
        want = np.where(vn > 0.25, np.sqrt(np.abs(vn)), np.clip(vn, -0.5, 0.5) * 3.0)
        assert_like_numpy(got, want)
        assert _streamed(direct=True)
    f = an.astype(np.float32)
    assert_like_numpy(la.asarray(f).T * np.float32(2) - 1, f.T * np.float32(2) - 1)


def test_streamed_rows_warn_like_numpy(streaming):
    xn = np.array([[1.0, 1e300, -2.0, np.inf] * 30] * 5)
    x = la.asarray(xn)[:, 1:]
    with np.errstate(all="warn", under="ignore"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = np.asarray(x * 1e10 - x)  # overflow, then inf - inf
    assert _streamed(direct=True)
    with np.errstate(all="warn", under="ignore"), warnings.catch_warnings(record=True) as ref:
        warnings.simplefilter("always")
        want = xn[:, 1:] * 1e10 - xn[:, 1:]
    assert_like_numpy(got, want)
    assert sorted(str(m.message) for m in w) == sorted(str(m.message) for m in ref)
    assert all(m.filename == __file__ for m in w)


@pytest.mark.slow
@pytest.mark.heavy
@settings(max_examples=25, deadline=None)
@given(program=programs())
def test_generated_programs_streamed(streaming, program):
    """Whole generated programs (tests/test_programs.py) with every 1-d and 2-d loop
    streaming."""
    instrs, np_vals = plan(program)
    n_in = len(program.inputs)
    lines = [f"v{i} = xp.asarray(...)" for i in range(n_in)]
    lines += [code_line(n_in + k, ins) for k, ins in enumerate(instrs)]
    alts = perturbed_runs(program, instrs)
    vals = [la.asarray(a) for a in program.inputs]
    with np.errstate(all="ignore"):
        for instr in instrs:
            vals.append(execute(la, instr, vals))
    la.evaluate(*vals)
    floors = rounding_floors(n_in, instrs, np_vals)
    for k, (v, expected) in enumerate(zip(vals, np_vals)):
        compare(k, lines[k], np.asarray(v), expected, [alt[k] for alt in alts], floors[k])


def test_streamed_kernels_with_several_checks_compile():
    """A streamed store (full blocks and a tail, each an inner loop) whose checks are several
    per element -- float-to-int conversions, a remainder, two outputs -- compiles: as a
    variable, the loop's private flag was copied between the two inner loops in a cycle
    that Numba's reduction analysis rejects ("unexpected cycle in lookup()"), and the
    fusion ran on the interpreter (particles at 4M: 9.1 s a run, 2.5 s with its kernels)."""
    r = np.random.default_rng(0)
    x, y = r.random(4_000_000) * 10, r.random(4_000_000) * 10
    with la.options(compile="now"):
        before = la.cache_info()["fallbacks"]
        a, b = la.asarray(x), la.asarray(y)
        fx = a - la.floor(a).astype(int)
        fy = b - la.floor(b).astype(int)
        u = (fx * fy + a) % 3.0
        v = (fx - fy * b) % 5.0
        la.evaluate(u, v)
        assert la.cache_info()["fallbacks"] == before
        assert any("_h.stream(" in (k.source or "") for k in la.explain().kernels)
    nfx, nfy = x - np.floor(x).astype(int), y - np.floor(y).astype(int)
    assert_like_numpy(u, (nfx * nfy + x) % 3.0)
    assert_like_numpy(v, (nfx - nfy * y) % 5.0)
