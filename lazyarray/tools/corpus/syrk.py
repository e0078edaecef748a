"""Symmetric rank-k update of the lower triangle, with loops over rows and over k.

``C = alpha A A^T + beta C`` restricted to the lower triangle, written the way the syrk
kernel of PolyBench reads when ported to NumPy: for each row ``i`` the row segment
``C[i, :i+1]`` is scaled, then one axpy per column ``k`` of ``A`` is added to it.
"""

import numpy

SIZES = {
    "test": {"n": 24, "k": 6},
    "64K": {"n": 256, "k": 16},
    "4M": {"n": 2048, "k": 8},
}


def make(params, seed):
    """``C`` (n, n) and ``A`` (n, k)."""
    rng = numpy.random.default_rng(seed)
    n, k = params["n"], params["k"]
    return rng.random((n, n)), rng.random((n, k))


def run(np, c, a, alpha=1.5, beta=1.2):
    """Return ``C`` with its lower triangle (diagonal included) updated."""
    c = np.array(c)
    a = np.asarray(a)
    n, m = a.shape
    for i in range(n):
        c[i, :i + 1] *= beta
        for k in range(m):
            c[i, :i + 1] += alpha * a[i, k] * a[:i + 1, k]
    return c
