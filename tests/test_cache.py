"""Compile once, ever: kernels keyed by shape-free signature, in memory and on disk."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lazyarray as la

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import lazyarray as la
    x = la.asarray(np.linspace(0, 1, 200_000))
    y = la.asarray(np.linspace(1, 2, 200_000))
    with la.options(eager_threshold=0):
        r = float(la.sqrt(((x - y) ** 2).sum()))
        s = np.asarray(x * 2 + la.sin(y))
    ok = abs(r - np.sqrt(200_000)) < 1e-6 and np.allclose(s, np.asarray(x) * 2 + np.sin(np.asarray(y)))
    print(json.dumps({"ok": bool(ok), **la.cache_info()}))
""")


def run_program(cache: str, env_extra=None) -> dict:
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": cache, **(env_extra or {})}
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_second_process_compiles_nothing(tmp_path):
    first, _ = run_program(str(tmp_path))
    assert first["ok"] and first["compiles"] >= 2 and first["disk_writes"] >= 2
    second, _ = run_program(str(tmp_path))
    assert second["ok"] and second["compiles"] == 0 and second["disk_hits"] >= 2


def test_corrupt_entries_are_rebuilt(tmp_path):
    run_program(str(tmp_path))
    entries = glob.glob(str(tmp_path / "*" / "*" / "__pycache__" / "*"))
    sources = glob.glob(str(tmp_path / "*" / "*" / "lazyarray_kernel_*.py"))
    assert entries and sources
    for f in entries:
        with open(f, "wb") as fh:
            fh.write(b"\x00garbage")
    with open(sources[0], "w") as fh:
        fh.write("this is not the kernel\n")
    again, _ = run_program(str(tmp_path))
    assert again["ok"] and again["compiles"] >= 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_few_damaged_bytes_anywhere_are_caught(tmp_path, seed):
    """A few random bytes written over every cache file (what a full disk or a killed writer
    leaves; the source files too): the next process verifies each kernel's files against
    their seal, rebuilds the damaged ones and counts them, and computes the right values;
    the process after it loads everything from disk again."""
    first, _ = run_program(str(tmp_path))
    files = [f for f in glob.glob(str(tmp_path / "**" / "*"), recursive=True)
             if os.path.isfile(f)]
    rng = np.random.default_rng(seed)
    for f in files:
        with open(f, "rb") as fh:
            data = bytearray(fh.read())
        for at in rng.integers(0, len(data), 5) if data else ():
            data[at] = int(rng.integers(0, 256))
        with open(f, "wb") as fh:
            fh.write(bytes(data))
    again, err = run_program(str(tmp_path))
    assert again["ok"], err
    assert again["disk_damaged"] >= 1 and again["compiles"] >= 1
    third, _ = run_program(str(tmp_path))
    assert third["ok"] and third["compiles"] == 0 and third["disk_damaged"] == 0
    assert third["disk_hits"] == first["compiles"]


def test_racing_processes_both_succeed(tmp_path):
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["ok"]
    third, _ = run_program(str(tmp_path))
    assert third["ok"] and third["compiles"] == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_unsafe_directory_is_refused(tmp_path):
    unsafe = tmp_path / "shared"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)
    result, err = run_program(str(unsafe))
    assert result["ok"]
    assert "not using kernel cache directory" in err
    assert not glob.glob(str(unsafe / "*" / "*" / "lazyarray_kernel_*.py"))


def test_cache_command_reports_and_clears(tmp_path):
    run_program(str(tmp_path))
    env = {**os.environ, "LAZYARRAY_CACHE_DIR": str(tmp_path)}
    info = subprocess.run([sys.executable, "-m", "lazyarray", "cache", "info"], env=env,
                          capture_output=True, text=True, check=True)
    report = json.loads(info.stdout)
    assert report["kernels"] >= 2 and report["native"] == report["specializations"] >= 2
    subprocess.run([sys.executable, "-m", "lazyarray", "cache", "clear"], env=env, check=True)
    info = subprocess.run([sys.executable, "-m", "lazyarray", "cache", "info"], env=env,
                          capture_output=True, text=True, check=True)
    assert json.loads(info.stdout)["kernels"] == 0


