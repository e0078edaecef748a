"""A small kernel written over its operand: the serial dispatcher against the parallel one run
on one thread (`numba_cpu.OneThread`), and the parallel one on all threads.

    python asv_bench/tools/one_thread.py [ROUNDS]

The kernel is W5's epilogue, `maximum(X + bias, 0)` on an (m, m) X, compiled by lazyarray;
each dispatcher is called on the same arrays, in place (result over X, as after a product)
and into a separate output; best of ROUNDS samples, µs per call. docs/performance.md
("Threading") quotes it.
"""

import sys
import time

import numpy as np

import lazyarray as la
from lazyarray.backends import numba_cpu
from lazyarray.runtime import executor, kernels


def best(f, args, rounds, calls=500):
    f(*args)
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            f(*args)
        out.append((time.perf_counter() - t0) / calls)
    return min(out) * 1e6


def main(rounds: int) -> None:
    rng = np.random.default_rng(0)
    print(f"{'m':>5} {'layout':>9} {'serial':>8} {'one thread':>11} {'all threads':>12}  (µs)")
    for m in (32, 64, 128, 181, 256):
        X, r = rng.standard_normal((m, m)), rng.standard_normal(m)
        with la.options(eager_threshold=0):
            np.asarray(la.maximum(la.asarray(X) + la.asarray(r), 0))
        parallel, serial = next(e for e in reversed(kernels.cache.values())
                                if e.kernel is not None).kernel
        one = numba_cpu.one_thread(parallel) or serial
        r.setflags(write=False)
        x_in = X.copy()
        x_in.setflags(write=False)
        for layout in ("in place", "separate"):
            out = X.copy() if layout == "in place" else np.empty_like(X)
            args = (out, out if layout == "in place" else x_in, r, 0.0, m, m)
            times = [best(k, args, rounds) for k in (serial, one, parallel)]
            print(f"{m:>5} {layout:>9} " + " ".join(f"{t:>10.2f}" for t in times))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
