"""512-bit vectors for the kernels of large launches, on CPUs with AVX-512.

LLVM tunes for Intel's AVX-512 cores with a preference for 256-bit vectors: 512-bit code
lowers the core's clock for a while after it runs. For a kernel over a large array the wide
vectors win where compute bounds it (measured on a 2-vCPU Intel Xeon: the Gaussian sum's exp sum at
1e5 41.9 -> 29.0 ms, `a*b + c*d - sin(e)` at 1e7 16.2 -> 15.2 ms) and cost nothing where memory
does; around a small kernel the slower clock costs the Python that follows more than the kernel
saved (`a*b + c*d - sin(e)` at 1e3 from 1.15 to 1.43-1.61 times NumPy's time when every kernel was
wide). So only the kernels that run on all threads (`compile_kernel`'s first dispatcher, taken for
large launches) are compiled wide: while `wide()` is active on a thread, the LLVM functions Numba
builds there carry the attributes `prefer-vector-width=512` and `min-legal-vector-width=512`.

Off when the CPU has no AVX-512F, when `NUMBA_CPU_NAME` or `NUMBA_CPU_FEATURES` chooses the
target, or with `LAZYARRAY_VECTOR_BITS=256`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

_ATTRIBUTES = ('"prefer-vector-width"="512"', '"min-legal-vector-width"="512"')
_state = threading.local()


@functools.lru_cache(maxsize=1)
def enabled() -> bool:
    """Whether large-launch kernels are compiled with 512-bit vectors here."""
    if (os.environ.get("LAZYARRAY_VECTOR_BITS") == "256" or "NUMBA_CPU_FEATURES" in os.environ
            or "NUMBA_CPU_NAME" in os.environ):
        return False
    flags = _linux_cpu_flags()
    if flags is not None:  # (the kernel's view of CPUID, as LLVM's; no LLVM to load: 20-30 ms)
        return "avx512f" in flags
    try:
        import llvmlite.binding as llvm

        return bool(llvm.get_host_cpu_features().get("avx512f"))
    except Exception:  # noqa: BLE001 (no host information: keep LLVM's defaults)
        return False


def _linux_cpu_flags() -> set[str] | None:
    """The first CPU's feature flags from /proc/cpuinfo, or None where there is none: the
    disk cache's directory name needs the vector width in every process, most of which never
    load LLVM (a run on the interpreter while the worker compiles)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=1)
def _install() -> None:
    """Wrap Numba's `add_ir_module` (where each compiled module enters its code library,
    before optimization) to mark the functions of modules built under `wide()`."""
    from numba.core import codegen

    add = codegen.CPUCodeLibrary.add_ir_module

    @functools.wraps(add)
    def add_ir_module(self, ir_module):
        if getattr(_state, "wide", False):
            for fn in ir_module.functions:
                if not fn.is_declaration:
                    for attribute in _ATTRIBUTES:
                        set.add(fn.attributes, attribute)
        return add(self, ir_module)

    codegen.CPUCodeLibrary.add_ir_module = add_ir_module


@contextlib.contextmanager
def wide():
    """Compile with 512-bit vectors on this thread for the duration of the block (a no-op
    where `enabled()` is false)."""
    if not enabled():
        yield
        return
    _install()
    before = getattr(_state, "wide", False)
    _state.wide = True
    try:
        yield
    finally:
        _state.wide = before
