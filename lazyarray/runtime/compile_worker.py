"""The compile worker process (`compile_service` starts it): reads jobs, one JSON line each,
from its standard input, builds each kernel's specialization into the disk cache (Numba's
`cache=True`, sealed as every build is: `numba_cpu._seal`) and answers one JSON line per job.

It exits when its input ends, after the jobs already sent: a user's process that exits first
still gets its kernels onto the disk for the next run (for LEFTOVER_S seconds at most).
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time

from lazyarray.runtime import diskcache, native


def build(job: dict, modules: dict) -> None:
    # (imported here, after the reader thread started: jobs are read while Numba loads)
    from lazyarray.backends import numba_cpu

    kernel = modules.get(job["key"])
    if kernel is None:
        kernel = modules[job["key"]] = numba_cpu.compile_kernel(
            job["key"], job["source"], diskcache.kernel_folder(job["path"], job["key"]))
    fn = job["fn"] == "kernel_serial"
    types = numba_cpu.numba_signature(job["sig"])
    numba_cpu.build_signature(kernel[fn], types)
    sig = tuple(map(tuple, job["sig"]))
    if native.ENABLED:
        native.write(diskcache.native_image(job["path"], job["key"], int(fn), sig),
                     numba_cpu.image_parts(kernel[fn], types, sig=True))
    diskcache.mark_built(job["path"], job["key"], int(fn), sig)


LEFTOVER_S = 600.0  # seconds the worker goes on building after its user's process exited
_orphaned = [0.0]  # when the input ended (0: not yet)


def _read(jobs: queue.Queue) -> None:
    """Every job line as soon as it arrives: the sender's pipe never fills (a writer
    blocked on a full pipe would be the user's program), and the jobs of a user's process
    that exits are all here already."""
    for line in sys.stdin:
        jobs.put(line)
    _orphaned[0] = time.monotonic()
    jobs.put(None)


def main() -> int:
    try:
        os.nice(10)  # the user's process first
    except (AttributeError, OSError):
        pass
    jobs: queue.Queue = queue.Queue()
    threading.Thread(target=_read, args=(jobs,), daemon=True).start()
    modules: dict = {}
    out = sys.stdout
    while (line := jobs.get()) is not None:
        if _orphaned[0] and time.monotonic() - _orphaned[0] > LEFTOVER_S:
            break  # (a program that asked for hundreds of kernels: not all night long)
        job = json.loads(line)
        t0 = time.perf_counter()
        reply = {"job": job["job"], "ok": True}
        try:
            build(job, modules)
        except Exception as exc:  # noqa: BLE001 - reported to the caller, who builds it itself
            reply = {"job": job["job"], "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        reply["seconds"] = time.perf_counter() - t0
        try:
            out.write(json.dumps(reply) + "\n")
            out.flush()
        except OSError:  # the user's process is gone: keep building for the next one
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # (what is left in the buffer too)
            out = sys.stdout = open(os.devnull, "w")
    return 0


if __name__ == "__main__":
    sys.exit(main())
