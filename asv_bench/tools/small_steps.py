"""Where the time of W2 and W8 on 1,000 elements goes, operation by operation.

    python asv_bench/tools/small_steps.py [ROUNDS]

Each step of the two workloads is timed alone (NumPy's call, and lazyarray's: recording a
trace, or the evaluation that `np.asarray` forces), alternating NumPy and lazyarray within
each round after a warm-up long enough for the trace tier to compile its loops; the best
over the rounds, µs per step. docs/performance.md ("Comparisons, where, clip and sums")
quotes it.
"""

import sys
import time

import numpy as np

import lazyarray as la


def steps(xp, x, y):
    """Each step of W8 and W2 as a zero-argument callable over the values before it."""
    g, m, c = x > 0.5, x * 2, xp.clip(x, 0.1, 0.3)
    d = x - y  # lazyarray: a pending trace; each step below records on it anew
    return {
        "W8 x > 0.5": lambda: x > 0.5,
        "W8 x * 2": lambda: x * 2,
        "W8 clip": lambda: xp.clip(x, 0.1, 0.3),
        "W8 where": lambda: xp.where(g, m, c),
        "W8 where + asarray": lambda: np.asarray(xp.where(g, m, c)),
        "W2 x - y": lambda: x - y,
        "W2 ** 2": lambda: d ** 2,
        "W2 ** 2 + sum": lambda: xp.sum(d ** 2),
        "W2 ** 2 + sum + sqrt + asarray": lambda: np.asarray(xp.sqrt(xp.sum(d ** 2))),
    }


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(1000), rng.standard_normal(1000)
    lx, ly = la.asarray(x), la.asarray(y)
    for _ in range(100):  # the traced programs run often enough to be compiled
        np.asarray(la.where(lx > 0.5, lx * 2, la.clip(lx, 0.1, 0.3)))
        np.asarray(la.sqrt(la.sum((lx - ly) ** 2)))
    la.wait_compiles()
    # fresh traces per call: the steps are rebuilt from pending operands each time
    cases = {"numpy": lambda: steps(np, x, y), "lazyarray": lambda: steps(la, lx, ly)}
    best: dict[tuple[str, str], float] = {}
    number = 2000
    for _ in range(rounds):
        for engine, make in cases.items():
            for name, fn in make().items():
                fn()
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                t = (time.perf_counter() - t0) / number * 1e6
                best[engine, name] = min(best.get((engine, name), t), t)
    print("| step | NumPy | lazyarray |")
    print("|---|---|---|")
    for name in steps(np, x, y):
        print(f"| {name} | {best['numpy', name]:.2f} µs | {best['lazyarray', name]:.2f} µs |")


if __name__ == "__main__":
    main()
