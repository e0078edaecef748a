"""float64 matrix products on the int8 matrix unit, for chips without float64 hardware.

A TPU has no float64 arithmetic: XLA emulates a float64 `dot` (11.8 ms for 2048 x 2048 on a
TPU v5e, against 1.2 ms in float32). This module computes it instead as a sum of exact
integer products (the slicing scheme of Ozaki et al., "Error-free transformations of matrix
multiplication by using fast routines of matrix multiplication", 2012, on integer units as
in Ootomo, Ozaki and Yokota, "DGEMM on integer matrix multiplication unit", 2024):

- each row of ``A`` (column of ``B``) is scaled by a power of two so that its largest
  element is below 1, and cut into ``SLICES`` int8 digits of 7 bits: ``a = 2**e * sum_p
  A_p * 2**(-7 p)`` (every step exact in float64);
- the digit products ``A_p @ B_q`` with ``p + q <= SLICES + 1`` are int8 x int8 -> int32
  products, exact (the inner length is at most `MAX_INNER`), and those of one diagonal
  ``p + q`` are one product of concatenated digits;
- the diagonals are summed in float64, smallest first, and scaled back.

What is dropped -- the digits past the last, the products past the last diagonal -- is at
most ``k * 2**(4 - 7 * SLICES) * 2**(e_i + e_j)`` in element ``(i, j)`` (`DROPPED`; ``2**e_i``
the scale of row ``i``, at most twice its largest magnitude). The product is used only where
that bound is below ``TOLERANCE * sum_l |a_il| |b_lj|`` in every element (about 256 float64 roundings; a float64 BLAS guarantees ``k`` of them, ``k`` the
inner length): the sum of magnitudes is estimated on the device by one float32 product of
the scaled magnitudes, before the digit products, and a row whose small elements carry its
value (``[1, 1e-10, 1e-10, ...]`` against ``[0, 1, 1, ...]``) sends the whole product to
XLA's own float64 `dot`, as do non-finite values and exponents beyond float32's range
(``lax.cond``: one branch runs).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

SLICES = 8  # int8 digits per element
TOLERANCE = 2.0 ** -45  # the dropped part's bound, against sum |a| |b|, per element
MAX_INNER = (2 ** 31 - 1) // (SLICES * 127 * 127)  # int32 sums of one diagonal stay exact
# the dropped part of one term a_il * b_lj, scaled (|a|, |b| < 1): the products past the last
# diagonal, (SLICES + 1) * 127**2 * 2**(-7 (SLICES + 2)) and less after it, and the digits
# past the last, 2 * 2**(-7 SLICES): below 2**(4 - 7 SLICES)
DROPPED = 2.0 ** (4 - 7 * SLICES)
_DIMS = (((1,), (0,)), ((), ()))
# "auto" (default): on a TPU (no float64 hardware); "int8": everywhere (the tests, on JAX's
# CPU client); "native": never. Read when the backend loads.
MODE = os.environ.get("LAZYARRAY_XLA_F64_DOT", "auto")
ENABLED = MODE == "int8" or MODE == "auto" and jax.devices()[0].platform == "tpu"


def _pow2(k):
    """2.0 ** k in float64 for int32 ``k`` in [-126, 127], exactly (float32's bits)."""
    bits = ((k + 127) << 23).astype(jnp.int32)
    return lax.bitcast_convert_type(bits, jnp.float32).astype(jnp.float64)


def _digits(x, axis: int):
    """(digits, exponents, scaled magnitudes): ``x = 2**e * sum_p D_p * 2**(-7 (p + 1))``
    along `axis` (1: per row, 0: per column), and ``|x| * 2**-e`` in float32."""
    top = jnp.max(jnp.abs(x), axis=axis, keepdims=True).astype(jnp.float32)
    bits = lax.bitcast_convert_type(top, jnp.int32)
    e = jnp.where(top > 0, ((bits >> 23) & 0xFF) - 126, 0)  # top < 2**e (frexp's)
    t = x * _pow2(7 - e)
    scaled = (jnp.abs(t) * (1.0 / 128)).astype(jnp.float32)
    digits = []
    for _ in range(SLICES):
        d = jnp.trunc(t)
        digits.append(d.astype(jnp.int8))
        t = (t - d) * 128.0
    return digits, e, scaled


def _in_range(x):
    """Finite, and each row's scale within float32's exponents (`_pow2`)."""
    a = jnp.abs(x)
    return jnp.all(jnp.isfinite(x)) & jnp.all((a == 0) | ((a < 2.0 ** 100) & (a > 2.0 ** -90)))


def usable(a, b) -> bool:
    """Does a product of these shapes and dtypes go through `dot` (2-D float64, an inner
    length the int32 sums hold)?"""
    return (a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype == np.float64
            and 0 < a.shape[1] <= MAX_INNER and a.shape[0] and b.shape[1])


def dot(a, b, native):
    """``a @ b`` for float64 2-D `a`, `b` (see the module docstring); `native(a, b)`: XLA's
    own product, where the integer one's bound does not hold."""
    A, ea, sa = _digits(a, 1)
    B, eb, sb = _digits(b, 0)
    k = a.shape[1]
    magnitude = jnp.matmul(sa, sb, precision=lax.Precision.DEFAULT)  # ~ sum |a||b| (scaled)
    # (a bf16 pass may round the magnitude down by 2**-8: the tolerance has room for it; a
    # row or column of zeros drops nothing)
    empty = (jnp.max(sa, axis=1, keepdims=True) == 0) | (jnp.max(sb, axis=0, keepdims=True) == 0)
    ok = _in_range(a) & _in_range(b) & jnp.all((DROPPED * k <= TOLERANCE * magnitude) | empty)

    def integer(a, b):
        c = None
        for d in range(SLICES + 1, 1, -1):  # diagonals p + q = d, smallest first
            ps = range(1, d)
            lhs = jnp.concatenate([A[p - 1] for p in ps], axis=1) if d > 2 else A[0]
            rhs = jnp.concatenate([B[d - p - 1] for p in ps], axis=0) if d > 2 else B[0]
            term = lax.dot_general(lhs, rhs, _DIMS, preferred_element_type=jnp.int32)
            term = term.astype(jnp.float64) * 2.0 ** (-7 * d)
            c = term if c is None else c + term
        return c * _pow2(ea) * _pow2(eb)

    return lax.cond(ok, integer, native, a, b)
