"""Counters: compiles, cache hits, kernels launched, interpreter runs, fallbacks."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_FIELDS = ("hits", "misses", "compiles", "disk_hits", "disk_writes", "kernels_launched", "interpreter_runs",
           "fallbacks", "materializations", "updates_in_place", "updates_copied", "updates_fused", "library_calls", "eager_ops",
           "jit_traces", "jit_replays", "background_interpreted", "gathered",
           "buffers_donated", "h2d_transfers", "h2d_bytes", "d2h_transfers", "d2h_bytes",
           "host_fallbacks", "fp_rechecks")
counters: dict[str, int] = dict.fromkeys(_FIELDS, 0)


def bump(name: str, n: int = 1) -> None:
    with _lock:
        counters[name] += n


def reset() -> None:
    with _lock:
        for k in counters:
            counters[k] = 0


def snapshot() -> dict[str, int]:
    with _lock:
        return dict(counters)
