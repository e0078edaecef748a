"""Debug output and compile snapshots (docs/debugging.md).

``LAZYARRAY_DEBUG`` (or ``options(debug=...)``) makes every materialization log on the
``lazyarray.debug`` logger:

    1  kernel counts (compiled / cached / interpreted) and timings, per kernel
    2  + the optimized HLO
    3  + the HLO before the passes and after each pass
    4  + the generated source of each kernel

``LAZYARRAY_DUMP_DIR`` (or ``options(dump_dir=...)``): every materialization that compiles a
kernel writes a snapshot directory there: the HLO before and after the passes, each kernel's
source, the module's inputs and outputs as ``.npy`` and a ``manifest.json``.
``python -m lazyarray replay DIR`` runs it again (``lazyarray.replay``).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
from dataclasses import asdict

import numpy as np

from lazyarray import config, stats
from lazyarray.ir.hlo import Module
from lazyarray.ir.text import print_module
from lazyarray.passes import PIPELINE, optimize
from lazyarray.runtime.executor import Trace, execute
from lazyarray.version import __version__

log = logging.getLogger("lazyarray.debug")
SNAPSHOT_FORMAT = 1


def level() -> int:
    return config.get().debug


def _number() -> int:
    """This materialization's number: cache_info()["materializations"] (reset_stats restarts it)."""
    return stats.snapshot()["materializations"]


def active() -> bool:
    o = config.get()
    return bool(o.debug or o.dump_dir)


def _emit(text: str) -> None:
    """Log at DEBUG; with logging unconfigured, make sure the text still reaches stderr."""
    if log.level == logging.NOTSET:
        log.setLevel(logging.DEBUG)
    if not log.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
    log.debug(text)


def interpreted(order: list) -> None:
    """Level 1 line for a materialization that ran on the reference interpreter."""
    if level() >= 1:
        _emit(f"lazyarray: materialization {_number()}: interpreter "
              f"({len(order)} nodes, below eager_threshold or backend='numpy'), 0 kernels")


def _optimize(module: Module, lvl: int, n: int) -> Module:
    if lvl < 3:

        return optimize(module)
    _emit(f"== materialization {n}: HLO before the passes ==\n" + print_module(module).rstrip())
    for p in PIPELINE:
        module = p(module)
        _emit(f"== materialization {n}: HLO after {p.__name__} ==\n"
              + print_module(module).rstrip())
    return module


def run_compiled(module: Module, args: list, trace: Trace) -> tuple[Module, list]:
    """engine.materialize's compiled path, with the logs and snapshot the options ask for:
    (the optimized module, the outputs)."""
    o = config.get()
    n = _number()
    t0 = time.perf_counter()
    optimized = _optimize(module, o.debug, n)
    t1 = time.perf_counter()
    before = stats.snapshot()
    outs = execute(optimized, args, trace)
    t2 = time.perf_counter()
    if o.debug >= 1:
        after = stats.snapshot()
        disk = {k: after[k] - before[k] for k in ("compiles", "disk_hits")}
        _emit(_summary(n, trace, disk, t1 - t0, t2 - t1))
        if o.debug == 2:
            _emit(f"== materialization {n}: HLO after optimization ==\n"
                  + print_module(optimized).rstrip())
        if o.debug >= 4:
            for k in trace.kernels:
                if k.source:
                    _emit(f"== materialization {n}: {k.name} source (signature {k.key}) ==\n"
                          + k.source.rstrip())
    if o.dump_dir and any(k.compiled for k in trace.kernels):
        try:
            path = write_snapshot(o.dump_dir, f"{os.getpid()}-{n:04d}", module, optimized,
                                  args, outs, trace)
        except OSError as exc:  # a full disk must not lose the computed result
            logging.getLogger("lazyarray").warning("lazyarray: no snapshot written: %s", exc)
        else:
            if o.debug >= 1:
                _emit(f"lazyarray: snapshot written to {path}")
    return optimized, outs


