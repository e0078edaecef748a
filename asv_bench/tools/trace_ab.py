"""The trace tier on and off, side by side with NumPy, on the small workloads.

    python asv_bench/tools/trace_ab.py [ROUNDS]

For each case: NumPy, lazyarray with its default tiers, and lazyarray with
`options(trace=False)` (each tiny operation calls NumPy at once), alternating within each
round after a warm-up long enough for the trace tier to compile its chains; the median over
the rounds of the best of three timings. Prints a Markdown table (µs per call, and the ratio
to NumPy).
"""

import statistics
import sys
import timeit

import numpy as np

import lazyarray as la
from lazyarray.tools.workloads import w1, w2, w7, w8, w9


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rng = np.random.default_rng(0)
    cases = {
        "W1 n=1e3": (w1, [rng.random(1000) for _ in range(5)]),
        "W2 n=1e3": (w2, [rng.random(1000) for _ in range(2)]),
        "W7 64²": (w7, [rng.random((64, 64))]),
        "W8 n=1e3": (w8, [rng.random(1000)]),
        "W9 n=10": (w9, [rng.random(10)]),
        "W9 n=1e3": (w9, [rng.random(1000)]),
        "relu n=1e3": (relu, [rng.random(1000) - 0.5]),
        "relu n=1e5": (relu, [rng.random(100_000) - 0.5]),
    }
    print("| case | NumPy | lazyarray | without the trace tier |")
    print("|---|---|---|---|")
    for name, (fn, ins) in cases.items():
        m = measure(fn, ins, rounds)
        print(f"| {name} | {m['numpy']:.1f} µs | {m['on']:.1f} µs ({m['on'] / m['numpy']:.2f}) "
              f"| {m['off']:.1f} µs ({m['off'] / m['numpy']:.2f}) |", flush=True)


def relu(xp, x):
    """A two-argument ufunc called as a function inside a chain."""
    return xp.maximum(x * 2.0 + 0.1, 0) * 0.5 - 0.25


def measure(fn, ins, rounds: int) -> dict[str, float]:
    """Median over the rounds of the best of three timings, µs per call."""
    lins = [la.asarray(a) for a in ins]
    for _ in range(100):  # warm-up: compiles (or loads) the chains' loops
        np.asarray(fn(la, *lins))
    la.wait_compiles()  # (built in the background: on an empty cache, not ready by now)
    number = 300 if ins[0].size < 5000 else 100

    def best(f):
        return min(timeit.repeat(f, number=number, repeat=3)) / number * 1e6

    res = {"numpy": [], "on": [], "off": []}
    for _ in range(rounds):
        res["numpy"].append(best(lambda: fn(np, *ins)))
        res["on"].append(best(lambda: np.asarray(fn(la, *lins))))
        with la.options(trace=False):
            res["off"].append(best(lambda: np.asarray(fn(la, *lins))))
    return {k: statistics.median(v) for k, v in res.items()}

if __name__ == "__main__":
    main()
