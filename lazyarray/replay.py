"""Replay a snapshot written under ``LAZYARRAY_DUMP_DIR`` (docs/debugging.md).

``python -m lazyarray replay DIR [--backend cpu|numpy] [--rtol R]`` loads the snapshot's inputs,
runs its optimized HLO (``after.hlo``) on the chosen backend, runs the HLO as lowered
(``before.hlo``) on the reference interpreter, and compares the two, and the outputs the
original run recorded, output by output. DIR may also be a dump directory holding several
snapshots: each is replayed.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from lazyarray.config import BACKENDS
from lazyarray.debug import SNAPSHOT_FORMAT, describe, versions
from lazyarray.ir.interpret import interpret
from lazyarray.ir.text import parse_module, type_str
from lazyarray.runtime.executor import execute

RTOL = {"f2": 1e-2, "f4": 1e-4, "c8": 1e-4, "f8": 1e-7, "c16": 1e-7}  # summation order differs


@dataclass
class Outcome:
    """The result of replaying one snapshot: ``ok`` and the report's lines."""

    path: str
    ok: bool = True
    lines: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join([*self.lines, "OK" if self.ok else "MISMATCH"])


def _difference(got, want, rtol: float | None) -> str | None:
    """None when `got` matches `want` (shape, dtype, values within tolerance), else why not."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind not in "fc":
        bad = got != want
    else:
        tol = RTOL.get(f"{want.dtype.kind}{want.dtype.itemsize}", 1e-7) if rtol is None else rtol
        finite = np.isfinite(want)
        scale = float(np.max(np.abs(want[finite]), initial=0.0))
        with np.errstate(all="ignore"):
            close = np.isclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True)
        bad = ~close
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (f"{int(bad.sum())} of {bad.size} elements differ; first at {first}: "
            f"{got[first].item()!r} != {want[first].item()!r}")


def _type(d: dict) -> str:
    return type_str(d["shape"], np.dtype(d["dtype"]))


def load(path: str) -> tuple[dict, list[np.ndarray]]:
    """The manifest of snapshot `path` and its inputs."""
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    if manifest.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(f"{path}: snapshot format {manifest.get('format')!r} is not "
                         f"{SNAPSHOT_FORMAT} (written by another lazyarray version)")
    inputs = [np.load(os.path.join(path, d["file"]), allow_pickle=False)
              for d in manifest["inputs"]]
    return manifest, inputs


def _module(path: str, name: str):
    with open(os.path.join(path, name)) as f:
        return parse_module(f.read())


def run(path: str, backend: str = "cpu", inputs: list | None = None) -> list[np.ndarray]:
    """Run the snapshot's optimized HLO on `backend` ("cpu": compiled kernels; "numpy": the
    interpreter, fusion by fusion), on its recorded inputs unless `inputs` are given."""

    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    inputs = load(path)[1] if inputs is None else inputs
    module = _module(path, "after.hlo")
    return interpret(module, inputs) if backend == "numpy" else execute(module, inputs)


def reference(path: str, inputs: list | None = None) -> list[np.ndarray]:
    """The snapshot's program as lowered (before the passes) on the reference interpreter."""
    inputs = load(path)[1] if inputs is None else inputs
    return interpret(_module(path, "before.hlo"), inputs)


