"""Numba CPU backend: compile generated kernel source, with Numba's own disk cache.

Each kernel's source is written once (atomically) to `<cache_dir>/k_<hash>.py` and imported
under a registered module name, so `njit(cache=True)` can find it again in a new process.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading
import warnings

import numba

from lazyarray import stats

_PRELUDE = """import numpy as np
from numba import njit, prange
import lazyarray.backends.numba_scalar as _h

"""
_lock = threading.Lock()


def _write_atomic(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def compile_kernel(key: str, source: str, cache_dir: str):
    """(parallel, serial) dispatchers for `source`, which defines `kernel`.

    Small launches take the serial one: waking the worker threads costs more than it saves.
    """
    parallel = "prange(" in source
    deco = "@njit(parallel={}, error_model='numpy', cache=True, nogil=True)\n"
    serial = source.replace("def kernel(", "def kernel_serial(", 1)
    text = (f"# lazyarray kernel {key}\n" + _PRELUDE + deco.format(parallel) + source + "\n\n"
            + deco.format(False) + serial)
    name = f"lazyarray_kernel_{key}"
    path = os.path.join(cache_dir, name + ".py")
    with _lock:
        existing = None
        if os.path.exists(path):
            with open(path) as f:
                existing = f.read()
        if existing != text:  # absent, or corrupt/foreign: (re)write it
            _write_atomic(path, text)
            stats.bump("disk_writes")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module.kernel, module.kernel_serial


_first_call = threading.Lock()


def launch(kernel, args) -> None:
    if not kernel.overloads:  # the first call compiles: one thread does, the others wait
        with _first_call:
            _counted_call(kernel, args)
    else:
        _counted_call(kernel, args)


def _counted_call(kernel, args) -> None:
    before = len(kernel.overloads)
    hits = sum(kernel.stats.cache_hits.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaWarning)
        kernel(*args)
    if len(kernel.overloads) > before:  # a new specialization: loaded from disk, or compiled
        disk = sum(kernel.stats.cache_hits.values()) > hits
        stats.bump("disk_hits" if disk else "compiles")
    stats.bump("kernels_launched")
