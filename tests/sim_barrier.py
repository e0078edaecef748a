"""A blocking barrier for Numba's CUDA simulator, for the test runs on it (tests/test_cuda.py).

The simulator runs each GPU thread of a block as a Python thread, and its block manager
finds the threads waiting in `syncthreads()` by polling every thread of the block in a loop
that never sleeps: it holds the GIL against the threads it waits for, and its cost grows
with the threads per block times the time they run (a profile of one argmax case: 4.5
million `is_alive` calls in 12 s). Here the threads meet at a condition variable instead:
the last live thread to arrive releases the others, a thread that returns is no longer
waited for, and a thread that raises wakes the others with the simulator's abort error.
What each thread computes, the block and grid shapes and the exception the launch raises
(the first failed thread's, by thread index) are the simulator's own.

`install()` patches the simulator's `BlockManager.run` and `BlockThread.syncthreads`,
checked against the numba-cuda version the project pins; with another layout it does
nothing (the simulator's polling stays).
"""

from __future__ import annotations

import threading

import numpy as np


class _Barrier:
    """`syncthreads()` of one block: `live` threads still running, `waiting` at the barrier
    in generation `gen`, `failed` once one raised."""

    def __init__(self, live: int):
        self.cond = threading.Condition()
        self.live, self.waiting, self.gen, self.failed = live, 0, 0, False

    def _release(self) -> None:
        self.waiting = 0
        self.gen += 1
        self.cond.notify_all()

    def wait(self) -> None:
        with self.cond:
            if self.failed:
                raise RuntimeError("abort flag set on syncthreads call")
            gen = self.gen
            self.waiting += 1
            if self.waiting == self.live:
                self._release()
            while gen == self.gen and not self.failed:
                self.cond.wait()
            if self.failed:
                raise RuntimeError("abort flag set on syncthreads clear")

    def leave(self, failed: bool) -> None:
        with self.cond:
            self.live -= 1
            if failed:
                self.failed = True
                self.cond.notify_all()
            elif self.waiting and self.waiting == self.live:
                self._release()


def install() -> bool:
    """Patch the simulator's block manager (True), or leave it (False: another layout)."""
    from numba.cuda.simulator import kernel as sim

    manager, thread = getattr(sim, "BlockManager", None), getattr(sim, "BlockThread", None)
    if manager is None or thread is None or not all(
            hasattr(c, m) for c, m in ((manager, "run"), (thread, "syncthreads"),
                                       (thread, "run"))):
        return False
    thread_run = thread.run

    def run_thread(self):
        try:
            thread_run(self)  # (the simulator's: a failure is kept in `self.exception`)
        finally:
            self._manager._barrier.leave(self.exception is not None)

    def syncthreads(self):
        self._manager._barrier.wait()

    def run_block(self, grid_point, *args):
        def target():
            self._f(*args)

        threads = [thread(target, self, grid_point, p, self._debug)
                   for p in np.ndindex(*self._block_dim)]
        self._barrier = _Barrier(len(threads))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [t for t in threads if t.exception]
        first = [t for t in failed if "abort flag set" not in str(t.exception[0])] or failed
        if first:
            e, tb = first[0].exception
            raise e.with_traceback(tb)

    thread.run, thread.syncthreads, manager.run = run_thread, syncthreads, run_block
    return True
