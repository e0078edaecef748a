"""LAZYARRAY_DEBUG levels, LAZYARRAY_DUMP_DIR snapshots and `python -m lazyarray replay`."""

import json
import logging
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_like_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyarray as la
from lazyarray.__main__ import main as cli
from lazyarray.replay import replay, snapshots


def _read(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


def _program():
    """A loop fusion, a reduction with an epilogue, and a write, on non-trivial inputs."""
    x = np.linspace(-3.0, 3.0, 1200).reshape(30, 40)
    y = (np.arange(1200) % 7).astype(np.int32).reshape(30, 40)
    a, b = la.asarray(x), la.asarray(y)
    w = la.sin(a) * 2 + b
    z = la.sqrt(((a - b) ** 2).sum(axis=-1))
    ref_w, ref_z = np.sin(x) * 2 + y, np.sqrt(((x - y) ** 2).sum(axis=-1))
    return (w, z), (ref_w, ref_z)


def _dump(tmp_path, make=_program):
    """Run `make` with a cold in-memory kernel cache and dumps on; return the snapshots."""
    la.cache_clear()
    with la.options(eager_threshold=0, dump_dir=str(tmp_path)):
        arrays, refs = make()
        la.evaluate(*arrays)
    for got, want in zip(arrays, refs):
        assert_like_numpy(got, want)
    return snapshots(str(tmp_path))


def test_dump_writes_one_snapshot_per_compiling_materialization(tmp_path):
    (snap,) = _dump(tmp_path)
    names = set(os.listdir(snap))
    assert {"before.hlo", "after.hlo", "manifest.json", "input_0.npy", "input_1.npy",
            "output_0.npy", "output_1.npy"} <= names
    manifest = json.loads(_read(snap, "manifest.json"))
    assert manifest["versions"]["numpy"] == np.__version__
    assert manifest["versions"]["lazyarray"] == la.__version__
    assert "numba" in manifest["versions"]
    assert manifest["options"]["eager_threshold"] == 0
    assert [o["shape"] for o in manifest["outputs"]] == [[30, 40], [30]]
    assert [o["dtype"] for o in manifest["outputs"]] == ["<f8", "<f8"]
    kernels = manifest["kernels"]
    assert len(kernels) == 2 and all(k["compiled"] for k in kernels)
    for k in kernels:  # every kernel's source is there, and is what codegen rendered
        assert _read(snap, k["source"]).startswith("def kernel(")
    assert "fusion(" in _read(snap, "after.hlo")
    assert "fusion(" not in _read(snap, "before.hlo")
    # the same program again hits the kernel cache: nothing compiles, nothing is written
    with la.options(eager_threshold=0, dump_dir=str(tmp_path)):
        arrays, _ = _program()
        la.evaluate(*arrays)
    assert snapshots(str(tmp_path)) == [snap]


@pytest.mark.parametrize("backend", ["cpu", "numpy"])
def test_replay_round_trip(tmp_path, backend, capsys):
    (snap,) = _dump(tmp_path)
    outcome = replay(snap, backend)
    assert outcome.ok, str(outcome)
    assert cli(["replay", snap, "--backend", backend]) == 0
    out = capsys.readouterr().out
    assert f"backend {backend} vs reference interpreter" in out
    assert out.rstrip().endswith("OK") and "MISMATCH" not in out


def _mixed():
    """Ints, bools, complex, NaN constants, argmax, cumsum, matmul and an in-place write."""
    n = np.arange(-20, 20, dtype=np.int64)
    c = (np.linspace(0, 1, 40) + 1j * np.linspace(1, 0, 40)).astype(np.complex128)
    m = np.linspace(0, 1, 40 * 40).reshape(40, 40)
    a, z, mm = la.asarray(n), la.asarray(c), la.asarray(m)
    t = a * 3 - 1
    t[5:9] = 0
    outs = ((a % 7) > 2, z * (2 - 1j), la.where(a > 0, la.nan, 1.0), la.argmax(mm, axis=1),
            la.cumsum(a), mm @ mm, t)
    tn = n * 3 - 1
    tn[5:9] = 0
    refs = ((n % 7) > 2, c * (2 - 1j), np.where(n > 0, np.nan, 1.0), np.argmax(m, axis=1),
            np.cumsum(n), m @ m, tn)
    return outs, refs


def test_replay_round_trip_mixed_program(tmp_path):
    snaps = _dump(tmp_path, _mixed)
    assert snaps
    for snap in snaps:
        for backend in ("cpu", "numpy"):
            outcome = replay(snap, backend)
            assert outcome.ok, str(outcome)


def test_corrupted_program_reports_mismatch(tmp_path, capsys):
    (snap,) = _dump(tmp_path)
    bad = str(tmp_path / "bad")
    shutil.copytree(snap, bad)
    path = os.path.join(bad, "after.hlo")
    text = _read(path)
    assert " sine(" in text
    with open(path, "w") as f:
        f.write(text.replace(" sine(", " cosine("))
    for backend in ("cpu", "numpy"):
        outcome = replay(bad, backend)
        assert not outcome.ok
        assert "output 0 f64[30,40]: MISMATCH" in str(outcome)
        assert "output 1 f64[30]: OK" in str(outcome)
        assert str(outcome).endswith("MISMATCH")
    assert cli(["replay", bad]) == 1
    assert cli(["replay", str(tmp_path)]) == 1  # the dump dir: the good one and the bad one
    out = capsys.readouterr().out
    assert "2 snapshots: MISMATCH" in out


def test_corrupted_recorded_output_reports_mismatch(tmp_path):
    (snap,) = _dump(tmp_path)
    path = os.path.join(snap, "output_1.npy")
    z = np.load(path)
    z[3] += 1e-3
    np.save(path, z)
    outcome = replay(snap, "numpy")
    assert not outcome.ok
    assert "recorded outputs vs reference interpreter:\n    output 0: OK\n    output 1: MISMATCH: " \
           "1 of 30 elements differ; first at (3,)" in str(outcome)


def test_corrupted_dtype_reports_mismatch(tmp_path):
    (snap,) = _dump(tmp_path)
    path = os.path.join(snap, "manifest.json")
    manifest = json.loads(_read(path))
    manifest["outputs"][1]["dtype"] = "<f4"
    with open(path, "w") as f:
        json.dump(manifest, f)
    outcome = replay(snap, "numpy")
    assert not outcome.ok and "manifest says f32[30]" in str(outcome)


def test_replay_usage_errors(tmp_path, capsys):
    assert cli(["replay", str(tmp_path)]) == 2
    assert "no snapshot" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(["replay", str(tmp_path), "--backend", "gpu"])


def _levels(caplog, level):
    la.cache_clear()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="lazyarray.debug"), \
            la.options(eager_threshold=0, debug=level):
        arrays, _ = _program()
        la.evaluate(*arrays)
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "lazyarray.debug")


