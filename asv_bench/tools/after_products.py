"""Elementwise kernels right after matrix products, with lazyarray imported before NumPy and
after it.

    python asv_bench/tools/after_products.py [ROUNDS]

Two measurements per import order, each in a fresh process:
- launches: a 2**16-element kernel (`x * 2 + 1`, evaluated) called again and again for 0.3 s
  after one 256^2 product, 10 times: how many calls took over 100 us, and the slowest;
- blocks: three residual blocks `x = tanh(x @ W + b) * 0.5 + x` on (512, 256) (asv's
  `ResidualBlocks`), NumPy and lazyarray alternating, median ms of ROUNDS rounds;
- products: NumPy's 128^2 and 256^2 products themselves, median us back to back and after
  a 1 ms pause (what parking OpenBLAS's workers sooner costs them).
docs/performance.md ("Threading") quotes it.
"""

import os
import subprocess
import sys
import time


def child(order: str, rounds: int) -> None:
    if order == "lazyarray-first":
        import lazyarray as la
        import numpy as np
    else:
        import numpy as np
        import lazyarray as la
    from lazyarray.runtime import blas

    r = np.random.default_rng(0)
    a = r.standard_normal((256, 256))
    x = la.asarray(r.standard_normal(1 << 16))
    np.asarray(x * 2.0 + 1.0)
    slow, worst = 0, 0.0
    for _ in range(10):
        for _ in range(200):
            np.asarray(x * 2.0 + 1.0)
        a @ a
        start = time.perf_counter()
        while time.perf_counter() - start < 0.3:
            t0 = time.perf_counter()
            np.asarray(x * 2.0 + 1.0)
            dt = time.perf_counter() - t0
            slow += dt > 100e-6
            worst = max(worst, dt)

    args = [r.standard_normal((512, 256))] + [r.standard_normal((256, 256)) * 0.06
                                              for _ in range(3)] + [r.standard_normal(256)
                                                                    for _ in range(3)]
    lazy = [la.asarray(v) for v in args]

    def blocks(xp, x, *rest):
        for w, b in zip(rest[:3], rest[3:], strict=True):
            x = xp.tanh(x @ w + b) * 0.5 + x
        return np.asarray(x)

    assert np.allclose(blocks(la, *lazy), blocks(np, *args))
    times = {"numpy": [], "lazyarray": []}
    for _ in range(rounds):
        for name, xp, v in (("numpy", np, args), ("lazyarray", la, lazy)):
            t0 = time.perf_counter()
            for _ in range(10):
                blocks(xp, *v)
            times[name].append((time.perf_counter() - t0) / 10)
    med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
    products = []
    for n in (128, 256):
        m = r.standard_normal((n, n))
        for pause in (0.0, 1e-3):
            ts = []
            for _ in range(101):
                time.sleep(pause)
                t0 = time.perf_counter()
                m @ m
                ts.append(time.perf_counter() - t0)
            products.append(f"{sorted(ts)[50] * 1e6:.0f}")
    print(f"{order:16} OpenBLAS spin window {blas.SPIN_S * 1e3:8.3f} ms | launches after a "
          f"product: {slow:4d} over 100 us, slowest {worst * 1e3:6.2f} ms | blocks: NumPy "
          f"{med['numpy']:.2f} ms, lazyarray {med['lazyarray']:.2f} ms "
          f"({med['lazyarray'] / med['numpy']:.2f}) | products 128^2 {products[0]} / "
          f"{products[1]} us, 256^2 {products[2]} / {products[3]} us (back to back / after "
          f"1 ms)")


def main() -> None:
    rounds = sys.argv[1] if len(sys.argv) > 1 else "15"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    for order in ("lazyarray-first", "numpy-first"):
        subprocess.run([sys.executable, __file__, "--child", order, rounds], env=env,
                       check=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
