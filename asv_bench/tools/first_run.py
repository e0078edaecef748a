"""Whole-process first runs of a corpus program: NumPy against lazyarray with an empty kernel
cache, then with the cache the first runs left (warm), each timed from outside the process
(start-up and imports included; NumPy's run imports NumPy alone, and lazyarray's modules are
compiled to bytecode first, as an installed package's are).

    python asv_bench/tools/first_run.py                        # ocean_column, 64^3, 3 steps
    python asv_bench/tools/first_run.py --program vmix --shape 40,40,40 --runs 3
    python asv_bench/tools/first_run.py --modes numpy,first,warm,interpreter,now

Modes: `numpy`; `first` (lazyarray's default tier, a new empty cache directory each run);
`warm` (the cache of the last first run, once its worker finished); `interpreter`
(`LAZYARRAY_BACKEND=numpy`: no kernel, no worker -- what the worker's compiles cost the
user's run is `first` against it); `now` (`LAZYARRAY_COMPILE=now`: the evaluation waits for
each compile, as every first run did before the tiers). Before each run no compile worker
of an earlier run is still going (a leftover would share the cores). Medians are printed,
with the ratio to NumPy's median.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

# The program's module is loaded from the corpus folder as a package of its own, so that
# NumPy's run imports NumPy alone (importing `lazyarray.tools.corpus` imports lazyarray).
CHILD = """
import importlib, sys, types
name, shape, steps, engine = sys.argv[1], tuple(map(int, sys.argv[2].split(","))), int(sys.argv[3]), sys.argv[4]
import numpy
programs = types.ModuleType("corpus_programs")
programs.__path__ = [sys.argv[5]]
sys.modules["corpus_programs"] = programs
m = importlib.import_module("corpus_programs." + name)
params = dict(m.SIZES["test"], shape=shape, steps=steps)
inputs = m.make(params, 0)
if engine == "numpy":
    xp = numpy
else:
    import lazyarray as xp
out = m.run(xp, *inputs)
for o in (out if isinstance(out, tuple) else (out,)):
    numpy.asarray(o)
"""


PACKAGE = importlib.util.find_spec("lazyarray").submodule_search_locations[0]  # (not run)
CORPUS = os.path.join(PACKAGE, "tools", "corpus")


def workers_running() -> bool:
    out = subprocess.run(["pgrep", "-f", "lazyarray.runtime.compile_worker"],
                         capture_output=True, text=True)
    return bool(out.stdout.strip())


def settle(timeout: float = 600) -> None:
    end = time.monotonic() + timeout
    while workers_running() and time.monotonic() < end:
        time.sleep(0.2)


def run_once(args, engine: str, env: dict) -> float:
    settle()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD, args.program, args.shape, str(args.steps),
                    engine, CORPUS], env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--program", default="ocean_column")
    p.add_argument("--shape", default="64,64,64")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--modes", default="numpy,first,warm,interpreter")
    a = p.parse_args(argv)
    # imports read bytecode, as an installed package's do (under PYTHONDONTWRITEBYTECODE=1 no
    # process writes it, and each import compiled lazyarray's modules from source: 0.15 s)
    compileall.compile_dir(PACKAGE, quiet=1)
    modes = a.modes.split(",")
    times: dict[str, list[float]] = {m: [] for m in modes}
    base = dict(os.environ)
    for k in ("LAZYARRAY_COMPILE", "LAZYARRAY_BACKEND", "LAZYARRAY_CACHE_DIR"):
        base.pop(k, None)
    with tempfile.TemporaryDirectory(prefix="lazyarray-first-run-") as tmp:
        warm_dir = None
        for r in range(a.runs):
            for mode in modes:
                env = dict(base)
                if mode == "numpy":
                    times[mode].append(run_once(a, "numpy", env))
                    continue
                if mode in ("first", "now"):
                    env["LAZYARRAY_CACHE_DIR"] = os.path.join(tmp, f"{mode}-{r}")
                    if mode == "now":
                        env["LAZYARRAY_COMPILE"] = "now"
                    else:
                        warm_dir = env["LAZYARRAY_CACHE_DIR"]
                elif mode == "warm":
                    if warm_dir is None:
                        continue
                    env["LAZYARRAY_CACHE_DIR"] = warm_dir
                elif mode == "interpreter":
                    env["LAZYARRAY_BACKEND"] = "numpy"
                times[mode].append(run_once(a, "lazyarray", env))
        settle()
    ref = statistics.median(times["numpy"]) if times.get("numpy") else None
    print(f"{a.program} {a.shape} steps={a.steps}, {a.runs} runs, whole processes (s)")
    print("| mode | median | min | max | / NumPy |")
    print("|---|---:|---:|---:|---:|")
    for mode, ts in times.items():
        if not ts:
            continue
        med = statistics.median(ts)
        ratio = f"{med / ref:.2f}x" if ref else "-"
        print(f"| {mode} | {med:.2f} | {min(ts):.2f} | {max(ts):.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
