"""A corpus of NumPy programs written the way scientists write them, not for lazyarray.

Each program is a module exposing

- a docstring: what it computes and where the pattern comes from;
- ``SIZES``: parameters per size label -- ``"test"`` (hundreds to thousands of elements, for
  the test suite), ``"64K"`` and ``"4M"`` (about 64 thousand and 4 million elements of the
  main arrays; the loop-heavy programs say where they stay smaller so that NumPy needs at
  most about a second);
- ``make(params, seed)``: the inputs, NumPy arrays and Python scalars (step counts);
- ``run(np, *inputs)``: the program, written against the module ``np`` it is given, so the
  very same code runs with ``numpy`` and with ``lazyarray``; it returns its outputs (arrays
  or scalars).

``python -m lazyarray.tools.corpus`` times every program with NumPy and lazyarray side by
side and checks lazyarray's answers against NumPy's (docs/corpus.md).
"""

from lazyarray.tools.corpus import (covariance, floyd_warshall, forward_subst, gauss_seidel,
                                    gramschmidt, heat2d, imfilter, mc_option, mc_pi,
                                    ocean_column, particles, shallow_water, syrk, thomas,
                                    vmix)

# The order of the table: array programs first, then the loop-heavy kernels.
PROGRAMS = {m.__name__.rsplit(".", 1)[1]: m for m in (
    heat2d, thomas, vmix, ocean_column, particles, imfilter, mc_option, mc_pi, shallow_water,
    gramschmidt, gauss_seidel, forward_subst, syrk, floyd_warshall, covariance)}

__all__ = ["PROGRAMS"]
