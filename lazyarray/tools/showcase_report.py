"""The showcase's results and how they are shown: the table, its header and legend, the JSON
document and the bar chart of the ratios to NumPy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lazyarray.tools.workloads import WORKLOADS

# The columns: NumPy (the reference) first, then the engines, in the table's order.
IMPLS = ("numpy", "lazyarray", "numexpr", "jax", "numba")
HEADINGS = {"numpy": "numpy", "lazyarray": "lazyarray", "numexpr": "numexpr",
            "jax": "jax.jit", "numba": "numba (ideal)"}


@dataclass
class ImplResult:
    """One implementation in one case: its status, median time and ratio to NumPy."""

    status: str = "n/a"  # ok | mismatch | error | n/a
    note: str = ""
    median_s: float | None = None
    samples_s: list[float] = field(default_factory=list)
    number: int = 1
    ratio: float | None = None
    max_rel_err: float | None = None
    partial: bool = False


@dataclass
class CaseResult:
    """One workload at one size: every implementation, and lazyarray's compiles and kernels."""

    workload: str
    size: int
    label: str
    rounds: int = 0
    impls: dict[str, ImplResult] = field(default_factory=dict)
    la_first_call_s: float | None = None
    la_first_call_compiles: int | None = None
    la_compiles_while_timing: int | None = None
    la_kernels: int | None = None
    la_kernels_error: str | None = None
    la_explain_compiles: int | None = None
    skipped: str | None = None
    explain_target: Any = field(default=None, repr=False)


# --------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------


def _fmt_time(t: float | None) -> str:
    if t is None:
        return "—"
    if t < 1e-3:
        return f"{t * 1e6:.1f} µs"
    if t < 1.0:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def _cell(ir: ImplResult | None, is_ref: bool) -> str:
    if ir is None or ir.status == "n/a":
        return "—"
    if ir.status == "error":
        return "error"
    mark = "✓" if ir.status == "ok" else "✗"
    if ir.median_s is None:
        return mark
    if is_ref:
        return _fmt_time(ir.median_s)
    star = "*" if ir.partial else ""
    return f"{_fmt_time(ir.median_s)} {ir.ratio:.2f}{star}{mark}"


def format_table(results: list[CaseResult], engines: list[str]) -> str:
    """One row per case: NumPy's time, then each engine's time and ratio, ✓ or ✗."""
    cols = ["numpy"] + [e for e in IMPLS[1:] if e in engines]
    widths = {c: (10 if c == "numpy" else 19) for c in cols}
    head = f"{'case':15} " + " ".join(f"{HEADINGS[c]:>{widths[c]}}" for c in cols)
    head += f" {'la 1st call':>18} {'kernels':>7}"
    lines = [head, "-" * len(head)]
    for r in results:
        if r.skipped:
            lines.append(f"{r.workload:4} {r.label:10} skipped: {r.skipped}")
            continue
        cells = " ".join(f"{_cell(r.impls.get(c), c == 'numpy'):>{widths[c]}}" for c in cols)
        first = "—"
        if r.la_first_call_s is not None:
            first = _fmt_time(r.la_first_call_s)
            if r.la_first_call_compiles is not None:
                first += f" ({r.la_first_call_compiles}c)"
        k = "—" if r.la_kernels is None else str(r.la_kernels)
        if r.la_kernels_error:
            k = "error"
        lines.append(f"{r.workload:4} {r.label:10} {cells} {first:>18} {k:>7}")
    return "\n".join(lines)


def header(info: dict[str, Any]) -> str:
    """The lines above the table: machine, load, versions and threading settings."""
    la = info.get("loadavg_start")
    load = " ".join(f"{x:.2f}" for x in la) if la else "unknown"
    nb = info.get("numba")
    if "numba_threads" in info:
        nb = f"{nb} ({info['numba_threads']} threads, layer {info['numba_threading_layer']})"
    ne = info.get("numexpr")
    if "numexpr_threads" in info:
        ne = f"{ne} ({info['numexpr_threads']} threads)"
    return "\n".join([
        "lazyarray showcase: time per call, median of rounds that alternate the implementations",
        f"machine   {info['cpu']}, {info['cpu_count']} CPUs; {info['platform']}",
        f"load avg  {load}   (1, 5, 15 min; a busy machine makes every number noisy)",
        f"versions  python {info['python']}, numpy {info['numpy']}, lazyarray {info['lazyarray']},"
        f" numba {nb}, numexpr {ne}, jax {info['jax']}",
        f"env       GOMP_SPINCOUNT={info['GOMP_SPINCOUNT']}"
        f" OMP_WAIT_POLICY={info['OMP_WAIT_POLICY']}",
    ])


LEGEND = """\
cells: median time per call, then time / numpy time (below 1 is faster); ✓ / ✗: result
matches numpy (np.allclose; lazyarray also dtype and shape); —: not available or not
expressible; * numexpr for the elementwise part, numpy for the reductions.
la 1st call: lazyarray's first call at that size in this process (compiles it caused, in
parentheses; later sizes reuse the kernels); kernels: la.explain(...).num_kernels
(0: small work runs on the NumPy interpreter tier, no kernel).
numba (ideal): hand-written njit(parallel=True) loop writing into a reused output (W9: serial,
W5: numpy matmul + parallel bias/relu loop); compile time excluded."""


def plot(results: list[CaseResult], path: str) -> str | None:
    """Bar chart of the ratios to NumPy at `path`; a message instead when it cannot be drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ("--plot: matplotlib is not installed (pip install matplotlib); "
                "no plot written")
    rows = [r for r in results if not r.skipped]
    engines = [e for e in IMPLS[1:] if any(
        r.impls.get(e) and r.impls[e].ratio is not None for r in rows)]
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(rows)), 4.5))
    width = 0.8 / max(1, len(engines))
    for k, e in enumerate(engines):
        xs, ys = [], []
        for i, r in enumerate(rows):
            ir = r.impls.get(e)
            if ir and ir.ratio is not None:
                xs.append(i + (k - (len(engines) - 1) / 2) * width)
                ys.append(ir.ratio)
        ax.bar(xs, ys, width=width, label=HEADINGS[e])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{r.workload}\n{r.label}" for r in rows], fontsize=7)
    ax.set_ylabel("time / numpy time (lower is faster)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    # the format follows the extension (.png, .svg, .pdf); an SVG without a date diffs cleanly
    meta = {"Date": None} if path.lower().endswith(".svg") else None
    fig.savefig(path, dpi=120, metadata=meta)
    plt.close(fig)
    return None


def json_document(info: dict[str, Any], options: dict[str, Any], results: list[CaseResult],
                  elapsed: float) -> dict[str, Any]:
    """Every measurement of a run, as written by ``--json``."""
    return {
        "machine": info,
        "options": {k: (sorted(v) if isinstance(v, set) else v) for k, v in options.items()},
        "results": [
            {
                "workload": r.workload, "title": WORKLOADS[r.workload].title,
                "size": r.size, "label": r.label, "rounds": r.rounds,
                "skipped": r.skipped,
                "la_first_call_s": r.la_first_call_s,
                "la_first_call_compiles": r.la_first_call_compiles,
                "la_compiles_while_timing": r.la_compiles_while_timing,
                "la_kernels": r.la_kernels, "la_kernels_error": r.la_kernels_error,
                "la_explain_compiles": r.la_explain_compiles,
                "impls": {n: vars(ir) for n, ir in r.impls.items()},
            }
            for r in results
        ],
        "elapsed_s": elapsed,
    }