def test_debug_levels_print_what_they_promise(caplog):
    assert _levels(caplog, 0) == ""
    one = _levels(caplog, 1)
    assert "materialization" in one
    assert "2 kernels (0 cache hits, 2 misses; built 2: " in one
    assert "kind=loop cache=miss (built)" in one
    assert "kind=input cache=miss (built)" in one and " ms signature=" in one
    assert "HloModule" not in one and "def kernel" not in one
    two = _levels(caplog, 2)
    assert ": HLO after optimization ==" in two and "fusion(" in two
    assert "after simplify" not in two and "def kernel" not in two
    three = _levels(caplog, 3)
    n = la.cache_info()["materializations"]
    for header in ("HLO before the passes", "HLO after simplify", "HLO after dce",
                   "HLO after fuse"):
        assert f"== materialization {n}: {header} ==" in three
    assert "def kernel" not in three
    four = _levels(caplog, 4)
    assert ": HLO after fuse ==" in four
    assert four.count("def kernel(") == 2 and ": fusion.1 source (signature" in four


def test_debug_level_one_on_the_interpreter(caplog):
    with caplog.at_level(logging.DEBUG, logger="lazyarray.debug"), \
            la.options(debug=1, eager_threshold=100_000):
        x = la.arange(40_000.0) * 2  # above the eager tier, below the compile threshold
        x.sum().item()
    assert "interpreter" in caplog.text and "0 kernels" in caplog.text