def replay(path: str, backend: str = "cpu", rtol: float | None = None) -> Outcome:
    """Replay snapshot `path` on `backend` and compare with the reference interpreter.

    Parameters
    ----------
    path : str
        A snapshot directory (it holds ``manifest.json``).
    backend : {"cpu", "numpy"}
        Where the optimized HLO runs.
    rtol : float, optional
        Relative tolerance for floating-point outputs (default: by dtype, 1e-7 for float64;
        the compiled sums add in another order than NumPy). Integers and bools must be equal.

    Returns
    -------
    Outcome
        ``ok`` is False when any output's shape, dtype or values differ; ``str()`` is the report.
    """
    manifest, inputs = load(path)
    out = Outcome(path)
    v = manifest.get("versions", {})
    out.lines.append(f"snapshot {path}")
    out.lines.append("  recorded with " + ", ".join(f"{k} {v[k]}" for k in
                                                    ("lazyarray", "numpy", "numba", "python")
                                                    if k in v) + f" on {v.get('platform', '?')}")
    now = versions()
    out.lines.append("  replayed with " + ", ".join(f"{k} {now[k]}" for k in
                                                    ("lazyarray", "numpy", "numba", "python"))
                     + f" on {now['platform']}")
    out.lines.append(f"  {len(inputs)} inputs, {len(manifest['outputs'])} outputs, "
                     f"{len(manifest.get('kernels', []))} fusions")
    want = reference(path, inputs)
    try:
        got = run(path, backend, inputs)
    except Exception as exc:  # noqa: BLE001 -- a failing backend is a finding, not a crash
        out.ok = False
        out.lines.append(f"  backend {backend}: FAILED with {type(exc).__name__}: {exc}")
        return out
    out.lines.append(f"  backend {backend} vs reference interpreter:")
    recorded = [np.load(os.path.join(path, d["file"]), allow_pickle=False)
                if os.path.exists(os.path.join(path, d["file"])) else None
                for d in manifest["outputs"]]
    if len(got) != len(want) or len(want) != len(manifest["outputs"]):
        out.ok = False
        out.lines.append(f"    {len(got)} outputs, reference {len(want)}, "
                         f"manifest {len(manifest['outputs'])}")
        return out
    for i, (g, w, d) in enumerate(zip(got, want, manifest["outputs"], strict=True)):
        why = _difference(g, w, rtol)
        expected = _type(d)
        if why is None and _type(describe(w)) != expected:
            why = f"reference is {_type(describe(w))}, manifest says {expected}"
        out.ok &= why is None
        out.lines.append(f"    output {i} {expected}: " + ("OK" if why is None else
                                                          "MISMATCH: " + why))
    out.lines.append("  recorded outputs vs reference interpreter:")
    for i, (r, w) in enumerate(zip(recorded, want, strict=True)):
        why = "file missing" if r is None else _difference(r, w, rtol)
        out.ok &= why is None
        out.lines.append(f"    output {i}: " + ("OK" if why is None else "MISMATCH: " + why))
    return out


def snapshots(path: str) -> list[str]:
    """`path` itself if it is a snapshot, else the snapshots directly under it, sorted."""
    if os.path.exists(os.path.join(path, "manifest.json")):
        return [path]
    if not os.path.isdir(path):
        return []
    return sorted(os.path.join(path, d) for d in os.listdir(path)
                  if os.path.exists(os.path.join(path, d, "manifest.json")))


def main(args: list[str]) -> int:
    """The ``replay`` command: 0 when every snapshot matches, 1 on a mismatch, 2 on bad usage."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m lazyarray replay", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="a snapshot directory, or a dump directory of snapshots")
    p.add_argument("--backend", choices=("cpu", "numpy"), default="cpu")
    p.add_argument("--rtol", type=float, default=None,
                   help="relative tolerance for float outputs (default: by dtype)")
    ns = p.parse_args(args)
    found = snapshots(ns.dir)
    if not found:
        print(f"no snapshot (manifest.json) in {ns.dir}", file=sys.stderr)
        return 2
    ok = True
    for path in found:
        try:
            outcome = replay(path, ns.backend, ns.rtol)
        except (OSError, ValueError, KeyError) as exc:  # missing or unreadable files
            print(f"snapshot {path}: cannot be read: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            return 2
        print(outcome)
        ok &= outcome.ok
    if len(found) > 1:
        print(f"{len(found)} snapshots: " + ("all OK" if ok else "MISMATCH"))
    return 0 if ok else 1
