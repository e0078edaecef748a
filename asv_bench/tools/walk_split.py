"""How one lazyarray call of a workload splits into kernel time and Python time around it, next
to the showcase's hand-written Numba loop, and where the Python time goes.

    python asv_bench/tools/walk_split.py W8 1e7 [--rounds 100]     (from the repository root)

Runs the workload and the loop alternately, back to back. For lazyarray it times the whole
call and the compiled kernels' calls inside it (the rest is the Python walk: building the
graph, lowering, plan lookup, launch, hand-out), then the main steps of an evaluation summed
over a second set of rounds (`execute` includes the kernels). Medians per call, ms and µs. docs/performance.md and the issue
notes quote it for W7 and W8.
"""

from __future__ import annotations

import time

import numpy as np

import lazyarray as la
from lazyarray import engine, trace_tier
from lazyarray.tools import workloads
from lazyarray.runtime import executor, launches
from vs_ideal import workload_args  # (a sibling script: run from the repository root)

# (module, name where the caller looks it up, label)
STEPS = [(trace_tier, "_replay", "replay"), (engine, "toposort", "toposort"),
         (engine, "_sole_buffers", "_sole_buffers"), (engine, "lower", "lower"),
         (engine, "optimize", "optimize"), (engine, "execute", "execute"),
         (executor, "execute", "execute (a replay's)"),
         (engine, "_use_interpreter", "_use_interpreter"),
         (engine, "forcing_site", "forcing_site")]


class _Timed:
    """A compiled kernel that records the duration of each call in `spent`."""

    def __init__(self, kernel, spent: list):
        self.kernel, self.spent, self.overloads = kernel, spent, kernel.overloads

    def __call__(self, *args):
        t0 = time.perf_counter()
        try:
            return self.kernel(*args)
        finally:
            self.spent.append(time.perf_counter() - t0)


def _wrap(module, name: str, label: str, spent: dict) -> None:
    fn = getattr(module, name)

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0

    setattr(module, name, timed)


def main() -> None:
    name, wl, inputs, lazy, rounds = workload_args(__doc__, 100)

    def call():
        return np.asarray(wl.body(la, *lazy))

    loop = workloads.numba_kernels()[name](*inputs)
    for _ in range(3):  # compile, then warm
        call()
        loop()
    spent: list[float] = []
    for prepared in launches.prepared.values():
        for p in prepared.values():
            p.kernel = _Timed(p.kernel, spent)
    total, kernels, ideal = [], [], []
    for _ in range(rounds):
        spent.clear()
        t0 = time.perf_counter()
        call()
        total.append(time.perf_counter() - t0)
        kernels.append(sum(spent))
        t0 = time.perf_counter()
        loop()
        ideal.append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) * 1e3 for k, v in
           (("total", total), ("kernels", kernels), ("loop", ideal))}
    print(f"lazyarray {med['total']:.3f} ms = kernels {med['kernels']:.3f} + Python "
          f"{med['total'] - med['kernels']:.3f}; hand-written loop {med['loop']:.3f} ms")
    print(f"kernels / loop {med['kernels'] / med['loop']:.2f}, "
          f"lazyarray / loop {med['total'] / med['loop']:.2f}")
    steps: dict[str, float] = {}
    for module, name, label in STEPS:
        _wrap(module, name, label, steps)
    for _ in range(rounds):
        call()
        loop()
    for _, _, label in STEPS:
        print(f"  {label:22s} {steps.get(label, 0.0) / rounds * 1e6:8.1f} µs per call")


if __name__ == "__main__":
    main()
