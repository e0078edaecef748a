"""Modified Gram-Schmidt QR by columns, with an inner loop over the remaining columns.

The column-oriented QR of linear-algebra courses and of published NumPy benchmark suites
(the PolyBench kernels ported to NumPy): normalise column ``k``, then remove its component
from every later column ``j`` one at a time -- a scalar ``R[k, j]`` and a column update per
pair, so the Python loop runs ``n (n - 1) / 2`` times.
"""

import numpy

SIZES = {
    "test": {"shape": (40, 12)},
    "64K": {"shape": (512, 128)},
    # 1M elements: NumPy needs about 0.6 s at (8192, 128); at 4M it would need seconds
    "4M": {"shape": (8192, 128)},
}


def make(params, seed):
    """A well-conditioned random matrix, shape (m, n) with m >= n."""
    rng = numpy.random.default_rng(seed)
    m, n = params["shape"]
    return (rng.standard_normal((m, n)) + 2.0 * numpy.eye(m, n),)


def run(np, a):
    """Return ``Q`` (m, n) with orthonormal columns and upper triangular ``R`` (n, n)."""
    a = np.array(a, dtype=float)
    m, n = a.shape
    q = np.zeros((m, n))
    r = np.zeros((n, n))
    for k in range(n):
        r[k, k] = np.sqrt(np.dot(a[:, k], a[:, k]))
        q[:, k] = a[:, k] / r[k, k]
        for j in range(k + 1, n):
            r[k, j] = np.dot(q[:, k], a[:, j])
            a[:, j] = a[:, j] - q[:, k] * r[k, j]
    return q, r
