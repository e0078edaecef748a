"""The pass pipeline: pure Module -> Module functions, in order."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from lazyarray.ir.hlo import Module
from lazyarray.passes.fusion import fuse
from lazyarray.passes.moments import fuse_moments
from lazyarray.passes.products import reduce_small_dots
from lazyarray.passes.rows import fuse_rows
from lazyarray.passes.simplify import dce, simplify

Pass = Callable[[Module], Module]

PIPELINE: tuple[Pass, ...] = (
    reduce_small_dots,  # a short or small-result matrix product: a multiply and a reduce
    simplify,  # CSE (by construction), x*1 / x+0 / --x, constant folding, views pushed to leaves
    dce,  # drop what no output needs
    fuse,  # loop, input and multi-output fusion; views stay on the buffers they read
    fuse_moments,  # a sum over leading axes + the squared deviations from it: one read of X
    fuse_rows,  # a reduction over trailing axes + what reads it back: one kernel over rows
)
# the GPU and dask backends run fusions one at a time, over the whole array: no moments or
# row fusion, and products stay library calls (cuBLAS / NumPy per chunk)
DEVICE_PIPELINE: tuple[Pass, ...] = PIPELINE[1:4]


def run_pipeline(module: Module, passes: Sequence[Pass] = PIPELINE) -> Module:
    for p in passes:
        module = p(module)
    return module


_plans: OrderedDict[tuple, Module] = OrderedDict()  # structural key -> optimized module (LRU)
MAX_PLANS = 1024


def optimize(module: Module, passes=PIPELINE) -> Module:
    """run_pipeline, memoized on the module's structure (a loop body is optimized once)."""
    key = module.key if passes is PIPELINE else (module.key, passes)
    plan = _plans.get(key)
    if plan is None:
        plan = run_pipeline(module, passes)
        _plans[key] = plan
        if len(_plans) > MAX_PLANS:
            _plans.popitem(last=False)
    else:
        try:
            _plans.move_to_end(key)
        except KeyError:  # (another thread's evaluation evicted it meanwhile)
            pass
    return plan


def clear_plans() -> None:
    """Forget every optimized module (`lazyarray.cache_clear`)."""
    _plans.clear()


__all__ = ["DEVICE_PIPELINE", "PIPELINE", "clear_plans", "dce", "fuse", "fuse_moments", "fuse_rows",
           "optimize", "reduce_small_dots", "run_pipeline", "simplify"]
