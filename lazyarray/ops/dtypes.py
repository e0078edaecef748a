"""dtype rules: NumPy is the oracle (`ufunc.resolve_dtypes`, NEP 50 weak Python scalars).

Python scalars enter the rules as their type (`int`, `float`, `complex`) -- "weak" -- and
everything else as a NumPy dtype. The loop dtypes NumPy picks tell lowering which `convert`s
to insert, so code generation never guesses a cast.
"""

from __future__ import annotations

import functools

import numpy as np

# XLA's short type names for the HLO text form
HLO_NAMES = {
    "b": "pred", "i1": "s8", "i2": "s16", "i4": "s32", "i8": "s64",
    "u1": "u8", "u2": "u16", "u4": "u32", "u8": "u64",
    "f2": "f16", "f4": "f32", "f8": "f64", "c8": "c64", "c16": "c128",
}  # fmt: skip
FROM_HLO = {v: np.dtype("?" if k == "b" else k) for k, v in HLO_NAMES.items()}

SUPPORTED = tuple(
    np.dtype(t)
    for t in "? i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8 c16".split()
)


def hlo_name(dtype: np.dtype) -> str:
    return HLO_NAMES["b" if dtype.kind == "b" else dtype.str[1:]]


WeakOrDtype = np.dtype | type


@functools.lru_cache(maxsize=4096)
def ufunc_loop(ufunc: np.ufunc, in_types: tuple[WeakOrDtype, ...],
               out: np.dtype | None = None) -> tuple[np.dtype, ...]:
    """(loop input dtypes..., output dtype) NumPy would use; raises NumPy's TypeError.

    `out` is the call's ``dtype=``, which NumPy applies as the outputs' part of the loop
    signature (the loop is picked for it, inputs cast to the loop's)."""
    if out is None:
        return ufunc.resolve_dtypes((*in_types, *(None,) * ufunc.nout))
    return ufunc.resolve_dtypes((*in_types, *(None,) * ufunc.nout),
                                signature=(*(None,) * ufunc.nin, *(out,) * ufunc.nout))


@functools.lru_cache(maxsize=1024)
def reduce_dtype(ufunc: np.ufunc, dtype: np.dtype, out: np.dtype | None) -> np.dtype:
    """Accumulator/result dtype of `ufunc.reduce(x_of_dtype, dtype=out)`, as NumPy picks it."""
    return ufunc.resolve_dtypes((out, dtype, None), reduction=True)[0]


def weak_type(value) -> WeakOrDtype:
    """The rule type of a Python scalar (weak) or NumPy scalar (strong)."""
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, (int, float, complex)) and not isinstance(value, np.generic):
        return type(value)
    return np.asarray(value).dtype


def scalar_as(value, dtype: np.dtype):
    """Convert a weak Python scalar to `dtype` as NumPy does (OverflowError if out of range)."""
    return np.asarray(value, dtype=dtype)[()]


@functools.lru_cache(maxsize=1024)
def result_type(*types: WeakOrDtype) -> np.dtype:
    """np.result_type with weak Python scalar types (NEP 50)."""
    samples = [t(0) if isinstance(t, type) else t for t in types]
    return np.result_type(*samples)
