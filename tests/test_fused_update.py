"""Writes fused with the kernel computing their value (issue #4, the execution part).

`a[key] = expr` is one kernel storing `expr` into the written region: into the old buffer
itself when nothing can observe the old version and the kernel reads it only where it
writes; otherwise into a new buffer holding the rest of the old version. Every case is
checked against NumPy running the same code.
"""

from __future__ import annotations

import numpy as np
import pytest

import lazyarray as la
from lazyarray.runtime.executor import THROUGH

rng = np.random.default_rng(7)


def _address(a) -> int:
    return np.asarray(a).__array_interface__["data"][0]


def _fresh(ref: np.ndarray):
    """A computed lazy array holding `ref`'s values that nothing else refers to."""
    a = la.asarray(ref) * 1
    la.evaluate(a)
    return a


def _counts(before: dict) -> dict:
    after = la.cache_info()
    return {k: after[k] - before[k] for k in after}


def _entry_and_fusions(report) -> tuple[str, str]:
    text = report.hlo_after
    head, entry = text.split("ENTRY", 1)
    return head, entry


# ---- the fused program -----------------------------------------------------------------

def test_stencil_write_is_one_kernel_with_the_update_inside(compiled):
    ref = rng.random((128, 128))
    A = _fresh(ref)
    A[1:-1, 1:-1] = 0.25 * (A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
    report = la.explain(A)
    fusions, entry = _entry_and_fusions(report)
    assert "update(" in fusions and "update(" not in entry
    assert "kind=update" in entry
    assert report.num_kernels == 1
    assert [k.kind for k in report.kernels] == ["update"]
    ref[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2] + ref[1:-1, 2:])
    before = la.cache_info()
    np.testing.assert_allclose(np.asarray(A), ref)
    d = _counts(before)
    assert d["updates_fused"] == 1 and d["kernels_launched"] == 1
    # read after write, over most of the array: a new version (the border copied) costs
    # less than the region through a buffer and back (`executor.THROUGH_SHARE`)
    assert d["updates_copied"] == 1 and d["updates_in_place"] == 0


def test_row_sweeps_reading_their_own_row_shifted_write_in_place(compiled):
    """Gauss-Seidel by rows: `u[i, 1:-1] = (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] +
    u[i, 2:]) / 4` reads the written row at its neighbours: each value goes through a buffer
    of one row, then into the row of the same buffer -- no copy of the grid per row."""
    ref = rng.random((40, 50))
    u = _fresh(ref)
    at = _address(u)
    u[1, 1:-1] = 0.25 * (u[0, 1:-1] + u[2, 1:-1] + u[1, :-2] + u[1, 2:])
    assert la.explain(u).write_reasons == [THROUGH]
    u = _fresh(ref)
    at = _address(u)
    before = la.cache_info()
    for _ in range(2):
        for i in range(1, 39):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:])
            ref[i, 1:-1] = 0.25 * (ref[i - 1, 1:-1] + ref[i + 1, 1:-1] + ref[i, :-2]
                                   + ref[i, 2:])
    np.testing.assert_array_equal(np.asarray(u), ref)
    d = _counts(before)
    assert d["updates_copied"] == 0 and d["updates_in_place"] == 2 * 38
    assert _address(u) == at
    # a block of rows (the kernel stores into a flat window of the grid: only the region's
    # elements go back from the buffer, not the columns between its rows)
    before = la.cache_info()
    for _ in range(3):
        u[2:5, 1:-1] = 0.5 * (u[2:5, :-2] + u[2:5, 2:])
        ref[2:5, 1:-1] = 0.5 * (ref[2:5, :-2] + ref[2:5, 2:])
    assert la.explain(u).write_reasons == [THROUGH] * 3
    np.testing.assert_array_equal(np.asarray(u), ref)
    d = _counts(before)
    assert d["updates_copied"] == 0 and d["updates_in_place"] == 3
    assert _address(u) == at


def test_a_plain_copy_or_fill_stays_a_numpy_write(compiled):
    a = _fresh(np.zeros(1000))
    b = la.asarray(rng.random(1000))
    a[1:5] = 3.0
    a[10:20] = b[:10]
    report = la.explain(a)
    _, entry = _entry_and_fusions(report)
    assert entry.count("update(") == 2 and report.num_kernels == 0


# ---- differential: values, dtype, shape ------------------------------------------------

def _stencil(a, b):
    a[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])


def _shift_right(a, b):
    a[1:] = a[:-1] + 1


def _shift_left(a, b):
    a[:-1] = a[1:] * 2


def _reverse(a, b):
    a[::-1] = a * 1


def _reverse_plain(a, b):
    a[::-1] = a


def _negative_steps(a, b):
    a[::-2] = a[::2] * 2 - 1


def _overlap(a, b):
    a[2:] = a[:-2] * a[1:-1]


