"""Monte Carlo option pricing: geometric Brownian paths stepped in a loop.

The textbook pricer of a European and an arithmetic-average Asian call: the normal
increments are drawn up front (passed in, one row per time step), each step multiplies
the spot of every path by ``exp(drift + vol * z)`` and adds it to the running average;
the discounted mean payoffs and the standard error of the European price are returned.
"""

import numpy

SIZES = {
    "test": {"steps": 16, "paths": 200},
    "64K": {"steps": 64, "paths": 1024},
    "4M": {"steps": 64, "paths": 65_536},
}


def make(params, seed):
    """Standard normal increments, shape (steps, paths)."""
    rng = numpy.random.default_rng(seed)
    return (rng.standard_normal((params["steps"], params["paths"])),)


def run(np, z, s0=100.0, strike=105.0, rate=0.03, sigma=0.25, maturity=1.0):
    """Return the European price, the Asian price and the European standard error."""
    z = np.asarray(z)
    steps, paths = z.shape
    dt = maturity / steps
    drift = (rate - 0.5 * sigma ** 2) * dt
    vol = sigma * np.sqrt(dt)
    spot = np.full(paths, s0)
    running = np.zeros(paths)
    for t in range(steps):
        spot = spot * np.exp(drift + vol * z[t])
        running += spot
    discount = np.exp(-rate * maturity)
    european = discount * np.maximum(spot - strike, 0.0)
    asian = discount * np.maximum(running / steps - strike, 0.0)
    stderr = european.std() / np.sqrt(paths)
    return european.mean(), asian.mean(), stderr
