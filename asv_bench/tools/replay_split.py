"""Where the Python time of a replayed large trace goes, stage by stage, on the path from the
user's first operation to `np.asarray` returning (the workload's own call, caches as the kernel
left them: at 1e7 elements every stage starts cold).

    python asv_bench/tools/replay_split.py W8 1e7 [--rounds 40]     (from the repository root)

Marks the time at the entry of the stages of a replay (`trace_tier.force_large`,
`engine.replay`, `executor.launch_prepared`, `pool.empty`, the kernel's call and return,
`engine.forcing_site`) and prints the median gap between consecutive marks, in µs. The
workload must replay (W1, W2, W7, W8: one fusion of the trace's leaves).
"""

from __future__ import annotations

import collections
import time

import numpy as np

import lazyarray as la
from lazyarray import engine, trace_tier
from lazyarray.runtime import executor, launches, pool
from vs_ideal import workload_args  # (a sibling script: run from the repository root)

# (module, name): where the caller looks the stage up
STAGES = [(trace_tier, "force_large"), (trace_tier, "_replay"), (engine, "launch_prepared"),
          (pool, "empty"), (engine, "forcing_site")]


class _Marked:
    """A compiled kernel that marks the time of its call and of its return."""

    def __init__(self, kernel, marks: dict):
        self.kernel, self.marks, self.overloads = kernel, marks, kernel.overloads

    def __call__(self, *args):
        self.marks["kernel call"] = time.perf_counter()
        out = self.kernel(*args)
        self.marks["kernel return"] = time.perf_counter()
        return out


def _mark_entry(module, name: str, marks: dict) -> None:
    fn = getattr(module, name)

    def marked(*args, **kwargs):
        marks[name] = time.perf_counter()
        return fn(*args, **kwargs)

    setattr(module, name, marked)


def main() -> None:
    _, wl, _, lazy, rounds = workload_args(__doc__, 40)
    for _ in range(3):  # compile, remember the replay, warm
        np.asarray(wl.body(la, *lazy))
    marks: dict[str, float] = {}
    for module, name in STAGES:
        _mark_entry(module, name, marks)
    for prepared in launches.prepared.values():
        for p in prepared.values():
            p.kernel = _Marked(p.kernel, marks)
    order = ["recorded", "force_large", "_replay", "launch_prepared", "empty", "kernel call",
             "kernel return", "forcing_site", "returned"]
    gaps = collections.defaultdict(list)
    for _ in range(rounds):
        marks.clear()
        t0 = time.perf_counter()
        result = wl.body(la, *lazy)
        marks["recorded"] = time.perf_counter()
        value = np.asarray(result)
        marks["returned"] = time.perf_counter()
        del value, result
        if any(k not in marks for k in order if k != "empty"):
            raise SystemExit(f"not a replay of one fusion: marks {sorted(marks)}")
        prev, at = "start", t0
        for k in order:
            if k not in marks:  # (a small result is not the pool's: np.empty directly)
                continue
            gaps[f"{prev} -> {k}"].append(marks[k] - at)
            prev, at = k, marks[k]
    for k, v in gaps.items():
        print(f"{k:36s} {np.median(v) * 1e6:10.1f} µs")
    outside = sum(np.median(v) for k, v in gaps.items() if k != "kernel call -> kernel return")
    print(f"{'outside the kernel (sum of medians)':36s} {outside * 1e6:10.1f} µs")


if __name__ == "__main__":
    main()
