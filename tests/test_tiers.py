"""The default tier (`compile="background"`): a fusion whose kernel is not built runs on the
interpreter at once while a worker process compiles the kernel into the disk cache; a later
evaluation loads and launches it. Whole processes are run, each with its own cache
directory, and their counters read: what ran where, what was compiled, in which process."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import lazyarray as la
from lazyarray.runtime import compile_service, kernels
from test_slice_updates import thomas

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import lazyarray as la
    n = 200_000
    xs, ys = np.linspace(0, 1, n), np.linspace(1, 2, n)
    x, y = la.asarray(xs), la.asarray(ys)
    want = xs * 1.5 - np.sin(ys)
    first = np.asarray(x * 1.5 - la.sin(y))
    at_first, numba_at_first = la.cache_info(), "numba" in sys.modules
    done = {wait}
    second = np.asarray(x * 1.5 - la.sin(y))
    report = la.explain()
    print(json.dumps({{"first": first.tobytes() == want.tobytes(),
                      "second": second.tobytes() == want.tobytes(), "done": done,
                      "at_first": at_first, "numba_at_first": numba_at_first,
                      "after": la.cache_info(), "origin": report.kernels[0].origin,
                      "numba_at_end": "numba" in sys.modules}}))
""")


def run_program(cache: str, wait: str = "la.wait_compiles(timeout=300)", native: str = "1") -> dict:
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": cache, "LAZYARRAY_COMPILE": "background",
           "LAZYARRAY_NATIVE": native}
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(wait=wait)], env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_run_interprets_while_a_worker_compiles_then_launches(tmp_path):
    r = run_program(str(tmp_path))
    first, after = r["at_first"], r["after"]
    assert r["first"] and r["second"]  # NumPy's bits, interpreted and compiled
    # the first evaluation: interpreted, its kernel sent to a worker process; Numba not even
    # imported in the user's process
    assert first["background_interpreted"] == 1 and first["kernels_launched"] == 0
    assert first["background_jobs"] == 1 and first["workers_started"] == 1
    assert first["compiles"] == 0 and not r["numba_at_first"]
    # after wait_compiles: the worker's kernel is loaded from disk and launched; this process
    # compiled nothing
    assert r["done"] and after["kernels_launched"] == 1
    assert after["compiles"] == 0 and after["disk_hits"] == 1
    assert r["origin"] == "worker"


def test_next_process_finds_the_kernel_on_disk(tmp_path):
    """The worker left the kernel's native image: the next process links it (no Numba) and
    launches it at its first evaluation."""
    run_program(str(tmp_path))
    r = run_program(str(tmp_path))
    first, after = r["at_first"], r["after"]
    assert r["first"] and r["second"]
    assert first["background_jobs"] == 0 and first["workers_started"] == 0
    assert first["background_interpreted"] == 0 and first["kernels_launched"] == 1
    assert first["native_loads"] == 1 and first["native_launches"] == 1
    assert not r["numba_at_first"] and not r["numba_at_end"]
    assert after["kernels_launched"] == 2 and after["disk_hits"] == 1
    assert after["compiles"] == 0 and r["origin"] == "disk"


def test_without_native_images_a_short_program_never_imports_numba(tmp_path):
    """LAZYARRAY_NATIVE=0: kernels load through Numba; a short program interprets its first
    evaluation rather than importing Numba for it (`kernels.FIRST_LOAD_S`)."""
    run_program(str(tmp_path), native="0")
    assert not glob.glob(os.path.join(tmp_path, "*", "*", "__pycache__", "*.native"))
    r = run_program(str(tmp_path), native="0")
    first, after = r["at_first"], r["after"]
    assert r["first"] and r["second"]
    assert first["background_jobs"] == 0 and first["workers_started"] == 0
    assert first["background_interpreted"] == 1 and not r["numba_at_first"]
    assert after["kernels_launched"] == 1 and after["disk_hits"] == 1
    assert after["compiles"] == 0 and r["origin"] == "disk" and after["native_loads"] == 0


