"""Native images (`runtime/native.py`): a kernel built once is linked into later processes
from its image, without importing Numba, and computes exactly what Numba's dispatcher does.

Whole processes are run with a cache directory of their own: one builds (compile="now"),
the next loads (the default tier), and their counters and results are read. In-process,
random programs run twice: the second time every kernel comes from its image."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings

import lazyarray as la
from fuzz_programs import Program, check_program, programs
from lazyarray.runtime import native

# each case: (name, expression over the arrays of `data`); sizes above and below the
# parallel threshold, every layout the dispatcher types differently, scalars of each kind
CASES = textwrap.dedent("""
    import json, sys
    import numpy as np
    import lazyarray as la
    rng = np.random.default_rng(7)
    big, small = 40_000, 300
    data = {
        "f8": rng.normal(size=big), "f4": rng.normal(size=big).astype(np.float32),
        "i8": rng.integers(-50, 50, size=big), "i4": rng.integers(-50, 50, size=small).astype(np.int32),
        "c16": rng.normal(size=small) + 1j * rng.normal(size=small),
        "c8": (rng.normal(size=small) + 1j * rng.normal(size=small)).astype(np.complex64),
        "m": rng.normal(size=(300, 200)), "b": rng.normal(size=big) > 0,
    }
    ro = data["f8"].copy(); ro.setflags(write=False); data["ro"] = ro
    cases = {
        "f8": lambda d: d["f8"] * 1.5 - np.sin(d["f8"]) / (1.0 + d["f8"] ** 2),
        "f4": lambda d: np.exp(d["f4"] * np.float32(0.25)) + d["f4"],
        "i8": lambda d: d["i8"] * 3 - (d["i8"] // 7) + d["i8"] % 5,
        "i4": lambda d: (d["i4"] << 2) ^ d["i4"],
        "c16": lambda d: d["c16"] * (2 - 1j) + np.conj(d["c16"]),
        "c8": lambda d: d["c8"] * np.complex64(0.5 + 2j) - d["c8"],
        "fortran": lambda d: np.asfortranarray(d["m"]) * 2.0 + 1.0,
        "strided": lambda d: d["m"][::3, 1::2] * d["m"][1::3, ::2],
        "transposed": lambda d: d["m"].T - d["m"].T.mean(),
        "bool": lambda d: np.where(d["b"], d["f8"], -d["f8"]),
        "readonly": lambda d: d["ro"] + 1.0,
        "sum": lambda d: d["f8"].sum(),
        "axis": lambda d: np.sqrt(d["m"] ** 2).sum(axis=0),
        "argmax": lambda d: np.argmax(d["f8"] * d["f8"]),
        "cumsum": lambda d: np.cumsum(d["m"], axis=1),
    }
    lazy = {k: la.asarray(v) for k, v in data.items()}
    out, same = {}, {}
    for name, f in cases.items():
        got, want = np.asarray(f(lazy)), np.asarray(f(data))
        same[name] = got.dtype == want.dtype and got.shape == want.shape \\
            and np.allclose(got, want, rtol=1e-6 if got.dtype.itemsize <= 8 else 1e-12)
        out[name] = got.tobytes().hex()
    base = la.asarray(np.arange(5))
    out["power"] = np.asarray(base ** la.asarray(np.array([1, 2, 3, 0, 1]))).tobytes().hex()
    try:  # the same kernel, a negative exponent: its ValueError
        np.asarray(base ** la.asarray(np.array([1, 2, -1, 0, 1])))
        raised = None
    except ValueError as e:
        raised = str(e)
    info = la.cache_info()
    print(json.dumps({"out": out, "same": same, "raised": raised, "info": info,
                      "numba": "numba" in sys.modules}))
""")


def run(cache, compile_mode: str, native_flag: str = "1") -> dict:
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(cache), "LAZYARRAY_COMPILE": compile_mode,
           "LAZYARRAY_NATIVE": native_flag, "LAZYARRAY_EAGER_THRESHOLD": "0"}
    out = subprocess.run([sys.executable, "-c", CASES], env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def images(cache) -> list[str]:
    return glob.glob(os.path.join(str(cache), "*", "*", "__pycache__", "*.native"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A cache one process filled by compiling every case (images written beside)."""
    cache = tmp_path_factory.mktemp("native")
    first = run(cache, "now")
    assert all(first["same"].values()), first["same"]
    assert first["info"]["native_writes"] == first["info"]["compiles"] > 0
    return cache, first


def test_a_later_process_links_every_kernel_without_numba(built):
    cache, first = built
    again = run(cache, "background")
    info = again["info"]
    # every kernel of every case came from its image, at the first evaluation: nothing
    # interpreted, compiled or sent to a worker, and Numba never imported
    assert info["kernels_launched"] == info["native_launches"] > 0
    assert info["native_loads"] == first["info"]["native_writes"]
    assert info["compiles"] == info["background_jobs"] == info["background_interpreted"] == 0
    # the integer power's ValueError is raised from the machine code as Numba raises it
    # (describing it imports Numba: the error path only)
    assert again["raised"] == first["raised"] == (
        "Integers to negative integer powers are not allowed.")
    # bit for bit what the kernels compiled through Numba computed
    assert again["out"] == first["out"] and all(again["same"].values())


def test_numba_is_not_imported_by_a_run_of_image_kernels(built):
    cache, _ = built
    prog = ("import sys, numpy as np, lazyarray as la\n"
            "x = la.asarray(np.random.default_rng(7).normal(size=40_000))\n"
            "np.asarray(x * 1.5 - np.sin(x) / (1.0 + x ** 2)), np.asarray(np.cumsum(x))\n"
            "print(la.cache_info()['native_launches'], 'numba' in sys.modules)")
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(cache), "LAZYARRAY_COMPILE": "background",
           "LAZYARRAY_EAGER_THRESHOLD": "0"}
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=600, check=True).stdout.split()
    assert out == ["1", "False"]


