"""One background thread that builds kernels (`options(background_compile=True)`).

Jobs run in submission order; a job's exception is kept on its handle and logged, never
raised in the thread (the caller then builds the kernel itself, and sees the error there).
The thread is a daemon: an interpreter exiting mid-build does not wait for it.
"""

from __future__ import annotations

import logging
import queue
import threading

log = logging.getLogger("lazyarray")


class Job:
    __slots__ = ("fn", "args", "done", "error")

    def __init__(self, fn, args):
        self.fn, self.args = fn, args
        self.done = threading.Event()
        self.error: BaseException | None = None


_jobs: queue.Queue = queue.Queue()
_pending: set[Job] = set()
_lock = threading.Lock()
_worker: threading.Thread | None = None


def _work() -> None:
    while True:
        job = _jobs.get()
        try:
            job.fn(*job.args)
        except BaseException as exc:  # noqa: BLE001 - kept for the caller, never lost
            job.error = exc
            log.warning("lazyarray: background build failed: %s", exc)
        finally:
            job.args = None
            job.done.set()
            with _lock:
                _pending.discard(job)


def submit(fn, *args) -> Job:
    """Run `fn(*args)` on the build thread (started on first use)."""
    global _worker
    job = Job(fn, args)
    with _lock:
        _pending.add(job)
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_work, name="lazyarray-build", daemon=True)
            _worker.start()
    _jobs.put(job)
    return job


def wait(timeout: float | None = None) -> bool:
    """Wait for every build in flight; False if `timeout` seconds passed first."""
    with _lock:
        jobs = list(_pending)
    return all(job.done.wait(timeout) for job in jobs)
