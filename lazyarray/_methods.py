"""The ndarray methods that are the namespace's functions (`a.sort()` is `sort(a)` written
back, `a @ b` is `matmul`), and the protocols that name the namespace: attached to `Array`
here, above both, so that `array.py` needs nothing from the namespace (as JAX attaches its
array methods in a module of their own)."""

from __future__ import annotations

import sys

from lazyarray import _creation, _funcs, _indexing, _library, _manipulation, _products
from lazyarray import _reductions
from lazyarray.array import API_VERSIONS, Array, ufunc


# ---- methods of the namespace's functions ----------------------------------------------------
def _ufunc_reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
    return _reductions.ufunc_reduce(self, array, axis, dtype, out, keepdims, **kwargs)


def _ufunc_accumulate(self, array, axis=0, dtype=None, out=None):
    return _reductions.ufunc_accumulate(self, array, axis, dtype, out)


ufunc.reduce, ufunc.accumulate = _ufunc_reduce, _ufunc_accumulate
Array.swapaxes = lambda self, axis1, axis2: _manipulation.swapaxes(self, axis1, axis2)
Array.squeeze = lambda self, axis=None: _manipulation.squeeze(self, axis)
Array.take = lambda self, indices, axis=None, out=None, mode="raise": _indexing.take(
    self, indices, axis=axis, out=out, mode=mode)
Array.compress = lambda self, condition, axis=None, out=None: _indexing.compress(
    condition, self, axis=axis, out=out)
_imag_view = Array.imag.fget  # a complex array's imaginary part: a view (array.py)


def _imag(self) -> Array:
    """The imaginary part: of a complex array a view, as in NumPy; of a real array read-only
    zeros (order "A", as NumPy's)."""
    if self.dtype.kind == "c":
        return _imag_view(self)
    zeros = _creation.zeros_like(self, order="A")
    zeros.setflags(write=False)
    return zeros


Array.imag = property(_imag, Array.imag.fset)


def _matmul(self, other):
    return _products.matmul(self, other)


def _rmatmul(self, other):
    return _products.matmul(other, self)


def _imatmul(self, other):
    self._assign(_matmul(self, other))
    return self


def _dot(self, b, out=None):
    return _products.dot(self, b, out)


Array.__matmul__, Array.__rmatmul__, Array.__imatmul__ = _matmul, _rmatmul, _imatmul
Array.dot = _dot


# ---- ndarray methods that are the namespace's functions ----------------------------------
def _sort(self, axis=-1, kind=None, order=None, *, stable=None) -> None:
    """Sort in place (ndarray.sort): a write of the sorted value, seen by every view."""
    s = _library.sort(self, axis=axis, kind=kind, order=order, stable=stable)
    self[...] = s if axis is not None else s.reshape(self.shape)


def _partition(self, kth, axis=-1, kind="introselect", order=None) -> None:
    """Partition in place (ndarray.partition)."""
    self[...] = _library.partition(self, kth, axis=axis, kind=kind, order=order)


for _module, _names in ((_library, ("argsort", "argpartition", "searchsorted", "choose")),
                        (_funcs, ("nonzero",)), (_manipulation, ("repeat", "diagonal", "trace"))):
    for _name in _names:
        setattr(Array, _name, (lambda f: lambda self, *a, **k: f(self, *a, **k))(
            getattr(_module, _name)))
        getattr(Array, _name).__name__ = _name
Array.put = lambda self, indices, values, mode="raise": _funcs.put(self, indices, values, mode)
Array.sort, Array.partition = _sort, _partition


def _array_namespace(self, /, *, api_version=None):
    """The namespace of this array's functions: lazyarray (Array API standard)."""
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(f"Version {api_version!r} of the Array API standard is not supported; "
                         f"supported versions: {', '.join(API_VERSIONS)}")
    return sys.modules["lazyarray"]


Array.__array_namespace__ = _array_namespace