def test_a_damaged_image_is_removed_counted_and_rebuilt(tmp_path):
    first = run(tmp_path, "now")
    paths = sorted(images(tmp_path))
    assert len(paths) == first["info"]["native_writes"]
    with open(paths[0], "r+b") as f:  # a few random bytes where a killed writer stopped
        f.seek(40)
        f.write(os.urandom(16))
    again = run(tmp_path, "now")
    info = again["info"]
    assert info["disk_damaged"] == 1 and info["native_loads"] == len(paths) - 1
    assert again["out"] == first["out"]
    assert info["native_writes"] == 1 and len(images(tmp_path)) == len(paths)  # rebuilt


def test_an_image_for_another_machine_is_not_linked(tmp_path):
    first = run(tmp_path, "now")
    paths = images(tmp_path)
    for p in paths:  # as if the cache folder were shared with a machine of another CPU
        with open(p, "rb") as f:
            magic, head, body = f.read().split(b"\n", 2)
        meta = json.loads(head)
        meta["host"][1] = "another-cpu"
        with open(p, "wb") as f:
            f.write(magic + b"\n" + json.dumps(meta).encode() + b"\n" + body)
    again = run(tmp_path, "now")
    assert again["info"]["native_loads"] == 0 and again["info"]["disk_damaged"] == 0
    assert again["out"] == first["out"] and again["info"]["compiles"] == 0  # Numba's own cache
    assert len(images(tmp_path)) == len(paths)


def test_no_images_when_turned_off(tmp_path):
    first = run(tmp_path, "now", native_flag="0")
    assert first["info"]["native_writes"] == 0 and not images(tmp_path)


def test_load_rejects_what_is_not_an_image(tmp_path):
    bad = tmp_path / "x.native"
    bad.write_bytes(b"\xff\xfe not an image")
    with pytest.raises(native.ImageError):
        native.load(str(bad))
    assert not bad.exists()
    with pytest.raises(FileNotFoundError):
        native.load(str(tmp_path / "none.native"))


