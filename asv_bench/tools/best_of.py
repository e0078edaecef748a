"""Best-of-N warm times of corpus programs, for A/B comparisons of two trees: each program run
three times first (compiles, disk loads), then timed N times; the best is printed, for
NumPy and for lazyarray. Medians of a few runs (the corpus runner's) move by about 5 % on
this kind of machine; the best of 11 moves by 1-2 %.

    python asv_bench/tools/best_of.py --programs syrk,gauss_seidel --size 64K --runs 11
    PYTHONPATH=<other tree> python asv_bench/tools/best_of.py ...      # the other tree
"""

from __future__ import annotations

import argparse
import time

import numpy


def best_ms(run, inputs, runs: int) -> float:
    def once():
        out = run(*inputs)
        for o in out if isinstance(out, tuple) else (out,):
            numpy.asarray(o)

    for _ in range(3):
        once()
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        once()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main(argv=None) -> int:
    import lazyarray as la
    from lazyarray.tools.corpus import PROGRAMS

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs", default=",".join(PROGRAMS))
    p.add_argument("--size", default="64K")
    p.add_argument("--runs", type=int, default=11)
    p.add_argument("--no-numpy", action="store_true", help="time lazyarray only")
    a = p.parse_args(argv)
    print(f"| program | size | NumPy ms | la ms | NumPy/la |\n|---|---|---:|---:|---:|")
    for name in a.programs.split(","):
        m = PROGRAMS[name]
        inputs = m.make(m.SIZES[a.size], 0)
        ours = best_ms(lambda *x: m.run(la, *x), inputs, a.runs)
        theirs = float("nan") if a.no_numpy else best_ms(lambda *x: m.run(numpy, *x), inputs,
                                                         a.runs)
        print(f"| {name} | {a.size} | {theirs:.3g} | {ours:.3g} | {theirs / ours:.2f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