def _transposed(a, b):
    a.T[1:] = a.T[:-1] * 2 + 1


def _scale_every_other(a, b):
    a[::2] *= 3


def _from_other(a, b):
    a[1:-1] = b[1:-1] * 2 + 1


def eager_whole(a, b):
    a[...] = a * 2 + b


def _broadcast_row(a, b):
    a[1:-1] = b[0] * 2


def _column(a, b):
    a[:, 0] = b[:, 1] + 1


def _steps_3d(a, b):
    a[1::2, :, ::3] = a[1::2, :, ::3] * 2 + b[1::2, :, ::3]


def _recurrence_step(a, b):
    a[3] = a[2] * 0.5 + b[3]


CASES = {
    "stencil": (_stencil, (40, 50)), "shift_right": (_shift_right, (1000,)),
    "shift_left": (_shift_left, (1000,)), "reverse": (_reverse, (999,)),
    "reverse_plain": (_reverse_plain, (999,)), "negative_steps": (_negative_steps, (1000,)),
    "overlap": (_overlap, (1000,)), "transposed": (_transposed, (30, 40)),
    "every_other": (_scale_every_other, (1001,)), "from_other": (_from_other, (1000,)),
    "whole": (eager_whole, (30, 40)), "broadcast_row": (_broadcast_row, (30, 40)),
    "column": (_column, (30, 40)), "steps_3d": (_steps_3d, (6, 5, 10)),
    "recurrence_step": (_recurrence_step, (100,)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
@pytest.mark.parametrize("case", list(CASES))
def test_writes_match_numpy(compiled, case, dtype):
    write, shape = CASES[case]
    ra = (rng.random(shape) * 10).astype(dtype)
    rb = (rng.random(shape) * 10).astype(dtype)
    a, b = _fresh(ra), la.asarray(rb)
    write(a, b)
    write(ra, rb)
    out = np.asarray(a)
    assert out.dtype == ra.dtype and out.shape == ra.shape
    np.testing.assert_allclose(out, ra, rtol=1e-6)


@pytest.mark.parametrize("case", ["stencil", "shift_right", "overlap", "reverse"])
def test_writes_match_numpy_when_the_old_version_is_alive(compiled, case):
    write, shape = CASES[case]
    ra, rb = rng.random(shape), rng.random(shape)
    a, b = _fresh(ra), la.asarray(rb)
    old = a + 0  # pending: reads the old version after the write
    old_ref = ra + 0
    write(a, b)
    write(ra, rb)
    np.testing.assert_allclose(np.asarray(a), ra)
    np.testing.assert_allclose(np.asarray(old), old_ref)


def test_float_value_into_int_target_truncates(compiled):
    ri = np.arange(1000, dtype=np.int64)
    rf = rng.random(1000) * 100
    a, f = _fresh(ri), la.asarray(rf)
    a[1:] = f[1:] * 1.5
    ri[1:] = rf[1:] * 1.5
    out = np.asarray(a)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, ri)


def test_int_plus_float_in_place_raises_as_numpy(compiled):
    ri = np.arange(1000, dtype=np.int64)
    with pytest.raises(TypeError) as expected:
        ri += 1.5
    a = _fresh(np.arange(1000, dtype=np.int64))
    with pytest.raises(TypeError, match="Cannot cast"):
        a += 1.5
    assert issubclass(type(expected.value), TypeError)
    np.testing.assert_array_equal(np.asarray(a), np.arange(1000))


def test_broadcast_value_and_float32_target(compiled):
    r = np.zeros((50, 60), np.float32)
    row = rng.random(60)
    a, lrow = _fresh(r), la.asarray(row)
    a[10:20] = lrow * 3 + 1
    r[10:20] = row * 3 + 1
    out = np.asarray(a)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, r, rtol=1e-6)


# ---- in place or a copy ----------------------------------------------------------------

def test_no_hazard_write_runs_in_place_on_the_target_buffer(compiled):
    ra, rb = rng.random(200_000), rng.random(200_000)
    a, b = _fresh(ra), la.asarray(rb)
    at = _address(a)
    a[1:-1] = b[1:-1] * 2 + 1
    assert la.explain(a).updates == ["in place"]
    before = la.cache_info()
    ra[1:-1] = rb[1:-1] * 2 + 1
    np.testing.assert_allclose(np.asarray(a), ra)
    d = _counts(before)
    assert d["updates_in_place"] == 1 and d["updates_copied"] == 0
    assert _address(a) == at
    a[::2] *= 3  # reads exactly the elements it writes
    ra[::2] *= 3
    np.testing.assert_allclose(np.asarray(a), ra)
    assert _address(a) == at


def test_whole_array_write_donates_the_target_buffer(compiled):
    rx, ry = rng.random((300, 300)), rng.random((300, 300))
    x, y = _fresh(rx), la.asarray(ry)
    at = _address(x)
    before = la.cache_info()
    x[...] = x * 2 + y
    np.testing.assert_allclose(np.asarray(x), rx * 2 + ry)
    assert _counts(before)["buffers_donated"] == 1
    assert _address(x) == at


