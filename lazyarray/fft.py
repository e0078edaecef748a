"""lazyarray.fft: ``numpy.fft`` over lazy arrays.

Every public name of ``numpy.fft`` resolves: the transforms and the frequency helpers are
counted fallbacks (NumPy's function on computed inputs; the result is a lazy Array, so what
follows a transform stays lazy and fuses), so ``la.fft.irfft(la.fft.rfft(x) * h)`` works.
"""

from __future__ import annotations

import numpy as _np

from lazyarray import _creation, _manipulation
from lazyarray._coverage import module_getattr as _module_getattr
from lazyarray._library import library_call
from lazyarray.array import Array as _Array, numpy_fallback

__all__ = list(_np.fft.__all__)


def __getattr__(name: str):
    return _module_getattr(_np.fft, globals(), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))


# ---- transforms as library calls (custom-call nodes: lazy; the work around them fuses) -----

_NORMS = (None, "backward", "ortho", "forward")


def _arr(x) -> _Array:
    if isinstance(x, _Array):
        return x
    return _creation.asarray(x)


def _check_norm(norm) -> None:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')


def _out_dtype(fn: str, a: _Array):
    return getattr(_np.fft, fn)(_np.ones((4, 4), dtype=a.dtype)).dtype


def _call(fn: str, a, shape, params, dtype=None):

    a = _arr(a)
    return library_call(fn, [a], params, (shape, dtype or _out_dtype(fn, a)))


def _one(fn: str, length):
    """A 1-d transform: `length(n, m)` is the output length for n points and input length m."""
    def transform(a, n=None, axis=-1, norm=None, out=None):
        if out is not None:
            return numpy_fallback(getattr(_np.fft, fn), a, n=n, axis=axis, norm=norm, out=out)
        a = _arr(a)
        _check_norm(norm)
        ax = normalize_axis(axis, a.ndim)
        m = a.shape[ax]
        pts = length(None, m, points=True) if n is None else n
        if pts < 1:
            raise ValueError(f"Invalid number of FFT data points ({pts}) specified.")
        shape = list(a.shape)
        shape[ax] = length(n, m)
        return _call(fn, a, tuple(shape), {"n": n, "axis": ax, "norm": norm})

    transform.__name__ = fn
    transform.__doc__ = (f"numpy.fft.{fn} as a library call: lazy, and the elementwise work "
                         "around it fuses.")
    return transform


def _same(n, m, points=False):
    return m if n is None else n


def _half(n, m, points=False):  # real input -> n//2 + 1 complex values
    k = m if n is None else n
    return k if points else k // 2 + 1


def _herm(n, m, points=False):  # Hermitian input -> n real values, default 2*(m-1)
    return 2 * (m - 1) if n is None else n


def normalize_axis(axis: int, ndim: int) -> int:
    from numpy.lib.array_utils import normalize_axis_index

    return normalize_axis_index(axis, ndim)


fft = _one("fft", _same)
ifft = _one("ifft", _same)
rfft = _one("rfft", _half)
ihfft = _one("ihfft", _half)
irfft = _one("irfft", _herm)
hfft = _one("hfft", _herm)


def _many(fn: str, default_axes):
    real_in = fn.startswith("r")
    real_out = fn.startswith("ir")

    def transform(a, s=None, axes=default_axes, norm=None, out=None):
        if out is not None:
            return numpy_fallback(getattr(_np.fft, fn), a, s=s, axes=axes, norm=norm, out=out)
        a = _arr(a)
        _check_norm(norm)
        if axes is None:
            axes_ = tuple(range(a.ndim)) if s is None else tuple(range(a.ndim - len(s), a.ndim))
        else:
            axes_ = tuple(axes)
        axes_ = tuple(normalize_axis(x, a.ndim) for x in axes_)
        if s is not None and len(s) != len(axes_):
            raise ValueError("When given, axes and shape arguments have to be of the same "
                             "length.")
        shape = list(a.shape)
        for i, ax in enumerate(axes_):
            m = a.shape[ax]
            last = i == len(axes_) - 1
            if real_out and last:
                k = 2 * (m - 1) if s is None else s[i]
            else:
                k = m if s is None else s[i]
            if k < 1:
                raise ValueError(f"Invalid number of FFT data points ({k}) specified.")
            shape[ax] = k // 2 + 1 if real_in and last else k
        if len(set(axes_)) != len(axes_):
            return numpy_fallback(getattr(_np.fft, fn), a, s=s, axes=axes, norm=norm)
        return _call(fn, a, tuple(shape), {"s": None if s is None else tuple(s),
                                           "axes": axes_, "norm": norm})

    transform.__name__ = fn
    transform.__doc__ = (f"numpy.fft.{fn} as a library call: lazy, and the elementwise work "
                         "around it fuses.")
    return transform


fft2, ifft2, rfft2, irfft2 = (_many(f, (-2, -1)) for f in ("fft2", "ifft2", "rfft2", "irfft2"))
fftn, ifftn, rfftn, irfftn = (_many(f, None) for f in ("fftn", "ifftn", "rfftn", "irfftn"))


def fftshift(x, axes=None):
    """Zero frequency moved to the centre (numpy.fft.fftshift): a lazy roll."""
    x = _arr(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [n // 2 for n in x.shape]
    elif isinstance(axes, int):
        shift = x.shape[axes] // 2
    else:
        shift = [x.shape[ax] // 2 for ax in axes]
    return _manipulation.roll(x, shift, axes)


def ifftshift(x, axes=None):
    """The inverse of fftshift (numpy.fft.ifftshift): a lazy roll."""
    x = _arr(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [-(n // 2) for n in x.shape]
    elif isinstance(axes, int):
        shift = -(x.shape[axes] // 2)
    else:
        shift = [-(x.shape[ax] // 2) for ax in axes]
    return _manipulation.roll(x, shift, axes)


def fftfreq(n, d=1.0, device=None):
    """Sample frequencies (numpy.fft.fftfreq), built lazily from aranges."""
    n = int(n)
    val = 1.0 / (n * d)
    pos = _creation.arange(0, (n - 1) // 2 + 1, dtype=int)
    neg = _creation.arange(-(n // 2), 0, dtype=int)
    return _manipulation.concatenate([pos, neg]) * val


def rfftfreq(n, d=1.0, device=None):
    """Sample frequencies for rfft (numpy.fft.rfftfreq), built lazily."""
    n = int(n)
    val = 1.0 / (n * d)
    return _creation.arange(0, n // 2 + 1, dtype=int) * val
