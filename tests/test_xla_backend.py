"""The xla backend (`options(backend="xla")`, lazyarray/backends/xla.py) on JAX's CPU client:
NumPy is the oracle for values, dtypes and shapes; the counters say what was compiled, what
crossed to and from the device and what ran on the host.

Each test evaluates many results in one `la.evaluate` where it can: one XLA program each,
so that the file stays fast. The whole differential suite runs on this backend in the slow
`test_differential_suite_on_xla` (a subprocess with ``LAZYARRAY_TEST_BACKEND=xla``).
"""

import os
import subprocess
import sys
import warnings

os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 "
                                   "--xla_llvm_disable_expensive_passes=true")

import numpy as np
import pytest

import lazyarray as la
from tests.helpers import assert_like_numpy

jax = pytest.importorskip("jax")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def xla():
    """Every evaluation on XLA, even tiny ones; counters reset."""
    with la.options(backend="xla", eager_threshold=0):
        la.reset_stats()
        yield


def _count(name: str) -> int:
    return la.cache_info()[name]


def _check_all(got: list, expected: list, names: list) -> None:
    la.evaluate(*got)
    for g, e, n in zip(got, expected, names, strict=True):
        try:
            assert_like_numpy(g, e)
        except AssertionError as exc:
            raise AssertionError(f"{n}: {exc}") from None


SPECIAL = {
    "b": [True, False, True, False, True, True, False, True],
    "i": [0, 1, -1, 2, -3, 7, 100, -100],
    "u": [0, 1, 2, 3, 7, 100, 255, 5],
    "f": [0.0, -0.0, 1.5, -2.5, np.nan, np.inf, -np.inf, 0.25],
    "c": [0, 1 + 2j, -1.5j, np.nan + 1j, 3 - 4j, np.inf + 0j, 0.5 + 0.5j, -2],
}
UNARY = ["negative", "absolute", "sign", "square", "sqrt", "exp", "log", "sin", "cos", "tanh",
         "arctan", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "signbit",
         "logical_not", "invert", "reciprocal", "cbrt", "expm1", "log1p", "bitwise_count",
         "exp2", "log2", "deg2rad", "conjugate", "positive", "fabs"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power",
          "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
          "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
          "left_shift", "right_shift", "heaviside", "logaddexp", "gcd", "lcm",
          "float_power", "ldexp"]


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64", "uint8", "uint64",
                                   "float16", "float32", "float64", "complex128"])
def test_elementwise_ops_over_dtypes(xla, dtype):
    dt = np.dtype(dtype)
    a = np.asarray(SPECIAL[dt.kind], dtype=dt)
    b = np.roll(a, 3)
    if dt.kind in "iu":  # exponents and shift amounts in range for NumPy
        b = np.asarray([0, 1, 2, 3, 7, 8, 63, 70][:len(a)], dtype=dt)
    la_a, la_b = la.asarray(a), la.asarray(b)
    got, expected, names = [], [], []
    with np.errstate(all="ignore"):
        for name, args in [(n, (a,)) for n in UNARY] + [(n, (a, b)) for n in BINARY]:
            try:
                e = getattr(np, name)(*args)
            except (TypeError, ValueError):
                continue
            largs = (la_a,) if len(args) == 1 else (la_a, la_b)
            got.append(getattr(la, name)(*largs))
            expected.append(e)
            names.append(name)
    _check_all(got, expected, names)
    assert _count("xla_runs") == 1  # one program for the lot


@pytest.mark.parametrize("src, dst", [("float64", "int32"), ("float64", "int8"),
                                      ("float32", "int64"), ("float64", "uint8"),
                                      ("int64", "float32"), ("complex128", "float64"),
                                      ("float64", "bool"), ("int8", "uint64")])
def test_convert(xla, src, dst):
    a = np.asarray([0.0, 1.7, -2.7, 100.5, -0.0, 3.0, 127.0, 2.5]).astype(src)
    assert_like_numpy(la.asarray(a).astype(dst), a.astype(dst))


@pytest.mark.parametrize("dtype", ["bool", "int16", "uint32", "float32", "float64",
                                   "complex64"])
