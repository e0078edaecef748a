"""Trustworthy under stress: threads, memory, deep graphs, floating-point state."""

from __future__ import annotations

import gc
import glob
import os
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import lazyarray as la


def _program(seed: int):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(300), rng.standard_normal(300)
    x, y = la.asarray(a), la.asarray(b)
    lazy = [x * y + 1, la.sqrt(((x - y) ** 2).sum()), (x[::2] + y[1::2]).max(), la.where(x > 0, x, y)]
    ref = [a * b + 1, np.sqrt(((a - b) ** 2).sum()), (a[::2] + b[1::2]).max(), np.where(a > 0, a, b)]
    return lazy, ref


@pytest.mark.parametrize("threshold, rounds", [
    (0, 25), (10**9, 25),
    pytest.param(0, 250, marks=pytest.mark.slow), pytest.param(10**9, 250, marks=pytest.mark.slow),
], ids=["compiled", "interp", "compiled-long", "interp-long"])
def test_many_threads_build_and_evaluate(threshold, rounds):
    """8 threads x `rounds` programs of 4 results each (long: 8 x 250 x 4 = 8,000 results)."""
    errors: list[BaseException] = []

    def worker(k: int):
        try:
            with la.options(eager_threshold=threshold):
                for i in range(rounds):
                    lazy, ref = _program(k * 1000 + i)
                    if i % 2:
                        la.evaluate(*lazy)
                    for g, e in zip(lazy, ref, strict=True):
                        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors[0]


def test_threads_writing_their_own_arrays():
    def worker(out: list, k: int):
        a = la.zeros(50)
        for i in range(50):
            a[i] = i * k
            a[: i // 2] += 1
        out.append((k, np.asarray(a)))

    results: list = []
    threads = [threading.Thread(target=worker, args=(results, k)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, got in results:
        ref = np.zeros(50)
        for i in range(50):
            ref[i] = i * k
            ref[: i // 2] += 1
        np.testing.assert_array_equal(got, ref)


def test_materialized_array_frees_its_graph():
    x = la.asarray(np.ones(1000))
    mid = x * 2.0
    probe = weakref.ref(mid._node)
    out = mid + 1.0
    del mid
    np.asarray(out)
    gc.collect()
    assert probe() is None  # the intermediate node died with the graph behind `out`


def test_long_loop_runs_in_bounded_memory():
    x = la.asarray(np.ones(10_000))
    tracemalloc.start()
    for _ in range(30_000):
        x = x * 1.0000001 + 1e-9
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 200 * 2**20  # graphs are cut long before this
    assert np.isfinite(np.asarray(x)).all()


def test_fused_program_peak_memory_is_inputs_and_outputs():
    n = 2_000_000
    a, b = (la.asarray(np.random.default_rng(s).random(n)) for s in (1, 2))
    with la.options(eager_threshold=0):
        np.asarray(la.sin(a) * b + a * a - b / 3)  # compile and warm up
        expr = la.sin(a) * b + a * a - b / 3
        tracemalloc.start()
        np.asarray(expr)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # NumPy would hold several 16 MB temporaries; the fused kernel allocates only its output
    assert peak < 1.5 * n * 8


def test_deep_chain_without_recursion_error():
    x = la.asarray(np.zeros(3))
    for _ in range(25_000):
        x = x + 1
    assert np.asarray(x).tolist() == [25_000.0] * 3


def test_errstate_raise_is_honoured_on_every_tier():
    x = la.asarray(np.array([1.0, 0.0]))
    big = la.asarray(np.zeros(100_000))
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            np.asarray(1 / x)
        with la.options(eager_threshold=0), pytest.raises(FloatingPointError):
            np.asarray(1 / big)
    with np.errstate(all="ignore"):
        assert np.isinf(np.asarray(1 / x)[1])


def test_kernel_that_fails_to_compile_falls_back(monkeypatch, caplog):
    from lazyarray.backends import numba_cpu

    def broken(*args, **kwargs):
        raise RuntimeError("simulated compiler failure")

    monkeypatch.setattr(numba_cpu, "compile_kernel", broken)
    la.cache_clear()
    x = la.asarray(np.linspace(0, 1, 1000))
    with la.options(eager_threshold=0):
        got = np.asarray(la.exp(x) * 3 - x)
    np.testing.assert_allclose(got, np.exp(np.linspace(0, 1, 1000)) * 3 - np.linspace(0, 1, 1000))
    assert la.cache_info()["fallbacks"] >= 1
    assert "failed" in caplog.text
    la.cache_clear()


def _interrupted_then_fine(monkeypatch, tmp_path, patch):
    """Evaluate with `patch` raising KeyboardInterrupt mid-compile, then without it: the
    interrupt reaches the user, and the next evaluation compiles and is right."""
    a = np.linspace(0, 1, 5000)
    with la.options(cache_dir=str(tmp_path), eager_threshold=0):
        la.cache_clear()
        x = la.asarray(a)
        with monkeypatch.context() as m:
            patch(m)
            with pytest.raises(KeyboardInterrupt):
                np.asarray(la.cos(x) * 3 - x)
        assert not glob.glob(str(tmp_path / "*" / "*" / "*.tmp"))  # no partial file left
        for f in glob.glob(str(tmp_path / "*" / "*" / "lazyarray_kernel_*.py")):
            with open(f) as fh:  # any kernel file present is whole
                assert "def kernel_serial(" in fh.read()
        before = la.cache_info()
        got = np.asarray(la.cos(x) * 3 - x)
        after = la.cache_info()
    np.testing.assert_allclose(got, np.cos(a) * 3 - a, rtol=1e-12)
    assert after["fallbacks"] == before["fallbacks"]  # compiled, not interpreted
    assert after["compiles"] + after["disk_hits"] > before["compiles"] + before["disk_hits"]
    la.cache_clear()


class _InterruptedOs:
    """The `os` module as numba_cpu sees it, with `os.replace` and `os.link` (which put a
    written kernel file in place) interrupted. (Patching the real module interrupted any
    other caller in that window too: a finalizer run by the garbage collector raised
    KeyboardInterrupt inside hypothesis's gc hook.)"""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def replace(*args):
        raise KeyboardInterrupt

    link = replace


def test_interrupt_while_writing_the_kernel_file(monkeypatch, tmp_path):
    from lazyarray.backends import numba_cpu

    _interrupted_then_fine(monkeypatch, tmp_path,
                           lambda m: m.setattr(numba_cpu, "os", _InterruptedOs()))


def test_interrupt_while_numba_compiles(monkeypatch, tmp_path):
    from lazyarray.backends import numba_cpu

    def compiling(*args):
        raise KeyboardInterrupt

    _interrupted_then_fine(monkeypatch, tmp_path,
                           lambda m: m.setattr(numba_cpu, "_counted_call", compiling))


def test_interrupt_while_importing_the_kernel(monkeypatch, tmp_path):
    from lazyarray.backends import numba_cpu

    def compile_kernel(*args, **kwargs):
        raise KeyboardInterrupt

    _interrupted_then_fine(monkeypatch, tmp_path,
                           lambda m: m.setattr(numba_cpu, "compile_kernel", compile_kernel))
