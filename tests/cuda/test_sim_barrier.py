"""`syncthreads()` as the CUDA tests meet it: on the simulator, the blocking barrier of
tests/sim_barrier.py (the same kernels run on a GPU). A barrier that released early would
give wrong sums and reversals, one that waited for a returned thread would hang, and one that
lost a thread's exception would pass a failing kernel."""

import os

import numpy as np
import pytest
from numba import cuda, float64

SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


@cuda.jit
def _reverse_in_blocks(x, out):
    buf = cuda.shared.array(64, dtype=float64)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    buf[t] = x[i]
    cuda.syncthreads()
    out[i] = buf[cuda.blockDim.x - 1 - t]


@cuda.jit
def _tree_sum(x, out):
    buf = cuda.shared.array(64, dtype=float64)
    t = cuda.threadIdx.x
    buf[t] = x[cuda.blockIdx.x * cuda.blockDim.x + t]
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:  # every step reads what other threads wrote before the last barrier
        if t < step:
            buf[t] += buf[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = buf[0]


@cuda.jit
def _half_return_early(x, out):
    buf = cuda.shared.array(64, dtype=float64)
    t = cuda.threadIdx.x
    if t % 2:  # odd threads are done before any barrier
        out[t] = -1.0
        return
    buf[t] = x[t]
    cuda.syncthreads()
    buf[t] += 1.0
    cuda.syncthreads()
    out[t] = buf[(t + 2) % cuda.blockDim.x]


@cuda.jit
def _count_positive(x, out):
    t = cuda.threadIdx.x
    n = cuda.syncthreads_count(x[t] > 0)
    if t == 0:
        out[0] = n


@cuda.jit
def _one_thread_reads_outside(x, out):
    t = cuda.threadIdx.x
    v = x[t + 8 if t == 5 else t]  # thread 5 reads past the end of an 8-element x
    cuda.syncthreads()
    out[t] = v


def test_a_barrier_orders_shared_memory_within_each_block():
    x = np.arange(4 * 64, dtype=np.float64)
    out = np.zeros_like(x)
    _reverse_in_blocks[4, 64](x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 64)[:, ::-1].ravel())
    sums = np.zeros(4)
    _tree_sum[4, 64](x, sums)
    np.testing.assert_array_equal(sums, x.reshape(4, 64).sum(axis=1))


def test_threads_that_returned_are_not_waited_for():
    x = np.arange(16, dtype=np.float64)
    out = np.zeros_like(x)
    _half_return_early[1, 16](x, out)
    even = np.arange(0, 16, 2)
    np.testing.assert_array_equal(out[1::2], -1.0)
    np.testing.assert_array_equal(out[even], x[(even + 2) % 16] + 1.0)


def test_syncthreads_count_counts_the_block():
    x = np.array([1.0, -1, 2, 0, 3, -2, 5, 7, -1, 1, 1, 0, 0, 4, -3, 2])
    out = np.zeros(1, dtype=np.int64)
    _count_positive[1, 16](x, out)
    assert out[0] == 9


@pytest.mark.skipif(not SIMULATED, reason="a GPU does not check bounds")
def test_a_thread_that_raises_fails_the_launch_with_its_error():
    x = np.arange(8, dtype=np.float64)
    out = np.zeros_like(x)
    with pytest.raises(IndexError, match=r"tid=\[5, 0, 0\]"):
        _one_thread_reads_outside[1, 8](x, out)
