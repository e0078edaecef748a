"""The on-disk kernel cache: one directory per (lazyarray, Numba, llvmlite, NumPy, codegen)
version, private to the user, bounded in size.

Each kernel is a generated source file `<shard>/lazyarray_kernel_<signature>.py` (the shard:
the signature's first two hex digits, so that no folder holds more than a small part of the
cache: looking up one kernel's files never scans thousands); Numba's own cache (`cache=True`)
keeps the compiled machine code beside it in `<shard>/__pycache__`, keyed further by the CPU
model and features. A new process that meets a known signature loads instead of compiling.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import shutil
import stat
import tempfile

import numpy as np

from lazyarray import config
from lazyarray.backends import vector_width
from lazyarray.codegen import parts
from lazyarray.codegen.cpu import CODEGEN_VERSION
from lazyarray.ops.loops import loops_tag
from lazyarray.version import __version__

log = logging.getLogger("lazyarray")

LAYOUT = 2  # of the folders and files below a version's directory (2: sharded by key)
MAX_KERNELS = 4096  # least recently used kernels beyond this are evicted
PREFIX = "lazyarray_kernel_"
# The modules of the scalar helpers kernels call (`numba_scalar` imports the others): the tag
# hashes their source in this order. A new helper module belongs here.
HELPER_MODULES = ("lazyarray.backends.numba_scalar", "lazyarray.backends.numba_fp",
                  "lazyarray.backends.numba_exp", "lazyarray.backends.numba_log",
                  "lazyarray.backends.numba_trig", "lazyarray.backends.numba_loops",
                  "lazyarray.backends.numba_ufunc", "lazyarray.ops.loops",
                  "lazyarray.backends.numba_parts", "lazyarray.codegen.parts")


@functools.lru_cache(maxsize=1)
def version_tag() -> str:
    """Everything that changes machine code for the same kernel source: the versions, the
    scalar helpers kernels call (Numba's cache does not see changes in called modules), and
    the vector width of large-launch kernels, and which of NumPy's loops kernels call."""
    import hashlib
    import importlib.util


    # read, not imported: importing Numba here would cost a first call ~0.5 s
    numba_version, llvmlite_version = _dist_version("numba"), _dist_version("llvmlite")
    digest = hashlib.sha256()
    for name in HELPER_MODULES:  # (a change in any one of them changes the tag)
        with open(importlib.util.find_spec(name).origin, "rb") as f:
            digest.update(hashlib.sha256(f.read()).digest())
    helpers = digest.hexdigest()[:8]
    wide = "-v512" if vector_width.enabled() else ""
    # (parfor kernels under LAZYARRAY_PARTS=0: other machine code for the same kernel key)
    parfor = "" if parts.ENABLED else "-parfor"
    return (f"lazyarray-{__version__}-numba{numba_version}-llvmlite{llvmlite_version}"
            f"-np{np.__version__}-cg{CODEGEN_VERSION}-h{helpers}-l{loops_tag()}-d{LAYOUT}"
            f"{wide}{parfor}")


def _dist_version(name: str) -> str:
    """An installed distribution's version, from its .dist-info folder name (fast), else from
    importlib.metadata."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is not None and spec.origin:
        site = os.path.dirname(os.path.dirname(spec.origin))
        found = glob.glob(os.path.join(site, f"{name}-*.dist-info"))
        if len(found) == 1:
            return os.path.basename(found[0])[len(name) + 1:-len(".dist-info")]
    import importlib.metadata

    return importlib.metadata.version(name)


def base_dir() -> str:
    configured = config.get().cache_dir
    if configured:
        return configured
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "lazyarray")


def cache_dir() -> str:
    """The versioned kernel directory (created 0700); a temporary one if that is unsafe."""
    return _resolve(base_dir())


KEEP_VERSIONS = 3  # cache directories of older lazyarray/Numba/NumPy versions are removed


@functools.lru_cache(maxsize=16)
def _resolve(base: str) -> str:
    path = os.path.join(base, version_tag())
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.utime(path)
        others = sorted(glob.glob(os.path.join(base, "lazyarray-*")), key=os.path.getmtime)
        for old in others[:-KEEP_VERSIONS]:
            if old != path:
                shutil.rmtree(old, ignore_errors=True)
        for p in (base, path):
            st = os.stat(p)
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or (
                    hasattr(os, "getuid") and st.st_uid != os.getuid()):
                raise PermissionError(f"{p} is writable by others or not owned by this user")
        return path
    except OSError as exc:
        log.warning("lazyarray: not using kernel cache directory %s (%s); kernels are cached "
                    "in memory only", path, exc)
        return tempfile.mkdtemp(prefix="lazyarray-")


def kernel_folder(path: str, key: str) -> str:
    """The folder of kernel `key`'s source and Numba's files (`<path>/<shard>`)."""
    return os.path.join(path, key[:2])


def kernel_files(path: str | None = None) -> list[str]:
    return glob.glob(os.path.join(path or cache_dir(), "*", PREFIX + "*.py"))


EVICT_EVERY = 64  # kernel modules a process imports between two looks at the cache's size
_imports = [0]


def evict_now_and_then(path: str) -> int:
    """`evict`, on the first kernel module a process imports and every EVICT_EVERY-th after
    (a look lists and stats every kernel: the cache may overshoot MAX_KERNELS by that many
    per process between looks)."""
    n = _imports[0]
    _imports[0] = n + 1
    return evict(path) if n % EVICT_EVERY == 0 else 0


def evict(path: str, keep: int = MAX_KERNELS) -> int:
    """Delete the least recently used kernels beyond `keep` (source and Numba's entries)."""
    files = kernel_files(path)
    if len(files) <= keep:
        return 0
    stamped = []
    for f in files:
        try:
            stamped.append((os.stat(f).st_atime, f))
        except OSError:  # another process evicted or purged it meanwhile
            pass
    stamped.sort()
    doomed = [f for _, f in stamped[: len(stamped) - keep]]
    for f in doomed:
        name = os.path.basename(f)[:-3]
        for g in [f, *glob.glob(os.path.join(os.path.dirname(f), "__pycache__",
                                             glob.escape(name) + ".*"))]:
            try:
                os.remove(g)
            except OSError:
                pass
    return len(doomed)


def built_marker(path: str, key: str, fn: int, sig: tuple) -> str:
    """The file that says kernel `key`'s dispatcher `fn` (0 parallel, 1 serial) is built into
    Numba's cache for argument types `sig` (`compile_service.describe`): a process that finds
    it launches the kernel at once (loading it), instead of interpreting while a worker looks.
    It lives beside Numba's files, so eviction and purging take it with them."""
    h = hashlib.sha256(repr(sig).encode()).hexdigest()[:16]
    return os.path.join(kernel_folder(path, key), "__pycache__", f"{PREFIX}{key}.f{fn}-{h}.built")


def native_image(path: str, key: str, fn: int, sig: tuple) -> str:
    """The native image (`runtime.native`) of that specialization, beside its marker."""
    return built_marker(path, key, fn, sig)[:-len(".built")] + ".native"


def mark_built(path: str, key: str, fn: int, sig: tuple) -> None:
    marker = built_marker(path, key, fn, sig)
    try:
        os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
        with open(marker, "w"):
            pass
    except OSError:  # (no marker: the next process asks the worker, which loads it)
        pass


def purge(path: str, key: str) -> None:
    """Forget one kernel's files (a corrupt or incompatible entry is rebuilt, not trusted)."""
    name, folder = PREFIX + key, kernel_folder(path, key)
    for f in [os.path.join(folder, name + ".py"),
              *glob.glob(os.path.join(folder, "__pycache__", glob.escape(name) + ".*"))]:
        try:
            os.remove(f)
        except OSError:
            pass


def count_load(path: str, key: str, fn: int, sig: tuple) -> None:
    """One more load of a specialization from disk: a byte appended to its marker (its size
    is the hit count `kernels` reports)."""
    try:
        with open(built_marker(path, key, fn, sig), "ab") as f:
            f.write(b".")
    except OSError:
        pass


def kernels(path: str | None = None) -> list[dict]:
    """Per cached kernel: its key, bytes on disk (source, Numba's files, native images), the
    specializations built into it, how many of them have a native image, how many times a
    process loaded them, and when it was last used (seconds since the epoch)."""
    path = path or cache_dir()
    rows = []
    for f in sorted(kernel_files(path)):
        name = os.path.basename(f)[:-3]
        files = [f, *glob.glob(os.path.join(os.path.dirname(f), "__pycache__",
                                            glob.escape(name) + ".*"))]
        marks = [g for g in files if g.endswith(".built")]
        try:
            rows.append({"key": name[len(PREFIX):],
                         "bytes": sum(os.path.getsize(g) for g in files),
                         "specializations": len(marks),
                         "native": sum(g.endswith(".native") for g in files),
                         "loads": sum(os.path.getsize(g) for g in marks),
                         "last_used": max(os.stat(g).st_atime for g in files)})
        except OSError:  # (evicted meanwhile by another process)
            pass
    return rows


def info() -> dict:
    path = cache_dir()
    rows = kernels(path)
    size = 0
    for root, _, names in os.walk(path):
        size += sum(os.path.getsize(os.path.join(root, n)) for n in names)
    return {"directory": path, "kernels": len(rows), "bytes": size,
            "specializations": sum(r["specializations"] for r in rows),
            "native": sum(r["native"] for r in rows),
            "loads": sum(r["loads"] for r in rows)}


def clear() -> None:
    """Remove every cached kernel of every version under the cache's base directory."""
    base = base_dir()
    for entry in glob.glob(os.path.join(base, "lazyarray-*")):
        shutil.rmtree(entry, ignore_errors=True)
    _resolve.cache_clear()