def test_reductions(xla, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((4, 5, 6)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a[1, 2, 3] = np.nan
    x = la.asarray(a)
    cases = [("sum", {}), ("sum", {"axis": 0}), ("sum", {"axis": (0, 2)}),
             ("prod", {"axis": 1}), ("max", {"axis": -1}), ("min", {}),
             ("any", {"axis": 1}), ("all", {}), ("mean", {"axis": 2}),
             ("argmax", {"axis": 1}), ("argmin", {}), ("cumsum", {"axis": 2}),
             ("cumprod", {"axis": 0}), ("sum", {"keepdims": True, "axis": 1})]
    got, expected, names = [], [], []
    for name, kw in cases:
        got.append(getattr(la, name)(x, **kw))
        expected.append(getattr(np, name)(a, **kw))
        names.append(f"{name}{kw}")
    for acc in ("maximum", "minimum"):
        if np.dtype(dtype).kind != "c":
            got.append(getattr(la, acc).accumulate(x, axis=1))
            expected.append(getattr(np, acc).accumulate(a, axis=1))
            names.append(acc + ".accumulate")
    _check_all(got, expected, names)


def test_views_slices_and_movement(xla):
    a = np.arange(120.0).reshape(4, 5, 6)
    x = la.asarray(a)
    got = [x[1:3, ::2, ::-1], x.T, x.reshape(20, 6)[::3], x[..., 2], x[None, :, 1],
           x.transpose(1, 0, 2).reshape(5, 24), la.broadcast_to(x[:, :1], (4, 5, 6)) + x,
           la.concatenate([x, x * 2], axis=1), la.flip(x, 0), la.swapaxes(x, 0, 2)[1:]]
    expected = [a[1:3, ::2, ::-1], a.T, a.reshape(20, 6)[::3], a[..., 2], a[None, :, 1],
                a.transpose(1, 0, 2).reshape(5, 24), np.broadcast_to(a[:, :1], (4, 5, 6)) + a,
                np.concatenate([a, a * 2], axis=1), np.flip(a, 0), np.swapaxes(a, 0, 2)[1:]]
    _check_all(got, expected, [str(i) for i in range(len(got))])


def test_slice_writes_while_expressions_are_pending(xla):
    a = np.arange(24.0).reshape(4, 6)
    x = la.asarray(a)
    before = x * 2  # pending: must keep the old version
    x[1:3, ::2] = -1.0
    x[:, 5] = x[:, 0] + 100
    x.T[2] = 7.0  # a write through a transposed view
    row = x[0]
    row[...] = 3.0  # through a view of a view
    n = a.copy()
    nb = n * 2
    n[1:3, ::2] = -1.0
    n[:, 5] = n[:, 0] + 100
    n.T[2] = 7.0
    n[0][...] = 3.0
    _check_all([before, x, x + 1], [nb, n, n + 1], ["before", "after", "after+1"])
    y = la.asarray(np.zeros(10, np.int32))
    y[::3] = la.arange(4, dtype=np.int32)
    y += 1
    z = np.zeros(10, np.int32)
    z[::3] = np.arange(4, dtype=np.int32)
    z += 1
    assert_like_numpy(y, z)


def test_gather(xla):
    a = np.arange(60.0).reshape(5, 12)
    x = la.asarray(a)
    i = np.array([4, 0, -1, 2])
    j = la.asarray(np.array([[1, 4], [0, 3]]))
    got = [x[i], x[:, i], x[i, i], x[j, 2], x[la.argsort(x[:, 0])], x[x[:, 0] > 20]]
    expected = [a[i], a[:, i], a[i, i], a[np.array([[1, 4], [0, 3]]), 2],
                a[np.argsort(a[:, 0])], a[a[:, 0] > 20]]
    for g, e in zip(got, expected, strict=True):
        assert_like_numpy(g, e)


def test_gather_out_of_bounds_raises_numpys_error(xla):
    x = la.asarray(np.arange(10.0))
    idx = la.asarray(np.array([1, 2, 3])) * 5  # computed: checked when it runs
    with pytest.raises(IndexError, match="out of bounds"):
        np.asarray(x[idx])


def test_integer_power_negative_exponent_raises(xla):
    x = la.asarray(np.array([2, 3, 4]))
    e = la.asarray(np.array([1, -1, 2]))
    with pytest.raises(ValueError, match="negative integer powers"):
        np.asarray(x ** e)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_dot(xla, dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
    b = (rng.standard_normal((5, 2)) * 3).astype(dtype)
    v = (rng.standard_normal(5) * 3).astype(dtype)
    x, y, w = la.asarray(a), la.asarray(b), la.asarray(v)
    _check_all([x @ y, x[0] @ w, w @ y, la.dot(x[1], y)],
               [a @ b, a[0] @ v, v @ b, np.dot(a[1], b)], ["batched", "mv", "vm", "dot"])


def _softmax(xp, z):
    e = xp.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _heat(xp, u, steps, dt):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + dt * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def test_whole_programs(xla):
    rng = np.random.default_rng(2)
    z = rng.standard_normal((8, 16))
    u = rng.random(64)
    assert_like_numpy(_softmax(la, la.asarray(z)), _softmax(np, z))
    assert_like_numpy(_heat(la, la.asarray(u), 5, 0.1), _heat(np, u, 5, 0.1))
    p = rng.random((100, 2))
    d = la.sqrt(((la.asarray(p)[:, None, :] - la.asarray(p)[None, :, :]) ** 2).sum(-1))
    nd = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1))
    assert_like_numpy(d, nd)
    assert_like_numpy(la.where(d > 0.5, d, 0).mean(axis=0), np.where(nd > 0.5, nd, 0).mean(0))


def test_results_stay_on_the_device(xla):
    a = np.random.default_rng(3).random(1000)
    _dask_leaf_seen()  # (once the dask backend has seen a dask leaf, every evaluation asks)
    x = la.asarray(a)
    y = la.sin(x) * 2 + 1
    la.evaluate(y)
    assert _count("xla_to_device") == 1 and _count("xla_to_host") == 0
    for _ in range(3):  # a chain of evaluations moves nothing
        y = la.tanh(y) * 1.5 + y.mean()
        la.evaluate(y)
    z = x * 3  # the input's device copy is kept in its node: not uploaded again
    la.evaluate(z)
    assert _count("xla_to_device") == 1 and _count("xla_to_host") == 0
    e = np.sin(a) * 2 + 1
    for _ in range(3):
        e = np.tanh(e) * 1.5 + e.mean()
    assert_like_numpy(y, e)  # the one read: to the host
    assert _count("xla_to_host") == 1
    np.asarray(y)  # read again: the host copy is kept
    assert _count("xla_to_host") == 1
    assert_like_numpy(z, a * 3)


def _dask_leaf_seen() -> None:
    """Make the dask backend look at every graph's leaves, as after a program that used
    `from_dask` (it must not read a device buffer to do so: that is a transfer)."""
    dask = pytest.importorskip("dask.array")
    with la.options(backend="cpu"):
        np.asarray(la.from_dask(dask.ones(4, chunks=2)) + 1)


def test_repeat_calls_with_new_values_compile_nothing(xla):
    u, n = la.asarray(np.linspace(0, 1, 50)), np.linspace(0, 1, 50)
    for dt in (0.1, 0.2, 0.05, 0.01):  # a changing scalar is an argument of the program
        u = u + dt * (la.roll(u, 1) - u)
        n = n + dt * (np.roll(n, 1) - n)
        la.evaluate(u)
    assert _count("xla_compiles") == 1
    assert_like_numpy(u, n)
    for k in range(3):  # new arrays of the same shapes
        r = la.asarray(np.full(50, float(k))) * 2.5 - 1
        assert_like_numpy(r, np.full(50, float(k)) * 2.5 - 1)
    assert _count("xla_compiles") == 2
    for s in (1000, -1000):  # a changing integer constant: the same program, its own value
        a = np.array([-128, 0, 127], np.int8)
        assert_like_numpy(la.less(la.asarray(a), s), np.less(a, s))


def test_compiles_counted_are_the_compiles_jax_does(xla, caplog):
    """Every XLA compile is counted in `xla_compiles` (a program is compiled ahead of time,
    then called through `jax.jit`'s dispatch, which must find that executable): JAX's own
    compile log agrees, over new values, donated buffers and a new shape."""
    import logging

    jax.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level(logging.WARNING, logger="jax"):
            before = _count("xla_compiles")
            x = la.asarray(np.arange(3000.0)) * 1.0
            for k in range(4):
                x[10:20] = x[20:30] * float(k)  # (the old version donated)
                y = la.exp(x / 3000.0) + float(k)
                la.evaluate(x, y)
            z = la.asarray(np.ones(77)) * 2.0  # a new shape
            la.evaluate(z)
            counted = _count("xla_compiles") - before
    finally:
        jax.config.update("jax_log_compiles", False)
    logged = [r for r in caplog.records if r.getMessage().startswith("Compiling jit(given_kept)")]
    assert counted >= 2 and len(logged) == counted


def test_division_by_a_broadcast_scalar_rounds_as_numpy(xla):
    a = np.array([1.125, 9.0], np.float32)
    assert_like_numpy(la.asarray(a) / np.float32(2.5), a / np.float32(2.5), rtol=0, atol=0)
    i, j = np.arange(1, 13, dtype=np.int32).reshape(3, 4), np.array([[48], [7], [41]], np.int32)
    assert_like_numpy(la.asarray(i) / la.asarray(j), i / j, rtol=0, atol=0)


def test_subnormals(xla):
    a = np.array([0.0, 1.0], np.float32)
    b = np.array([1e-45, 1e-45], np.float32)  # subnormal inputs: the host's values
    assert_like_numpy(la.asarray(a) + la.asarray(b), a + b, rtol=0, atol=0)
    assert_like_numpy(la.asarray(np.array([1.0, 1.0])) / la.asarray(np.array([1e-308] * 2)),
                      np.array([1.0, 1.0]) / 1e-308)
    assert_like_numpy(la.spacing(la.asarray(a)), np.spacing(a), rtol=0, atol=0)
    assert _count("xla_fallbacks") >= 1


def test_subnormal_inputs_are_known_without_a_device_check(xla):
    """An upload holding a subnormal is marked as it goes up; a program of clean inputs runs
    on the device without waiting for a check (its results are clean: XLA flushes, a host
    fallback's results too as they cross into the program)."""
    from lazyarray.backends import xla as backend

    clean = la.asarray(np.array([1.0, 2.0], np.float32))
    dirty = la.asarray(np.array([1e-45, 3.0], np.float32))
    y = clean * 2 + 1
    la.evaluate(y)
    assert not backend.holds_subnormal(y._node.device)
    assert_like_numpy(y, np.array([3.0, 5.0], np.float32), rtol=0, atol=0)
    z = dirty * 4
    la.evaluate(z)  # the host's values, 4e-45 kept
    assert_like_numpy(z, np.array([1e-45, 3.0], np.float32) * 4, rtol=0, atol=0)
    assert "subnormal" in backend.last_run().rerun and _count("xla_fallbacks") >= 1
    assert backend.holds_subnormal(z._node.device)  # (uploaded from the host: marked)
    a, b = np.array([1e-300 + 0j, 1 + 0j]), np.array([1e10 + 0j, 2 + 0j])
    q = la.asarray(a) / la.asarray(b)  # complex division: on the host inside the program
    la.evaluate(q)
    assert not backend.holds_subnormal(q._node.device)  # 1e-310, flushed into XLA
    assert q._node.device[0] == 0 and backend.last_run().rerun == ""


def test_writes_donate_dead_versions_and_keep_observed_ones(xla):
    """A write whose old version nothing observes gives its buffer to XLA (donation: the
    update runs in place, `buffers_donated`); a pending reader of the old version, a copy or
    a view keeps it, and every value is NumPy's."""
    ref = np.zeros(1000) + 1
    x = la.zeros(1000) + 1
    la.evaluate(x)
    doubled, copied, window = x * 2, x.copy(), x[2:6]  # readers of the version before
    ref_doubled, ref_copied, ref_window = ref * 2, ref.copy(), ref[2:6]
    before = _count("buffers_donated")
    for i in range(6):
        x[i] = i
        ref[i] = i
        la.evaluate(x)
    assert _count("buffers_donated") - before == 5  # all but the first write
    from lazyarray.backends import xla as backend

    assert "donated float64[1000]" in str(backend.last_run())
    la.evaluate(doubled, copied)
    for got, want in ((x, ref), (doubled, ref_doubled), (copied, ref_copied),
                      (window, ref_window)):
        assert_like_numpy(got, want, rtol=0, atol=0)
    with warnings.catch_warnings():  # (XLA warns about a donated buffer it cannot use)
        warnings.simplefilter("error")
        y = la.arange(8.0) * 3
        la.evaluate(y)
        y[1:3] = y[5:7]  # the update reads the version it overwrites
        want = np.arange(8.0) * 3
        want[1:3] = want[5:7]
        assert_like_numpy(y, want, rtol=0, atol=0)


def test_loops_over_rows_and_windows_compile_one_program(xla):
    """Where a slice reads and an update writes are arguments of the program: a loop over
    rows, strided rows, columns or windows compiles one program per kind, not one per
    position, with NumPy's values."""
    x = la.zeros((30, 40), dtype=np.float32) + 1
    ref = np.ones((30, 40), np.float32)
    la.evaluate(x)
    before = _count("xla_compiles")
    for i in range(8):
        x[i, 3:40:3] = float(i)
        ref[i, 3:40:3] = i
        la.evaluate(x)
        x[:, i] = x[:, i + 1] * 2
        ref[:, i] = ref[:, i + 1] * 2
        la.evaluate(x)
    assert _count("xla_compiles") - before == 2  # one program per kind of write
    assert_like_numpy(x, ref, rtol=0, atol=0)
    for i in range(3):  # reversed rows: a scatter at a position
        x[i, ::-2] = x[i + 1, 1::2]
        ref[i, ::-2] = ref[i + 1, 1::2]
    assert_like_numpy(x, ref, rtol=0, atol=0)
    before = _count("xla_compiles")
    for i in range(8):
        w = x[i:i + 5, 2:30:4] * 2 - x[i + 1:i + 6, 1:29:4]
        assert_like_numpy(w, ref[i:i + 5, 2:30:4] * 2 - ref[i + 1:i + 6, 1:29:4])
    assert _count("xla_compiles") - before == 1


def _growing(xp, d, m, k):
    """A program over arrays whose length varies: elementwise math, reductions over the
    rows (whose padding must not count: maxima of negatives, minima of positives, products,
    all/any, integer extremes), row sums, argmax along rows, a row-wise product, a scan,
    whole-row slices and updates, and an integer power whose exponent is negative only where
    a zero padding row would put it."""
    x, mm, ki = xp.asarray(d), xp.asarray(m), xp.asarray(k)
    neg = -xp.abs(x) - 1.0
    y = xp.tanh(x) * 2 + x.mean() + (mm.sum(axis=1) > 1)
    z = mm * x[:, None]
    z[:, 1] = z[:, 2] * 2
    z[0, :] = -1.0
    return [y, z, neg.max(), (neg + 3).min(), (x + 1).prod(), (x > -1).all(), (x > 2).any(),
            ki.max(), (-ki).min(), xp.argmax(mm, axis=1), mm @ xp.asarray(np.arange(3.0)),
            xp.cumsum(x), z[:, 1:].sum(axis=0), (ki + 1) ** (ki - 1)]


def test_lengths_that_vary_compile_per_size_bucket_not_per_length(xla):
    """A loop over growing lengths runs in size buckets (`xla_buckets`): the first two
    lengths compile their exact programs; from the third on, one program per bucket (the next of 16,
    20, 24, 28, 32, 40, ... rows), arrays padded to it on the way up and read back at their
    length. Values, dtypes and shapes NumPy's at every length, the padding rows never in a
    result, no host rerun (an integer power's check reads the rows in use only)."""
    from lazyarray.backends.xla_buckets import bucket

    assert [bucket(n) for n in (1, 16, 17, 20, 21, 33, 100, 1000, 1025, 10 ** 7)] == \
        [16, 16, 20, 20, 24, 40, 112, 1024, 1280, 10485760]
    rng = np.random.default_rng(5)
    lengths = [1000, 1003, 1010, 1024, 1017, 1030, 1100, 1279, 1280, 901]
    compiled = []
    for n in lengths:
        d, m = rng.random(n), rng.random((n, 3))
        k = rng.integers(1, 5, n)  # (a zero padding row: a negative exponent)
        before = _count("xla_compiles"), _count("fallbacks")
        got = _growing(la, d, m, k)
        la.evaluate(*got)
        compiled.append(_count("xla_compiles") - before[0])
        assert _count("fallbacks") == before[1], n
        if n not in lengths[:2]:
            assert "in a program built for a size bucket of" in str(la.explain())
        for g, e in zip(got, _growing(np, d, m, k), strict=True):
            assert_like_numpy(g, e)
            assert np.asarray(g).flags.c_contiguous
    # 1000, 1003 exact; 1010-1024 (1024's bucket); 1030-1280 (1280's); 901 (1024's)
    assert min(compiled[:3]) >= 1 and compiled[5] >= 1
    assert compiled[3:5] == [0, 0] and compiled[6:] == [0, 0, 0, 0]
    assert _count("xla_bucketed") > 0


def test_padded_arrays_stay_padded_until_read(xla):
    """A result of a bucket's program stays on the device in the bucket's rows; the next
    program of that bucket reads it as it is (no transfer, no compile), a program that
    cannot run in a bucket reads its rows in use, and a read on the host gives its own
    length; explain names both lengths."""
    from lazyarray.backends import xla as backend

    for n in (299, 300, 301):  # (the third length: buckets from now on)
        x = la.asarray(np.arange(n, dtype=np.float64))
        y = x * 2.0
        la.evaluate(y)
    assert la.explain().__str__().count("in a bucket of 320 rows") == 1  # the upload
    assert y._node.device.shape == (320,)
    up = _count("xla_to_device")
    z = (y + 1.0).sum()
    bucketed = _count("xla_bucketed")
    la.evaluate(z)  # (a structure never seen: its padded argument puts it in the bucket)
    assert _count("xla_to_device") == up
    assert _count("xla_bucketed") == bucketed + 1
    assert "301 rows in a program built for a size bucket of 320" in str(la.explain())
    assert float(z) == float((np.arange(301.0) * 2 + 1).sum())
    g = y[::-1] * 1.5  # reversed rows: not in a bucket, reads the 301 rows in use
    la.evaluate(g)
    assert "bucket" not in str(la.explain())
    assert_like_numpy(g, (np.arange(301.0) * 2)[::-1] * 1.5)
    host = np.asarray(y)
    assert host.shape == (301,) and host[-1] == 600.0
    assert "to host float64[301] in a bucket of 320 rows, 2560 bytes" in str(
        backend.last_run())


def test_buckets_can_be_turned_off(xla, monkeypatch):
    """`LAZYARRAY_XLA_BUCKETS=0` (read when the backend loads): every length its own
    program, as XLA compiles them."""
    from lazyarray.backends import xla as backend

    monkeypatch.setattr(backend, "BUCKETS", "0")
    before = _count("xla_compiles")
    for n in (500, 501, 502):
        y = la.asarray(np.ones(n)) * 3.0
        assert_like_numpy(y, np.ones(n) * 3.0)
    assert _count("xla_compiles") - before == 3


def test_float64_products_on_the_int8_unit_are_as_accurate_as_numpys(xla):
    """On a TPU a float64 product runs as int8 digit products (`xla_f64dot`): against the
    exact product (long double), its error is within its bound and no larger than NumPy's
    BLAS's on ordinary matrices; where the bound does not hold (small elements carrying a
    row's value, non-finite values, exponents past float32's) XLA's own product runs instead
    -- seen here by a stand-in that returns NaN. Integer-valued matrices come out exact."""
    import jax.numpy as jnp

    from lazyarray.backends import xla_f64dot

    la.evaluate(la.ones(3) * 2)  # (the backend loaded: JAX's 64-bit types on)

    def stand_in(a, b):
        return jnp.full((a.shape[0], b.shape[1]), np.nan)

    product = jax.jit(lambda a, b: xla_f64dot.dot(a, b, stand_in))
    rng = np.random.default_rng(9)
    cases = {
        "normal": (rng.standard_normal((120, 300)), rng.standard_normal((300, 90))),
        "uniform": (rng.random((120, 300)), rng.random((300, 90))),
        "scaled rows": (rng.random((120, 300)) * np.logspace(-20, 20, 120)[:, None],
                        rng.standard_normal((300, 90)) * 1e-6),
        "zero rows": (np.vstack([np.zeros((3, 300)), rng.random((5, 300))]),
                      rng.random((300, 7))),
    }
    for name, (a, b) in cases.items():
        got = np.asarray(product(a, b))
        assert not np.isnan(got).any(), name  # the integer product ran
        exact = a.astype(np.longdouble) @ b.astype(np.longdouble)
        magnitude = np.abs(a) @ np.abs(b)
        scale = np.where(magnitude > 0, magnitude, 1)
        err = float(np.max(np.abs(got - exact) / scale))
        blas = float(np.max(np.abs(a @ b - exact) / scale))
        assert err <= xla_f64dot.TOLERANCE, name
        assert err <= max(blas, 4 * np.finfo(np.float64).eps), (name, err, blas)
    ints = rng.integers(-1000, 1000, (60, 80)).astype(float), \
        rng.integers(-1000, 1000, (80, 40)).astype(float)
    assert np.array_equal(np.asarray(product(*ints)), ints[0] @ ints[1])
    carried = np.ones((4, 6)), np.ones((6, 3))
    carried[0][:, 1:] = 1e-10
    carried[1][0] = 0
    bad = rng.standard_normal((8, 8))
    bad[2, 3] = np.nan
    for name, (a, b) in {"small elements carry the value": carried,
                         "non-finite": (bad, np.ones((8, 8))),
                         "past float32's exponents": (np.full((4, 4), 1e200), np.ones((4, 4)))
                         }.items():
        assert np.isnan(np.asarray(product(a, b))).all(), name  # XLA's own product


def test_float64_products_through_the_backend_use_the_int8_unit_where_enabled(
        xla, monkeypatch):
    """`LAZYARRAY_XLA_F64_DOT=int8` (the default on a TPU, "auto"): W5's `maximum(A @ B +
    bias, 0)` in float64 within NumPy's accuracy, float32 products unchanged."""
    from lazyarray.backends import xla as backend
    from lazyarray.backends import xla_f64dot

    monkeypatch.setattr(xla_f64dot, "ENABLED", True)
    backend.cache_clear()  # (programs built before were lowered without it)
    rng = np.random.default_rng(3)
    a, b, bias = rng.random((64, 96)), rng.random((96, 48)), rng.random(48)
    got = np.asarray(la.maximum(la.asarray(a) @ la.asarray(b) + bias, 0))
    exact = np.maximum(a.astype(np.longdouble) @ b + bias, 0)
    assert np.max(np.abs(got - exact)) <= np.max(np.abs(np.maximum(a @ b + bias, 0) - exact)) \
        + 4 * np.finfo(np.float64).eps * np.max(exact)
    f32 = la.asarray(a.astype(np.float32)) @ la.asarray(b.astype(np.float32))
    assert_like_numpy(f32, a.astype(np.float32) @ b.astype(np.float32))
    backend.cache_clear()


def test_float64_computed_in_float32_when_asked(xla):
    """`options(xla_float64="float32")`: float64 (complex128) arrays computed and kept on
    the device in float32 (complex64), half the bytes up and down; their dtype stays
    float64, values within float32's precision; a later float64 program widens them."""
    rng = np.random.default_rng(4)
    a, b, c = rng.random(5000), rng.random(5000), rng.random((40, 30))
    z = rng.random(5000) + 1j * rng.random(5000)
    with la.options(xla_float64="float32"):
        up = _count("xla_to_device_bytes")
        x, y = la.asarray(a), la.asarray(b)
        r = la.sin(x) * y + x.mean()
        m = la.asarray(c) @ la.asarray(c.T)
        w = la.asarray(z) * 2 + 1j
        la.evaluate(r, m, w)
        assert _count("xla_to_device_bytes") - up == (a.nbytes + b.nbytes + 2 * c.nbytes
                                                       + z.nbytes) // 2  # (c and c.T)
        assert "float64 computed in float32" in str(la.explain())
        assert r._node.device.dtype == np.float32 and w._node.device.dtype == np.complex64
    for got, want in ((r, np.sin(a) * b + a.mean()), (m, c @ c.T), (w, z * 2 + 1j)):
        assert got.dtype == want.dtype and np.asarray(got).dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)
        assert not np.array_equal(np.asarray(got), want)  # (float32's rounding: it ran so)
    later = r * 2.0  # float64 again: the float32 buffer widened inside the program
    np.testing.assert_allclose(np.asarray(later), (np.sin(a) * b + a.mean()) * 2, rtol=2e-6)
    with pytest.raises(ValueError, match="xla_float64"):
        with la.options(xla_float64="half"):
            pass


