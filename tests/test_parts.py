"""Parallel loops compiled as part functions (`codegen/parts.py`, `backends/numba_parts.py`):
the rewrite of a kernel's source, what it declines, and the compiled kernels' values at every
thread count against the loops as Python runs them."""

import ast
import re

import numpy as np
import pytest

import lazyarray as la
from lazyarray.codegen import parts
from lazyarray.codegen.parts import split_parallel_loops
from lazyarray.runtime import dispatch, kernels

numba = pytest.importorskip("numba")

BLOCKED = '''def kernel(out0, a0, a1, s0, n0):
    fpe = 0
    fpf = False
    x5 = s0
    for qs in prange((n0 + 63) // 64):
        fpp = False
        for q in range(qs * 64, min(n0, qs * 64 + 64)):
            x0 = a0[q]
            x6 = x0 * a1[q] + x5
            chk = x6 * 0.0
            fpp |= chk != chk
            out0[q] = x6
        fpe += fpp
    fpf |= x5 != x5
    fpe += fpf
    return fpe
'''

ESCALATED = '''def kernel(out0, a0, n0, n1):
    fpe = 0
    nfo = 0
    for i0 in prange(n0):
        nfr = 0
        for i1 in range(n1):
            x3 = a0[i0, i1] * 2.0
            nfr = max(nfr, np.int64(abs(x3)))
            out0[i0, i1] = x3
        nfo = max(nfo, nfr)
    if nfo >= 7:
        fpe += 1
    return fpe
'''

REDUCED = '''def kernel(out0, part0, a0, n0, nchunks):
    fpe = 0
    for c in prange(nchunks):
        acc0 = part0[c]
        for q in range(c * n0 // nchunks, (c + 1) * n0 // nchunks):
            acc0 = acc0 + a0[q]
        part0[c] = acc0
    acc0 = part0[0]
    for c in range(1, part0.shape[0]):
        acc0 = acc0 + part0[c]
    out0[0] = acc0
    return fpe
'''


def _compile(source: str):
    """The rewritten kernel compiled, and the original one as Python runs it (the oracle)."""
    import lazyarray.backends.numba_parts as _p

    compiled, python = {"np": np, "_p": _p}, {"np": np, "prange": range}
    exec(split_parallel_loops(source), compiled)
    exec(source, python)
    return numba.njit(error_model="numpy", nogil=True)(compiled["kernel"]), python["kernel"]


def test_a_parallel_loop_becomes_a_part_function_of_the_values_it_reads():
    split = split_parallel_loops(BLOCKED)
    tree = ast.parse(split)
    part, kernel = tree.body
    assert part.name == "_part0" and kernel.name == "kernel"
    params = [a.arg for a in part.args.args]
    assert params[:3] == ["part", "parts", "_n"]
    # what the loop reads from before it, no more: not its own temporaries, not globals
    assert sorted(params[3:]) == ["a0", "a1", "n0", "out0", "x5"]
    assert "prange" not in split
    # the event count: each part's, returned, and summed by the launch
    assert "fpe += _p.launch(_part0" in split and "return fpe" in split


