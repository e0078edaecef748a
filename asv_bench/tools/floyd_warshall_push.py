"""Floyd-Warshall's loop on the compiled tier: the views it takes of its last result
(`path[:, k]`, `path[k, :]`) pushed down through the shared elementwise work.

    python asv_bench/tools/floyd_warshall_push.py [N ...]

For each n (default 3 4 5 6 8 16 32): the calls of `passes.simplify._push` and the seconds of
one evaluation of the n-step loop under `eager_threshold=0` (compiles included), with the
values checked against NumPy. Without a budget on the push-down the calls grew as 3**n.
"""

import importlib
import sys
import time

import numpy

import lazyarray as np

# the module (the package re-exports its `simplify` function under the same name)
simplify = importlib.import_module("lazyarray.passes.simplify")


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [3, 4, 5, 6, 8, 16, 32]
    calls = [0]
    push = simplify._push

    def counted(*args):
        calls[0] += 1
        return push(*args)

    simplify._push = counted
    for n in sizes:
        r = numpy.random.default_rng(0).integers(1, 100, (n, n))
        calls[0], ref, path = 0, r.copy(), np.asarray(r)
        t0 = time.perf_counter()
        with np.options(eager_threshold=0):
            for k in range(n):
                path = np.minimum(path, np.add.outer(path[:, k], path[k, :]))
            got = numpy.asarray(path)
        seconds = time.perf_counter() - t0
        for k in range(n):
            ref = numpy.minimum(ref, numpy.add.outer(ref[:, k], ref[k, :]))
        print(f"n={n}: {calls[0]} pushes, {seconds:.2f} s, equal to NumPy: "
              f"{numpy.array_equal(got, ref)}", flush=True)


if __name__ == "__main__":
    main()
