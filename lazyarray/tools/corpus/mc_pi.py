"""Monte Carlo estimates from uniform samples: pi by darts, an integral over the disc.

The first Monte Carlo program of every course: points uniform in the unit square (drawn
with a seeded generator and passed in), the fraction inside the quarter circle gives pi;
the same samples integrate ``exp(-r^2)`` over the quarter disc, and batch means give the
standard error of the estimate.
"""

import numpy

SIZES = {
    "test": {"n": 2000},
    "64K": {"n": 65_536},
    "4M": {"n": 4_194_304},
}


def make(params, seed):
    """Two uniform coordinates in [0, 1)."""
    rng = numpy.random.default_rng(seed)
    return rng.random(params["n"]), rng.random(params["n"])


def run(np, x, y, batches=16):
    """Return the count inside, pi, the integral estimate and the standard error of pi."""
    x, y = np.asarray(x), np.asarray(y)
    n = x.shape[0]
    r2 = x * x + y * y
    inside = r2 <= 1.0
    count = np.count_nonzero(inside)
    pi = 4.0 * count / n
    integral = np.where(inside, np.exp(-r2), 0.0).mean()
    per_batch = 4.0 * inside.reshape(batches, -1).mean(axis=1)
    stderr = per_batch.std(ddof=1) / np.sqrt(batches)
    return count, pi, integral, stderr
