"""The Python a lazyarray call costs with cold caches, at a size whose kernel is short.

    python asv_bench/tools/cold_call.py W8 1e5 [--rounds 800]     (from the repository root)

At the largest sizes a kernel streams hundreds of MB through the caches, so the Python of the
next call (recording, lookups, the launch, handing the value out) runs with every object it
touches evicted: several times its warm cost. This reproduces that at 1e5 elements: before
each call, a 64 MB sweep evicts the caches, then the showcase call of lazyarray and the
hand-written loop run one after the other. Prints the median of lazyarray's time, the loop's,
and of their difference per round (the loop calls a compiled kernel that does the same work,
so the difference is lazyarray's Python, cold).
"""

from __future__ import annotations

import time

import numpy as np

import lazyarray as la
from lazyarray.tools import workloads
from vs_ideal import workload_args  # (a sibling script: run from the repository root)


def main() -> None:
    name, wl, inputs, lazy, rounds = workload_args(__doc__, 800)
    calls = {"lazyarray": lambda: np.asarray(wl.body(la, *lazy)),
             "loop": workloads.numba_kernels()[name](*inputs)}
    for f in calls.values():  # compile, remember the replay, warm
        for _ in range(5):
            f()
    sweep = np.ones(8 << 20)  # 64 MB
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            sweep += 1.0
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    lazy_t, loop_t = (np.array(times[k]) * 1e6 for k in calls)
    print(f"{name} {inputs[0].shape}: lazyarray {np.median(lazy_t):.1f} µs, loop "
          f"{np.median(loop_t):.1f} µs, difference {np.median(lazy_t - loop_t):.1f} µs "
          f"(medians of {rounds} cold rounds)")


if __name__ == "__main__":
    main()
