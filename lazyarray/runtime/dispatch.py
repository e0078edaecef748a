"""Which of a kernel's dispatchers runs a launch: in parallel, serially, or the parallel code
on the calling thread (while BLAS's workers may spin, or after a pause that let the OpenMP
workers sleep).
"""

from __future__ import annotations

import functools
import math
import time

from lazyarray.runtime import blas


@functools.cache
def numba_cpu():
    """The Numba CPU backend module (`backends/numba_cpu.py`): importing it loads Numba, so
    the runtime takes it here, at its first kernel, never with the package."""
    from lazyarray.backends import numba_cpu as module

    return module

PARALLEL_MIN = 1 << 15  # iterations below which a kernel runs serially (thread wake-up costs)
# ... and for a kernel reading a matmul's result: BLAS's threads still spin for a while after
# the call, and OpenMP workers woken then wait for the cores (a dense layer at 256²: 0.48 ms
# serial, 1.0 ms parallel; docs/performance.md)
PARALLEL_MIN_AFTER_BLAS = 1 << 17
# ... and, on the calling thread, for any kernel while BLAS's threads may still spin from a
# product (`blas.spinning`): a parallel launch then costs 0.5-8 ms more, one thread at most
# that up to here
PARALLEL_MIN_NEAR_BLAS = 1 << 21
# idle seconds after which the OpenMP workers may sleep (libgomp spins GOMP_SPINCOUNT=10000
# rounds first); waking them costs a launch 0.5 ms on a small VM, microseconds elsewhere
PAUSE_S = 3e-4
EXPLORE_EVERY = 16  # a launch after a pause tries the way it did not pick every n-th time
# ... unless its last launch in parallel after a pause took this long: waking the workers is
# then a small part of it (the distance at 1e7: 4.8 ms in parallel, 5.3-5.5 on one thread)
PAUSE_LONG_S = 2e-3
_workers_done = -math.inf  # time.perf_counter() when a parallel launch last ended
VECTOR_MIN = 1 << 12  # iterations from which a serial launch in place runs vectorized code


def dispatcher(kernel: tuple, work: int, one: bool, in_place: bool):
    """Which of a kernel's (parallel, serial) dispatchers runs `work` iterations: the
    parallel one on all threads from PARALLEL_MIN on, unless `one` (one thread is asked
    for); else the serial one, except for a launch that may write over an operand
    (`in_place`) from VECTOR_MIN on: the parallel one on the calling thread, whose loops
    vectorize where the serial one's do not (`numba_cpu.OneThread`)."""
    if variant(work, one, in_place) == 1:
        return kernel[1]
    if work >= PARALLEL_MIN and not one:
        return kernel[0]
    return one_thread(kernel[0]) or kernel[1]


def one_thread(parallel):
    """`parallel` run on the calling thread alone (`numba_cpu.OneThread`, or a native
    kernel's own); None where it cannot be."""
    if parallel is None:
        return None
    native = getattr(parallel, "native_one", False)
    return native if native is not False else numba_cpu().one_thread(parallel)


def variant(work: int, one: bool, in_place: bool) -> int:
    """Which compiled function `dispatcher` runs: 0 the parallel one (on all threads or on
    one), 1 the serial one. (With part functions the first could serve every size, on one
    thread; but a kernel's part costs a second Numba pipeline, about 0.1 s, where the
    serial source compiles in about 0.3: small launches keep their serial twin;
    docs/performance.md, "Compile time: part functions".)"""
    return 0 if (work >= PARALLEL_MIN and not one) or (in_place and work >= VECTOR_MIN) else 1


def while_blas_spins(chosen, kernel: tuple, work: int):
    """The dispatcher to run while NumPy's OpenBLAS workers may still spin from a product
    (`blas.spinning`), where a parallel launch waits for the cores: a parallel one below
    PARALLEL_MIN_NEAR_BLAS iterations on the calling thread (the same compiled code, so
    no new specialization), else `chosen` itself; None where that is always `chosen`."""
    if chosen is not kernel[0] or work >= PARALLEL_MIN_NEAR_BLAS:
        return None
    return one_thread(chosen)


def replay_dispatcher(p) -> tuple[object, float | None]:
    """The dispatcher to replay prepared launch `p` (whose kernel is parallel) with, and the
    start time where the launch comes after a pause (it is then timed): on the calling thread
    while BLAS's workers may spin (`while_blas_spins`); after a pause (`PAUSE_S`), when the
    workers sleep and waking them may cost more than they save, in parallel the first time,
    on one thread the next, then the way that was faster after a pause before (the other
    again every EXPLORE_EVERY-th time), or in parallel whenever that took PAUSE_LONG_S or
    more the last time; else in parallel."""
    if p.near_blas and blas.spinning():
        return p.one, None
    t0 = time.perf_counter()
    if not t0 - _workers_done > PAUSE_S:
        return p.kernel, None
    paused = p.paused
    paused[2] += 1
    together, alone = paused[0], paused[1]
    if together >= PAUSE_LONG_S or alone == math.inf:  # (together: inf before the first)
        return (p.kernel if together >= PAUSE_LONG_S else p.one), t0
    faster = alone < together
    if paused[2] % EXPLORE_EVERY == 0:
        faster = not faster
    return (p.one if faster else p.kernel), t0


def ran_in_parallel() -> None:
    """Note that a parallel launch just ended (the workers are awake: no pause)."""
    global _workers_done
    _workers_done = time.perf_counter()
