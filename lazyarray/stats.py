"""Counters: compiles, cache hits, kernels launched, interpreter runs, fallbacks."""

from __future__ import annotations

import itertools
import threading

_lock = threading.Lock()
_FIELDS = ("hits", "misses", "compiles", "disk_hits", "disk_writes", "kernels_launched", "interpreter_runs",
           "fallbacks", "materializations", "updates_in_place", "updates_copied", "updates_fused", "library_calls", "eager_ops",
           "jit_traces", "jit_replays", "background_interpreted", "gathered",
           "buffers_donated", "h2d_transfers", "h2d_bytes", "d2h_transfers", "d2h_bytes",
           "host_fallbacks", "fp_rechecks", "trace_kernel_runs", "trace_compiles",
           "trace_disk_writes", "trace_replays")
counters: dict[str, int] = dict.fromkeys(_FIELDS, 0)

# The eager tier counts its operations on a C-level counter: `eager_op()` costs a third of
# a dictionary increment, which is a tenth of what a tiny operation costs (W9).
_eager = itertools.count()
eager_op = _eager.__next__
_eager_base = 0
_trace_runs = itertools.count()  # so are the runs of trace kernels (`trace_kernel_runs`)
trace_kernel_run = _trace_runs.__next__
_trace_base = 0


def _count(counter) -> int:
    return int(repr(counter)[6:-1])  # repr is 'count(N)': N is the next value, unconsumed


def _eager_count() -> int:
    return _count(_eager)


def bump(name: str, n: int = 1) -> None:
    with _lock:
        counters[name] += n


def reset() -> None:
    global _eager_base, _trace_base
    with _lock:
        for k in counters:
            counters[k] = 0
        _eager_base = _eager_count()
        _trace_base = _count(_trace_runs)


def snapshot() -> dict[str, int]:
    with _lock:
        out = dict(counters)
    out["eager_ops"] += _eager_count() - _eager_base
    out["trace_kernel_runs"] += _count(_trace_runs) - _trace_base
    return out
