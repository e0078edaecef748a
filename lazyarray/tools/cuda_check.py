"""`python -m lazyarray bench --backend cuda`: the CUDA backend on a real GPU, in one go.

1. Smoke tests: a set of fused programs (elementwise over each dtype class, reductions along
   every kind of axis, softmax/normalization rows, arg-reductions, scans, where/clip/astype,
   matmul, writes, views) compared with NumPy, plus the transfer counters: a chain of
   evaluations must move no data between host and device.
2. With ``--tests``: the pytest suites of the CUDA backend on the device (tests/cuda and the
   differential files, compiled mode on ``backend="cuda"``).
3. Benchmarks: effective memory bandwidth (bytes the kernel must read and write / time) of
   fused elementwise and reduction workloads, and matmul throughput.

Options: ``--quick`` (smaller arrays), ``--tests``, ``--json FILE``. Exit status 1 when a smoke
check fails. See docs/cuda.md.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import warnings

import numpy as np

import lazyarray as la


def _programs(rng):
    """(name, NumPy inputs, function of a namespace) for the smoke checks."""
    f64 = rng.standard_normal((300, 257))
    f32 = f64.astype(np.float32)
    i32 = rng.integers(-1000, 1000, (300, 257), dtype=np.int32)
    u8 = rng.integers(0, 255, (1000,), dtype=np.uint8)
    b = f64 > 0.3
    c = f64[:10, :10] + 1j * f64[10:20, :10]
    wide = rng.standard_normal((40, 5000))
    return [
        ("fused elementwise f64", [f64],
         lambda m, x: m.sin(x) * 2 + m.exp(-x * x) - m.sqrt(abs(x))),
        ("fused elementwise f32", [f32], lambda m, x: m.tanh(x) * x + m.log1p(abs(x))),
        ("int arithmetic", [i32], lambda m, x: (x * 7) // 3 - x % 5 + (x >> 2) + (x ^ 0x55)),
        ("uint8 wrap", [u8], lambda m, x: x * 3 + 250),
        ("bool logic", [b], lambda m, x: (x & ~x[::-1]) | (x ^ True)),
        ("complex mul", [c], lambda m, x: x * x.conj() + 1j),
        ("sum all", [f64], lambda m, x: x.sum()),
        ("sum axis 0", [f64], lambda m, x: x.sum(axis=0)),
        ("mean axis -1", [f32], lambda m, x: x.mean(axis=-1)),
        ("column sums (per-thread)", [wide], lambda m, x: m.sqrt((x * x).sum(axis=0))),
        ("max/min", [f64], lambda m, x: x.max(axis=0) - x.min()),
        ("int sum", [i32], lambda m, x: x.sum(axis=1)),
        ("any/all", [b], lambda m, x: m.stack([x.any(axis=0), x.all(axis=0)])),
        ("norm epilogue", [f64], lambda m, x: m.sqrt((x * x).sum(axis=-1))),
        ("softmax rows", [f32], lambda m, x: (lambda e: e / e.sum(axis=-1, keepdims=True))(
            m.exp(x - x.max(axis=-1, keepdims=True)))),
        ("normalize rows", [f64], lambda m, x: (x - x.mean(axis=-1, keepdims=True))
         / x.std(axis=-1, keepdims=True)),
        ("argmax/argmin", [f64], lambda m, x: m.argmax(x, axis=1) + m.argmin(x, axis=0)[:1]),
        ("cumsum", [f64], lambda m, x: m.cumsum(x, axis=1)),
        ("where/clip/astype", [f64], lambda m, x: m.where(x > 0, m.clip(x, 0.1, 0.9),
                                                          x.astype(np.int16))),
        ("views", [f64], lambda m, x: x[::-3, 1::2].T * 2 + x[:128, :100]),
        ("matmul f64", [f64], lambda m, x: x[:128, :100] @ x[100:200, :64]),
        ("matmul f32", [f32], lambda m, x: x[:64, :257] @ x[:257, :33]),
    ]


def _close(actual, expected) -> bool:
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return False
    if expected.dtype.kind in "fc":
        tol = 1e-4 if expected.dtype in (np.float32, np.complex64) else 1e-10
        return bool(np.allclose(actual, expected, rtol=tol, atol=tol, equal_nan=True))
    return bool(np.array_equal(actual, expected))


def smoke(la) -> list[tuple[str, bool, str]]:
    rng = np.random.default_rng(0)
    results = []
    with la.options(backend="cuda", eager_threshold=0), np.errstate(all="ignore"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # integer wrap-around is the point
        for name, inputs, fn in _programs(rng):
            try:
                expected = fn(np, *inputs)
                actual = np.asarray(fn(la, *(la.asarray(a, device="cuda") for a in inputs)))
                ok = _close(actual, expected)
                why = "" if ok else f"max diff {np.max(abs(actual - expected))}"
                results.append((name, ok, why))
            except Exception as exc:  # report and go on: one run shows every failure
                results.append((name, False, f"{type(exc).__name__}: {exc}"))
        # a chain of evaluations moves nothing across the bus
        la.reset_stats()
        x = la.asarray(rng.standard_normal(1 << 16), device="cuda")
        y = x
        for _ in range(5):
            y = la.tanh(y) + y.mean()
            la.evaluate(y)
        c = la.cache_info()
        ok = c["h2d_transfers"] == 1 and c["d2h_transfers"] == 0
        moved = f"h2d={c['h2d_transfers']} d2h={c['d2h_transfers']}"
        results.append(("chain moves no data", ok, moved))
        # writes stay on the device
        la.reset_stats()
        z = la.asarray(np.arange(1000.0), device="cuda") * 2
        z[10:20] = -1.0
        la.evaluate(z)
        c = la.cache_info()
        ok = c["d2h_transfers"] == 0 and c["host_fallbacks"] == 0
        results.append(("writes on the device", ok,
                        f"d2h={c['d2h_transfers']} fallbacks={c['host_fallbacks']}"))
    return results


def _time(fn, sync, repeat=5) -> float:
    fn()
    sync()  # compile and warm up
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t)
    return best


def benchmarks(la, quick: bool) -> list[dict]:
    from numba import cuda

    n = 1 << (22 if quick else 26)
    rng = np.random.default_rng(1)
    rows = []
    with la.options(backend="cuda", eager_threshold=0):
        for dt in (np.float32, np.float64):
            a, b, c, d, e = (la.asarray(rng.random(n).astype(dt), device="cuda") for _ in range(5))
            item = np.dtype(dt).itemsize

            def elementwise(a=a, b=b, c=c, d=d, e=e):
                la.evaluate(a * b + c * d - la.sin(e))

            def reduction(a=a, b=b):
                la.evaluate(la.sqrt(((a - b) ** 2).sum()))

            def rowsoftmax(a=a):
                x = a.reshape(-1, 1024)
                ex = la.exp(x - x.max(axis=-1, keepdims=True))
                la.evaluate(ex / ex.sum(axis=-1, keepdims=True))

            def columns(a=a):
                la.evaluate(a.reshape(-1, 8192).sum(axis=0))

            for name, fn, nbytes in (("elementwise a*b+c*d-sin(e)", elementwise, 6 * n * item),
                                     ("column sums, 8192 columns", columns, n * item),
                                     ("reduction sqrt(sum((a-b)**2))", reduction, 2 * n * item),
                                     ("softmax rows of 1024", rowsoftmax, 2 * n * item)):
                t = _time(fn, cuda.synchronize)
                rows.append({"workload": name, "dtype": np.dtype(dt).name, "n": n,
                             "seconds": t, "GB/s": nbytes / t / 1e9})
        m = 2048 if quick else 4096
        x = la.asarray(rng.random((m, m)).astype(np.float32), device="cuda")
        t = _time(lambda: la.evaluate(x @ x), cuda.synchronize, repeat=3)
        rows.append({"workload": f"matmul {m}x{m}", "dtype": "float32", "n": m * m,
                     "seconds": t, "GFLOP/s": 2 * m ** 3 / t / 1e9})
    return rows


def run_tests() -> int:
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
    env = dict(os.environ, LAZYARRAY_TEST_BACKEND="cuda", HYPOTHESIS_PROFILE="sim",
               LAZYARRAY_CUDA_STRICT="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "tests/cuda", "tests/test_reductions.py",
           "tests/test_elementwise.py", "tests/test_programs.py", "tests/test_views.py",
           "-k", "compiled or not interp"]
    return subprocess.call(cmd, cwd=root, env=env)


def main(args: list[str]) -> int:
    from numba import cuda

    quick, with_tests = "--quick" in args, "--tests" in args
    out = args[args.index("--json") + 1] if "--json" in args else None
    sim = bool(cuda.config.ENABLE_CUDASIM)
    dev = "simulator" if sim else cuda.get_current_device()
    name = dev if sim else dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    print(f"device: {name}"
          f"{'' if sim else f' (cc {dev.compute_capability[0]}.{dev.compute_capability[1]})'}")
    results = smoke(la)
    for name, ok, why in results:
        print(f"  {'PASS' if ok else 'FAIL'}  {name}  {why}")
    failed = sum(not ok for _, ok, _ in results)
    print(f"smoke: {len(results) - failed}/{len(results)} passed")
    status = 1 if failed else 0
    if with_tests:
        status |= run_tests()
    rows = [] if sim else benchmarks(la, quick)
    for r in rows:
        rate = f"{r['GB/s']:8.1f} GB/s" if "GB/s" in r else f"{r['GFLOP/s']:8.1f} GFLOP/s"
        ms = r["seconds"] * 1e3
        print(f"  {r['workload']:<32} {r['dtype']:<8} n={r['n']:<10} {ms:9.3f} ms {rate}")
    if out:
        with open(out, "w") as f:
            json.dump({"smoke": results, "bench": rows}, f, indent=2)
    return status
