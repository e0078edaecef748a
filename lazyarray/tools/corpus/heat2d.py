"""Explicit 2-D heat equation: a 5-point stencil applied with slices, step after step.

The forward-Euler diffusion step of every numerical-methods course and tutorial: the
interior ``u[1:-1, 1:-1]`` is overwritten with itself plus ``alpha`` times the discrete
Laplacian built from four shifted slices; the boundary rows and columns stay fixed
(Dirichlet). ``alpha <= 0.25`` keeps the scheme stable.
"""

import numpy

SIZES = {
    "test": {"n": 24, "steps": 5},
    "64K": {"n": 256, "steps": 20},
    "4M": {"n": 2048, "steps": 20},
}


def make(params, seed):
    """A random plate with a hot top edge and a cold bottom edge, and the step count."""
    rng = numpy.random.default_rng(seed)
    n = params["n"]
    u0 = rng.random((n, n))
    u0[0, :] = 1.0
    u0[-1, :] = 0.0
    return u0, params["steps"]


def run(np, u0, steps, alpha=0.2):
    """Return the temperature after `steps` steps and its mean."""
    u = np.array(u0, dtype=float)
    for _ in range(steps):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + alpha * (
            u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1])
    return u, u.mean()
