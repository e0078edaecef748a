"""W1, W2 and W7 on a dask LocalCluster: plain dask.array against lazyarray's fused chunk tasks.

    python -m lazyarray.tools.showcase_dask --size 1e7 --chunk 1e6
    python -m lazyarray.tools.showcase_dask --size 1e8 --chunk 1e7 --workers 2 --threads 1

Inputs are generated on the workers (`dask.array.random`) and persisted, with the same chunks
for both engines; each timing is `persist` + `wait` of the result (W2: `compute`, a scalar),
so no array crosses to the client. lazyarray's first run includes compiling its kernels on
each worker; the table reports it separately from the best of the later rounds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np
import lazyarray as la
from lazyarray.tools.workloads import w1, w2, w7


def _inputs(name: str, n: int, chunk: int, seed: int):
    import dask.array as da

    rng = da.random.default_rng(seed)
    if name == "W7":
        side = math.isqrt(n)
        rows = max(1, chunk // side)
        return (rng.random((side, side), chunks=(rows, side)),)
    count = 5 if name == "W1" else 2
    return tuple(rng.uniform(-1.0, 1.0, n, chunks=chunk) for _ in range(count))


def _run(client, expr):
    from distributed import wait

    t0 = time.perf_counter()
    if expr.ndim == 0:
        value = expr.compute()
    else:
        value = client.persist(expr)
        wait(value)
    return time.perf_counter() - t0, value


def bench(client, name: str, n: int, chunk: int, rounds: int) -> dict:
    import dask.array as da

    fn = {"W1": w1, "W2": w2, "W7": w7}[name]
    ins = client.persist(_inputs(name, n, chunk, seed=int(name[1:])))
    from distributed import wait

    wait(list(ins))
    plain = fn(da, *ins)
    lazy = fn(la, *(la.from_dask(x) for x in ins)).to_dask()
    out = {"workload": name, "elements": int(np.prod(ins[0].shape)),
           "chunks": [list(c) for c in ins[0].chunks][:1][0][:3],
           "numblocks": list(ins[0].numblocks),
           "tasks_plain": len(plain.__dask_graph__()), "tasks_lazy": len(lazy.__dask_graph__())}
    first, value = _run(client, lazy)  # compiles each kernel once per worker
    out["lazy_first_s"] = first
    del value
    diff = abs(plain - lazy).max() if plain.ndim else abs(plain - lazy)
    out["max_abs_diff"] = float(diff.compute())
    times = {"plain": [], "lazy": []}
    for _ in range(rounds):
        for label, expr in (("plain", plain), ("lazy", lazy)):
            t, value = _run(client, expr)
            times[label].append(t)
            del value  # release the result: the next round recomputes it
    out["plain_best_s"], out["lazy_best_s"] = min(times["plain"]), min(times["lazy"])
    out["speedup"] = out["plain_best_s"] / out["lazy_best_s"]
    del ins
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=float, default=1e7, help="elements per array (W7: side**2)")
    p.add_argument("--chunk", type=float, default=1e6, help="elements per chunk")
    p.add_argument("--workloads", default="W1,W2,W7")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per worker")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the results here")
    a = p.parse_args(argv)

    from distributed import Client, LocalCluster

    root = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        x for x in (root, os.environ.get("PYTHONPATH")) if x)  # workers import this lazyarray
    results = []
    with LocalCluster(n_workers=a.workers, threads_per_worker=a.threads, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster, Client(cluster) as c:
        for name in a.workloads.split(","):
            r = bench(c, name.strip(), int(a.size), int(a.chunk), a.rounds)
            results.append(r)
            print(f"{r['workload']}: {r['elements']:.0e} elements in {r['numblocks']} chunks | "
                  f"dask.array {r['plain_best_s'] * 1e3:8.1f} ms ({r['tasks_plain']} tasks) | "
                  f"lazyarray {r['lazy_best_s'] * 1e3:8.1f} ms ({r['tasks_lazy']} tasks; "
                  f"first run {r['lazy_first_s'] * 1e3:.0f} ms) | x{r['speedup']:.2f} | "
                  f"max |diff| {r['max_abs_diff']:.1e}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
