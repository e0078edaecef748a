"""Tests of the CUDA backend on Numba's CUDA simulator. They need NUMBA_ENABLE_CUDASIM=1 set
before Numba is imported, so tests/test_cuda.py runs this directory in a fresh process; a
plain `pytest tests` does not collect it in its own (CPU) process. On a real GPU,
`LAZYARRAY_TEST_BACKEND=cuda pytest tests/cuda` runs them there."""

import os

_ASKED = os.environ.get("LAZYARRAY_TEST_BACKEND") == "cuda"
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and not _ASKED:
    collect_ignore_glob = ["test_*.py"]
