"""512-bit vectors for large-launch kernels (`backends/vector_width.py`): which dispatcher is
compiled wide, that the width never changes an answer, and the switch that turns it off."""

import numpy as np
import pytest

import lazyarray as la
from lazyarray.backends import numba_cpu, vector_width
from lazyarray.runtime import diskcache, native

_SOURCE = """def kernel(out0, a0, a1, a2, n0):
    for i0 in prange(n0):
        out0[i0] = a0[i0] * a1[i0] - _h.sin(a2[i0])
    return 0
"""


def _zmm(dispatcher) -> int:
    """How often the compiled code names a 512-bit register."""
    return sum(dispatcher.inspect_asm(sig).count("zmm") for sig in dispatcher.signatures)


def test_parallel_kernel_is_wide_serial_is_not(tmp_path):
    """The large-launch dispatcher uses 512-bit registers where the CPU has them (and only
    there); the small-launch one never; both give the same bits."""
    parallel, serial = numba_cpu.compile_kernel("vw_test", _SOURCE, str(tmp_path))
    a, b, c = (np.random.default_rng(s).uniform(-50, 50, 100_003) for s in range(3))
    wide_out, narrow_out = np.empty_like(a), np.empty_like(a)
    assert numba_cpu.launch(parallel, (wide_out, a, b, c, a.size)) == ("compiled", 0)
    assert numba_cpu.launch(serial, (narrow_out, a, b, c, a.size)) == ("compiled", 0)
    assert (parallel in numba_cpu._wide) == vector_width.enabled()
    assert serial not in numba_cpu._wide
    assert (_zmm(parallel) > 0) == vector_width.enabled()
    assert _zmm(serial) == 0
    assert np.array_equal(wide_out, narrow_out)
    np.testing.assert_allclose(wide_out, a * b - np.sin(c), rtol=1e-14, atol=1e-12)


def test_build_compiles_wide_too(tmp_path):
    """`build` (the background compile) makes the same wide code as a first launch."""
    parallel, _ = numba_cpu.compile_kernel("vw_build", _SOURCE.replace("* a1", "+ a1"),
                                           str(tmp_path))
    a = np.linspace(-3, 3, 4096)
    assert numba_cpu.build(parallel, (np.empty_like(a), a, a, a, a.size)) == "compiled"
    assert (_zmm(parallel) > 0) == vector_width.enabled()


@pytest.mark.parametrize("setting", ["LAZYARRAY_VECTOR_BITS", "NUMBA_CPU_NAME"])
def test_switched_off_by_environment(monkeypatch, setting):
    """`LAZYARRAY_VECTOR_BITS=256`, or a target chosen for Numba, keeps LLVM's own widths; the
    disk cache's folder says which width its kernels were built with."""
    monkeypatch.setenv(setting, "256" if setting == "LAZYARRAY_VECTOR_BITS" else "generic")
    vector_width.enabled.cache_clear()
    diskcache.version_tag.cache_clear()
    try:
        assert not vector_width.enabled()
        assert not diskcache.version_tag().endswith("-v512")
    finally:
        monkeypatch.undo()
        vector_width.enabled.cache_clear()
        diskcache.version_tag.cache_clear()
    assert diskcache.version_tag().endswith("-v512") == vector_width.enabled()


def test_large_evaluation_runs_the_wide_kernel(compiled, monkeypatch):
    """A large W1-like evaluation launches the parallel (wide) dispatcher and matches
    NumPy. (Through Numba: a kernel linked from a native image has no dispatcher to look
    at -- its machine code is the one this dispatcher compiled.)"""
    monkeypatch.setattr(native, "ENABLED", False)
    la.cache_clear()
    rng = np.random.default_rng(7)
    x = [rng.uniform(-10, 10, 200_000) for _ in range(5)]
    a, b, c, d, e = (la.asarray(v) for v in x)
    got = np.asarray(a * b + c * d - la.sin(e))
    np.testing.assert_allclose(got, x[0] * x[1] + x[2] * x[3] - np.sin(x[4]), rtol=1e-13,
                               atol=1e-12)
    kernel = la.explain(a * b + c * d - la.sin(e)).kernels[0]
    assert "prange(" in kernel.source
    wide = [k for k in numba_cpu._wide if k.py_func.__module__.endswith(kernel.key)]
    assert bool(wide) == vector_width.enabled()  # (an earlier test may have built it too)
    if wide:
        assert any(k.signatures for k in wide)  # the evaluation ran this dispatcher