@pytest.fixture
def image_cache(tmp_path):
    la.cache_clear()
    with la.options(compile="now", cache_dir=str(tmp_path), eager_threshold=0):
        yield
    la.cache_clear()


@settings(max_examples=12)
@given(programs("mid"))
def test_random_programs_run_the_same_from_images(image_cache, program: Program):
    """Each program runs twice against NumPy: compiled through Numba (images written), then,
    the kernel cache emptied, with every kernel linked from its image."""
    check_program(program, la)
    la.cache_clear()
    before = la.cache_info()
    check_program(program, la)
    after = la.cache_info()
    assert after["compiles"] == before["compiles"]
    launched = after["kernels_launched"] - before["kernels_launched"]
    assert after["native_loads"] > before["native_loads"] or launched == 0


def test_a_failure_after_the_kernel_ran_never_runs_it_again(image_cache, monkeypatch):
    """Bookkeeping after a launch (marking the specialization built, writing its image,
    remembering the launch) may fail; the kernel, which may have updated a buffer in place,
    is not run a second time (it was, by the executor's retry: `-x` gave `x`, `v += 2` added
    4), and the answer stands."""
    from lazyarray.runtime import kernels, launches

    def broken(*args, **kwargs):
        raise RuntimeError("no disk today")

    monkeypatch.setattr(kernels, "write_native", broken)
    monkeypatch.setattr(launches, "prepare", broken)
    monkeypatch.setattr(executor_module(), "prepare", broken)
    a = np.arange(12.0).reshape(3, 4)
    x = la.asarray(a.copy())
    x[1] += 2.0
    neg = -la.asarray(a.copy())
    want = a.copy()
    want[1] += 2.0
    assert np.asarray(x).tobytes() == want.tobytes()
    assert np.asarray(neg).tobytes() == (-a).tobytes()


def executor_module():
    from lazyarray.runtime import executor

    return executor


TRACE_PROGRAM = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import lazyarray as la
    xs = np.linspace(0, 1, 10)
    x = la.asarray(xs)
    want = (np.sin(xs) * 2.0 + xs) * 0.5 - xs * xs
    same, end = True, time.monotonic() + 300
    while la.cache_info()["trace_kernel_runs"] < 50 and time.monotonic() < end:
        same &= np.asarray((la.sin(x) * 2.0 + x) * 0.5 - x * x).tobytes() == want.tobytes()
    print(json.dumps({"same": same, "info": la.cache_info(), "numba": "numba" in sys.modules}))
""")


def test_the_trace_tier_links_its_loop_from_an_image(tmp_path):
    """A chain on tiny arrays, recorded and compiled once it recurs (the trace tier, on a
    thread of the program): the next process links its kernel from the image the first one
    wrote, without Numba."""
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(tmp_path)}
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", TRACE_PROGRAM], env=env,
                             capture_output=True, text=True, timeout=600, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, again = runs
    assert first["same"] and first["numba"] and first["info"]["trace_kernel_runs"] >= 50
    assert first["info"]["native_writes"] >= 1
    assert again["same"] and not again["numba"] and again["info"]["trace_kernel_runs"] >= 50
    assert again["info"]["native_loads"] >= 1 and again["info"]["compiles"] == 0


def test_linking_keeps_the_thread_count_the_program_set(built):
    """A program that set Numba's thread count before its first image is linked keeps it."""
    cache, _ = built
    prog = ("import numba, numpy as np, lazyarray as la\n"
            "numba.set_num_threads(1)\n"
            "x = la.asarray(np.random.default_rng(7).normal(size=40_000))\n"
            "np.asarray(x * 1.5 - np.sin(x) / (1.0 + x ** 2))\n"
            "print(la.cache_info()['native_loads'], numba.get_num_threads())")
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(cache), "LAZYARRAY_COMPILE": "background",
           "LAZYARRAY_EAGER_THRESHOLD": "0", "NUMBA_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=600, check=True).stdout.split()
    assert out == ["1", "1"]
