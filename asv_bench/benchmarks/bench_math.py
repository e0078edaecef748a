"""Vectorized math against NumPy's own loops: one float64 function over 10^6 arguments per
call (lazyarray's time includes `np.asarray`, one kernel). NumPy's loops for these are its
AVX-512 code where the CPU has it; lazyarray's are its own arithmetic (power, exp2 and tan
since the round that added them; docs/performance.md, "More math without libm")."""

import numpy as np

from .common import require_lazyarray

FUNCTIONS = ["exp", "log", "sin", "tan", "exp2", "power x**1.5", "power x**y", "arctan2"]


class Math:
    params = [FUNCTIONS, ["numpy", "lazyarray"]]
    param_names = ["function", "engine"]

    def setup(self, function, engine):
        rng = np.random.default_rng(0)
        x, y = rng.uniform(0.1, 10, 1_000_000), rng.uniform(-3, 3, 1_000_000)
        xp = np
        if engine == "lazyarray":
            xp = require_lazyarray("asarray")
            x, y = xp.asarray(x), xp.asarray(y)
        name = function.split()[0]
        f = getattr(xp, name)
        self.fn = {"power x**1.5": lambda: np.asarray(x ** 1.5),
                   "power x**y": lambda: np.asarray(x ** y),
                   "arctan2": lambda: np.asarray(f(y, x))}.get(
            function, lambda: np.asarray(f(y if name in ("exp", "sin", "tan", "exp2") else x)))
        self.fn()

    def time_function(self, function, engine):
        self.fn()