def _summary(n: int, trace: Trace, disk: dict, passes_s: float, run_s: float) -> str:
    ks = trace.kernels
    count = {s: sum(k.status == s for k in ks)
             for s in ("hit", "miss", "interpreted", "compiling")}
    head = (f"lazyarray: materialization {n}: {count['hit'] + count['miss']} kernels "
            f"({count['hit']} cache hits, {count['miss']} misses; built "
            f"{sum(k.compiled for k in ks)}: {disk['compiles']} compiled by Numba, "
            f"{disk['disk_hits']} loaded from the disk cache), {count['interpreted']} "
            f"interpreted fusions, {count['compiling']} interpreted while their kernels "
            f"compile in the background, {len(trace.updates)} writes; "
            f"passes {passes_s * 1e3:.2f} ms, run {run_s * 1e3:.2f} ms")
    lines = [head]
    for k in ks:
        note = (f" (built) from {k.origin} in {k.compile_s * 1e3:.1f} ms" if k.compiled else
                " (interpreted while its kernel compiles)" if k.status == "compiling" else "")
        lines.append(f"  {k.name} kind={k.kind} cache={k.status}{note} "
                     f"{k.seconds * 1e3:.3f} ms signature={k.key}")
    lines += [f"  write {i}: {why}" for i, why in enumerate(trace.write_reasons)]
    return "\n".join(lines)


# ---- snapshots -------------------------------------------------------------------------------


def versions() -> dict:
    import numba


    return {"lazyarray": __version__, "numpy": np.__version__, "numba": numba.__version__,
            "python": platform.python_version(), "platform": platform.platform()}


def describe(x) -> dict:
    x = np.asarray(x)
    return {"shape": list(x.shape), "dtype": x.dtype.str}


def write_snapshot(root: str, name: str, module: Module, optimized: Module, args: list,
                   outs: list, trace: Trace) -> str:
    """Write one snapshot directory under `root`; return its path.

    Files: ``before.hlo`` (the module as lowered: the reference), ``after.hlo`` (as
    optimized: what ran), ``kernel_<name>.py`` (each kernel's source), ``input_<i>.npy``
    (parameter i of the module), ``output_<i>.npy`` (what this run computed) and
    ``manifest.json`` (versions, options, inputs and outputs, kernels).
    """
    os.makedirs(root, exist_ok=True)
    path, k = os.path.join(root, name), 1
    while True:  # counters restart after reset_stats: never overwrite an older snapshot
        try:
            os.mkdir(path)
            break
        except FileExistsError:
            k += 1
            path = os.path.join(root, f"{name}-{k}")
    with open(os.path.join(path, "before.hlo"), "w") as f:
        f.write(print_module(module))
    with open(os.path.join(path, "after.hlo"), "w") as f:
        f.write(print_module(optimized))
    kernels = []
    for k in trace.kernels:
        entry = {"name": k.name, "kind": k.kind, "signature": k.key, "cache": k.status,
                 "compiled": k.compiled, "seconds": k.seconds, "source": None}
        if k.source:
            entry["source"] = f"kernel_{k.name}.py"
            with open(os.path.join(path, entry["source"]), "w") as f:
                f.write(k.source)
        kernels.append(entry)
    for i, a in enumerate(args):
        np.save(os.path.join(path, f"input_{i}.npy"), np.asarray(a), allow_pickle=False)
    for i, a in enumerate(outs):
        np.save(os.path.join(path, f"output_{i}.npy"), np.asarray(a), allow_pickle=False)
    manifest = {
        "format": SNAPSHOT_FORMAT,
        "versions": versions(),
        "options": asdict(config.get()),
        "inputs": [dict(describe(a), file=f"input_{i}.npy") for i, a in enumerate(args)],
        "outputs": [dict(describe(a), file=f"output_{i}.npy") for i, a in enumerate(outs)],
        "kernels": kernels,
        "writes": trace.updates,
        "write_reasons": trace.write_reasons,
    }
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return path
