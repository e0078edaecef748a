"""StableHLO export: XLA (jaxlib, CPU) parses, compiles and runs every exported module, and
its results must match NumPy (values, dtype, shape).

Elementwise ops come from the op table (every row, every dtype family NumPy has a loop for);
the structural ops (broadcast, reshape, transpose, slice, reduce, argreduce, scan, dot,
writes as concatenate/pad/dynamic_update_slice/scatter, iota, convert, select) have their own
cases. One module per op keeps compiles few.
"""

import numpy as np
import pytest

import lazyarray as la
from lazyarray.array import Array
from lazyarray.export import UnsupportedOpError
from lazyarray.graph import build
from lazyarray.ops.table import ELEMENTWISE

from _xla import parse, run  # noqa: I001  (skips the module when jax is missing)
from helpers import assert_like_numpy, tolerance

DTYPES = [np.dtype(t) for t in ("?", "i1", "i4", "i8", "u1", "u8", "f2", "f4", "f8", "c8",
                                "c16")]

# ---- inputs -------------------------------------------------------------------------------

_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.5, 3.0, 1e-3, 100.0, -7.25, 0.9, -0.9, 1.5,
           10.0, 6.0, -2.0, np.nan, np.inf, -np.inf]
_INTS = [0, 1, -1, 2, -3, 7, -8, 100, 5, -5, 3, 6, -2, 127, -128, 9]


def _values(dt: np.dtype, op: str, arg: int) -> np.ndarray:
    """Test values for operand `arg` of `op` in dtype `dt` (edge cases included)."""
    if dt.kind == "b":
        return np.array([False, True, True, False, True, False, True, True])
    if dt.kind in "iu":
        vals = np.array(_INTS, dtype=np.int64)
        if op in ("left_shift", "right_shift") and arg == 1:
            vals = np.array([0, 1, 3, 7, 8, 15, 31, 63, 64, 65, 2, 5, 9, 1, 0, 4])
        elif op == "power" and arg == 1:
            vals = np.array([0, 1, 2, 3, 5, 0, 1, 2, 3, 4, 1, 2, 0, 1, 2, 3])
        elif op == "reciprocal":
            vals = vals[vals != 0]
        info = np.iinfo(dt)
        vals = np.abs(vals) if dt.kind == "u" else vals
        vals = np.concatenate([vals, [info.min, info.max]]) if arg == 0 else np.concatenate(
            [vals, [1, 2]])
        return np.clip(vals, info.min, info.max).astype(dt)
    if op == "ldexp" and arg == 1:
        return np.array([0, 1, -1, 5, -5, 20, -20, 1100, -1100, 2000, -2000, 3, 30, -30, 7, -7,
                         60, -60, 2, 4, 0], dtype=dt)
    vals = np.array(_FLOATS)
    if dt.kind == "c":
        re = vals[np.isfinite(vals)]
        im = np.roll(re, 3 + arg)
        vals = re + 1j * im
        if op in _COMPLEX_SPECIALS_OK:
            vals = np.concatenate([vals, [complex(np.nan, 1), complex(1, np.inf),
                                          complex(-np.inf, 0)]])
    vals = vals.astype(dt)
    if op == "ldexp":
        return np.concatenate([vals, [np.finfo(dt).tiny, np.finfo(dt).max, 3.0, -2.0, 1.0, 1.0,
                                      5e-324 if dt == np.float64 else 0.25, 0.75]]
                              )[:21].astype(dt)
    return np.roll(vals, 5 * arg) if arg else vals


# complex ops whose NaN/inf handling XLA and NumPy share (the others are compared on finite
# values: C99 Annex G special cases are not part of this comparison)
_COMPLEX_SPECIALS_OK = {"isnan", "isinf", "isfinite", "equal", "not_equal", "maximum",
                        "minimum", "fmax", "fmin", "less", "less_equal", "greater",
                        "greater_equal", "conjugate", "add", "subtract", "negative",
                        "positive", "logical_not", "logical_and", "logical_or", "logical_xor",
                        "rint", "absolute"}


def _loop_dtypes(op, dt):
    uf = op.dtype_ufunc or op.ref
    try:
        return uf.resolve_dtypes((dt,) * uf.nin + (None,) * uf.nout)
    except TypeError:
        return None


def _inputs(op, dt):
    """NumPy inputs for `op` whose loop starts from dtype `dt` (as NumPy would cast them)."""
    loop = _loop_dtypes(op, dt)
    n = op.nin
    if op.name == "ldexp":
        ins = [_values(loop[0], "ldexp", 0), _values(loop[1], "ldexp", 1)]
    else:
        ins = [_values(dt, op.name, k) for k in range(n)]
    size = min(len(v) for v in ins)
    return [v[:size] for v in ins]


# ---- every elementwise op, every dtype family ---------------------------------------------------

# (op, dtype kind) the export refuses, with UnsupportedOpError naming the op
EXPECTED_UNSUPPORTED = {
    ("gcd", "i"), ("gcd", "u"), ("gcd", "b"), ("lcm", "i"), ("lcm", "u"), ("lcm", "b"),
    *((name, "c") for name in ("arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
                               "arccosh", "arctanh")),
}


def _node_of(op, arrays):
    return Array(build.elementwise(op.name, *(a._node for a in arrays)))


def _expected(op, ins):
    with np.errstate(all="ignore"):
        out = op.ref(*ins)
    return np.asarray(out)


def _cases(op):
    """One input dtype per distinct NumPy loop of `op` (the loop's own dtype when it is one of
    DTYPES: `sin` on int64 runs the float64 loop, tested once from float64 inputs)."""
    by_loop = {}
    for dt in DTYPES:
        loop = _loop_dtypes(op, dt)
        if loop is not None and (loop not in by_loop or dt == loop[0]):
            by_loop[loop] = dt
    return list(by_loop.values())


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda op: op.name)
def test_elementwise_op_matches_numpy(op):
    cases = []
    for dt in _cases(op):
        ins = _inputs(op, dt)
        kind = "b" if dt.kind == "b" else dt.kind
        if (op.name, kind) in EXPECTED_UNSUPPORTED:
            with pytest.raises(UnsupportedOpError, match=op.name):
                la.export.stablehlo(lambda *a: _node_of(op, a), *ins)
            continue
        cases.append((dt, ins))
    if not cases:
        return
    flat = [x for _, ins in cases for x in ins]

    def program(*arrays):
        outs, k = [], 0
        for _, ins in cases:
            outs.append(_node_of(op, arrays[k:k + len(ins)]))
            k += len(ins)
        return tuple(outs)

    text = la.export.stablehlo(program, *flat)
    results = run(text, *flat)
    for (dt, ins), got in zip(cases, results, strict=True):
        want = _expected(op, ins)
        rtol, atol = tolerance(want.dtype)
        assert_like_numpy(got, want, rtol=rtol * 10, atol=atol,
                          what=f"{op.name} on {dt} {ins}")


def test_every_table_op_is_covered():
    """Each row either exports for some dtype or is listed as unsupported."""
    from lazyarray._export_elementwise import RULES, UNSUPPORTED

    assert {op.name for op in ELEMENTWISE} == set(RULES) | set(UNSUPPORTED)
