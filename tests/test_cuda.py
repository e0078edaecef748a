"""The CUDA backend's tests, run on Numba's CUDA simulator in a separate process (the
simulator must be switched on before Numba is imported, and must not touch this process's
CPU tests):

- tests/cuda/: residency, counted transfers and fallbacks, cache, library calls, writes;
- the differential test files below (slow) with their compiled mode on the CUDA backend
  (`LAZYARRAY_TEST_BACKEND=cuda`): the same oracle (NumPy) and the same cases as the CPU.

The kernels themselves are compiled for real hardware in tests/test_cuda_ptx.py.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# file -> hypothesis profile: "sim" (6 examples) where kernels are many, "ci" where cheap
DIFFERENTIAL = {"tests/test_reductions.py": "sim", "tests/test_elementwise.py": "sim",
                "tests/test_programs.py": "ci", "tests/test_views.py": "ci",
                "tests/test_shapes_indexing.py": "sim", "tests/test_creation.py": "sim",
                "tests/test_array_protocol.py": "sim", "tests/test_breadth.py": "sim",
                "tests/test_version_fuzz.py": "sim"}
# narrower selections: the version fuzzer's directed programs at 5 elements and its random
# programs of the tiny size (a simulated kernel of 10^5 elements runs 10^5 Python threads)
ONLY = {"tests/test_version_fuzz.py": "(-5- or tiny) and not long"}
# files run as several processes (`--shard`), each a test of its own, so that pytest-xdist
# spreads them: simulated GPU threads are Python threads, and test_reductions.py alone took
# 6 minutes in one process
SHARDS = {"tests/test_reductions.py": 4}


def _run_simulated(args: list[str], tmp_path, profile: str = "sim") -> None:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", LAZYARRAY_TEST_BACKEND="cuda",
               HYPOTHESIS_PROFILE=profile, LAZYARRAY_CUDA_STRICT="1",
               LAZYARRAY_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]


@pytest.mark.heavy
def test_cuda_backend_on_the_simulator(tmp_path):
    _run_simulated(["tests/cuda"], tmp_path)


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("path, shard", [(p, f"{i}/{SHARDS.get(p, 1)}") for p in DIFFERENTIAL
                                         for i in range(SHARDS.get(p, 1))])
def test_differential_suite_on_the_cuda_simulator(path, shard, tmp_path):
    # the `mode` tests' compiled variants; not the `test_compiled_*` ones, which ask for the
    # CPU backend by name (the CPU suite runs them)
    select = "compiled and not test_compiled" + (f" and {ONLY[path]}" if path in ONLY else "")
    _run_simulated([path, "-k", select, "--shard", shard], tmp_path, DIFFERENTIAL[path])
