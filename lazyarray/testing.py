"""lazyarray.testing: ``numpy.testing`` for lazy arrays.

The array assertions (``assert_allclose``, ``assert_array_equal``, ...) compute their lazy
arguments (also inside lists, tuples and dicts) and call NumPy's. Every other public name of
``numpy.testing`` (``assert_raises``, ``suppress_warnings``, ...) is NumPy's own object.
``numpy.testing`` itself is imported on first use, not with lazyarray.
"""

from __future__ import annotations

import numpy as _np

from lazyarray.array import Array as _Array


def _nt():
    import numpy.testing

    return numpy.testing


def __getattr__(name: str):
    if name == "__all__":
        return list(_nt().__all__)
    if name.startswith("_") or not hasattr(_nt(), name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_nt(), name)


def __dir__():
    return sorted(set(globals()) | set(_nt().__all__))


def computed_value(x):
    """`x` with every lazy array in it computed (as a NumPy array)."""
    if isinstance(x, _Array):
        return _np.asarray(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a named tuple
        return type(x)(*(computed_value(y) for y in x))
    if isinstance(x, (list, tuple)):
        return type(x)(computed_value(y) for y in x)
    if isinstance(x, dict):
        return {k: computed_value(v) for k, v in x.items()}
    return x


def _assertion(name: str):
    def check(*args, **kwargs):
        return getattr(_nt(), name)(*(computed_value(a) for a in args),
                                    **{k: computed_value(v) for k, v in kwargs.items()})

    check.__name__ = check.__qualname__ = name
    check.__module__ = __name__
    check.__doc__ = (f"``numpy.testing.{name}`` with lazy arguments computed first.\n\n"
                     f"Takes NumPy's arguments; raises ``AssertionError`` as NumPy does.\n")
    return check


assert_ = _assertion("assert_")
assert_allclose = _assertion("assert_allclose")
assert_almost_equal = _assertion("assert_almost_equal")
assert_approx_equal = _assertion("assert_approx_equal")
assert_array_almost_equal = _assertion("assert_array_almost_equal")
assert_array_almost_equal_nulp = _assertion("assert_array_almost_equal_nulp")
assert_array_compare = _assertion("assert_array_compare")
assert_array_equal = _assertion("assert_array_equal")
assert_array_less = _assertion("assert_array_less")
assert_array_max_ulp = _assertion("assert_array_max_ulp")
assert_equal = _assertion("assert_equal")
print_assert_equal = _assertion("print_assert_equal")
