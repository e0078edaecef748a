"""Code that writes into arrays (issue: NumPy view and mutation semantics while lazy):
an in-place Jacobi/heat stencil loop, an out= accumulation loop (each also computed every
step) and a recurrence loop, lazyarray against NumPy on the same code."""

from __future__ import annotations

import numpy as np

from .common import ENGINES, require_lazyarray


def _module(engine):
    return np if engine == "numpy" else require_lazyarray()


def stencil(xp, n: int, steps: int):
    g = xp.zeros((n, n))
    g[0, :] = 1.0
    for _ in range(steps):
        g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
    return np.asarray(g)


def stencil_observed(xp, n: int, steps: int):
    """The same loop computing every step (as a loop that checks its state would): each
    write is one kernel storing the new version."""
    g = xp.zeros((n, n))
    g[0, :] = 1.0
    for _ in range(steps):
        g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        if xp is not np:
            xp.evaluate(g)
    return np.asarray(g)


def accumulate_out(xp, x, steps: int):
    acc = xp.zeros_like(x)
    for k in range(steps):
        xp.add(acc, x * (k + 1), out=acc)
    return np.asarray(acc)


def accumulate_observed(xp, x, steps: int):
    """acc += x * k through out=, computed every step: the sum is written into acc's buffer."""
    acc = xp.zeros_like(x)
    for k in range(steps):
        xp.add(acc, x * (k + 1), out=acc)
        if xp is not np:
            xp.evaluate(acc)
    return np.asarray(acc)


def recurrence(xp, b, r: float):
    a = xp.ones(b.shape[0])
    for i in range(1, b.shape[0]):
        a[i] = a[i - 1] * r + b[i]
    return np.asarray(a)


class Stencil:
    """20 Jacobi steps written in place, NumPy style."""

    params = ([256, 1024, 2048], ENGINES)
    param_names = ["n", "engine"]
    timeout = 300

    def setup(self, n, engine):
        self.xp = _module(engine)
        stencil(self.xp, n, 2)  # warm: compile

    def time_stencil(self, n, engine):
        stencil(self.xp, n, 20)

    def time_stencil_observed(self, n, engine):
        stencil_observed(self.xp, n, 20)


class AccumulateOut:
    """acc += x * k through out=, 10 times."""

    params = ([10**5, 10**7], ENGINES)
    param_names = ["n", "engine"]
    timeout = 300

    def setup(self, n, engine):
        self.xp = _module(engine)
        self.x = self.xp.asarray(np.random.default_rng(0).random(n))
        accumulate_out(self.xp, self.x, 2)

    def time_accumulate_out(self, n, engine):
        accumulate_out(self.xp, self.x, 10)

    def time_accumulate_observed(self, n, engine):
        accumulate_observed(self.xp, self.x, 10)


class Recurrence:
    """a[i] = a[i-1] * r + b[i] element by element (a Python loop over writes)."""

    params = ([200], ENGINES)
    param_names = ["n", "engine"]

    def setup(self, n, engine):
        self.xp = _module(engine)
        self.b = self.xp.asarray(np.linspace(0, 1, n))
        recurrence(self.xp, self.b, 0.9)

    def time_recurrence(self, n, engine):
        recurrence(self.xp, self.b, 0.9)
