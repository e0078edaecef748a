"""Maximum ulp distance between the compiled kernels' exp, exp2, sin, cos, log, log2, log10, log1p,
expm1, tanh, sinh, cosh, arctanh, arcsinh, arccosh, cbrt, arctan, arctan2, arcsin,
arccos, power and NumPy's.

    python asv_bench/tools/vmath_ulp.py [--n 4000000] [--seed 0] [--only tanh,exp]

Runs each function through a compiled lazyarray kernel (eager tier off) over several ranges
of random arguments and prints, per function, dtype and range: the maximum ulp distance to
NumPy, the share of results that differ at all, and the distance to the correctly rounded
result: for float32, float64 NumPy rounded to float32; for float64, NumPy's long double
function rounded to float64 (where long double is wider), ours and then NumPy's float64
(maximum, and the share that differ). docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse

import numpy as np

import lazyarray as la

TRIG_BIG = 2.0 ** 30
LONG = np.finfo(np.longdouble).nmant >= 63  # x87 extended or quad: a float64 reference
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310, -1e-310,
         2.2250738585072014e-308, 1.0, -1.0, np.pi, 1e300, -1e300, 1.7976931348623157e308,
         6381956970095103.0 * 2.0 ** 797]


def ulp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ib = np.dtype(f"i{a.itemsize}")
    d = np.abs(a.view(ib).astype(np.int64) - b.view(ib).astype(np.int64))
    d[np.isnan(a) & np.isnan(b)] = 0
    return d


def ranges(name: str, n: int, rng) -> dict[str, np.ndarray]:
    if name == "exp2":
        k = np.arange(-1080.0, 1030.0)
        return {"[-1, 1]": rng.uniform(-1, 1, n), "[-1080, 1030]": rng.uniform(-1080, 1030, n),
                "[-1076, -1020] (subnormal results)": rng.uniform(-1076, -1020, n),
                "integers, and halfway": np.concatenate([k, k + 0.5]), "specials": np.array(EDGES)}
    if name == "exp":
        return {"[-1, 1]": rng.uniform(-1, 1, n), "[-750, 710]": rng.uniform(-750, 710, n),
                "[-746, -708] (subnormal results)": rng.uniform(-746, -708, n),
                "[700, 710]": rng.uniform(700, 710, n),
                "specials": np.array(EDGES + [-745.1332191019412, 709.782712893384,
                                              709.7827128933841, -708.3964185322641])}
    if name == "expm1":
        return {"[-0.35, 0.35]": rng.uniform(-0.35, 0.35, n), "[-3, 3]": rng.uniform(-3, 3, n),
                "[-750, 710]": rng.uniform(-750, 710, n),
                "[-1e-8, 1e-8]": rng.uniform(-1e-8, 1e-8, n),
                "specials": np.array(EDGES + [-45.0, 709.782712893384, 709.7827128933841])}
    if name == "tanh":
        return {"[-1e-3, 1e-3]": rng.uniform(-1e-3, 1e-3, n), "[-3, 3]": rng.uniform(-3, 3, n),
                "[-25, 25]": rng.uniform(-25, 25, n),
                "+-exp(U[-745, 3])": np.exp(rng.uniform(-745, 3, n)) * rng.choice([-1, 1], n),
                "specials": np.array(EDGES + [18.7, 19.06, 20.0, 2.0 ** -28, 2.0 ** -54])}
    if name == "arctan":
        eighths = np.arange(-9, 10) / 8.0
        return {"[-1.1, 1.1]": rng.uniform(-1.1, 1.1, n),
                "+-exp(U[-745, 709])": np.exp(rng.uniform(-745, 709, n)) * rng.choice([-1, 1], n),
                "k/8 and their neighbours": np.concatenate(
                    [eighths, np.nextafter(eighths, 0), np.nextafter(eighths, 2)]),
                "specials": np.array(EDGES + [1 / 16, 3 / 16, 2.0 ** 54])}
    if name in ("arcsin", "arccos"):
        return {"[-1, 1]": rng.uniform(-1, 1, n),
                "+-(1 - exp(U[-37, 0]))": (1 - np.exp(rng.uniform(-37, 0, n)))
                * rng.choice([-1, 1], n),
                "+-exp(U[-745, 0])": np.exp(rng.uniform(-745, 0, n)) * rng.choice([-1, 1], n),
                "specials": np.array(EDGES + [0.5, -0.5, 0.9999999999999999])}
    if name == "cbrt":
        return {"+-exp(U[-745, 709])": np.exp(rng.uniform(-745, 709, n)) * rng.choice([-1, 1], n),
                "[-10, 10]": rng.uniform(-10, 10, n),
                "subnormal": rng.uniform(0, 2.2250738585072014e-308, n // 4),
                "cubes of -1000..999, powers of 2": np.concatenate(
                    [np.arange(-1000.0, 1000.0) ** 3, 2.0 ** np.arange(-1074, 1024)]),
                "specials": np.array(EDGES + [2.0 ** -960, 2.0 ** 960])}
    if name == "arcsinh":
        return {"[-1e-3, 1e-3]": rng.uniform(-1e-3, 1e-3, n), "[-3, 3]": rng.uniform(-3, 3, n),
                "+-exp(U[-745, 709])": np.exp(rng.uniform(-745, 709, n)) * rng.choice([-1, 1], n),
                "specials": np.array(EDGES + [2.0 ** 28, 2.0 ** 28 - 1])}
    if name == "arccosh":
        return {"1 + exp(U[-37, 0])": 1 + np.exp(rng.uniform(-37, 0, n)),
                "[1, 5]": rng.uniform(1, 5, n), "exp(U[0, 709])": np.exp(rng.uniform(0, 709, n)),
                "specials": np.array(EDGES + [1.0000000000000002, 2.0 ** 28, 2.0 ** 28 + 1])}
    if name == "arctanh":
        return {"[-1e-3, 1e-3]": rng.uniform(-1e-3, 1e-3, n), "[-1, 1]": rng.uniform(-1, 1, n),
                "+-(1 - exp(U[-37, -1]))":
                    (1 - np.exp(rng.uniform(-37, -1, n))) * rng.choice([-1, 1], n),
                "+-exp(U[-745, -1])": np.exp(rng.uniform(-745, -1, n)) * rng.choice([-1, 1], n),
                "specials": np.array(EDGES + [0.9999999999999999, 1.0000000000000002, 0.5])}
    if name in ("sinh", "cosh"):
        return {"[-1e-3, 1e-3]": rng.uniform(-1e-3, 1e-3, n), "[-3, 3]": rng.uniform(-3, 3, n),
                "[-30, 30]": rng.uniform(-30, 30, n), "[-712, 712]": rng.uniform(-712, 712, n),
                "[700, 710.48]": rng.uniform(700, 710.48, n),
                "specials": np.array(EDGES + [22.0, 21.999999999999996, 710.4758600739439,
                                              710.475860073944, 2.0 ** -28])}
    if name == "log1p":
        return {"[-1, 1]": rng.uniform(-1, 1, n), "[-1e-8, 1e-8]": rng.uniform(-1e-8, 1e-8, n),
                "+-exp(U[-745, 709])":
                    np.exp(rng.uniform(-745, 709, n)) * rng.choice([-1, 1], n),
                "specials": np.array(EDGES + [-1.0, -1.5, 2.0 ** -54])}
    if name in ("log2", "log10"):
        return {"exp(U[-745, 709])": np.exp(rng.uniform(-745, 709, n)),
                "[0.5, 2]": rng.uniform(0.5, 2.0, n),
                "subnormal": rng.uniform(0, 2.2250738585072014e-308, n // 4),
                "powers of 2 and 10": np.concatenate([2.0 ** np.arange(-1074, 1024),
                                                      10.0 ** np.arange(-323, 309)]),
                "specials": np.array(EDGES)}
    if name == "log":
        return {"exp(U[-745, 709])": np.exp(rng.uniform(-745, 709, n)),
                "[0.5, 2]": rng.uniform(0.5, 2.0, n),
                "subnormal": rng.uniform(0, 2.2250738585072014e-308, n // 4),
                "specials": np.array(EDGES)}
    k = rng.integers(1, int(TRIG_BIG * 2 / np.pi), n)
    return {"[-1e-3, 1e-3]": rng.uniform(-1e-3, 1e-3, n),
            "[-pi, pi]": rng.uniform(-np.pi, np.pi, n),
            "[-1e3, 1e3]": rng.uniform(-1e3, 1e3, n),
            "[-1e6, 1e6]": rng.uniform(-1e6, 1e6, n),
            "[-2^30, 2^30]": rng.uniform(-TRIG_BIG, TRIG_BIG, n),
            "near k*pi/2, k < 2^30": np.concatenate([k * (np.pi / 2),
                                                     np.nextafter(k * (np.pi / 2), 0)]),
            "|x| in [1e6, 1e300] (log-uniform)":
                np.exp(rng.uniform(np.log(1e6), np.log(1e300), n)) * rng.choice([-1, 1], n),
            "specials": np.array(EDGES)}


def pairs(n: int, rng) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """arctan2's (y, x) ranges."""
    mag = lambda k: np.exp(rng.uniform(-k, k, n)) * rng.choice([-1, 1], n)  # noqa: E731
    near = rng.uniform(-1, 1, n)
    edges = np.array(EDGES)
    ey, ex = (a.ravel() for a in np.meshgrid(edges, edges))
    return {"N(0, 1) each": (rng.standard_normal(n), rng.standard_normal(n)),
            "+-exp(U[-20, 20]) each": (mag(20), mag(20)),
            "+-exp(U[-700, 700]) each": (mag(700), mag(700)),
            "|y| near |x|": (near, near * (1 + rng.uniform(-1e-3, 1e-3, n))),
            "specials x specials": (ey, ex)}


