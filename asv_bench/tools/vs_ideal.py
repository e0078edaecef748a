"""lazyarray against the showcase's hand-written Numba loop on one workload, alternating calls
back to back (no pause between them): medians and minima, and their ratios.

    python asv_bench/tools/vs_ideal.py W7 4096 [--rounds 30]     (from the repository root)

Where the showcase table shows a few percent either way, this tells a steady gap from the
machine's noise; docs/performance.md quotes it for the memory-bound workloads.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import lazyarray as la
from lazyarray.tools import workloads


def workload_args(doc: str, rounds: int):
    """(workload name, the showcase Workload, its NumPy inputs, the same as lazyarray arrays,
    rounds) from the command line `WORKLOAD SIZE [--rounds N]`."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("workload", choices=sorted(workloads.WORKLOADS))
    ap.add_argument("size", type=float, help="as the showcase sizes it (n, rows or side)")
    ap.add_argument("--rounds", type=int, default=rounds)
    args = ap.parse_args()
    wl = workloads.WORKLOADS[args.workload]
    inputs = wl.inputs(int(args.size))
    return args.workload, wl, inputs, [la.asarray(a) for a in inputs], args.rounds


def main() -> None:
    name, wl, inputs, lazy, rounds = workload_args(__doc__, 30)
    calls = {"lazyarray": lambda: np.asarray(wl.body(la, *lazy)),
             "numba": workloads.numba_kernels()[name](*inputs)}
    for f in calls.values():  # compile, then warm
        f()
        f()
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    for k in calls:
        print(f"{k:10s} median {med[k] * 1e3:9.3f} ms   min {low[k] * 1e3:9.3f} ms")
    print(f"lazyarray / numba: median {med['lazyarray'] / med['numba']:.2f}, "
          f"min {low['lazyarray'] / low['numba']:.2f}")


if __name__ == "__main__":
    main()
