"""Counters: compiles, cache hits, kernels launched, interpreter runs, fallbacks."""

from __future__ import annotations

import itertools
import threading

_lock = threading.Lock()
_FIELDS = ("hits", "misses", "compiles", "disk_hits", "disk_writes", "disk_damaged", "kernels_launched", "interpreter_runs",
           "fallbacks", "materializations", "updates_in_place", "updates_copied", "updates_filled", "updates_fused", "library_calls", "eager_ops",
           "eager_writes", "jit_traces", "jit_replays", "background_interpreted", "gathered",
           # compile="background": worker processes started, specializations sent to them
           "workers_started", "background_jobs",
           # native images of kernels written, loaded without Numba, and launches through them
           "native_writes", "native_loads", "native_launches",
           "buffers_donated", "h2d_transfers", "h2d_bytes", "d2h_transfers", "d2h_bytes",
           "host_fallbacks", "fp_rechecks", "checks_escalated", "trace_kernel_runs",
           "trace_compiles",
           "trace_disk_writes", "trace_replays", "plan_hits",
           # live pending arrays computed with an evaluation that shared their work
           "co_materialized",
           # the xla backend: programs compiled and run, instructions run on the host inside
           # them, transfers (counts and bytes) to and from the device
           "xla_compiles", "xla_runs", "xla_fallbacks", "xla_to_device", "xla_to_device_bytes",
           "xla_to_host", "xla_to_host_bytes",
           # runs of programs built for a size bucket's rows (xla_buckets)
           "xla_bucketed")
counters: dict[str, int] = dict.fromkeys(_FIELDS, 0)

# The counters of hot paths are C-level counters: `eager_op()` costs a third of a locked
# dictionary increment, which is a tenth of what a tiny operation costs (tiny-array chains); a
# replay of a large trace bumps four of them.
_FAST = ("eager_ops", "eager_writes", "trace_kernel_runs", "hits", "kernels_launched", "materializations",
         "trace_replays", "plan_hits")
_fast = {name: itertools.count() for name in _FAST}
_base = dict.fromkeys(_FAST, 0)  # each counter's value at the last reset
eager_op = _fast["eager_ops"].__next__  # counts one eager-tier operation
eager_write = _fast["eager_writes"].__next__  # one NumPy setitem into a computed array's region
trace_kernel_run = _fast["trace_kernel_runs"].__next__  # one run of a trace's kernel
hit = _fast["hits"].__next__
kernel_launched = _fast["kernels_launched"].__next__
materialization = _fast["materializations"].__next__
trace_replay = _fast["trace_replays"].__next__
plan_hit = _fast["plan_hits"].__next__


def _count(counter) -> int:
    return int(repr(counter)[6:-1])  # repr is 'count(N)': N is the next value, unconsumed


def bump(name: str, n: int = 1) -> None:
    fast = _fast.get(name)
    if fast is not None:
        for _ in range(n):
            next(fast)
        return
    with _lock:
        counters[name] += n


def reset() -> None:
    with _lock:
        for k in counters:
            counters[k] = 0
        for name, c in _fast.items():
            _base[name] = _count(c)


def snapshot() -> dict[str, int]:
    with _lock:
        out = dict(counters)
        for name, c in _fast.items():
            out[name] += _count(c) - _base[name]
    return out
