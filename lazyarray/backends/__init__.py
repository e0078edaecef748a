"""Backends: where an optimized HLO module runs.

A backend is one `Backend` row: the passes its modules get, how a realized leaf becomes a
kernel argument (`leaf`, given to `lower`), how a module runs (`run`), how a host array moves
into its memory and whether results stay there. The scheduler (`engine.py`) picks a backend
per evaluation and uses nothing else of it, so a new backend is a new module with a `BACKEND`
row and a line in `_MODULES`.

The CPU backend is the runtime's executor over Numba kernels (`runtime/executor.py`, with
`numba_cpu.py` and the code generators); it runs in the scheduler's own fast paths and needs
no row. CUDA (`numba_cuda.py`), Dask (`dask_backend.py`) and XLA (`xla.py`, through JAX) load
Numba's CUDA support, Dask or JAX with them, so `get` imports them on first use, never with
the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

_MODULES = {"cuda": "lazyarray.backends.numba_cuda", "dask": "lazyarray.backends.dask_backend",
            "xla": "lazyarray.backends.xla"}


@dataclass(frozen=True)
class Backend:
    """The protocol of one backend."""

    name: str
    passes: tuple  # the pass pipeline (`lazyarray.passes`) its modules get
    run: Callable  # run(module, args, trace, dry) -> the outputs (with `dry`: plan only)
    leaf: Callable | None = None  # a realized buffer node -> its kernel argument (None: host)
    to_device: Callable | None = None  # a host array -> the same values in this memory
    device_results: bool = False  # outputs stay in the backend's memory (`realize_device`)
    donates: bool = False  # run(..., free=indices) may overwrite those arguments' buffers
    module: ModuleType | None = None  # the backend's own API (`to_dask`, `cache_clear`, ...)


def get(name: str) -> Backend:
    """The backend `name` ("cuda", "dask", "xla"), importing its module on first use."""
    return importlib.import_module(_MODULES[name]).BACKEND


def configured(name: str) -> Backend | None:
    """The row of the backend option `name`, imported on first use; None for the host's own
    tiers ("cpu", "numpy"), which have none."""
    return get(name) if name in _MODULES else None


def loaded(name: str) -> Backend | None:
    """The backend `name` if its module was imported already (nothing is loaded), else None."""
    mod = sys.modules.get(_MODULES[name])
    return getattr(mod, "BACKEND", None)
