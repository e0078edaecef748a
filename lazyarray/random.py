"""lazyarray.random: ``numpy.random`` with lazy Array results.

NumPy draws every number, so the streams are exactly NumPy's for the same seed; array
results come back as lazy Arrays (what is computed from them stays lazy and fuses), scalars
as NumPy returns them. Each draw is a counted fallback (``cache_info()["fallbacks"]``).

- ``default_rng(seed)`` returns a `Generator`, ``RandomState(seed)`` a `RandomState`:
  wrappers over NumPy's objects with the same methods (lazy Arrays accepted as parameters,
  ``out=`` and ``shuffle`` write into lazy arrays).
- The legacy module functions (``rand``, ``randn``, ``normal``, ...) draw from NumPy's own
  global RandomState: ``la.random.seed(0)`` and ``numpy.random.seed(0)`` seed the same
  stream. ``seed``, ``get_state``, ``set_state`` and the bit generators are NumPy's own.
"""

from __future__ import annotations

import functools

import numpy as _np
import numpy.random as _npr

from lazyarray import stats as _stats
from lazyarray._coverage import mark_fallback as _mark_fallback
from lazyarray._coverage import module_getattr as _module_getattr
from lazyarray.array import Array as _Array
from lazyarray.array import numpy_fallback

__all__ = list(_npr.__all__)

# NumPy's own: the global RandomState's seeding and state (no array data)
seed = _npr.seed
get_state = _npr.get_state
set_state = _npr.set_state
if hasattr(_npr, "get_bit_generator"):
    get_bit_generator = _npr.get_bit_generator
    set_bit_generator = _npr.set_bit_generator


def __getattr__(name: str):
    return _module_getattr(_npr, globals(), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))


def _draw(func, args, kwargs):
    """Call NumPy's `func` on computed inputs (counted); a lazy ``out=`` is written lazily."""
    out = kwargs.get("out")
    if isinstance(out, _Array):
        buf = _np.empty(out.shape, out.dtype)
        numpy_fallback(func, *args, **{**kwargs, "out": buf})
        out[...] = buf
        return out
    return numpy_fallback(func, *args, **kwargs)


def _shuffle_into(func, x, *args, **kwargs) -> None:
    """NumPy's in-place `func` (a shuffle): a lazy `x` is shuffled as a copy written back."""
    if isinstance(x, _Array):
        buf = _np.array(x)
        numpy_fallback(func, buf, *args, **kwargs)
        x[...] = buf
        return
    _stats.bump("fallbacks")
    func(x, *args, **kwargs)


def _methods(cls, np_cls, plain=()):
    """Give `cls` every public method of `np_cls`, calling the wrapped object's (``_np``).

    Methods in `plain` return NumPy's results unchanged (state, seeding); the others wrap
    array results as lazy Arrays.
    """
    for name in dir(np_cls):
        if name.startswith("_") or name in vars(cls) or not callable(getattr(np_cls, name)):
            continue

        def method(self, *args, _name=name, **kwargs):
            return _draw(getattr(self._np, _name), args, kwargs)

        def passthrough(self, *args, _name=name, **kwargs):
            return getattr(self._np, _name)(*args, **kwargs)

        fn = functools.wraps(getattr(np_cls, name))(passthrough if name in plain else method)
        fn.__qualname__ = f"{cls.__name__}.{name}"
        fn.__module__ = __name__
        setattr(cls, name, fn)
    return cls


class Generator:
    """``numpy.random.Generator`` whose array results are lazy Arrays.

    Parameters
    ----------
    bit_generator : numpy.random.BitGenerator
        The source of randomness (``PCG64(seed)``, ...), as for NumPy's Generator.

    Notes
    -----
    Every method of NumPy's Generator is here, drawing the same numbers.
    """

    __slots__ = ("_np",)

    def __init__(self, bit_generator):
        self._np = _npr.Generator(bit_generator)

    @property
    def bit_generator(self):
        """The bit generator (NumPy's object, shared with this Generator)."""
        return self._np.bit_generator

    def spawn(self, n_children):
        """Create `n_children` independent child Generators (as NumPy's ``spawn``)."""
        _stats.bump("fallbacks")
        return [_wrap_generator(g) for g in self._np.spawn(n_children)]

    def shuffle(self, x, axis=0):
        """Shuffle `x` in place along `axis` (a lazy `x` too), as NumPy's ``shuffle``."""
        _shuffle_into(self._np.shuffle, x, axis=axis)

    def __repr__(self) -> str:
        return f"lazyarray.random.Generator({type(self._np.bit_generator).__name__})"

    def __reduce__(self):
        return (_wrap_generator, (self._np,))


class RandomState:
    """``numpy.random.RandomState`` (the legacy generator) whose array results are lazy Arrays.

    Parameters
    ----------
    seed : None, int, array_like or numpy.random.BitGenerator, optional
        As for NumPy's RandomState (a lazy array is computed first).
    """

    __slots__ = ("_np",)

    def __init__(self, seed=None):
        self._np = _npr.RandomState(_np.asarray(seed) if isinstance(seed, _Array) else seed)

    def shuffle(self, x):
        """Shuffle `x` in place along its first axis (a lazy `x` too)."""
        _shuffle_into(self._np.shuffle, x)

    def __repr__(self) -> str:
        return f"lazyarray.random.RandomState({type(self._np._bit_generator).__name__})"

    def __reduce__(self):
        return (_wrap_random_state, (self._np,))


_methods(Generator, _npr.Generator)
_methods(RandomState, _npr.RandomState, plain=("seed", "get_state", "set_state"))


def _wrap_generator(gen) -> Generator:
    g = Generator.__new__(Generator)
    g._np = gen
    return g


def _wrap_random_state(rs) -> RandomState:
    r = RandomState.__new__(RandomState)
    r._np = rs
    return r


def _new_generator(seed=None) -> Generator:
    if isinstance(seed, Generator):
        return seed
    return _wrap_generator(_npr.default_rng(seed))


default_rng = functools.partial(numpy_fallback, _new_generator)
default_rng.__name__ = "default_rng"
default_rng.__doc__ = """Construct a `Generator` (PCG64), as ``numpy.random.default_rng``.

Parameters
----------
seed : None, int, array_like, SeedSequence, BitGenerator or Generator, optional
    As for NumPy; a lazyarray `Generator` is returned unchanged.

Returns
-------
Generator
    Draws exactly NumPy's numbers for the same seed, as lazy Arrays.
"""


@_mark_fallback
def shuffle(x):
    """Shuffle `x` in place along its first axis with the global RandomState (a lazy `x`
    too), as ``numpy.random.shuffle``."""
    _shuffle_into(_npr.shuffle, x)
