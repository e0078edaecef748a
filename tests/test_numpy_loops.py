"""Compiled float math gives NumPy's values bit for bit: kernels call NumPy's own loops
(ops/loops.py, backends/numba_ufunc.py) in every kernel shape, on every CPU NumPy dispatches
for. `math="fast"` (lazyarray's own formulas) is tested for accuracy in test_elementwise.py."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lazyarray as la
from lazyarray.ops import loops
from lazyarray.ops.table import OPS

UNARY = sorted(n for n in loops.LOOP_OPS if OPS[n].nin == 1)
BINARY = sorted(n for n in loops.LOOP_OPS if OPS[n].nin == 2)
SIZES = [5, 1001, 70_001]  # the interpreter, a kernel with a partial block, many blocks


def _args(name: str, dtype, n: int, seed: int = 0) -> list[np.ndarray]:
    """Arguments in each op's domain and beyond it (NaN, inf, signed zeros, huge values)."""
    rng = np.random.default_rng(seed)
    wide = {"arccosh": (0.5, 40.0), "arctanh": (-1.1, 1.1), "arcsin": (-1.1, 1.1),
            "arccos": (-1.1, 1.1), "log": (-0.5, 50.0), "log2": (-0.5, 50.0),
            "log10": (-0.5, 50.0), "log1p": (-1.5, 50.0), "power": (0.0, 5.0),
            "float_power": (0.0, 5.0)}
    lo, hi = wide.get(name, (-30.0, 30.0))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-310, 1.0, -1.0,
                        710.0, -746.0, 1e6, 3.0e38])
    out = []
    for k in range(OPS[name].nin):
        x = rng.uniform(lo, hi, n)
        x[rng.integers(0, n, min(n, len(special)))] = special[:min(n, len(special))]
        out.append(np.roll(x, 3 * k).astype(dtype))
    return out