def test_worker_finishes_the_queue_after_the_user_process_exits(tmp_path):
    """The user's process exits right after its first evaluation; the worker still builds
    the kernel into the cache, where the next process finds it."""
    r = run_program(str(tmp_path), wait="None")
    assert r["at_first"]["background_jobs"] == 1 and r["after"]["kernels_launched"] == 0
    deadline = time.monotonic() + 300
    while not glob.glob(os.path.join(tmp_path, "*", "*", "__pycache__", "*.built")):
        assert time.monotonic() < deadline, "the worker left no kernel behind"
        time.sleep(0.5)
    again = run_program(str(tmp_path))
    assert again["at_first"]["background_jobs"] == 0
    assert again["after"]["compiles"] == 0 and again["after"]["disk_hits"] == 1


LONG_PROGRAM = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import lazyarray as la
    xs = np.linspace(0, 1, 2_000_000)
    x = la.asarray(xs)
    want = np.tanh(xs * 3.0) + xs
    end, runs, same = time.monotonic() + 300, 0, True
    while la.cache_info()["kernels_launched"] == 0 and time.monotonic() < end:
        same &= np.asarray(la.tanh(x * 3.0) + x).tobytes() == want.tobytes()
        runs += 1
    print(json.dumps({"runs": runs, "same": same, "info": la.cache_info(),
                      "numba": "numba" in sys.modules}))
