"""Compilation and the kernel cache.

time_cold_compile   first evaluation of a kernel nobody has compiled before: setup clears
                    the in-memory cache and builds an elementwise chain of a random
                    structure (12 ops drawn from 8: ~7e10 structures) and points the
                    disk cache at an empty temporary directory, so no cache can hold it;
                    number = 1, so setup runs before every sample.
time_disk_cache_load  same structure every time: setup compiles it, then clears the
                    in-memory cache; the timed evaluation finds it on disk (when the disk
                    cache is enabled; otherwise it recompiles and says so in the number).
time_cold_compile_big_math  the same with big math in the chain (power, arctan2, arccosh,
                    tanh, expm1, arcsin): compiled once per process and signature, then
                    inlined by LLVM in each new kernel (docs/performance.md, "Compile time").
track_kernels       la.explain(...).num_kernels per workload (W1: 1 fused kernel).
track_compiles_at_new_size  compiles when a workload runs again at a new size (expect 0:
                    kernel signatures do not contain concrete sizes).
Every one of these forces the compiled path with eager_threshold=0.
"""

import os
import shutil
import tempfile

import numpy as np

from .common import BODIES, SMALL_SIZES, compiled_path, data, require_lazyarray, vector

_STEPS = [
    lambda la, x: x * 1.5,
    lambda la, x: x + 0.25,
    lambda la, x: x - 0.5,
    lambda la, x: la.sin(x),
    lambda la, x: la.cos(x),
    lambda la, x: la.abs(x),
    lambda la, x: la.sqrt(la.abs(x)),
    lambda la, x: la.exp(-x),
]


def _chain(la, x, steps, table=_STEPS):
    for k in steps:
        x = table[k](la, x)
    return x


def _compiles(la):
    return int(la.cache_info()["compiles"])


class _ColdCache:
    """An empty private disk cache and a cleared memory cache before every sample."""

    number = 1
    repeat = 5
    rounds = 1
    warmup_time = 0.0
    timeout = 300

    def setup(self):
        self.la = la = require_lazyarray("asarray", "options", "cache_clear", "cache_info")
        self._tmp = tempfile.mkdtemp(prefix="lazyarray-asv-")
        try:  # a private, empty disk cache when the option exists
            self._ctx = compiled_path(la, cache_dir=self._tmp)
            self._ctx.__enter__()
        except TypeError:
            self._ctx = compiled_path(la)
            self._ctx.__enter__()
        la.cache_clear()
        rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
        self.steps = [int(k) for k in rng.integers(0, len(self.STEPS), self.LENGTH)]
        self.x = la.asarray(vector(10_000, 5))

    def teardown(self):
        self._ctx.close()
        shutil.rmtree(self._tmp, ignore_errors=True)


class ColdCompile(_ColdCache):
    STEPS, LENGTH = _STEPS, 12

    def time_cold_compile(self):
        np.asarray(_chain(self.la, self.x, self.steps))


_BIG_STEPS = [
    lambda la, x: x ** 1.25,
    lambda la, x: la.arctan2(x, 0.5),
    lambda la, x: la.arccosh(la.abs(x) + 1.0),
    lambda la, x: la.tanh(x),
    lambda la, x: la.expm1(x * 0.1),
    lambda la, x: la.arcsin(x * 0.1),
    lambda la, x: x * 1.5 - 0.25,
]


class ColdCompileBigMath(_ColdCache):
    STEPS, LENGTH = _BIG_STEPS, 6

    def time_cold_compile_big_math(self):
        np.asarray(_chain(self.la, self.x, self.steps, _BIG_STEPS))


class DiskCacheLoad:
    number = 1
    repeat = 5
    rounds = 1
    warmup_time = 0.0
    timeout = 300
    STEPS = [0, 3, 1, 4, 2, 7, 5, 6, 0, 1, 3, 2]

    def setup(self):
        self.la = la = require_lazyarray("asarray", "options", "cache_clear", "cache_info")
        self._ctx = compiled_path(la)
        self._ctx.__enter__()
        self.x = la.asarray(vector(10_000, 6))
        np.asarray(_chain(la, self.x, self.STEPS))  # compiled (or loaded) and stored
        la.cache_clear()  # memory cache only

    def teardown(self):
        self._ctx.close()

    def time_disk_cache_load(self):
        np.asarray(_chain(self.la, self.x, self.STEPS))


class Kernels:
    params = [sorted(BODIES)]
    param_names = ["workload"]
    unit = "kernels"
    timeout = 300

    def setup(self, workload):
        needs = ("matmul",) if workload == "W5" else ()
        self.la = require_lazyarray("asarray", "options", "explain", *needs)

    def track_kernels(self, workload):
        la = self.la
        args = tuple(la.asarray(a) for a in data(workload, SMALL_SIZES[workload][1]))
        with la.options(eager_threshold=0):
            return int(la.explain(BODIES[workload](la, *args)).num_kernels)


class Recompiles:
    params = [sorted(BODIES)]
    param_names = ["workload"]
    unit = "compiles"
    timeout = 300

    def setup(self, workload):
        needs = ("matmul",) if workload == "W5" else ()
        self.la = require_lazyarray("asarray", "options", "cache_info", *needs)

    def track_compiles_at_new_size(self, workload):
        la = self.la
        body = BODIES[workload]
        n1, n2 = SMALL_SIZES[workload]
        with la.options(eager_threshold=0):
            np.asarray(body(la, *(la.asarray(a) for a in data(workload, n1))))
            before = _compiles(la)
            np.asarray(body(la, *(la.asarray(a) for a in data(workload, n2))))
            return _compiles(la) - before
