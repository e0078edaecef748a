"""Where a cold compile's seconds go: every kernel the corpus programs build, compiled on the
calling thread (`compile="now"`) in a fresh process with an empty cache.

    python asv_bench/tools/compile_cost.py                   # every program at 64K
    python asv_bench/tools/compile_cost.py --programs vmix,heat2d --size test
    python asv_bench/tools/compile_cost.py --exact           # every kernel with exact checks

Per program one child process; per kernel its compile seconds, its source size, and which
functions were compiled (parallel, serial). The process's one-time start (Numba's import and
its first compile) is taken by a small kernel of its own first and reported apart. The last
lines give the median and the worst over all kernels, and the same for the parallel and the
serial ones.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import json, sys, numpy
import lazyarray as la
from lazyarray.runtime import kernels
from lazyarray.tools.corpus import PROGRAMS
if sys.argv[3] == "exact":  # every fusion as if escalated: the exact floating-point checks
    class _Every(set):
        def __contains__(self, key):
            return True
    kernels.escalated = _Every()
# the process's one-time start (Numba's import and first compile), on a kernel of its own
import time
t0 = time.perf_counter()
numpy.asarray(la.asarray(numpy.ones(1 << 16)) * 3.0 + 1.0)
start = time.perf_counter() - t0
warm = set(kernels.cache)
m = PROGRAMS[sys.argv[1]]
inputs = m.make(m.SIZES[sys.argv[2]], 0)
out = m.run(la, *inputs)
for o in (out if isinstance(out, tuple) else (out,)):
    numpy.asarray(o)
rows = []
for k, e in kernels.cache.items():
    if e.compile_s and e.kernel is not None and k not in warm:
        rows.append({"key": e.key, "seconds": e.compile_s, "source": len(e.source),
                     "parallel": len(e.kernel[0].overloads), "serial": len(e.kernel[1].overloads)})
print(json.dumps({"start": start, "rows": rows}))
"""


def main(argv=None) -> int:
    from lazyarray.tools.corpus import PROGRAMS

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs", default=",".join(PROGRAMS))
    p.add_argument("--size", default="64K")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--exact", action="store_true",
                   help="compile every kernel with the exact floating-point checks (the "
                        "kernels of fusions that escalated; before cheap checks, all of them)")
    a = p.parse_args(argv)
    everything, starts = [], []
    for name in a.programs.split(","):
        with tempfile.TemporaryDirectory(prefix="lazyarray-compile-cost-") as tmp:
            env = {**os.environ, "LAZYARRAY_CACHE_DIR": tmp, "LAZYARRAY_COMPILE": "now"}
            try:
                out = subprocess.run([sys.executable, "-c", CHILD, name, a.size,
                                      "exact" if a.exact else "cheap"], env=env,
                                     capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                print(f"{name}: over {a.timeout:.0f} s")
                continue
        if out.returncode:
            print(f"{name}: failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        result = json.loads(out.stdout.strip().splitlines()[-1])
        rows = result["rows"]
        starts.append(result["start"])
        for r in rows:
            kind = "parallel" if r["parallel"] and not r["serial"] else (
                "serial" if r["serial"] and not r["parallel"] else "both")
            r["kind"], r["program"] = kind, name
            print(f"{name:14s} {r['key']} {kind:8s} src={r['source']:6d} {r['seconds']:6.2f} s")
        everything += rows
    if starts:
        print(f"one-time start per process (Numba's import and first compile, a kernel of its "
              f"own, not counted above): median {statistics.median(starts):.2f} s")
    for label, rows in (("all", everything),
                        ("parallel", [r for r in everything if r["kind"] == "parallel"]),
                        ("serial", [r for r in everything if r["kind"] == "serial"])):
        if rows:
            s = [r["seconds"] for r in rows]
            print(f"{label}: {len(s)} kernels, median {statistics.median(s):.2f} s, "
                  f"worst {max(s):.2f} s, total {sum(s):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