@pytest.mark.parametrize("source, why", [
    (BLOCKED.replace("        fpe += fpp\n", "        fpe += fpp\n        return fpe\n"),
     "a return inside the loop"),
    (BLOCKED.replace("    x5 = s0\n", "    x5 = s0\n    t = 0.5\n").replace(
        "        fpe += fpp\n", "        fpe += fpp\n        t += x0\n"),
     "a float reduction"),
    (BLOCKED.replace("        fpe += fpp\n", "        fpe += fpp\n        fpe -= 1\n"),
     "a reduction not by +="),
    (BLOCKED.replace("    fpf |= x5 != x5\n", "    fpf |= x0 != x0\n"),
     "a value of the last iteration read after the loop"),
    (BLOCKED.replace("    fpf |= x5 != x5\n", "    fpf |= x5 != x5\n    fpf |= s0 > 1\n")
     .replace("        fpe += fpp\n", "        fpe += fpp\n        s0 = x0\n"),
     "a value from before the loop, written in it and read after it"),
    (ESCALATED.replace("nfo = max(nfo, nfr)", "nfo = max(nfr, nfo)"),
     "a max whose first operand is not the value itself"),
    (ESCALATED.replace("        nfo = max(nfo, nfr)\n", "        nfo = max(nfo, nfr)\n"
                       "        out0[i0, 0] = nfo\n"), "a max read in the loop"),
    ("def kernel(out0, n0):\n    fpe = 0\n    if n0 > 0:\n        for q in prange(n0):\n"
     "            out0[q] = 1.0\n    return fpe\n", "a parallel loop inside another statement"),
], ids=lambda v: v if " " in v and "\n" not in v else "")
def test_loops_it_cannot_rewrite_exactly_stay_parallel_loops(source, why):
    ast.parse(source)  # (the case itself is valid Python)
    assert split_parallel_loops(source) is None, why


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [0, 1, 63, 64, 1000])
def test_part_kernels_compute_what_the_loops_compute(threads, n):
    rng = np.random.default_rng(n)
    a0, a1 = rng.standard_normal(n), rng.standard_normal(n)
    a1[: n // 7] = np.inf  # some flags raised
    grid = rng.standard_normal((n, 4)) * 4
    for source, args in [(BLOCKED, lambda o: (o, a0, a1, 0.5, n)),
                         (ESCALATED, lambda o: (o.reshape(-1, 4)[:n], grid, n, 4)),
                         (REDUCED, lambda o: (o, np.zeros(max(1, min(n, 5))), a0, n,
                                              max(1, min(n, 5))))]:
        compiled, python = _compile(source)
        want_out, got_out = np.zeros(4 * max(n, 1)), np.zeros(4 * max(n, 1))
        want = python(*args(want_out))
        saved = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            got = compiled(*args(got_out))
        finally:
            numba.set_num_threads(saved)
        assert got == want
        np.testing.assert_allclose(got_out, want_out, rtol=1e-12)
    if n:
        assert want_out[0] == pytest.approx(a0.sum())


def test_a_max_reduction_is_combined_over_the_parts():
    """The exact-check kernels find the largest magnitude of a loop (`nfo = max(nfo, nfr)`):
    each part reduces from the value before the loop, the kernel takes the largest."""
    split = split_parallel_loops(ESCALATED)
    assert "nfo = max(nfo, _r0_0[_j])" in split
    compiled, python = _compile(ESCALATED)
    for big in (3.0, 100.0):
        grid = np.ones((1000, 3))
        grid[517, 1] = big
        outs = np.zeros((1000, 3)), np.zeros((1000, 3))
        assert compiled(outs[0], grid, 1000, 3) == python(outs[1], grid, 1000, 3) == (big > 4)


@pytest.mark.skipif(not parts.ENABLED, reason="LAZYARRAY_PARTS=0: parfor kernels")
def test_large_launches_run_part_functions_small_ones_the_serial_twin(compiled):
    """A kernel file's `kernel` holds no parallel loop for Numba's parfor pass; a large
    launch runs it (its parts on all threads), a small one the serial twin (the cheaper
    compile, where threads would not pay); both compute NumPy's values."""
    x = np.linspace(0.0, 1.0, 1 << 16)
    for n in (100, 1 << 16):
        a = la.asarray(x[:n])
        y = np.asarray(la.tanh(a) * 2.0 + 0.5)
        np.testing.assert_allclose(y, np.tanh(x[:n]) * 2.0 + 0.5, rtol=1e-12)
    entries = [e for e in kernels.cache.values() if e.source and "tanh" in e.source]
    assert entries
    for e in entries:
        kernels.ensure_kernel(e)  # (a native image ran it: its module, for the text)
        with open(e.kernel[0].py_func.__code__.co_filename) as f:
            text = f.read()
        assert "_p.launch(" in text and "parallel=True" not in text
        assert dispatch.variant(100, False, False) == 1
        assert dispatch.variant(1 << 16, False, False) == 0


def test_the_rewrite_is_the_same_text_in_every_process():
    """The kernel's file is its disk-cache entry: a text that changed with the hash seed
    was rewritten by each new process, and Numba's cache of it then never hit."""
    import subprocess
    import sys

    program = ("import sys; from lazyarray.codegen.parts import split_parallel_loops; "
               "sys.stdout.write(split_parallel_loops(sys.stdin.read()))")
    texts = {subprocess.run([sys.executable, "-c", program], input=BLOCKED, text=True,
                            capture_output=True, check=True,
                            env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)}
                            ).stdout for seed in range(6)}
    assert len(texts) == 1 and "_p.launch(" in texts.pop()