def power_pairs(n: int, rng) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """power's (x, y) ranges: the results span every binade, overflow and the subnormals."""
    wide = np.exp(rng.uniform(-700, 700, n))
    edges = np.array(EDGES + [2.0, -2.0, 0.5, 3.0, -3.0, 2.5, 2.0 ** 53, 1023.0, -1075.0])
    ey, ex = (a.ravel() for a in np.meshgrid(edges, edges))
    return {"x U[0.1, 10], y U[-3, 3]": (rng.uniform(0.1, 10, n), rng.uniform(-3, 3, n)),
            "x U[0.5, 2], y U[-700, 700]": (rng.uniform(0.5, 2, n), rng.uniform(-700, 700, n)),
            "x exp(U[-700, 700]), |y log x| < 700": (
                wide, rng.uniform(-700, 700, n) / np.abs(np.log(wide))),
            "x 1 + U[-1e-9, 1e-9], y U[-1e11, 1e11]": (
                1 + rng.uniform(-1e-9, 1e-9, n), rng.uniform(-1e11, 1e11, n)),
            "x -U[0.1, 10], y integers": (
                -rng.uniform(0.1, 10, n), np.round(rng.uniform(-40, 40, n))),
            "subnormal results": (rng.uniform(1, 3, n), rng.uniform(-1100, -400, n)),
            "specials x specials": (ex, ey)}


