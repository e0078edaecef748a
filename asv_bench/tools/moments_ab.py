"""Moments fusion on and off for one workload: its kernels timed alone, alternating.

    python asv_bench/tools/moments_ab.py W6 1e6 [--rounds 40]     (from the repository root)
    LAZYARRAY_AB_STAT=std python asv_bench/tools/moments_ab.py W6 1e6

With LAZYARRAY_AB_STAT set (std or var), the timed evaluation is that statistic of the
workload's first input over axis 0, and the third column is NumPy's.

Evaluates the workload with the moments fusion off (`passes.moments.MAX_COLS = 0`: the sum
and the squared deviations stay two kernels) and on, keeping each evaluation's compiled
kernels and their arguments (`stream_ab._launches`); then calls the two sets of kernels and
the showcase's hand-written loop in turn, back to back. Medians per call in ms and their
ratios. docs/performance.md quotes it.
"""

from __future__ import annotations

import os

import numpy as np

import lazyarray as la
from lazyarray import engine
from lazyarray.tools import workloads
from lazyarray import passes
from lazyarray.passes import moments
from stream_ab import _launches, alternate  # (sibling scripts: run from the repository root)
from vs_ideal import workload_args


def main() -> None:
    name, wl, inputs, lazy, rounds = workload_args(__doc__, 40)

    stat = os.environ.get("LAZYARRAY_AB_STAT")

    def call():
        if stat:
            return np.asarray(getattr(lazy[0], stat)(axis=0))
        return np.asarray(wl.body(la, *lazy))

    default = moments.MAX_COLS
    moments.MAX_COLS = 0
    passes.clear_plans()
    two = _launches(call)
    moments.MAX_COLS = default
    passes.clear_plans()
    one = _launches(call)
    if stat:
        def loop():
            return getattr(inputs[0], stat)(axis=0)
    else:
        loop = workloads.numba_kernels()[name](*inputs)
    loop()
    print(f"kernels: {len(two)} without the moments fusion, {len(one)} with it")
    last = "numpy" if stat else "loop"
    med = alternate({"off": lambda: [k(*a) for k, a in two],
                     "on": lambda: [k(*a) for k, a in one], last: loop}, rounds)
    print(f"on / off {med['on'] / med['off']:.3f}, on / {last} {med['on'] / med[last]:.3f}, "
          f"off / {last} {med['off'] / med[last]:.3f}")


if __name__ == "__main__":
    main()
