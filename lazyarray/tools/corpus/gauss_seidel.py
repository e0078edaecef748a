"""Gauss-Seidel sweeps for the 2-D Poisson equation, one grid row at a time.

The row-by-row relaxation of iterative-solver tutorials and of the seidel kernels in
published NumPy benchmark suites: each row of the interior is recomputed from the row
above (already updated in this sweep), the row below (not yet) and its own old values;
after the sweeps the residual norm is computed with whole-array slices.
"""

import numpy

SIZES = {
    "test": {"n": 20, "sweeps": 3},
    "64K": {"n": 256, "sweeps": 4},
    "4M": {"n": 2048, "sweeps": 2},
}


def make(params, seed):
    """A random right-hand side ``f`` on an (n, n) grid, and the sweep count."""
    rng = numpy.random.default_rng(seed)
    n = params["n"]
    return rng.standard_normal((n, n)), params["sweeps"]


def run(np, f, sweeps):
    """Return the approximate solution (zero on the boundary) and the residual norm."""
    f = np.asarray(f)
    n = f.shape[0]
    h2 = (1.0 / (n - 1)) ** 2
    u = np.zeros_like(f)
    for _ in range(sweeps):
        for i in range(1, n - 1):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1]
                                 + u[i, :-2] + u[i, 2:] + h2 * f[i, 1:-1])
    lap = (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]) / h2
    residual = np.sqrt(np.sum((f[1:-1, 1:-1] + lap) ** 2))
    return u, residual
