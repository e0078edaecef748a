"""The runner's "cold" column: each workload's first evaluation in a fresh process with empty
caches, for NumPy, lazyarray (its default tier, and compiling on the call), JAX and Numba.

    python -m lazyarray bench --cold                 # the table, every workload at its middle size
    python -m lazyarray.tools.cold --workloads W1,W5 --size small --repeat 3 --json cold.json

Each cell is the wall time of one child process per repeat, from its start to its exit
(the median is shown): it makes the inputs with NumPy, imports the engine and makes the
first call of the workload, result in hand (`numpy.asarray`, `block_until_ready`), with its
own empty cache directories (lazyarray's kernel cache, Numba's, no JAX persistent cache).
The inputs and the interpreter's start-up are the same for every engine. "lazyarray" is the default tier (the
interpreter answers while a worker process compiles); "lazyarray-now" waits for the compile
(``LAZYARRAY_COMPILE=now``), what every first run cost before the tiers.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from lazyarray.tools import workloads
from lazyarray.tools.workloads import WORKLOADS

ENGINES = ("numpy", "lazyarray", "lazyarray-now", "jax", "numba")

CHILD = textwrap.dedent("""
    import importlib.util, json, sys, time
    import numpy as np
    # the workloads by their file: importing them as lazyarray.tools.workloads would load
    # lazyarray into every engine's process
    spec = importlib.util.spec_from_file_location("workloads", sys.argv[4])
    workloads = importlib.util.module_from_spec(spec)
    sys.modules["workloads"] = workloads
    spec.loader.exec_module(workloads)
    WORKLOADS, numba_kernels = workloads.WORKLOADS, workloads.numba_kernels
    name, size, engine = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    wl = WORKLOADS[name]
    inputs = wl.inputs(size)
    t0 = time.perf_counter()
    if engine == "numpy":
        first = lambda: np.asarray(wl.body(np, *inputs))
    elif engine.startswith("lazyarray"):
        import lazyarray as la
        xs = tuple(la.asarray(a) for a in inputs)
        first = lambda: np.asarray(wl.body(la, *xs))
    elif engine == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        f = jax.jit(lambda *a: wl.body(jnp, *a))
        xs = tuple(jax.device_put(jnp.asarray(a)) for a in inputs)
        first = lambda: f(*xs).block_until_ready()
    else:
        first = numba_kernels()[name](*inputs)
    t1 = time.perf_counter()
    first()
    t2 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "first_s": t2 - t1}))
""")


def child_env(engine: str, tmp: str) -> dict:
    env = dict(os.environ)
    env.update(LAZYARRAY_CACHE_DIR=os.path.join(tmp, "lazyarray"),
               NUMBA_CACHE_DIR=os.path.join(tmp, "numba"))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if engine == "lazyarray-now":
        env["LAZYARRAY_COMPILE"] = "now"
    elif engine == "lazyarray":
        env["LAZYARRAY_COMPILE"] = "background"
    return env


@functools.cache
def compile_package() -> None:
    """lazyarray's modules as bytecode, as an installed package's are: where no process
    writes it (PYTHONDONTWRITEBYTECODE=1), each child compiled them from source (0.15 s)."""
    compileall.compile_dir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           quiet=1)


def cold_run(name: str, size: int, engine: str, timeout: float = 600) -> dict:
    """One fresh process: {"import_s", "first_s" (inside it), "cold_s" (the whole process,
    timed from outside: start-up, imports, inputs, first call)} or {"error": ...}."""
    compile_package()
    with tempfile.TemporaryDirectory(prefix="lazyarray-cold-") as tmp:
        t0 = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, "-c", CHILD, name, str(size), engine,
                                  workloads.__file__],
                                 env=child_env(engine, tmp), capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"over {timeout:.0f} s"}
        wall = time.perf_counter() - t0
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": last[:120]}
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["cold_s"] = wall
    return r


def cold_table(names: list[str], size_pick: str, engines: tuple[str, ...],
               repeat: int) -> list[dict]:
    """Rows {workload, size, engine: median cold seconds or an error}."""
    rows = []
    for name in names:
        wl = WORKLOADS[name]
        size = {"small": wl.sizes[0], "mid": wl.sizes[len(wl.sizes) // 2],
                "large": wl.sizes[-1]}[size_pick]
        row = {"workload": name, "size": wl.label(size)}
        for engine in engines:
            runs = [cold_run(name, size, engine) for _ in range(repeat)]
            ok = not any("error" in r for r in runs)
            row[engine] = (statistics.median(r["cold_s"] for r in runs) if ok
                           else next(r["error"] for r in runs if "error" in r))
        rows.append(row)
    return rows


def render(rows: list[dict], engines: tuple[str, ...]) -> str:
    head = ["workload", "size", *(f"{e} cold s" for e in engines), "lazyarray / numpy"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["workload"], r["size"]]
        for e in engines:
            v = r.get(e)
            cells.append(f"{v:.3f}" if isinstance(v, float) else str(v))
        la, npy = r.get("lazyarray"), r.get("numpy")
        ratio = la / npy if isinstance(la, float) and isinstance(npy, float) and npy else None
        cells.append(f"{ratio:.2f}x" if ratio is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lazyarray.tools.cold", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--size", choices=("small", "mid", "large"), default="mid")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--json", help="write the rows to this file")
    a = p.parse_args(argv)
    names = [w for w in a.workloads.split(",") if w]
    engines = tuple(e for e in a.engines.split(",") if e)
    unknown = [w for w in names if w not in WORKLOADS] + [e for e in engines if e not in ENGINES]
    if unknown:
        p.error(f"unknown: {', '.join(unknown)}")
    rows = cold_table(names, a.size, engines, a.repeat)
    print(render(rows, engines))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
