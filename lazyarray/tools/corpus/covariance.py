"""A covariance matrix filled element by element after centring the columns.

The double loop over variable pairs of the covariance kernel in published NumPy benchmark
suites (PolyBench ported to NumPy): the column means are removed in place, then each
entry ``cov[i, j]`` is the sum of a product of two columns, mirrored to ``cov[j, i]``.
"""

import numpy

SIZES = {
    "test": {"shape": (50, 8)},
    "64K": {"shape": (1024, 64)},
    "4M": {"shape": (65_536, 64)},
}


def make(params, seed):
    """Observations (rows) of correlated variables (columns)."""
    rng = numpy.random.default_rng(seed)
    n, m = params["shape"]
    base = rng.standard_normal((n, m))
    return (base + 0.5 * base[:, :1] + numpy.arange(m),)


def run(np, data):
    """Return the (m, m) sample covariance of the columns of `data`."""
    data = np.array(data)
    n, m = data.shape
    mean = data.mean(axis=0)
    data -= mean
    cov = np.zeros((m, m))
    for i in range(m):
        for j in range(i, m):
            cov[i, j] = np.sum(data[:, i] * data[:, j]) / (n - 1)
            cov[j, i] = cov[i, j]
    return cov