""")


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_long_program_switches_to_the_kernel_on_its_own(tmp_path, native):
    """No wait_compiles: once the worker built the kernel, the program launches it: linked
    from its native image at once (Numba never imported), or, without images, through Numba
    once the interpreter has spent what loading Numba costs (`kernels.FIRST_LOAD_S`)."""
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(tmp_path), "LAZYARRAY_COMPILE": "background",
           "LAZYARRAY_NATIVE": native}
    out = subprocess.run([sys.executable, "-c", LONG_PROGRAM], env=env, capture_output=True,
                         text=True, timeout=600, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    info = r["info"]
    assert r["same"] and r["numba"] == (native == "0") and info["kernels_launched"] >= 1
    assert info["background_interpreted"] == r["runs"] - 1 and info["compiles"] == 0
    assert info["native_launches"] == (info["kernels_launched"] if native == "1" else 0)


@pytest.fixture
def tiered(tmp_path):
    """compile="background" in this process, with a cache directory of its own and a
    kernel cache emptied before and after (entries built by other tests are not reused).
    The worker is stopped after the test, its queue unfinished: nothing reads the kernels
    it would still build into this test's directory (waiting for them took 46 s after the
    random programs)."""
    la.cache_clear()
    with la.options(compile="background", cache_dir=str(tmp_path), eager_threshold=0):
        yield
    compile_service.stop()
    la.cache_clear()


def test_interpreted_slice_updates_write_in_place(tiered):
    """While the kernels compile, the interpreter stores each update into its region of the
    same buffer, as the kernels do: no update copies the array it writes."""
    r = np.random.default_rng(1)
    shape = (30, 20, 10)
    a, c, d = (r.uniform(-1, 1, shape) for _ in range(3))
    b = 4 + r.uniform(0, 1, shape)
    want = thomas(np, a, b, c, d)
    before = la.cache_info()
    with np.errstate(divide="warn", over="warn", invalid="warn", under="ignore"):
        got = np.asarray(thomas(la, *map(la.asarray, (a, b, c, d))))
    after = la.cache_info()
    count = {k: after[k] - before[k] for k in ("updates_copied", "updates_in_place",
                                                "background_interpreted", "kernels_launched")}
    assert got.tobytes() == want.tobytes()
    assert count["updates_copied"] == 0 and count["updates_in_place"] == 3 * 10 - 3
    assert count["background_interpreted"] > 0 and count["kernels_launched"] == 0


def test_explain_says_interpreted_while_compiling(tiered):
    x = la.asarray(np.linspace(0, 1, 1000))
    y = la.arctan(x * 0.75 + 0.125) ** 2
    np.asarray(y)
    report = la.explain()
    (k,) = report.kernels
    assert k.status == "compiling" and report.num_kernels == 0
    assert "interpreted while the kernel compiles in the background" in str(report)
    assert la.wait_compiles(timeout=600)
    np.asarray(la.arctan(x * 0.75 + 0.125) ** 2)
    report = la.explain()
    assert report.kernels[0].status == "hit" and report.kernels[0].origin == "worker"
    assert report.num_kernels == 1


def test_a_worker_that_cannot_start_leaves_the_build_to_the_caller(tiered, monkeypatch):
    def no_worker(log_dir):
        raise OSError("no more processes")

    monkeypatch.setattr(compile_service, "_proc", None)
    monkeypatch.setattr(compile_service, "_start", no_worker)
    x = la.asarray(np.linspace(0, 1, 1000))
    want = np.linspace(0, 1, 1000) * 2.5 - 1.0
    for _ in range(4):
        got = np.asarray(x * 2.5 - 1.0)
        assert got.tobytes() == want.tobytes()
        if la.explain().kernels[0].status == "hit":
            break
        la.wait_compiles(timeout=600)
    assert la.explain().kernels[0].status == "hit"


def test_describe_is_what_numba_types():
    """The worker rebuilds Numba's types from NumPy's description of the arguments: for
    every kind of argument a launch passes, the same type Numba reads off the value."""
    numba_cpu = pytest.importorskip("lazyarray.backends.numba_cpu")
    import numba

    a = np.zeros((4, 6))
    ro = np.ones(5, np.float32)
    ro.flags.writeable = False
    args = [a, a.T, a[:, ::2], ro, np.zeros((), np.int8), np.float64(1.5), np.int32(2), 7,
            2.5, True, 1j, np.zeros(3, np.complex64)[::-1]]
    sig = compile_service.describe(args)
    assert numba_cpu.numba_signature(sig) == tuple(numba.typeof(v) for v in args)
    assert compile_service.describe([object()]) is None
    assert kernels.FIRST_LOAD_S > 0


@pytest.fixture
def before_numba(tiered, monkeypatch):
    """The default tier as a process that has not loaded Numba sees it: no kernel may be
    loaded, so fusions whose kernels were asked for run unplanned on the interpreter
    (`kernels.interpret_only`, `executor._interpret_unplanned`)."""
    monkeypatch.setattr(kernels, "_may_load", lambda: False)
    yield


def test_unplanned_updates_write_in_place_and_match_numpy(before_numba):
    r = np.random.default_rng(2)
    shape = (16, 12, 9)
    a, c, d = (r.uniform(-1, 1, shape) for _ in range(3))
    b = 4 + r.uniform(0, 1, shape)
    want = thomas(np, a, b, c, d)
    for attempt in range(2):  # the first asks for the kernels; the second runs unplanned
        before = la.cache_info()
        got = np.asarray(thomas(la, *map(la.asarray, (a, b, c, d))))
        after = la.cache_info()
        assert got.tobytes() == want.tobytes()
    count = {k: after[k] - before[k] for k in ("updates_copied", "updates_in_place",
                                                "kernels_launched", "background_jobs")}
    assert count == {"updates_copied": 0, "updates_in_place": 3 * 9 - 3,
                     "kernels_launched": 0, "background_jobs": 0}
    assert {k.status for k in la.explain().kernels} == {"compiling"}


def test_unplanned_programs_match_numpy(before_numba):
    """Random programs (views of views, writes while expressions are pending, forcing in
    random orders) on the unplanned interpreter path: every observation equals NumPy's."""
    from hypothesis import given, settings

    from fuzz_programs import check_program, programs

    @settings(max_examples=max(5, settings().max_examples))
    @given(programs("mid"))
    def matches(program):
        check_program(program, la)

    matches()
