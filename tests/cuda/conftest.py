"""Tests of the CUDA backend on Numba's CUDA simulator. They need NUMBA_ENABLE_CUDASIM=1 set
before Numba is imported, so tests/test_cuda.py runs this directory in a fresh process; a
plain `pytest tests` does not collect it in its own (CPU) process."""

import os

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    collect_ignore_glob = ["test_*.py"]