def test_a_held_computed_view_keeps_its_values(compiled):
    ra = rng.random(1000)
    A = _fresh(ra)
    B = np.asarray(A[2:])  # a computed view the user holds: the old buffer stays as it is
    B_ref = B.copy()
    A[1:-1] = A[1:-1] * 2
    before = la.cache_info()
    ra[1:-1] = ra[1:-1] * 2
    np.testing.assert_allclose(np.asarray(A), ra)
    assert _counts(before)["updates_copied"] == 1
    np.testing.assert_array_equal(B, B_ref)


def test_a_pending_array_computed_earlier_keeps_its_values(compiled):
    ra = rng.random(1000)
    A = _fresh(ra)
    old = A + 0  # pending, reads the old version
    A[1:-1] = A[1:-1] * 2
    before = la.cache_info()
    np.testing.assert_allclose(np.asarray(A)[1:-1], ra[1:-1] * 2)
    assert _counts(before)["updates_copied"] == 1
    np.testing.assert_allclose(np.asarray(old), ra)


def test_a_lazy_view_sees_the_write(compiled):
    ra = rng.random(1000)
    A = _fresh(ra)
    V = A[2:]
    A[1:-1] = A[1:-1] * 2
    ra[1:-1] *= 2
    np.testing.assert_allclose(np.asarray(V), ra[2:])


def test_old_version_read_in_the_same_evaluation(compiled):
    ra = rng.random(1000)
    A = _fresh(ra)
    old = A * 1
    A[1:] = A[1:] + 1
    la.evaluate(A, old)
    np.testing.assert_allclose(np.asarray(old), ra)
    ra[1:] += 1
    np.testing.assert_allclose(np.asarray(A), ra)


def test_a_chain_of_writes_in_one_evaluation(compiled):
    ra = rng.random((64, 64))
    A = _fresh(ra)
    for k in range(4):
        A[1:-1, ::2] = A[1:-1, ::2] * 0.5 + k
        ra[1:-1, ::2] = ra[1:-1, ::2] * 0.5 + k
    assert la.explain(A).updates == ["in place"] * 4
    np.testing.assert_allclose(np.asarray(A), ra)


# ---- loops: cached kernels, bounded memory -----------------------------------------------

def test_jacobi_loop_hits_cached_kernels_and_reuses_two_buffers(compiled):
    n = 384  # 1.2 MB: pooled
    g, ref = la.zeros((n, n)), np.zeros((n, n))
    g[0, :] = ref[0, :] = 1.0
    addresses = set()
    for step in range(8):
        if step == 2:
            before = la.cache_info()
        g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        ref[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2]
                                  + ref[1:-1, 2:])
        la.evaluate(g)
        addresses.add(_address(g))
    d = _counts(before)
    assert d["misses"] == 0 and d["compiles"] == 0 and d["hits"] == 6
    assert d["updates_fused"] == 6
    assert len(addresses) <= 3  # the pool alternates buffers: no new memory per step
    np.testing.assert_allclose(np.asarray(g), ref)


def test_recurrence_loop_shares_one_kernel(compiled):
    n = 2000
    rb = rng.random(n)
    a, b = la.ones(n), la.asarray(rb)
    ra = np.ones(n)
    la.evaluate(a)
    a[1] = a[0] * 0.9 + b[1]
    la.evaluate(a)  # the first write: builds the kernel
    before = la.cache_info()
    for i in range(2, n):
        a[i] = a[i - 1] * 0.9 + b[i]
    la.evaluate(a)
    for i in range(1, n):
        ra[i] = ra[i - 1] * 0.9 + rb[i]
    d = _counts(before)
    assert d["misses"] == 0 and d["compiles"] == 0
    assert d["updates_fused"] == n - 2 and d["updates_in_place"] == n - 2
    np.testing.assert_allclose(np.asarray(a), ra)


def test_out_accumulation_loop_writes_in_place(compiled):
    rx = rng.random(300_000)
    x = la.asarray(rx)
    acc, ref = la.zeros_like(x), np.zeros_like(rx)
    la.add(acc, x, out=acc)
    la.evaluate(acc)
    at = _address(acc)
    for k in range(6):
        if k == 2:  # the loop body's kernel is built
            before = la.cache_info()
        la.add(acc, x * (k + 1), out=acc)
        acc += x
        la.evaluate(acc)
        assert _address(acc) == at
    np.add(ref, rx, out=ref)
    for k in range(6):
        np.add(ref, rx * (k + 1), out=ref)
        ref += rx
    d = _counts(before)
    assert d["misses"] == 0 and d["compiles"] == 0 and d["buffers_donated"] == 4
    np.testing.assert_allclose(np.asarray(acc), ref)
