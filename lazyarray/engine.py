"""The one orchestrator: lower -> passes -> (codegen + cache + launch) -> buffers back into nodes.

Small graphs (every array below `eager_threshold` elements) and the `numpy` backend run on the
reference interpreter: no passes, no compile, so tiny work costs about what NumPy costs.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from lazyarray import config, stats
from lazyarray.graph.node import Node, toposort
from lazyarray.ir.hlo import Module
from lazyarray.ir.interpret import evaluate
from lazyarray.ir.lower import lower
from lazyarray.ir.text import print_module
from lazyarray.passes import run_pipeline
from lazyarray.runtime.executor import KernelRecord, Trace, execute

_lock = threading.RLock()  # one materialization at a time mutates nodes
_plans: OrderedDict[tuple, Module] = OrderedDict()  # structural key -> optimized module (LRU)
MAX_PLANS = 1024


def optimize(module: Module) -> Module:
    """run_pipeline, memoized on the module's structure (a loop body is optimized once)."""
    plan = _plans.get(module.key)
    if plan is None:
        plan = run_pipeline(module)
        _plans[module.key] = plan
        if len(_plans) > MAX_PLANS:
            _plans.popitem(last=False)
    else:
        _plans.move_to_end(module.key)
    return plan


_STRICT = ("raise", "call", "log")


def on_device(order: list[Node]) -> bool:
    """Does this evaluation run on the GPU? With backend="cuda", or when any input lives only
    there (computation follows data, as in the Array API)."""
    if config.get().backend == "cuda":
        return True
    return any(not n.on_host for n in order if n.op == "buffer")


def _use_interpreter(nodes: list[Node]) -> bool:
    o = config.get()
    if o.backend == "numpy":
        return True
    if any(v in _STRICT for v in np.geterr().values()):
        return True  # np.errstate(...="raise"): NumPy's own loops report, kernels cannot
    if any(not n.on_host for n in nodes if n.op == "buffer"):
        return False  # small work on GPU-resident data stays there (no transfer)
    threshold = o.eager_threshold
    return all(math.prod(n.shape) < threshold for n in nodes)


def interpret_graph(order: list[Node], roots: list[Node]) -> list[np.ndarray]:
    """The reference interpreter straight on the graph (small work: no lowering, no passes)."""
    uses: dict[int, int] = {}
    for n in order:
        for s in n.srcs:
            uses[id(s)] = uses.get(id(s), 0) + 1
    for r in roots:
        uses[id(r)] = uses.get(id(r), 0) + 1
    vals: dict[int, np.ndarray] = {}
    for n in order:  # under the caller's np.errstate: NumPy warns or raises as it would
        if n.op in ("buffer", "constant"):
            vals[id(n)] = n.value
            continue
        vals[id(n)] = evaluate(n, [vals[id(s)] for s in n.srcs])
        for s in n.srcs:  # free each intermediate at its last use
            uses[id(s)] -= 1
            if not uses[id(s)]:
                del vals[id(s)]
    return [vals[id(r)] for r in roots]


def materialize(nodes: list[Node], host: bool = False) -> None:
    """Compute every pending node in `nodes` in one pass and turn each into a buffer leaf.

    `host`: compute on the host even if inputs live on the GPU (a view being observed: its
    base is fetched once, then NumPy applies the view)."""
    with _lock:
        pending = list({id(n): n for n in nodes if not n.realized}.values())
        if not pending:
            return
        stats.bump("materializations")
        order = toposort(pending)
        if _use_interpreter(order):
            stats.bump("interpreter_runs")
            outs = interpret_graph(order, pending)
        elif not host and on_device(order):
            from lazyarray.backends import numba_cuda

            module, args = lower(pending, order, leaf=numba_cuda.device_leaf)
            outs = numba_cuda.execute(optimize(module), args)
            for node, flat in zip(pending, outs, strict=True):
                node.realize_device(flat)
            return
        else:
            module, args = lower(pending, order)
            outs = execute(optimize(module), args)
        for node, value in zip(pending, outs, strict=True):
            value = np.asarray(value)
            if value.dtype != node.dtype:  # the interpreter's NumPy call may widen a 0-d result
                value = value.astype(node.dtype)
            node.realize(value)


@dataclass
class Report:
    """What `explain` found: the HLO before/after the passes and each kernel's cache status."""

    hlo_before: str
    hlo_after: str
    kernels: list[KernelRecord] = field(default_factory=list)
    interpreted: bool = False
    updates: list[str] = field(default_factory=list)  # per write: "in place" or "copy"

    @property
    def num_kernels(self) -> int:
        """Compiled kernels the evaluation launches (0 when it runs on the interpreter)."""
        if self.interpreted:
            return 0
        return sum(k.status != "interpreted" for k in self.kernels)

    def __str__(self) -> str:
        lines = ["== HLO before optimization ==", self.hlo_before,
                 "== HLO after optimization ==", self.hlo_after]
        if self.interpreted:
            lines.append("(below the eager threshold or numpy backend: runs on the interpreter)")
        lines.append(f"== kernels: {self.num_kernels} ==")
        for k in self.kernels:
            lines.append(f"{k.name}: kind={k.kind} signature={k.key} cache={k.status}")
            if k.source:
                lines.append(k.source)
        if self.updates:
            lines.append("== writes: " + ", ".join(self.updates) + " ==")
        return "\n".join(lines)

    __repr__ = __str__


def explain(nodes: list[Node]) -> Report:
    """Plan the evaluation of `nodes` without computing them."""
    with _lock:
        pending = list({id(n): n for n in nodes if not n.realized}.values())
        order = toposort(pending)
        trace = Trace()
        if on_device(order):
            from lazyarray.backends import numba_cuda

            module, args = lower(pending, order, leaf=numba_cuda.peek_leaf)
            optimized = run_pipeline(module)
            numba_cuda.execute(optimized, args, trace, dry=True)
        else:
            module, args = lower(pending, order)
            optimized = run_pipeline(module)
            execute(optimized, args, trace, dry=True)
        return Report(print_module(module), print_module(optimized), trace.kernels,
                      _use_interpreter(order), trace.updates)