_FUNCTIONS = ("exp", "exp2", "sin", "cos", "log", "log2", "log10", "log1p", "expm1", "tanh", "sinh",
              "cosh", "arctanh", "arcsinh", "arccosh", "cbrt", "arctan", "arctan2", "arcsin",
              "arccos", "power")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4_000_000, help="arguments per range")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated functions (default all)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    total = 0
    print("| function | dtype | range | max ulp vs NumPy | differing | max ulp vs correctly rounded |")
    print("|---|---|---|---|---|---|")
    with la.options(backend="cpu", eager_threshold=0), np.errstate(all="ignore"):
        for name in args.only.split(",") if args.only else _FUNCTIONS:
            ref = getattr(np, name)
            cases = pairs(args.n, rng) if name == "arctan2" else power_pairs(args.n, rng) \
                if name == "power" else ranges(name, args.n, rng)
            for label, x64 in cases.items():
                for dtype in (np.float64, np.float32):
                    if name == "arctan2":  # (the long double column takes y and x as one)
                        y, x = (a.astype(dtype) for a in x64)
                        got = np.asarray(la.arctan2(la.asarray(y), la.asarray(x)))
                        ref = lambda a, y=y: np.arctan2(y.astype(a.dtype), a)  # noqa: E731
                    elif name == "power":  # (the reference columns take x and y as one)
                        x, y = (a.astype(dtype) for a in x64)
                        got = np.asarray(la.power(la.asarray(x), la.asarray(y)))
                        ref = lambda a, y=y: np.power(a, y.astype(a.dtype))  # noqa: E731
                    else:
                        x = x64.astype(dtype)
                        got = np.asarray(getattr(la, name)(la.asarray(x)))
                    d = ulp(got, ref(x))
                    cr = ""
                    if dtype == np.float32:
                        cr = str(ulp(got, ref(x.astype(np.float64)).astype(np.float32)).max())
                    elif LONG:  # float64 against long double's result, rounded: ours / NumPy's
                        near = ref(x.astype(np.longdouble)).astype(np.float64)
                        cr = (f"{ulp(got, near).max()} ({(ulp(got, near) > 0).mean():.3%}) / "
                              f"{ulp(ref(x), near).max()} ({(ulp(ref(x), near) > 0).mean():.3%})")
                    total += x.size
                    print(f"| {name} | {np.dtype(dtype).name} | {label} | {d.max()} | "
                          f"{(d > 0).mean():.3%} | {cr} |", flush=True)
    print(f"\n{total:,} arguments")


if __name__ == "__main__":
    main()
