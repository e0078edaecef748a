"""Overhead of the kernels' floating-point checks (docs/semantics.md, deviation 7).

Each single-kernel program is compiled twice, as generated and with its check lines removed,
and the two kernels are launched alternately; the minimum over the rounds is reported.

    python asv_bench/tools/fp_checks.py [ROUNDS] [0 parallel | 1 serial] [NAME,NAME...]
"""
import sys
import time

import numpy as np

import lazyarray as la
from lazyarray.backends import numba_cpu
from lazyarray.graph.node import toposort
from lazyarray.ir.lower import lower
from lazyarray.runtime import buffers, diskcache, executor, kernels
from lazyarray.codegen.layout import plan

n = 10_000_000
rng = np.random.default_rng(0)
A = [la.asarray(rng.random(n) + 0.5) for _ in range(5)]
a, b, c, d, e = A
progs = {
    "W1 a*b+c*d-sin(e)": lambda: a * b + c * d - la.sin(e),
    "x*2+1": lambda: a * 2.0 + 1.0,
    "a/b+c": lambda: a / b + c,
    "sqrt(((a-b)**2).sum())": lambda: la.sqrt(((a - b) ** 2).sum()),
    "exp(a)/3": lambda: la.exp(a) / 3.0,
    "log(a)*b": lambda: la.log(a) * b,
    "(a*b).sum(axis=1)": lambda: (la.reshape(a, (1000, -1)) * la.reshape(b, (1000, -1))).sum(axis=1),
    "W4 exp(-(x-y)**2).sum(1)": lambda: la.exp(-((a[:10_000, None] - b[None, :1000]) ** 2)).sum(axis=1),
    "W7 stencil": lambda: (lambda A: 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                                            + A[:-2, 1:-1]))(la.reshape(a, (2500, 4000))),
}

def strip(src):
    out = []
    for line in src.splitlines():
        t = line.strip()
        if t.startswith(("fpf |=", "fpp |=", "fpp = False", "fpe += ")):
            continue
        out.append(line)
    return "\n".join(out) + "\n"

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
with la.options(eager_threshold=0):
    only = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    for name, f in progs.items():
        if only and not any(o in name for o in only):
            continue
        y = f()
        if len(la.explain(y).kernels) != 1:
            print(name, "skipped: not one kernel")
            continue
        module, args = lower([y._node], toposort([y._node]))
        opt = la.engine.optimize(module)
        fusion = next(i for i in opt.instrs if i.opcode == "fusion")
        vals = [args[opt.instrs[o].attr("index")] if opt.instrs[o].opcode == "parameter" else opt.instrs[o].value for o in fusion.operands]
        launch = plan(fusion.value, vals)
        entry, _ = kernels.kernel_entry(fusion.value, launch)
        srcs = {"checked": entry.source, "plain": strip(entry.source)}
        kers = {}
        for v, src in srcs.items():
            kers[v] = numba_cpu.compile_kernel(entry.key + v[:2], src, diskcache.cache_dir())[int(sys.argv[2]) if len(sys.argv) > 2 else 0]
        best = {v: 1e9 for v in kers}
        for r in range(rounds):
            for v, kern in kers.items():
                results, head, tail = buffers.kernel_args(fusion.value, launch)
                argl = [*head, *launch.arrays, *tail]
                t0 = time.perf_counter(); kern(*argl); dt = time.perf_counter() - t0
                if r: best[v] = min(best[v], dt)
        print(f"{name:26s} plain {best['plain']*1e3:7.2f} ms  checked {best['checked']*1e3:7.2f} ms  {100*(best['checked']/best['plain']-1):+5.1f}%", flush=True)
