"""Forcing a mixing kernel's three outputs one by one against forcing them together.

    python asv_bench/tools/co_materialize.py [ROUNDS] [N]

Three outputs share two temporaries no array holds (`slope`, `taper`: a vertical mixing
kernel's shape). Reading them one after the other (`np.asarray(k11)`, then `k13`, `k33`)
used to compute the shared work three times; co-materialization (lazyarray/graph/live.py)
computes the three in the first evaluation. Prints, per dtype, the median over the rounds of
each way's best of three (ms), the ratio one-by-one / together, NumPy's time, and the
arrays co-materialized per round (0 before co-materialization existed: the script runs on
older commits too). float64 inputs take the large-trace path (not covered:
docs/semantics.md), float32 the graph tier.
"""

import statistics
import sys
import timeit

import numpy as np

import lazyarray as la


def mixing(xp, a, b, c):
    slope = xp.tanh(a * 0.5 + b * 0.25)
    taper = xp.where(slope > 0.1, xp.exp(-slope * slope), 0.0)
    return taper * a + slope, taper * b - slope * 2.0, taper * c + slope * slope


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
    rng = np.random.default_rng(0)
    print("| dtype | one by one | together | ratio | NumPy | co-materialized per round |")
    print("|---|---|---|---|---|---|")
    for dtype in (np.float32, np.float64):
        ins = [rng.standard_normal(n).astype(dtype) for _ in range(3)]
        lins = [la.asarray(v) for v in ins]

        def one_by_one():
            for k in mixing(la, *lins):
                np.asarray(k)

        def together():
            ks = mixing(la, *lins)
            la.evaluate(*ks)
            for k in ks:
                np.asarray(k)

        for f in (one_by_one, together, one_by_one, together):  # compile, warm
            f()
        times = {"one": [], "together": [], "numpy": []}
        before = la.cache_info().get("co_materialized", 0)
        for _ in range(rounds):
            times["one"].append(min(timeit.repeat(one_by_one, number=1, repeat=3)))
            times["together"].append(min(timeit.repeat(together, number=1, repeat=3)))
            times["numpy"].append(min(timeit.repeat(lambda: mixing(np, *ins), number=1,
                                                    repeat=3)))
        co = (la.cache_info().get("co_materialized", 0) - before) / (3 * rounds)
        m = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"| {np.dtype(dtype).name} | {m['one']:.2f} ms | {m['together']:.2f} ms | "
              f"{m['one'] / m['together']:.2f} | {m['numpy']:.2f} ms | {co:.1f} |", flush=True)


if __name__ == "__main__":
    main()
