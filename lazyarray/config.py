"""Options: environment variables at import, `options(...)` context manager to override.

    LAZYARRAY_BACKEND           "cpu" (Numba, default), "numpy" (the reference interpreter) or
                                "cuda" (Numba CUDA kernels, data resident on the GPU)
    LAZYARRAY_EAGER_THRESHOLD   element count below which the interpreter runs a graph
    LAZYARRAY_CACHE_DIR         where compiled kernels persist (default: the user cache dir)
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass, replace

BACKENDS = ("cpu", "numpy", "cuda")


@dataclass(frozen=True)
class Options:
    backend: str = "cpu"
    # measured (docs/performance.md): below ~3e4 elements NumPy's per-op calls beat a kernel launch
    eager_threshold: int = 32_768
    cache_dir: str | None = None


def _from_env() -> Options:
    o = Options()
    if "LAZYARRAY_BACKEND" in os.environ:
        o = replace(o, backend=os.environ["LAZYARRAY_BACKEND"])
    if "LAZYARRAY_EAGER_THRESHOLD" in os.environ:
        o = replace(o, eager_threshold=int(os.environ["LAZYARRAY_EAGER_THRESHOLD"]))
    if "LAZYARRAY_CACHE_DIR" in os.environ:
        o = replace(o, cache_dir=os.environ["LAZYARRAY_CACHE_DIR"])
    _check(o)
    return o


def _check(o: Options) -> None:
    if o.backend not in BACKENDS:
        raise ValueError(f"unknown backend {o.backend!r}; expected one of {BACKENDS}")
    if o.eager_threshold < 0:
        raise ValueError("eager_threshold must be >= 0")


_current: contextvars.ContextVar[Options] = contextvars.ContextVar("lazyarray_options",
                                                                  default=_from_env())


def get() -> Options:
    return _current.get()


@contextlib.contextmanager
def options(**overrides):
    """Temporarily override options, e.g. ``with lazyarray.options(backend="numpy"): ...``.

    Parameters
    ----------
    backend : {"cpu", "numpy", "cuda"}
        Where materialization runs: Numba kernels, NumPy's reference interpreter, or Numba
        CUDA kernels on the GPU (see docs/cuda.md).
    eager_threshold : int
        Graphs whose largest array has fewer elements run on the interpreter (0: always
        compile on the cpu backend).
    cache_dir : str
        Directory for compiled kernels.
    """
    new = replace(get(), **overrides)
    _check(new)
    token = _current.set(new)
    try:
        yield new
    finally:
        _current.reset(token)