def _same(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and \
        got.tobytes() == want.tobytes()


def test_every_numpy_loop_op_has_its_loop_here():
    """On this NumPy every op of the table's `numpy_loop` rows finds its loop for float32 and
    float64 (float_power has no float32 loop in NumPy: its float32 inputs widen)."""
    found = loops.numpy_loops()
    want = {(n, d) for n in loops.LOOP_OPS for d in loops.DTYPES} - {("float_power", "float32")}
    assert want <= set(found)
    assert all(isinstance(a, int) and a for a, _ in found.values())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_compiled_math_is_numpys_bit_for_bit(name, dtype):
    """Alone, fused after arithmetic, strided, and summed: the same bits as NumPy."""
    f = getattr(la, name)
    g = getattr(np, name)
    for n in SIZES:
        xs = _args(name, dtype, n)
        with la.options(eager_threshold=0 if n > 5 else 32_768):
            lx = [la.asarray(x) for x in xs]
            assert _same(f(*lx), g(*xs)), (name, dtype, n)
            two = np.asarray(2, dtype)
            assert _same(f(*(v * two for v in lx)), g(*(x * two for x in xs))), (name, n)
            assert _same(f(*(v[::3] for v in lx)), g(*(x[::3] for x in xs))), (name, n)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_kernel_shape_calls_numpys_loops(dtype):
    """Loops (1-d, 2-d, strided, streamed), nested calls, reductions (rows, columns, the
    whole array), row fusions (softmax), scans, argmax and in-place updates: every one
    compiles (no interpreter run) and matches NumPy exactly where NumPy computes the same
    additions (elementwise results, max, argmax, a scan's running value)."""
    rng = np.random.default_rng(1)
    X = (rng.standard_normal((300, 257)) * 3).astype(dtype)
    x = X.ravel()
    programs = {
        "loop": lambda m, X, x: m.exp(x + 1) * m.sin(x),
        "2-d strided": lambda m, X, x: m.tanh(X[::2, 1::3]) - m.cos(X[1::2, ::3]),
        "nested": lambda m, X, x: m.exp(m.sin(x)) + m.log1p(m.abs(x)),
        "binary nested": lambda m, X, x: m.arctan2(m.sin(x), m.cos(x) + 2) ** 1.5,
        "row max": lambda m, X, x: m.log(m.abs(X) + 1).max(axis=1),
        "column max": lambda m, X, x: m.cos(X).max(axis=0),
        "whole max": lambda m, X, x: m.sinh(X / 4).max(),
        "softmax": lambda m, X, x: m.exp(X - X.max(axis=1, keepdims=True)),
        "row values": lambda m, X, x: m.exp(m.sin(X) - m.log(m.abs(X).max(axis=1,
                                                                         keepdims=True))),
        "scan": lambda m, X, x: m.maximum.accumulate(m.expm1(X), axis=1),
        "argmax": lambda m, X, x: m.argmax(m.sin(x) * m.cos(x)),
    }
    before = la.cache_info()["interpreter_runs"]
    with la.options(eager_threshold=0):
        for name, f in programs.items():
            assert _same(f(la, la.asarray(X), la.asarray(x)), f(np, X, x)), name
        a, an = la.asarray(X.copy()), X.copy()
        a[1:, ::2] = la.exp(a[:-1, ::2] / 8)
        an[1:, ::2] = np.exp(an[:-1, ::2] / 8)
        assert _same(a, an)
    assert la.cache_info()["interpreter_runs"] == before


def test_kernels_call_numpys_loops_in_blocks():
    """The fused loop hands NumPy's loop a block of arguments at a time (one call per block,
    not per element), and checks the results for floating-point events after each call."""
    x = la.asarray(np.linspace(-3, 3, 100_000))
    with la.options(eager_threshold=0):
        (k,) = la.explain(la.exp(x * 2.0) + 1.0).kernels
        (s,) = la.explain(la.exp(x * 2.0).sum()).kernels
    assert "_h.numpy_block_exp(" in k.source and "_h.numpy_loop_exp(" not in k.source
    assert "_h.numpy_block_exp(" in s.source
    with la.options(eager_threshold=0, math="fast"):
        (f,) = la.explain(la.exp(x * 2.0) + 1.0).kernels
    assert "numpy_" not in f.source and "_h.exp(" in f.source


def test_floating_point_warnings_from_numpys_loops():
    """An overflow inside NumPy's loop, called from a kernel, warns as NumPy does, at the line
    that forces the value; a quiet one stays quiet."""
    x = la.asarray(np.array([1.0, 2.0, 800.0] * 20_000))
    with la.options(eager_threshold=0), np.errstate(over="warn"):
        with pytest.warns(RuntimeWarning, match="overflow") as rec:
            np.asarray(la.exp(x) + 1)
        assert rec[0].filename == __file__
    with la.options(eager_threshold=0), np.errstate(all="raise"):
        np.asarray(la.exp(x / 1000))  # nothing to report


def test_trace_tier_calls_numpys_loops():
    """Chains on tiny float64 arrays, compiled by the trace tier, give NumPy's bits too."""
    from lazyarray import trace_tier

    def chain(xp, x):
        return xp.sin(x * 1.01 + 0.1) - xp.log(x) + xp.tanh(x) ** 2.5 + xp.arctan2(x, 0.5)

    base = np.linspace(0.1, 3, 1000)
    runs = la.cache_info()["trace_kernel_runs"]
    for k in range(trace_tier.PROMOTE + 5):
        if k == trace_tier.PROMOTE:
            assert la.wait_compiles(120)
        x = base + k
        assert _same(chain(la, la.asarray(x) * 1.0), chain(np, x * 1.0)), k
    assert la.cache_info()["trace_kernel_runs"] - runs >= 5


def test_math_option_switches_kernels_both_ways():
    """A program run under math="fast" and then under the default compiles each form once and
    keeps them apart (no kernel of one serves the other)."""
    xn = np.linspace(-20, 20, 50_001)
    x = la.asarray(xn)
    with la.options(eager_threshold=0):
        exact = np.asarray(la.tanh(x) * 3)
        with la.options(math="fast"):
            fast = np.asarray(la.tanh(x) * 3)
        again = np.asarray(la.tanh(x) * 3)
    assert _same(exact, np.tanh(xn) * 3) and _same(again, exact)
    assert np.allclose(fast, exact, rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match="math must be"):
        with la.options(math="exact"):
            pass


def test_a_kernel_from_the_disk_cache_links_to_this_processs_loops(tmp_path):
    """A kernel compiled in one process and loaded from the disk cache by another calls the
    loops of the process that loads it (by name: no address is kept in the machine code)."""
    script = textwrap.dedent("""
        import numpy as np, lazyarray as la
        x = np.linspace(-5, 5, 70_001)
        with la.options(eager_threshold=0):
            got = np.asarray(la.exp(la.asarray(x) * 0.5) + la.sin(la.asarray(x)))
        assert got.tobytes() == (np.exp(x * 0.5) + np.sin(x)).tobytes()
        info = la.cache_info()
        print(info["compiles"], info["disk_hits"])
    """)
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (tuple(map(int, r.stdout.split())) for r in runs)
    assert first[0] >= 1 and second[1] >= 1 and second[0] == 0
