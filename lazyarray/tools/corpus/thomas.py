"""Tridiagonal (Thomas) solve along the last axis, one system per water column.

Ocean and atmosphere models solve an implicit vertical diffusion in every column of the
grid: a tridiagonal system along ``z``, solved for all columns at once by looping over the
levels. The forward sweep writes ``cp[..., k]`` and ``dp[..., k]`` from level ``k - 1``, the
back substitution runs from the bottom up.
"""

import numpy

SIZES = {
    "test": {"shape": (4, 5, 12)},
    "64K": {"shape": (32, 32, 64)},
    "4M": {"shape": (256, 256, 64)},
}


def make(params, seed):
    """Diagonally dominant bands ``a`` (below), ``b`` (diagonal), ``c`` (above), and ``d``."""
    rng = numpy.random.default_rng(seed)
    shape = params["shape"]
    a = -rng.uniform(0.1, 1.0, shape)
    c = -rng.uniform(0.1, 1.0, shape)
    b = 1.0 + numpy.abs(a) + numpy.abs(c) + rng.uniform(0.0, 1.0, shape)
    a[..., 0] = 0.0
    c[..., -1] = 0.0
    d = rng.standard_normal(shape)
    return a, b, c, d


def run(np, a, b, c, d):
    """Return ``x`` with ``a[k] x[k-1] + b[k] x[k] + c[k] x[k+1] = d[k]`` along the last axis."""
    a, b, c, d = np.asarray(a), np.asarray(b), np.asarray(c), np.asarray(d)
    nz = a.shape[-1]
    cp = np.empty_like(a)
    dp = np.empty_like(a)
    cp[..., 0] = c[..., 0] / b[..., 0]
    dp[..., 0] = d[..., 0] / b[..., 0]
    for k in range(1, nz):
        denom = b[..., k] - a[..., k] * cp[..., k - 1]
        cp[..., k] = c[..., k] / denom
        dp[..., k] = (d[..., k] - a[..., k] * dp[..., k - 1]) / denom
    x = np.empty_like(d)
    x[..., -1] = dp[..., -1]
    for k in range(nz - 2, -1, -1):
        x[..., k] = dp[..., k] - cp[..., k] * x[..., k + 1]
    return x
