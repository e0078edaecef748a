"""Streaming stores on and off for one workload: its kernels timed alone, alternating.

    python asv_bench/tools/stream_ab.py W8 1e7 [--rounds 40]     (from the repository root)

Evaluates the workload once with streaming stores off (`layout.STREAM_MIN_BYTES` out of
reach) and once on, keeping each evaluation's compiled kernels and the arguments they were
launched with; then calls the two sets of kernels and the showcase's hand-written loop in
turn, back to back. Medians per call in ms and their ratios: the kernels alone, without the
Python around them, on the same inputs (the machine's speed drifts; alternation keeps the
ratios honest). docs/performance.md quotes it.
"""

from __future__ import annotations

import time

import numpy as np

import lazyarray as la
from lazyarray import trace_tier
from lazyarray.tools import workloads
from lazyarray.codegen import layout
from lazyarray.runtime import executor, launches
from vs_ideal import workload_args  # (a sibling script: run from the repository root)


def _launches(call) -> list:
    """(kernel, arguments) of each kernel one call of `call` launches (after warming up)."""
    launches.prepared.clear()
    trace_tier._REPLAYS.clear()
    for _ in range(3):
        call()
    seen: list = []

    class Capture:
        def __init__(self, kernel, outs: int):
            self.kernel, self.overloads, self.outs = kernel, kernel.overloads, outs

        def __call__(self, *args):
            # its own outputs: the results handed out are made read-only
            seen.append((self.kernel, [np.empty_like(a) for a in args[:self.outs]]
                         + list(args[self.outs:])))
            return self.kernel(*args)

    wrapped = set()  # (a launch remembered under two layouts is wrapped once)
    for prepared in launches.prepared.values():
        for p in prepared.values():
            if id(p) not in wrapped:
                wrapped.add(id(p))
                p.kernel = Capture(p.kernel, len(p.outs))
    call()
    return seen


def alternate(runs: dict, rounds: int) -> dict[str, float]:
    """Call each of `runs` in turn, `rounds` times; print and return the medians in ms."""
    times: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(rounds):
        for label, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[label].append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    print("  ".join(f"{k} {v:.3f} ms" for k, v in med.items()))
    return med


def main() -> None:
    name, wl, inputs, lazy, rounds = workload_args(__doc__, 40)

    def call():
        return np.asarray(wl.body(la, *lazy))

    default = layout.STREAM_MIN_BYTES
    layout.STREAM_MIN_BYTES = 1 << 62
    plain = _launches(call)
    layout.STREAM_MIN_BYTES = default
    stream = _launches(call)
    loop = workloads.numba_kernels()[name](*inputs)
    loop()
    med = alternate({"plain": lambda: [k(*a) for k, a in plain],
                     "stream": lambda: [k(*a) for k, a in stream], "loop": loop}, rounds)
    print(f"stream / plain {med['stream'] / med['plain']:.3f}, stream / loop "
          f"{med['stream'] / med['loop']:.3f}, plain / loop {med['plain'] / med['loop']:.3f}")


if __name__ == "__main__":
    main()
