"""The xla backend on an accelerator: W1, W4 and W5 against `jax.jit` and NumPy.

Run on a machine with JAX and a TPU (or a GPU; or JAX's CPU client with ``--quick``)::

    python -m lazyarray.tools.xla_tpu            # the largest sizes, float32 and float64
    python -m lazyarray.tools.xla_tpu --quick    # the smallest sizes, a few repeats

For each workload and dtype, with the inputs resident on the device (uploaded once, before
timing): the device time of lazyarray's evaluation (`options(backend="xla")`), the device
time of `jax.jit` over the same body written with `jax.numpy` (matmul at the highest
precision, as lazyarray asks), NumPy's time on the host, and the transfers, host to device
(all inputs) and device to host (the result), each timed apart. Times are medians.

Needs no Numba: the xla backend runs every evaluation (`eager_threshold=0`), and its host
fallbacks use the reference interpreter (NumPy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import lazyarray as la
from lazyarray import backends
from lazyarray.tools.workloads import WORKLOADS

NAMES = ("W1", "W4", "W5")


def _median(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _pipelined(call, repeats: int, k: int = 20) -> float:
    """Seconds per call of `k` calls issued back to back, waiting only for the last: the
    device's time per call once the host's dispatch overlaps it (medians of `repeats`)."""
    def burst():
        out = None
        for _ in range(k):
            out = call()
        jax.block_until_ready(out)

    import jax

    return _median(burst, max(3, repeats // 3)) / k


def _interleaved(a, b, repeats: int) -> tuple[float, float]:
    """`_pipelined` of two calls, measured in turns (a, b, a, b, ...) so that both see the
    same device state (clocks, memory), not one before the other."""
    ta, tb = [], []
    for _ in range(max(3, repeats // 3)):
        ta.append(_pipelined(a, 1))
        tb.append(_pipelined(b, 1))
    return statistics.median(ta), statistics.median(tb)


def _ops(compiled) -> str:
    """What an optimized XLA program is made of: its instruction counts by kind."""
    import collections
    import re

    counts = collections.Counter()
    for line in compiled.as_text().splitlines():
        m = re.search(r"= \S+ (\w[\w-]*)\(", line)
        if m and not line.lstrip().startswith(("ROOT %param", "%param")):
            counts[m.group(1)] += 1
    return ", ".join(f"{k} {v}" for k, v in counts.most_common(12))


def _evaluated(x):
    """`x` evaluated (dispatched to the device, not waited for): its device array."""
    la.evaluate(x)
    return x._node.device


def _ready(x) -> None:
    """Wait until a lazyarray result computed on XLA is ready on the device."""
    dev = x._node.device
    if dev is not None:
        dev.block_until_ready()


def measure(name: str, n: int, dtype, repeats: int, hlo: bool = False) -> dict:
    """One row of the table: times in seconds, bytes, the largest relative error."""
    import jax
    import jax.numpy as jnp

    wl = WORKLOADS[name]
    host = [np.asarray(v, dtype=dtype) for v in wl.inputs(n)]
    row = {"workload": name, "dtype": np.dtype(dtype).name, "size": wl.label(n),
           "h2d_bytes": sum(v.nbytes for v in host)}
    expected = wl.body(np, *host)
    row["numpy"] = _median(lambda: wl.body(np, *host), repeats)

    def upload():
        for d in [jax.device_put(v) for v in host]:
            d.block_until_ready()

    row["h2d"] = _median(upload, repeats)
    dev = [jax.device_put(v) for v in host]
    with jax.default_matmul_precision("highest"):
        f = jax.jit(lambda *a: wl.body(jnp, *a))
        f(*dev).block_until_ready()  # compile
        row["jax_jit"] = _median(lambda: f(*dev).block_until_ready(), repeats)
        row["jit_err"] = _error(np.asarray(f(*dev)), expected)  # (at this precision)
        jit_ops = _ops(f.lower(*dev).compile()) if hlo else ""
    xla_backend = backends.get("xla").module
    xla_backend.KEEP_LAST_CALL = True
    with la.options(backend="xla", eager_threshold=0):
        xs = [la.asarray(v) for v in host]
        for x in xs:  # resident before timing: one upload each, kept in the node
            la.evaluate(x + 0)
        first = wl.body(la, *xs)
        la.evaluate(first)  # compile
        _ready(first)

        def run():
            r = wl.body(la, *xs)
            la.evaluate(r)
            _ready(r)
            return r

        before = la.cache_info()
        row["lazyarray_xla"] = _median(run, repeats)
        program, args, consts, pos = xla_backend.last_call[0]
        compiled = program.compiled
        if pos is not None:  # (a length seen third in its family: `xla_buckets`)
            print(f"{name} {np.dtype(dtype).name}: {n} rows in a program built for "
                  f"{[np.shape(a) for a in args]}")
        with jax.default_matmul_precision("highest"):
            row["lazy_device"], row["jit_device"] = _interleaved(
                lambda: program.call(args, consts, pos)[0], lambda: f(*dev), repeats)
        row["lazy_pipelined"] = _pipelined(lambda: _evaluated(wl.body(la, *xs)), repeats)
        if hlo:
            print(f"{name} {np.dtype(dtype).name} lazyarray: {_ops(compiled)}")
            print(f"{name} {np.dtype(dtype).name} jax.jit:   {jit_ops}")
        after = la.cache_info()
        row["compiles_in_loop"] = after["xla_compiles"] - before["xla_compiles"]
        row["uploads_in_loop"] = after["xla_to_device"] - before["xla_to_device"]
        result = run()
        out = result._node.device
        row["d2h_bytes"] = int(np.prod(out.shape)) * out.dtype.itemsize
        row["d2h"] = _median(lambda: np.asarray(out), repeats)
        got = np.asarray(result)
    row["err"] = _error(got, expected)
    return row


def measure_writes(n: int, rows: int, repeats: int) -> dict:
    """A loop of slice writes into a resident float32 array of `n` elements, each write
    evaluated: seconds per write with the dead version donated (in place) and without
    (`xla.DONATE` off: XLA copies the whole array first)."""
    import jax

    xla_backend = backends.get("xla").module
    width = n // rows
    out = {"workload": "writes", "size": f"n={n:.0e}", "rows": rows}
    with la.options(backend="xla", eager_threshold=0):
        for donate in (True, False):
            xla_backend.DONATE = donate
            x = la.zeros(n, dtype=np.float32) + 1
            la.evaluate(x)

            def loop():
                for i in range(rows):
                    x[i * width:(i + 1) * width] = float(i)
                    la.evaluate(x)
                jax.block_until_ready(x._node.device)

            loop()  # compile
            before = la.cache_info()["buffers_donated"]
            out["donated" if donate else "copied"] = _median(loop, repeats) / rows
            out["donations" if donate else "donations_off"] = (
                la.cache_info()["buffers_donated"] - before)
            expected = np.ones(n, np.float32)
            for i in range(rows):
                expected[i * width:(i + 1) * width] = i
            assert np.array_equal(np.asarray(x), expected)
    xla_backend.DONATE = True
    return out


def measure_lengths(lengths: list[int]) -> dict:
    """A loop over growing lengths (`x = la.asarray(data[:n])`, W1's body and a mean,
    each evaluated and read): compiles and seconds for the whole loop, with size buckets
    (`xla_buckets`) and with a program per length (`xla.BUCKETS = "0"`)."""
    xla_backend = backends.get("xla").module
    rng = np.random.default_rng(0)
    data = rng.random((5, max(lengths))).astype(np.float32)
    out = {"lengths": len(lengths)}
    with la.options(backend="xla", eager_threshold=0):
        for mode in ("1", "0"):
            xla_backend.BUCKETS = mode
            xla_backend.cache_clear()
            before = la.cache_info()["xla_compiles"]
            t0 = time.perf_counter()
            for n in lengths:
                a, b, c, d, e = (la.asarray(row[:n]) for row in data)
                y = a * b + c * d - la.sin(e)
                m = float(y.mean())
                want = data[0, :n] * data[1, :n] + data[2, :n] * data[3, :n] - np.sin(
                    data[4, :n])
                assert abs(m - float(want.mean())) <= 1e-5 * max(1.0, abs(m))
            out[mode] = (time.perf_counter() - t0, la.cache_info()["xla_compiles"] - before)
    xla_backend.BUCKETS = "1"
    xla_backend.cache_clear()
    return out


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    """The largest error relative to the largest value (normwise: elementwise relative errors
    of results near zero say nothing about the program)."""
    if not got.size:
        return 0.0
    return float(np.max(np.abs(got - expected)) / max(np.max(np.abs(expected)), 1e-300))


def _ms(s: float) -> str:
    return f"{s * 1e3:10.3f}"


def table(rows: list[dict]) -> str:
    head = (f"{'workload':8} {'dtype':8} {'size':>8} {'numpy ms':>10} {'lazy-xla':>10} "
            f"{'jax.jit':>10} {'lazy dev':>10} {'jit dev':>10} {'lazy pipe':>10} "
            f"{'h2d ms':>10} {'h2d MB':>8} {'d2h ms':>10} {'d2h MB':>8} "
            f"{'error':>9} {'jit error':>9} {'recompiles':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['workload']:8} {r['dtype']:8} {r['size']:>8} {_ms(r['numpy'])} "
                     f"{_ms(r['lazyarray_xla'])} {_ms(r['jax_jit'])} {_ms(r['lazy_device'])} "
                     f"{_ms(r['jit_device'])} {_ms(r['lazy_pipelined'])} {_ms(r['h2d'])} "
                     f"{r['h2d_bytes'] / 1e6:8.2f} {_ms(r['d2h'])} {r['d2h_bytes'] / 1e6:8.2f} "
                     f"{r['err']:9.2e} {r['jit_err']:9.2e} {r['compiles_in_loop']:>10}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m lazyarray.tools.xla_tpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smallest sizes, 3 repeats")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per cell (median)")
    p.add_argument("--workloads", default=",".join(NAMES), help="comma-separated, of W1,W4,W5")
    p.add_argument("--table-only", action="store_true",
                   help="the table alone (no slice-write and growing-length loops)")
    p.add_argument("--hlo", action="store_true",
                   help="print each optimized program's instruction counts, both sides")
    p.add_argument("--subnormals", choices=("check", "strict", "flush"), default=None,
                   help="LAZYARRAY_XLA_SUBNORMALS for this run (docs/xla.md; default: check)")
    args = p.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 10)
    if args.subnormals:  # (read when the backend loads, just below)
        os.environ["LAZYARRAY_XLA_SUBNORMALS"] = args.subnormals
    xla = backends.get("xla")  # JAX, 64-bit types; NumPy's host copies where Numba is missing
    import jax

    d = jax.devices()[0]
    print(f"device: {d.platform}:{d.id} ({d.device_kind}); jax {jax.__version__}; "
          f"numpy {np.__version__}; repeats {repeats} (medians); "
          f"subnormals {xla.module.SUBNORMALS}")
    rows, failed = [], []
    for name in args.workloads.split(","):
        wl = WORKLOADS[name]
        n = wl.sizes[0] if args.quick else wl.sizes[-1]
        for dtype in (np.float32, np.float64):
            try:
                rows.append(measure(name, n, dtype, repeats, args.hlo))
            except Exception as exc:  # (a dtype the device cannot run): the rest still runs
                failed.append(f"{name} {np.dtype(dtype).name}: {type(exc).__name__}: {exc}")
    print(table(rows))
    if args.table_only:
        return 1 if failed else 0
    w = measure_writes(10**5 if args.quick else 10**8, 50, 3 if args.quick else repeats)
    print(f"slice writes into float32 {w['size']}, {w['rows']} writes each evaluated: "
          f"{w['donated'] * 1e3:.3f} ms a write donated ({w['donations']} donations), "
          f"{w['copied'] * 1e3:.3f} ms copied ({w['donations_off']})")
    lengths = list(range(1000, 3000, 50) if args.quick else range(10**6, 3 * 10**6, 50_000))
    g = measure_lengths(lengths)
    print(f"a loop over {g['lengths']} growing lengths ({lengths[0]} to {lengths[-1]}): "
          f"{g['1'][0]:.2f} s and {g['1'][1]} compiles in size buckets, {g['0'][0]:.2f} s "
          f"and {g['0'][1]} compiles with a program per length")
    for line in failed:
        print("failed:", line[:300])
    print("lazy-xla, jax.jit: one call waited for, inputs resident (the host's dispatch "
          "included); lazy dev, jit dev: the compiled programs alone, 20 calls back to back "
          "(device time); lazy pipe: 20 whole evaluations back to back (graph building "
          "overlapping the device); h2d: all inputs up; d2h: the result down; error: "
          "largest error / largest value against NumPy on the host.")
    print(f"numba imported: {sys.modules.get('numba') is not None}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
