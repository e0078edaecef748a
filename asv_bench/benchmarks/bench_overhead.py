"""Fixed costs: building graph nodes, evaluating a small cached graph, a long tiny chain.

Engines: ``numpy``; ``lazyarray`` with its default tiers (tiny work may run on the NumPy
interpreter of the HLO, and tiny float64 chains are traced); ``lazyarray-eager`` without the
trace tier (``trace=False``: each tiny operation calls NumPy at once); ``lazyarray-compiled``
with ``eager_threshold=0``, which forces the compiled-kernel path (what a kernel launch
costs once it is cached).
"""

import numpy as np

from .common import compiled_path, data, held_options, require_lazyarray, run, vector, w9

# lazyarray-eager: the default tiers without the trace tier (every tiny op calls NumPy at once)
OVERHEAD_ENGINES = ["numpy", "lazyarray", "lazyarray-eager", "lazyarray-compiled"]


def _setup_engine(self, engine):
    self._ctx = None
    if engine == "numpy":
        return np
    lz = require_lazyarray("asarray", "options")
    if engine == "lazyarray-compiled":
        self._ctx = compiled_path(lz)
        self._ctx.__enter__()
    elif engine == "lazyarray-eager":
        self._ctx = held_options(lz, trace=False)
        self._ctx.__enter__()
    return lz


def _teardown_engine(self):
    if getattr(self, "_ctx", None) is not None:
        self._ctx.close()
        self._ctx = None


class GraphBuild:
    """Building 100 elementwise nodes (25 x sin(x*1.01+0.1)-0.05) without evaluating:
    time / 100 is the per-op cost (DESIGN.md: about a microsecond)."""

    def setup(self):
        lz = require_lazyarray("asarray", "sin")
        self.la = lz
        self.x = lz.asarray(vector(100_000))  # above the eager tier: nodes are built
        self.grid = lz.asarray(vector(256 * 256).reshape(256, 256))

    def time_build_100_ops(self):
        lz, x = self.la, self.x
        for _ in range(25):
            x = lz.sin(x * 1.01 + 0.1) - 0.05

    def time_build_1_op(self):
        self.x + 1.0

    def time_build_view(self):
        """A basic-slicing view (W7 builds ten)."""
        self.grid[1:-1, 1:-1]


class SmallGraph:
    """a*b + c on 10 elements, evaluated and materialized; cached after setup."""

    params = [OVERHEAD_ENGINES]
    param_names = ["engine"]

    def setup(self, engine):
        self.xp = _setup_engine(self, engine)
        args = (vector(10, 1), vector(10, 2), vector(10, 3))
        self.args = args if self.xp is np else tuple(self.xp.asarray(a) for a in args)
        self.time_small_graph(engine)  # warm-up

    def teardown(self, engine):
        _teardown_engine(self)

    def time_small_graph(self, engine):
        a, b, c = self.args
        np.asarray(a * b + c)


class Chain100:
    """W9: 100 chained elementwise ops on 10 elements (NumPy: ~0.5 us an op)."""

    params = [OVERHEAD_ENGINES]
    param_names = ["engine"]

    def setup(self, engine):
        self.xp = _setup_engine(self, engine)
        x = vector(10, 9)
        self.args = (x,) if self.xp is np else (self.xp.asarray(x),)
        for _ in range(20):  # warm-up: the trace tier builds a chain's loop after 16 runs,
            run("W9", self.xp, self.args)  # on the background build thread
        if self.xp is not np:
            self.xp.wait_compiles()

    def teardown(self, engine):
        _teardown_engine(self)

    def time_chain_100_ops(self, engine):
        np.asarray(w9(self.xp, *self.args))


class SmallTier:
    """W2 and W8 on 1,000 elements, the "1e3-sized cases" of the issue: lazyarray traces them
    (W8: one four-step program; W2: a chain ending in its sum, one loop); `lazyarray-eager`
    runs each operation on NumPy at once."""

    params = [["W2", "W8"], ["numpy", "lazyarray", "lazyarray-eager"]]
    param_names = ["workload", "engine"]

    def setup(self, workload, engine):
        self.xp = _setup_engine(self, engine)
        args = data(workload, 1000)
        self.args = args if self.xp is np else tuple(self.xp.asarray(a) for a in args)
        for _ in range(20):  # the trace tier builds the loops after 16 runs (background)
            run(workload, self.xp, self.args)
        if self.xp is not np:
            self.xp.wait_compiles()

    def teardown(self, workload, engine):
        _teardown_engine(self)

    def time_small_workload(self, workload, engine):
        run(workload, self.xp, self.args)


