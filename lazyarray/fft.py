"""lazyarray.fft: ``numpy.fft`` over lazy arrays.

Every public name of ``numpy.fft`` resolves: the transforms and the frequency helpers are
counted fallbacks (NumPy's function on computed inputs; the result is a lazy Array, so what
follows a transform stays lazy and fuses), so ``la.fft.irfft(la.fft.rfft(x) * h)`` works.
"""

from __future__ import annotations

import numpy as _np

from lazyarray._coverage import module_getattr as _module_getattr

__all__ = list(_np.fft.__all__)


def __getattr__(name: str):
    return _module_getattr(_np.fft, globals(), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))
