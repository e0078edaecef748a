"""W1-W9 over size x engine; setup evaluates once, so time_* measures cached execution.

W1 a*b + c*d - sin(e)                W2 sqrt(sum((x-y)**2))
W3 row softmax of (rows, 1000)       W4 exp(-(x[:,None]-y[None,:])**2).sum(axis=1), y of 1000
W5 maximum(A@B + bias, 0)            W6 (X - X.mean(axis=0)) / X.std(axis=0), X (n, 8)
W7 5-point Jacobi step on (n, n)     W8 where(x>0.5, x*2, clip(x, 0.1, 0.3))
W9 100 chained elementwise ops on 10 elements
"""

import numpy as np

from .common import ENGINES, SIZES, prepare, require_lazyarray, run


class _Workload:
    workload = ""
    param_names = ["size", "engine"]
    timeout = 600
    # Big cases take up to a second a call: at most 10 samples, stop after 20 s.
    repeat = (1, 10, 20.0)

    def setup(self, size, engine):
        self.xp, self.args = prepare(self.workload, size, engine)
        run(self.workload, self.xp, self.args)  # warm-up: compile, fill the kernel cache

    def teardown(self, size, engine):
        self.args = None


class W1(_Workload):
    workload = "W1"
    params = (SIZES["W1"], ENGINES)

    def time_w1(self, size, engine):
        run("W1", self.xp, self.args)


class W2(_Workload):
    workload = "W2"
    params = (SIZES["W2"], ENGINES)

    def time_w2(self, size, engine):
        run("W2", self.xp, self.args)


class W3(_Workload):
    workload = "W3"
    params = (SIZES["W3"], ENGINES)

    def time_w3(self, size, engine):
        run("W3", self.xp, self.args)


class W4(_Workload):
    workload = "W4"
    params = (SIZES["W4"], ENGINES)

    def time_w4(self, size, engine):
        run("W4", self.xp, self.args)


class W5(_Workload):
    workload = "W5"
    params = (SIZES["W5"], ENGINES)

    def time_w5(self, size, engine):
        run("W5", self.xp, self.args)


class W6(_Workload):
    workload = "W6"
    params = (SIZES["W6"], ENGINES)

    def time_w6(self, size, engine):
        run("W6", self.xp, self.args)


class W7(_Workload):
    workload = "W7"
    params = (SIZES["W7"], ENGINES)

    def time_w7(self, size, engine):
        run("W7", self.xp, self.args)


class W8(_Workload):
    workload = "W8"
    params = (SIZES["W8"], ENGINES)

    def time_w8(self, size, engine):
        run("W8", self.xp, self.args)


class W9(_Workload):
    workload = "W9"
    params = (SIZES["W9"], ENGINES)

    def time_w9(self, size, engine):
        run("W9", self.xp, self.args)


class ResidualBlocks:
    """Three blocks of x = tanh(x @ W + b) * 0.5 + x on (512, 256): each elementwise kernel
    starts right after a product, while NumPy's OpenBLAS workers may still spin (asv imports
    NumPy first, so they spin ~0.1 s; lazyarray then runs such kernels on one thread:
    docs/performance.md, "Threading")."""

    param_names = ["engine"]
    params = (ENGINES,)

    def setup(self, engine):
        r = np.random.default_rng(5)
        args = (r.standard_normal((512, 256)),
                *(r.standard_normal((256, 256)) * 0.06 for _ in range(3)),
                *(r.standard_normal(256) for _ in range(3)))
        self.xp = np if engine == "numpy" else require_lazyarray("asarray", "matmul", "tanh")
        self.args = args if engine == "numpy" else tuple(self.xp.asarray(a) for a in args)
        self.time_residual_blocks(engine)  # warm-up: compile

    def time_residual_blocks(self, engine):
        xp, (x, *rest) = self.xp, self.args
        for w, b in zip(rest[:3], rest[3:], strict=True):
            x = xp.tanh(x @ w + b) * 0.5 + x
        return np.asarray(x)


class SmallProducts:
    """Least-squares pieces on a (10^6, 9) design matrix: `A.T @ y` (a result of 9) and the
    residual `((y - A @ beta) ** 2).sum()` (a contraction of 9), which lazyarray computes as
    fused reductions instead of BLAS calls (passes/products.py), and the Gram matrix
    `A.T @ A` (81 results), which stays BLAS."""

    param_names = ["engine"]
    params = (ENGINES,)

    def setup(self, engine):
        r = np.random.default_rng(6)
        args = r.standard_normal((10**6, 9)), r.standard_normal(10**6), r.standard_normal(9)
        self.xp = np if engine == "numpy" else require_lazyarray("asarray", "matmul")
        self.args = args if engine == "numpy" else tuple(self.xp.asarray(a) for a in args)
        for warm in (self.time_vecmat, self.time_residual, self.time_gram):
            warm(engine)  # warm-up: compile

    def time_vecmat(self, engine):
        A, y, _ = self.args
        return np.asarray(A.T @ y)

    def time_residual(self, engine):
        A, y, beta = self.args
        return float(((y - A @ beta) ** 2).sum())

    def time_gram(self, engine):
        A, _, _ = self.args
        return np.asarray(A.T @ A)