class AsArray:
    """Entry copy (la.asarray copies, DESIGN.md 1.3): should cost about a NumPy copy, or less
    (large copies go into pooled buffers, written by all threads: 2048^2 is W5's matrix)."""

    params = [[10, 10**6, 2048 * 2048]]
    param_names = ["size"]

    def setup(self, size):
        self.la = require_lazyarray("asarray")
        self.x = vector(size, 4)

    def time_asarray(self, size):
        self.la.asarray(self.x)

    def time_asarray_materialized(self, size):
        np.asarray(self.la.asarray(self.x))

    def time_numpy_copy(self, size):
        self.x.copy()


class JitDispatch:
    """A cached call of a small jitted function (a*x + y on 10 elements), against the same
    expression in NumPy and unjitted lazyarray. JAX's jitted dispatch is about 7 us here
    (PERFORMANCE.md); the goal is to cost no more."""

    params = [["numpy", "lazyarray", "lazyarray-jit"]]
    param_names = ["engine"]

    def setup(self, engine):
        self.x, self.y = vector(10, 5), vector(10, 6)
        if engine == "numpy":
            self.fn = lambda x, y: 2.0 * x + y
            return
        lz = require_lazyarray("jit", "asarray")
        if engine == "lazyarray":
            self.fn = lambda x, y: np.asarray(2.0 * lz.asarray(x) + y)
        else:
            self.fn = lz.jit(lambda x, y: 2.0 * x + y)
        self.fn(self.x, self.y)  # trace and compile

    def time_call(self, engine):
        self.fn(self.x, self.y)


class LargeTraces:
    """W8 on 1e5 elements and W7 on 512²: the Python around the kernel. `lazyarray` records
    them as large traces and replays the first evaluation's module; `lazyarray-eager`
    (`trace=False`) builds, lowers and plans the graph on every call."""

    params = [["W7", "W8"], ["numpy", "lazyarray", "lazyarray-eager"]]
    param_names = ["workload", "engine"]
    timeout = 300

    def setup(self, workload, engine):
        self.xp = _setup_engine(self, engine)
        args = data(workload, 512 if workload == "W7" else 100_000)
        self.args = args if self.xp is np else tuple(self.xp.asarray(a) for a in args)
        for _ in range(3):
            run(workload, self.xp, self.args)

    def teardown(self, workload, engine):
        _teardown_engine(self)

    def time_large_trace(self, workload, engine):
        run(workload, self.xp, self.args)

    def track_replays_in_10_calls(self, workload, engine):
        if self.xp is np:
            return 0
        before = self.xp.cache_info()["trace_replays"]
        for _ in range(10):
            run(workload, self.xp, self.args)
        return self.xp.cache_info()["trace_replays"] - before

    track_replays_in_10_calls.unit = "replays"


class GraphPlans:
    """Evaluations just above the eager threshold that are not float64 traces (integer add,
    integer sum, a comparison's any, a reshape's column sum on 4e4 elements): the Python
    around a 5-10 us kernel, which takes the plan of the first evaluation of the same graph
    structure (no lowering, no optimizing)."""

    params = [["int add", "int sum", "any", "reshape sum"], ["numpy", "lazyarray"]]
    param_names = ["case", "engine"]

    def setup(self, case, engine):
        self.xp = _setup_engine(self, engine)
        q = np.arange(40_000)
        x = np.linspace(-1.0, 1.0, 40_000)
        if self.xp is not np:
            q, x = self.xp.asarray(q), self.xp.asarray(x)
        self.fn = {"int add": lambda: np.asarray(q + 1),
                   "int sum": lambda: int(q.sum()),
                   "any": lambda: bool((q == 3).any()),
                   "reshape sum": lambda: np.asarray(x.reshape(-1, 100).sum(axis=0))}[case]
        for _ in range(3):
            self.fn()

    def teardown(self, case, engine):
        _teardown_engine(self)

    def time_evaluate(self, case, engine):
        self.fn()

    def track_plan_hits_in_10_calls(self, case, engine):
        if self.xp is np:
            return 0
        before = self.xp.cache_info()["plan_hits"]
        for _ in range(10):
            self.fn()
        return self.xp.cache_info()["plan_hits"] - before

    track_plan_hits_in_10_calls.unit = "plan hits"