@pytest.fixture
def compiled():
    with la.options(backend="cpu", eager_threshold=0):
        yield


def _compiles(fn):
    before = la.cache_info()["compiles"] + la.cache_info()["disk_hits"]
    fn()
    return la.cache_info()["compiles"] + la.cache_info()["disk_hits"] - before


def test_sizes_constants_and_slice_offsets_share_a_kernel(compiled):
    def program(n, c, k):
        x = la.asarray(np.arange(n, dtype=np.float64))
        return np.asarray(x[k:-k] * c + x[: -2 * k] - 1.5)

    program(100, 2.0, 1)
    assert _compiles(lambda: program(1000, 3.0, 1)) == 0
    assert _compiles(lambda: program(5000, -7.0, 3)) == 0
    np.testing.assert_allclose(program(50, 0.5, 2), np.arange(2, 48) * 0.5 + np.arange(46) - 1.5)


def test_dtype_rank_and_broadcasting_do_not_collide(compiled):
    # an expression no other test evaluates: whatever ran before in this process, each
    # variant below is new to the kernel cache
    def f(o):
        return np.asarray(la.cbrt(o) * 2.5 - la.arcsinh(o))

    f(la.asarray(np.ones(64)))
    for other in (la.asarray(np.ones(64, np.float32)), la.asarray(np.ones((8, 8)))):
        assert _compiles(lambda o=other: f(o)) == 1
    row = la.asarray(np.ones((1, 8)))
    grid = la.asarray(np.ones((8, 8)))

    def g(a, b):
        return np.asarray((a - b * 0.375) * 2.5 + la.copysign(a, b))

    g(grid, grid)
    assert _compiles(lambda: g(grid, row)) == 1  # a broadcast dimension is structure
    np.testing.assert_array_equal(np.asarray(grid + row), np.full((8, 8), 2.0))


def _fake_kernels(path, n):
    """n kernel source files (and a Numba index each) with increasing access times."""
    from lazyarray.runtime import diskcache

    names = []
    for i in range(n):
        key = f"{i:024x}"[::-1]  # (the shards differ)
        name = diskcache.PREFIX + key
        folder = diskcache.kernel_folder(path, key)
        os.makedirs(os.path.join(folder, "__pycache__"), exist_ok=True)
        src = os.path.join(folder, name + ".py")
        with open(src, "w") as f:
            f.write("# kernel\n")
        with open(os.path.join(folder, "__pycache__", name + ".kernel-1.py311.nbi"), "w") as f:
            f.write("index")
        os.utime(src, (1_000_000 + i, 1_000_000 + i))
        names.append(name)
    return names


def test_evict_removes_least_recently_used_with_their_numba_entries(tmp_path):
    from lazyarray.runtime import diskcache

    names = _fake_kernels(str(tmp_path), 6)
    assert diskcache.evict(str(tmp_path), keep=4) == 2
    left = sorted(os.path.basename(f)[:-3] for f in diskcache.kernel_files(str(tmp_path)))
    assert left == names[2:]
    assert sorted(os.path.basename(f) for f in glob.glob(str(tmp_path / "*" / "__pycache__" / "*"))
                  ) == sorted(n + ".kernel-1.py311.nbi" for n in names[2:])


def test_evict_tolerates_files_another_process_removed(tmp_path, monkeypatch):
    """Two processes share the cache: a file listed by one may be gone when it stats it."""
    from lazyarray.runtime import diskcache

    names = _fake_kernels(str(tmp_path), 6)
    real_stat = os.stat
    gone = os.path.join(diskcache.kernel_folder(str(tmp_path), names[0][len(diskcache.PREFIX):]),
                        names[0] + ".py")

    def stat(p, *a, **k):
        if p == gone:
            os.remove(gone)
            raise FileNotFoundError(p)
        return real_stat(p, *a, **k)

    monkeypatch.setattr(diskcache.os, "stat", stat)
    assert diskcache.evict(str(tmp_path), keep=4) == 1  # five left to consider, one too many
    left = sorted(os.path.basename(f)[:-3] for f in diskcache.kernel_files(str(tmp_path)))
    assert left == names[2:]
