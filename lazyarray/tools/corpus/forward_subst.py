"""Forward substitution by rows: a lower triangular solve with several right-hand sides.

The triangular recursion of numerical-analysis courses (and of the trisolv kernel in
published benchmark suites): row ``i`` of the solution is the right-hand side minus the
product of the already-solved rows with row ``i`` of ``L``, divided by the diagonal.
"""

import numpy

SIZES = {
    "test": {"n": 30, "rhs": 4},
    "64K": {"n": 256, "rhs": 64},
    "4M": {"n": 2048, "rhs": 32},
}


def make(params, seed):
    """A lower triangular ``L`` (n, n) with a dominant diagonal and ``B`` (n, rhs)."""
    rng = numpy.random.default_rng(seed)
    n = params["n"]
    lower = numpy.tril(rng.uniform(-1.0, 1.0, (n, n)) / numpy.sqrt(n), -1)
    lower += numpy.diag(rng.uniform(1.0, 2.0, n))
    return lower, rng.standard_normal((n, params["rhs"]))


def run(np, lower, b):
    """Return ``X`` with ``lower @ X == b``."""
    lower, b = np.asarray(lower), np.asarray(b)
    n = lower.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - lower[i, :i] @ x[:i]) / lower[i, i]
    return x
