"""NumPy functions beyond the operators, against NumPy at three sizes: the data-dependent
index functions (`nonzero`, `where(cond)`, a boolean mask index) on lazyarray's parallel
scan, a count of a mask made of comparisons (one fused trace), a whole-array `argmax` in
parallel chunks, `arange(n) * 2` on the pooled parallel fill, and at 10^3 elements the
eager tier's functions (`take`, `sort`, `concatenate`, `cumsum`, `median`, `dot`), which
call NumPy at once. Times include `np.asarray` of the
result (lazyarray's evaluation); docs/performance.md, "nonzero on all threads" and "The
eager threshold"."""

import numpy as np

from .common import require_lazyarray

CASES = {
    "where(x > 0.5)": lambda xp, x, i: xp.where(x > 0.5)[0],
    "x[x > 0.5]": lambda xp, x, i: x[x > 0.5],
    "count of a band": lambda xp, x, i: xp.count_nonzero((x > 0.2) & ~(x > 0.4)),
    "argmax": lambda xp, x, i: xp.argmax(x),
    "arange(n) * 2": lambda xp, x, i: xp.arange(x.shape[0]) * 2,
    "take": lambda xp, x, i: xp.take(x, i),
    "sort": lambda xp, x, i: xp.sort(x),
    "concatenate": lambda xp, x, i: xp.concatenate([x, x]),
    "cumsum": lambda xp, x, i: xp.cumsum(x),
    "median": lambda xp, x, i: xp.median(x),
    "dot": lambda xp, x, i: xp.dot(x, x),
}


class Functions:
    params = [list(CASES), [1_000, 100_000, 1_000_000], ["numpy", "lazyarray"]]
    param_names = ["function", "n", "engine"]

    def setup(self, function, n, engine):
        rng = np.random.default_rng(0)
        x, i = rng.random(n), rng.integers(0, n, n)
        xp = np
        if engine == "lazyarray":
            xp = require_lazyarray("asarray", "nonzero", "argwhere")
            x, i = xp.asarray(x), xp.asarray(i)
        f = CASES[function]
        self.fn = lambda: np.asarray(f(xp, x, i))
        self.fn()

    def time_function(self, function, n, engine):
        self.fn()