def test_debug_option_checked():
    with pytest.raises(ValueError, match="debug must be an int from 0 to 4"), \
            la.options(debug=5):
        pass


def test_debug_env_prints_to_stderr_without_logging_setup(tmp_path):
    code = ("import lazyarray as la\n"
            "x = la.arange(100000.0)\n"
            "print(float((la.sin(x) * 2).sum()))\n")
    env = dict(os.environ, LAZYARRAY_DEBUG="2", LAZYARRAY_DUMP_DIR=str(tmp_path / "d"),
               LAZYARRAY_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert ("materialization 1: 1 kernels (0 cache hits, 1 misses; built 1: 1 compiled by "
            "Numba, 0 loaded from the disk cache)") in r.stderr
    assert "== materialization 1: HLO after optimization ==" in r.stderr
    assert "snapshot written to" in r.stderr
    (snap,) = snapshots(str(tmp_path / "d"))
    assert replay(snap, "numpy").ok


def test_unwritable_dump_dir_warns_and_computes(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    la.cache_clear()
    with la.options(eager_threshold=0, dump_dir=str(blocker)):
        arrays, refs = _program()
        la.evaluate(*arrays)
    for got, want in zip(arrays, refs):
        assert_like_numpy(got, want)
    assert "no snapshot written" in caplog.text


def test_unreadable_snapshot_is_a_clear_error(tmp_path, capsys):
    (snap,) = _dump(tmp_path)
    os.remove(os.path.join(snap, "input_0.npy"))
    assert cli(["replay", snap]) == 2
    assert "cannot be read: FileNotFoundError" in capsys.readouterr().err


SPECIAL = {"f": [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-300, 0.1],
           "c": [1j, complex(np.nan, 1), -0.5 + 2j], "i": [-3, 0, 7], "u": [0, 5, 2**63 + 1],
           "b": [True, False]}


@settings(max_examples=8)
@given(dtype=st.sampled_from(["int8", "uint64", "float32", "float64", "complex128", "bool"]),
       shape=st.sampled_from([(), (7,), (3, 5), (2, 1, 4)]), data=st.data())
def test_replay_round_trip_random_programs(tmp_path_factory, dtype, shape, data):
    """Constants (NaN, -0.0, inf, big unsigned), dtypes and ranks survive the HLO text round
    trip: a dumped program replays to the reference interpreter's results."""
    dt = np.dtype(dtype)
    c = data.draw(st.sampled_from(SPECIAL[dt.kind]))
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dt)
    tmp = tmp_path_factory.mktemp("dump")

    def make():
        a = la.asarray(x)
        y = la.where(a == c, a, a * c)
        return (y, y.sum(axis=-1) if y.ndim else y + 1), (None, None)

    la.cache_clear()
    with la.options(eager_threshold=0, dump_dir=str(tmp)):
        arrays, _ = make()
        la.evaluate(*arrays)
    found = snapshots(str(tmp))
    assert found or dt.kind == "c"  # codegen may decline complex comparisons
    for snap in found:
        outcome = replay(snap, "numpy")
        assert outcome.ok, str(outcome)


def test_snapshots_never_overwrite(tmp_path):
    first = _dump(tmp_path)
    second = _dump(tmp_path)  # cache_clear restarts the materialization count: same name
    assert len(first) == 1 and len(second) == 2 and first[0] in second
    assert all(replay(s, "numpy").ok for s in second)
