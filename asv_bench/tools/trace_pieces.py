"""W9 on the trace tier, in pieces: the compiled kernel's call, the recording of its 100
operations, and the whole call, at 10 elements.

    python asv_bench/tools/trace_pieces.py

Prints the best of 7 timings of each (µs). Runs on older commits too (their trace launcher
took the whole trace; this one takes leaves, scalars and shape), so the same script compares
two trees: run it in each, alternately.
"""

import timeit

import numpy as np

import lazyarray as la
from lazyarray import trace_tier as trace
from lazyarray.tools.workloads import w9


def main() -> None:
    lx = la.asarray(np.random.default_rng(0).random(10))
    for k in range(40):  # recorded, then compiled in the background
        if k == 20:
            la.wait_compiles()
        np.asarray(w9(la, lx))
    tr = w9(la, lx)._tr
    prog = trace._program(tr[0])
    try:
        prog.kernel(tr[1], tr[2], tr[4])
        call = lambda: prog.kernel(tr[1], tr[2], tr[4])  # noqa: E731
    except TypeError:
        call = lambda: prog.kernel(tr)  # noqa: E731

    def best(f, number):
        return min(timeit.repeat(f, number=number, repeat=7)) / number * 1e6

    print(f"kernel call {best(call, 5000):.2f} us; recording {best(lambda: w9(la, lx), 2000):.2f}"
          f" us; whole {best(lambda: np.asarray(w9(la, lx)), 2000):.2f} us")


if __name__ == "__main__":
    main()