def test_regions_are_boxes_exactly_when_numpy_says_so():
    """`xla_lower.box` reads a written region's box from its offset and strides alone; over
    random views of random arrays, the box holds exactly the view's elements (NumPy's own
    indices), and a region that is no box with positive steps is found not to be one."""
    from lazyarray.backends.xla_lower import box

    rng = np.random.default_rng(7)
    found = 0
    for _ in range(3000):
        shape = tuple(int(n) for n in rng.integers(1, 6, rng.integers(1, 4)))
        flat = np.arange(int(np.prod(shape))).reshape(shape)
        key = tuple(slice(int(rng.integers(0, n)), int(rng.integers(0, n + 1)),
                          int(rng.choice([1, 1, 2, 3, -1, -2]))) if rng.random() < 0.8
                    else int(rng.integers(0, n)) for n in shape)
        view = flat[key]
        if rng.random() < 0.3 and view.ndim > 1:
            view = view.transpose(rng.permutation(view.ndim))
        if rng.random() < 0.2 and view.size and view.flags.c_contiguous:
            view = view.reshape(-1)
        if not view.size:
            continue
        strides = tuple(st // flat.itemsize for st in view.strides)
        got = box(int(view.flat[0]), strides, view.shape, shape)
        if got is None:  # then no box with positive steps holds exactly these elements
            idx = np.unravel_index(np.sort(view.reshape(-1)), shape)
            spans = [np.unique(i) for i in idx]
            steps_ok = all(len(u) < 2 or len(set(np.diff(u))) == 1 for u in spans)
            whole = np.prod([len(u) for u in spans]) == view.size
            assert not (steps_ok and whole and (strides == tuple(abs(t) for t in strides))
                        and all(t > 0 or m == 1 for t, m in zip(strides, view.shape))), (
                shape, key, view.shape, strides)
            continue
        found += 1
        starts, steps, order, counts = got
        region = flat[tuple(slice(a, a + st * (c - 1) + 1, st)
                            for a, st, c in zip(starts, steps, counts))]
        assert np.array_equal(region, view.transpose(order).reshape(counts)), (shape, key)
    assert found > 500  # (888 of 3000 draws with this seed)


def test_fallbacks_are_counted_and_explained(xla):
    a = np.array([3.0, 1.0, 2.0, np.nan, 0.5])
    x = la.asarray(a)
    y = la.sort(x * 2) + 1  # sort: a library call, on the host inside the program
    assert_like_numpy(y, np.sort(a * 2) + 1)
    assert _count("xla_fallbacks") >= 1
    c = la.asarray(np.array([1 + 1j, np.inf + 0j]))
    assert_like_numpy(la.sqrt(c), np.sqrt(np.array([1 + 1j, np.inf + 0j])))
    text = str(la.explain())
    assert "backend: xla" in text and "on the host" in text and "cpu:" in text


def test_explain_names_the_device_and_transfers(xla):
    x = la.asarray(np.ones(100))
    y = x + 1
    plan = str(la.explain(y))
    assert "backend: xla" in plan
    la.evaluate(y)
    np.asarray(y)
    text = str(la.explain())
    assert "transfer to device float64[100] 800 bytes" in text
    assert "transfer to host float64[100] 800 bytes" in text


def test_small_host_work_stays_on_the_host():
    with la.options(backend="xla"):  # default eager threshold: tiny NumPy inputs
        la.reset_stats()
        x = la.asarray(np.arange(10.0))
        assert_like_numpy(x * 2 + 1, np.arange(10.0) * 2 + 1)
        assert _count("xla_runs") == 0


def test_jax_is_imported_only_when_the_backend_is_used():
    code = ("import sys, numpy as np, lazyarray as la\n"
            "x = (la.asarray(np.arange(100000.0)) * 2).sum()\n"
            "assert float(x) > 0 and 'jax' not in sys.modules\n"
            "with la.options(backend='xla'):\n"
            "    float((la.asarray(np.arange(100000.0)) * 2).sum())\n"
            "assert 'jax' in sys.modules\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("LAZYARRAY_BACKEND", None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_backend_from_the_environment():
    code = ("import numpy as np, lazyarray as la\n"
            "y = la.asarray(np.arange(100000.0)) + 1\n"
            "assert float(y.sum()) == float((np.arange(100000.0) + 1).sum())\n"
            "assert la.cache_info()['xla_runs'] >= 1\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu", LAZYARRAY_BACKEND="xla")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_programs_are_kept_on_disk_for_the_next_process(tmp_path):
    """JAX's persistent compilation cache, under lazyarray's cache directory: a second
    process loads the program the first one compiled (JAX's cache-hit event)."""
    code = ("import numpy as np, lazyarray as la, jax\n"
            "hits = []\n"
            "jax.monitoring.register_event_listener(\n"
            "    lambda e, **kw: hits.append(e) if e.endswith('cache_hits') else None)\n"
            "with la.options(backend='xla', eager_threshold=0):\n"
            "    y = (la.sin(la.asarray(np.arange(10.0))) * 3 + 1).sum()\n"
            "    assert abs(float(y) - float((np.sin(np.arange(10.0)) * 3 + 1).sum())) < 1e-12\n"
            "print('hits', len(hits))\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu", LAZYARRAY_CACHE_DIR=str(tmp_path),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")  # (this one compiles fast)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    outs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(proc.stdout.split()[-1])
    assert outs == ["0", "1"] and any((tmp_path / "xla").iterdir())


def test_accelerator_script_runs_on_the_cpu_client(capsys):
    from lazyarray.tools import xla_tpu

    assert xla_tpu.main(["--quick", "--workloads", "W1", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "W1" in out and "float64" in out and "jax.jit" in out


# the differential files (NumPy the oracle) whose `mode`/`compiled` tests run on xla: every
# file with such tests (the small ones together, in one process)
DIFFERENTIAL = ["tests/test_elementwise.py", "tests/test_reductions.py", "tests/test_programs.py",
                "tests/test_views.py", "tests/test_shapes_indexing.py", "tests/test_creation.py",
                " ".join(f"tests/test_{name}.py" for name in (
                    "array_protocol", "breadth", "errors", "gather", "jit", "layout", "library",
                    "view_rules", "version_fuzz"))]


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("path", DIFFERENTIAL,
                         ids=lambda p: "smaller-files" if " " in p else p.split("/")[-1])
def test_differential_suite_on_xla(path, tmp_path):
    # the `mode` tests' compiled variants; not the `test_compiled_*` ones, which ask for the
    # CPU backend by name (the CPU suite runs them)
    # (every module that can run in a size bucket's rows does: the padding is what is new)
    env = dict(os.environ, LAZYARRAY_TEST_BACKEND="xla", JAX_PLATFORMS="cpu",
               LAZYARRAY_XLA_BUCKETS="always",
               HYPOTHESIS_PROFILE="sim", LAZYARRAY_CACHE_DIR=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *path.split(), "-k", "compiled and not test_compiled"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]
