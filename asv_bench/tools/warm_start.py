"""Warm start-up: what importing lazyarray and loading the cached kernels of a script costs.

A script of ten different kernels (elementwise chains of several dtypes, reductions, a
scan, a strided stencil) runs once with `compile="now"` into a new cache directory; then
`--runs` fresh processes run it again on that cache, each reporting its import time and its
first evaluation of each kernel, which loads it (its own timers, start-up excluded), and
whether Numba was imported. With `--native 0` there are no images
(`LAZYARRAY_NATIVE=0`): a short script then interprets rather than importing Numba; with
`--native 0 --through-numba` it imports Numba first and loads its kernels through it.

    python asv_bench/tools/warm_start.py --runs 5
    python asv_bench/tools/warm_start.py --runs 5 --native 0
    python asv_bench/tools/warm_start.py --runs 5 --native 0 --through-numba
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import lazyarray as la
if sys.argv[1] == "numba":  # kernels load through Numba from the start (no ski rental)
    import numba
t2 = time.perf_counter()
rng = np.random.default_rng(0)
n = 50_000
x, y = la.asarray(rng.random(n)), la.asarray(rng.random(n))
f = la.asarray(rng.random(n).astype(np.float32))
i = la.asarray(rng.integers(0, 100, n))
m = la.asarray(rng.random((200, 250)))
work = [
    lambda: x * 1.5 + y,
    lambda: la.sin(x) * la.cos(y),
    lambda: la.exp(-x * x) / (1.0 + y),
    lambda: la.sqrt(f * f + f),
    lambda: i * 3 + i // 7,
    lambda: (x * y).sum(),
    lambda: la.maximum(x, y).max(),
    lambda: la.cumsum(x),
    lambda: m[1:-1, 1:-1] + 0.25 * (m[:-2, 1:-1] + m[2:, 1:-1]),
    lambda: la.tanh(m).mean(axis=0),
]
loads = []
for w in work:
    s = time.perf_counter()
    np.asarray(w())
    loads.append(time.perf_counter() - s)
info = la.cache_info()
print(json.dumps({"numpy": t1 - t0, "import": t2 - t1, "first": loads,
                  "numba": "numba" in sys.modules, "launched": info["kernels_launched"],
                  "native": info["native_loads"], "compiles": info["compiles"]}))
"""

PACKAGE = importlib.util.find_spec("lazyarray").submodule_search_locations[0]


def run(env: dict, how: str = "") -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT, how], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--native", default="1")
    p.add_argument("--through-numba", action="store_true")
    a = p.parse_args(argv)
    compileall.compile_dir(PACKAGE, quiet=1)  # (bytecode, as an installed package has)
    with tempfile.TemporaryDirectory(prefix="lazyarray-warm-") as tmp:
        env = {**os.environ, "LAZYARRAY_CACHE_DIR": tmp, "LAZYARRAY_NATIVE": a.native,
               "LAZYARRAY_EAGER_THRESHOLD": "0"}
        run({**env, "LAZYARRAY_COMPILE": "now"})
        env["LAZYARRAY_COMPILE"] = "background"
        rows = [run(env, "numba" if a.through_numba else "") for _ in range(a.runs)]
    imp = statistics.median(r["import"] for r in rows)
    first = statistics.median(sum(r["first"]) for r in rows)
    print(f"warm start, {a.runs} processes, LAZYARRAY_NATIVE={a.native}"
          f"{', Numba imported first' if a.through_numba else ''} (median s)")
    print("| import numpy | import lazyarray | first evaluation of 10 kernels | import + "
          "kernels | kernels launched | native loads | Numba imported |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    r = rows[-1]
    print(f"| {statistics.median(r['numpy'] for r in rows):.3f} | {imp:.3f} | {first:.3f} | "
          f"{imp + first:.3f} | {r['launched']} | {r['native']} | {r['numba']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