@pytest.mark.parametrize("threads", [1, 2])
def test_an_exception_raised_in_a_part_is_raised_by_the_kernel(threads):
    """A part that raises (an integer to a negative power) stops its range; the kernel runs
    it again on the calling thread, where Numba raises the exception as it would."""
    source = ("def kernel(out0, a0, n0):\n    fpe = 0\n    for i0 in prange(n0):\n"
              "        if a0[i0] < 0:\n            raise ValueError('a negative value')\n"
              "        out0[i0] = a0[i0] * 2\n    return fpe\n")
    compiled, _ = _compile(source)
    saved = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        x, out = np.arange(10_000, dtype=np.int64), np.zeros(10_000, np.int64)
        assert compiled(out, x, x.size) == 0 and out[-1] == 2 * 9_999
        x[7_777] = -1
        with pytest.raises(ValueError, match="a negative value"):
            compiled(out, x, x.size)
    finally:
        numba.set_num_threads(saved)


@pytest.mark.xfail(not parts.ENABLED, strict=True,
                   reason="Numba's parfor kernels drop an exception raised in a prange body")
def test_an_integer_power_error_is_raised_from_a_parallel_launch(compiled):
    """NumPy raises for an integer to a negative power. A parfor kernel's gufunc dropped the
    exception of its threads and returned a value (LAZYARRAY_PARTS=0 still does); a part's
    is raised."""
    x = la.asarray(np.arange(1 << 16, dtype=np.int64))
    assert np.array_equal(np.asarray(x ** 2), np.arange(1 << 16, dtype=np.int64) ** 2)
    y = np.ones(1 << 16, np.int64)
    y[-5] = -1
    with pytest.raises(ValueError, match="negative"):
        np.asarray(x ** la.asarray(y))


def test_scratch_blocks_are_allocated_once_a_part_not_once_an_iteration():
    """A row loop's blocks (`np.empty` of a fixed size) move before the part's loop; one
    whose size the loop computes stays in it."""
    source = ("def kernel(out0, a0, n0, n1):\n    fpe = 0\n    for i0 in prange(n0):\n"
              "        tb = np.empty(256, np.float64)\n        m = n1 + i0\n"
              "        tc = np.empty(m, np.float64)\n        td = np.empty(i0 + 1, np.float64)\n"
              "        tb[0] = a0[i0]\n        tc[0] = tb[0]\n        td[i0] = tc[0]\n"
              "        out0[i0] = td[i0]\n    return fpe\n")
    part = ast.parse(split_parallel_loops(source)).body[0]
    first, loop = part.body[0], part.body[1]
    assert ast.unparse(first) == "tb = np.empty(256, np.float64)"
    assert isinstance(loop, ast.For) and "np.empty(m" in ast.unparse(loop)
    assert "np.empty(i0 + 1" in ast.unparse(loop)  # (its size is the loop's index)
    compiled, python = _compile(source)
    x = np.arange(50.0)
    got, want = np.zeros(50), np.zeros(50)
    assert compiled(got, x, 50, 3) == python(want, x, 50, 3)
    assert np.array_equal(got, x) and np.array_equal(want, x)



def _wrappers(library) -> set:
    """The Python-callable and C-callable wrappers a Numba library defines."""
    return set(re.findall(r'define [^@]*@"?((?:cpython|cfunc)\.[^"(]*)', library.get_llvm_str()))


def test_kernels_and_helpers_compile_without_the_wrappers_nothing_calls(compiled, tmp_path):
    """A kernel is called through Numba's Python wrapper (or its native image's): Numba's
    C-callable wrapper is not built for it. A helper is only called from compiled code:
    neither wrapper is built for it (together about a tenth of a small kernel's compile)."""
    x = np.linspace(1.0, 2.0, 50)
    with la.options(cache_dir=str(tmp_path)):  # (compiled here, not linked from an image)
        a = la.asarray(x)
        y = np.asarray(la.floor_divide(la.exp(a), 0.25) + la.maximum(a, 1.5)
                       + la.remainder(a, 0.3))
    np.testing.assert_array_equal(y, np.floor_divide(np.exp(x), 0.25) + np.maximum(x, 1.5)
                                  + np.remainder(x, 0.3))
    entry = next(e for e in kernels.cache.values() if e.source and "_h.remainder(" in e.source)
    kernels.ensure_kernel(entry)
    results = [c for d in entry.kernel for c in d.overloads.values()]
    assert results and all(d.targetoptions["no_cfunc_wrapper"] for d in entry.kernel)
    helpers = set()
    for c in results:
        assert not any(w.startswith("cfunc.") for w in _wrappers(c.library))
        for lib in c.library._linking_libraries:
            if lib.name.split(".")[0] in ("_floor_divide", "_maximum", "_remainder"):
                helpers.add(lib.name.split(".")[0])
                assert not _wrappers(lib), lib.name
    assert helpers == {"_floor_divide", "_maximum", "_remainder"}
