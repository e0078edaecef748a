"""All-pairs shortest paths (Floyd-Warshall) on integer edge weights, one pivot at a time.

The vectorised Floyd-Warshall found in NumPy tutorials and benchmark suites: for every
pivot ``k`` the whole distance matrix is replaced by the elementwise minimum of itself and
the outer sum of column ``k`` and row ``k``. Integer weights: the answer is exact.
"""

import numpy

SIZES = {
    "test": {"n": 20},
    "64K": {"n": 256},
    # 1M elements: n pivots over n * n elements; NumPy needs about a second at n = 1024
    "4M": {"n": 1024},
}


def make(params, seed):
    """A random sparse directed graph: weights 1..99, 999 for 'no edge', 0 on the diagonal."""
    rng = numpy.random.default_rng(seed)
    n = params["n"]
    w = rng.integers(1, 100, (n, n))
    w[rng.random((n, n)) > 0.2] = 999
    numpy.fill_diagonal(w, 0)
    return (w.astype(numpy.int64),)


def run(np, graph):
    """Return the matrix of shortest path lengths."""
    path = np.array(graph)
    n = path.shape[0]
    for k in range(n):
        path[:] = np.minimum(path, np.add.outer(path[:, k], path[k, :]))
    return path
