"""Time per call of each float64 math ufunc on 10^6 elements: NumPy against lazyarray.

    python asv_bench/tools/math_speed.py [N]

Arguments in (0.1, 0.9) (arccosh: (1.1, 3)), second operands in (0.1, 2); lazyarray's time
includes `np.asarray` of the result (one kernel); medians of 7 calls after two warm ones.
The ratio shows which functions run lazyarray's own vectorized arithmetic (below 1, or near
it) and which still call libm from the kernels (docs/performance.md, "Known costs").
"""

import sys
import time
import warnings

import numpy as np

import lazyarray as la

UNARY = ["exp", "log", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
         "arcsinh", "arccosh", "arctanh", "exp2", "log2", "log10", "expm1", "log1p", "cbrt",
         "sqrt"]
BINARY = ["arctan2", "power", "hypot", "fmod", "logaddexp"]


def median_time(f) -> float:
    f()
    f()
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(n: int) -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.1, 0.9, n), rng.uniform(0.1, 2, n)
    lx, ly = la.asarray(x), la.asarray(y)
    print(f"{'function':10} {'numpy ms':>9} {'lazyarray ms':>13} {'ratio':>6}")
    for name in UNARY + BINARY:
        fn, fl = getattr(np, name), getattr(la, name)
        if name in BINARY:
            args, largs = (x, y), (lx, ly)
        else:
            args, largs = ((y + 1,), (ly + 1,)) if name == "arccosh" else ((x,), (lx,))
        tn = median_time(lambda: fn(*args))
        tl = median_time(lambda: np.asarray(fl(*largs)))
        print(f"{name:10} {tn * 1e3:9.2f} {tl * 1e3:13.2f} {tl / tn:6.2f}")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000)
