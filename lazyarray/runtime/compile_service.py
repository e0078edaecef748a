"""Kernels compiled in a worker process while the interpreter answers (the default tier).

A fusion whose kernel is not built yet runs at once on the NumPy interpreter; its kernel
source and the one specialization the launch needs (which dispatcher, which argument types)
go to a worker process (`compile_worker`), which compiles it into the disk cache. Once the
worker says it is done, the next evaluation loads it from disk (milliseconds) and launches
it. The user's process never waits on Numba, and the worker holds no GIL of the user's.

The worker reads its jobs from a pipe: when the user's process exits first, the jobs it
already sent are still compiled (the worker drains the pipe, then exits), so the next
process finds them on disk. It runs at a lower priority (`nice`), so on a machine with few
cores the user's own work comes first.

No Numba here: the argument types are described with NumPy alone (`describe`), and turned
into Numba's types in the worker.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time

import numpy as np

from lazyarray import stats

log = logging.getLogger("lazyarray")

_SCALARS = (bool, int, float, complex)


def describe(args: list) -> tuple | None:
    """The Numba signature of a launch's arguments, in NumPy's terms (what `numba.typeof`
    reads: dtype, rank, layout, writeability, alignment); None when an argument is of a
    kind the worker cannot rebuild (the launch then compiles here)."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            f = a.flags
            layout = "C" if f.c_contiguous else "F" if f.f_contiguous else "A"
            out.append(("a", a.dtype.str, a.ndim, layout, not f.writeable, f.aligned))
        elif isinstance(a, np.generic):
            out.append(("g", a.dtype.str))
        elif type(a) in _SCALARS:
            out.append(("p", type(a).__name__))
        else:
            return None
    return tuple(out)


class Job:
    """One specialization the worker builds: done once it answered (or died)."""

    __slots__ = ("key", "done", "ok", "error", "seconds", "sent")

    def __init__(self, key: str):
        self.key = key
        self.done = threading.Event()
        self.ok = False
        self.error = ""
        self.seconds = 0.0  # the worker's compile time
        self.sent = time.perf_counter()


_lock = threading.Lock()
_proc: subprocess.Popen | None = None
_owner = [0]  # the process that started `_proc` (a forked child starts its own worker)
_jobs: dict[int, Job] = {}  # job number -> job in flight
_count = [0]


def _package_root() -> str:
    here = os.path.dirname(os.path.abspath(__file__))  # .../lazyarray/runtime
    return os.path.dirname(os.path.dirname(here))


def _start(log_dir: str) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH"))
                                        if p)
    try:
        err = open(os.path.join(log_dir, "compile-worker.log"), "ab")
    except OSError:
        err = subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-m", "lazyarray.runtime.compile_worker"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True, close_fds=True)
    if err is not subprocess.DEVNULL:
        err.close()
    threading.Thread(target=_read, args=(proc,), name="lazyarray-compile-replies",
                     daemon=True).start()
    stats.bump("workers_started")
    return proc


def _read(proc: subprocess.Popen) -> None:
    """The worker's answers: one JSON line per job."""
    for line in proc.stdout:
        try:
            reply = json.loads(line)
        except ValueError:
            continue
        with _lock:
            job = _jobs.pop(reply.get("job"), None)
        if job is not None:
            job.ok, job.error = bool(reply.get("ok")), reply.get("error", "")
            job.seconds = float(reply.get("seconds", 0.0))
            if not job.ok:
                log.warning("lazyarray: the compile worker could not build %s: %s", job.key,
                            job.error)
            job.done.set()
    with _lock:  # the worker is gone: what it left undone is built by the caller
        left = list(_jobs.values())
        _jobs.clear()
    for job in left:
        job.error = "the compile worker exited"
        job.done.set()


def submit(key: str, source: str, path: str, fn: str, sig: tuple) -> Job:
    """Send the worker kernel `key` (its `source`, the cache directory `path`) to build
    dispatcher `fn` ("kernel" or "kernel_serial") for argument types `sig` (`describe`)."""
    global _proc
    with _lock:
        _count[0] += 1
        n = _count[0]
        job = Job(key)
        _jobs[n] = job
        line = json.dumps({"job": n, "key": key, "source": source, "path": path, "fn": fn,
                           "sig": sig}) + "\n"
        try:
            if _proc is None or _owner[0] != os.getpid() or _proc.poll() is not None:
                _proc = _start(os.path.dirname(path))
                _owner[0] = os.getpid()
            _proc.stdin.write(line.encode())
            _proc.stdin.flush()
        except OSError as exc:  # no worker (a full process table, a broken pipe)
            _jobs.pop(n, None)
            job.error = f"no compile worker: {exc}"
            job.done.set()
            return job
    stats.bump("background_jobs")
    return job


def wait(timeout: float | None = None) -> bool:
    """Wait for every job in flight; False if `timeout` seconds passed first."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        with _lock:
            jobs = list(_jobs.values())
        if not jobs:
            return True
        left = None if end is None else max(0.0, end - time.monotonic())
        if not jobs[0].done.wait(left):
            return False


def _forked() -> None:
    """In a forked child: the parent's worker answers the parent only. The jobs in flight
    count as failed here (their kernels are then loaded, or built, by this process), and
    the next job starts this process's own worker."""
    global _proc, _lock
    _lock = threading.Lock()
    _proc = None
    left = list(_jobs.values())
    _jobs.clear()
    for job in left:
        job.error = "the compile worker belongs to the parent process"
        job.done.set()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def stop() -> None:
    """Stop this process's worker now, its queue unfinished (the test suite's end: the
    kernels its tiered tests asked for are not wanted on disk)."""
    global _proc
    with _lock:
        proc, _proc = _proc, None
    if proc is not None and _owner[0] == os.getpid() and proc.poll() is None:
        proc.kill()
        proc.wait()
