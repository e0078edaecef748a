"""StableHLO export: XLA (jaxlib, CPU) parses, compiles and runs every exported module, and
its results must match NumPy (values, dtype, shape).

Elementwise ops come from the op table (every row, every dtype family NumPy has a loop for);
the structural ops (broadcast, reshape, transpose, slice, reduce, argreduce, scan, dot,
writes as concatenate/pad/dynamic_update_slice/scatter, iota, convert, select) have their own
cases. One module per op keeps compiles few.
"""

import numpy as np
import pytest
from _xla import parse, run
from helpers import assert_like_numpy, tolerance
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from lazyarray.array import Array
from lazyarray.export import UnsupportedOpError
from lazyarray.graph import build
from lazyarray.ops.table import ELEMENTWISE

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
    *((name, "c") for name in ("arcsin", "arccos", "arctan", "arcsinh", "arccosh",
                               "arctanh")),
    # stablehlo.imag takes floats and complex; lazyarray builds imag for complex arrays only
    *(("imag", kind) for kind in "iub"),
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


# ---- structural ops: one program per case, written once for NumPy and lazyarray ------------------


def check(prog, *args, rtol=None):
    """Export `prog(la, *args)`, run it on XLA, compare with `prog(np, *args)`; the text."""
    text = la.export.stablehlo(lambda *a: prog(la, *a), *args)
    got = run(text, *args)
    with np.errstate(all="ignore"):
        want = prog(np, *args)
    want = list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        r, a = tolerance(w.dtype)
        assert_like_numpy(g, w, rtol=r * 10 if rtol is None else rtol, atol=a, what=f"out {k}")
    return text


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
X32 = X.astype(np.float32)
I8 = RNG.integers(-100, 100, (3, 4)).astype(np.int8)
U16 = RNG.integers(0, 60000, (2, 3, 4)).astype(np.uint16)
B = RNG.random((3, 4)) > 0.5
C = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex128)
XN = X.copy()
XN[1, 2] = np.nan
XN[0, 0] = np.inf

STRUCTURAL = {
    # broadcast_in_dim (size-1 stretch), reshape, transpose
    "broadcast": (lambda xp, a, b: a[:, None, :] + b[None, :, :1] * 2, X, X),
    "broadcast-scalar": (lambda xp, a: a * 3 - 1, I8),
    "reshape": (lambda xp, a: (a.reshape(6, 2), a.reshape(-1), a.reshape(2, 1, 3, 2)), X),
    "transpose": (lambda xp, a, b: (a.T, xp.transpose(b, (1, 2, 0)) + 1), X, U16),
    "reshape-F": (lambda xp, a: a.reshape((4, 3), order="F") * 1.5, X),
    # slice: steps, negative steps, empty
    "slice": (lambda xp, a: (a[1:, ::2], a[::-1, ::-2], a[2:1], a[-1], a[..., 1:3:5]), X),
    "slice-int": (lambda xp, a: a[::2, 1::-1, ::3] + 1, U16),
    # select and compares
    "where": (lambda xp, a, b: xp.where(a > 0, a, b * 2), X, X32),
    "where-bool": (lambda xp, a, b: xp.where(b, a, -a), I8, B),
    # convert: every direction NumPy's astype takes
    # (float -> int in range only: NumPy leaves out-of-range casts undefined, and warns)
    "convert": (lambda xp, a: (a.astype(np.int32), xp.abs(a).astype(np.uint8),
                               a.astype(np.bool_), a.astype(np.complex64),
                               a.astype(np.float16)), X * 10),
    "convert-int": (lambda xp, a: (a.astype(np.uint8), a.astype(np.float32),
                                   a.astype(np.bool_), a.astype(np.int64),
                                   a.astype(np.complex128), a.astype(np.uint64)), I8),
    "convert-complex": (lambda xp, a: (a.real, a.astype(np.bool_), a.astype(np.complex64),
                                       xp.abs(a)), C),
    "convert-bool": (lambda xp, a: (a.astype(np.float64), a.astype(np.int8) + 1, a + a,
                                    a.astype(np.complex64), a.astype(np.float16)), B),
    # reductions over axes, dtypes, NaN
    "sum": (lambda xp, a: (a.sum(), a.sum(axis=0), a.sum(axis=-1, keepdims=True),
                           a.prod(axis=1), a.mean(axis=0)), X),
    "sum-int": (lambda xp, a: (a.sum(axis=(0, 2)), a.prod(axis=0), a.max(axis=1),
                               a.min()), U16),
    "sum-int8": (lambda xp, a: (a.sum(), a.sum(axis=1, dtype=np.int8), a.max(axis=0)), I8),
    "max-nan": (lambda xp, a: (a.max(axis=0), a.min(axis=1), xp.nanmax(a, axis=0)), XN),
    "any-all": (lambda xp, a, b: (b.any(axis=0), b.all(axis=1), a.any(), (a > 0).all(axis=0),
                                  b.sum(axis=1)), I8, B),
    "sum-complex": (lambda xp, a: (a.sum(axis=0), a.prod(axis=1)), C),
    "std": (lambda xp, a: (a.std(axis=0), a.var()), X32),
    # argmax / argmin: NaN first, ties to the first index
    "argmax": (lambda xp, a: (xp.argmax(a, axis=0), xp.argmin(a, axis=1), xp.argmax(a)), XN),
    "argmax-ties": (lambda xp, a, b: (xp.argmax(a, axis=1), xp.argmin(a, axis=0),
                                      xp.argmax(b, axis=0), xp.argmin(b)),
                    np.array([[1, 3, 3, 0], [2, 2, 2, 2], [-5, 7, -5, 7]], np.int16), B),
    "argmax-complex": (lambda xp, a: (xp.argmax(a, axis=0), xp.argmin(a, axis=1)),
                       np.array([[1 + 2j, 1 + 3j, 0j, 5 - 1j], [1 + 3j, 1 + 3j, complex(np.nan, 0),
                                 5 - 2j], [-1j, 2 + 0j, 1j, 4 + 9j]])),
    # scans
    "cumsum": (lambda xp, a: (xp.cumsum(a, axis=0), xp.cumprod(a, axis=1), xp.cumsum(a)), X),
    "cumsum-int": (lambda xp, a: (xp.cumsum(a, axis=1), xp.cumprod(a, axis=0)), I8),
    "accumulate": (lambda xp, a: (xp.maximum.accumulate(a, axis=1),
                                  xp.minimum.accumulate(a, axis=0)), XN),
    # dot_general
    "matmul": (lambda xp, a, b: (a @ b.T, a[0] @ b[1], a @ b[0], b.T @ a[:, 1],
                                 xp.matmul(a.reshape(3, 2, 2), b.reshape(3, 2, 2))), X, X),
    "matmul-broadcast": (lambda xp, a, b: xp.matmul(a.reshape(1, 3, 4), b.reshape(2, 4, 1) * a[0, 0]),
                         X, X[:2]),
    "matmul-dtypes": (lambda xp, a, b, c, d: (a @ a.T, b @ b.T, c @ c.T, d @ d.T.astype(np.int8)),
                      X32, I8, C, B),
    "outer-dot": (lambda xp, a: (xp.outer(a[0], a[1]), xp.dot(a, a[0]), xp.inner(a, a)), X),
    # writes: concatenate, pad, dynamic_update_slice, strided pad+select, scatter
    "concatenate": (lambda xp, a, b: (xp.concatenate([a, b[:1], a], axis=0),
                                      xp.concatenate([a, a], axis=1), xp.stack([a, b]),
                                      xp.hstack([a[0], b[1]])), X, X),
    "pad": (lambda xp, a: (xp.pad(a, 1), xp.pad(a, ((0, 2), (3, 1)), constant_values=7)), I8),
    "pad-edge": (lambda xp, a: xp.pad(a, 2, mode="edge"), X),
    "iota": (lambda xp, a: (xp.arange(4) * a, xp.arange(12).reshape(3, 4) + a), X),
}


@pytest.mark.parametrize("case", list(STRUCTURAL), ids=str)
def test_structural_op_matches_numpy(case):
    prog, *args = STRUCTURAL[case]
    check(prog, *args)


def _write(key, value_of):
    def prog(xp, a):
        out = a * 1  # a fresh array, written below
        out[key] = value_of(a)
        return out
    return prog


@pytest.mark.parametrize("key, value_of, opcode", [
    ((slice(1, 3),), lambda a: a[:2] * 2, "dynamic_update_slice"),
    ((0, slice(1, None)), lambda a: -a[0, :3], "dynamic_update_slice"),
    ((slice(None), slice(None, None, 2)), lambda a: a[:, :2] + 100, "pad"),
    ((slice(None, None, -1), slice(3, 0, -2)), lambda a: a[:, :2] * 10, "pad"),
], ids=["rows", "row-tail", "strided", "reversed"])
def test_writes_match_numpy(key, value_of, opcode):
    text = check(_write(key, value_of), X)
    assert f"stablehlo.{opcode}" in text


def test_write_that_is_not_a_box_is_a_scatter():
    """A diagonal written through the flat buffer (stride n+1) is no box of the base."""
    from lazyarray.graph.node import Node

    x = np.arange(16.0).reshape(4, 4)
    base = la.asarray(x)
    node = Node("update", (base._node, la.asarray(np.full(4, -1.0))._node), (4, 4),
                np.dtype(np.float64), (("offset", 0), ("strides", (5,))))
    text = la.export.stablehlo_of(Array(node) * 2, params=[base])
    assert '"stablehlo.scatter"' in text
    want = x.copy()
    np.fill_diagonal(want, -1)
    assert_like_numpy(run(text, x)[0], want * 2)


def test_emitted_opcodes():
    """Each structural case uses the StableHLO op it is meant to test."""
    expect = {"concatenate": "concatenate", "pad": "pad", "iota": "iota",
              "matmul": "dot_general", "cumsum": "reduce_window", "argmax": "reduce",
              "broadcast": "broadcast_in_dim", "slice": "reverse", "transpose": "transpose"}
    for case, opcode in expect.items():
        prog, *args = STRUCTURAL[case]
        text = la.export.stablehlo(lambda *a, prog=prog: prog(la, *a), *args)
        assert f'"stablehlo.{opcode}"' in text


# ---- the API: parameters, constants, shapes, errors ---------------------------------------------


def test_parameters_are_the_examples_and_constants_are_inlined():
    table = np.array([1.5, -2.0, 4.0])
    text = la.export.stablehlo(lambda a, k: (a * table + k, k), np.ones(3), np.int32(7))
    assert "func.func public @main(%arg0: tensor<3xf64>, %arg1: tensor<i32>)" in text
    parse(text)  # verifies
    got = run(text, np.arange(3.0), np.int32(-1))
    assert_like_numpy(got[0], np.arange(3.0) * table - 1)
    assert_like_numpy(got[1], np.asarray(np.int32(-1)))


def test_stablehlo_of_built_arrays():
    x = la.asarray(np.arange(6.0).reshape(2, 3))
    y = la.asarray(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="eager_threshold"):  # tiny work ran at once
        la.export.stablehlo_of(x * y, params=[x])
    with la.options(eager_threshold=0):
        z = (x * y).sum(axis=1)
        text = la.export.stablehlo_of(z, x ** 2, params=[x])  # y is inlined
    assert "@main(%arg0: tensor<2x3xf64>)" in text
    a = np.linspace(0, 1, 6).reshape(2, 3)
    got = run(text, a)
    assert_like_numpy(got[0], (a * np.array([1.0, 2.0, 3.0])).sum(axis=1))
    assert_like_numpy(got[1], a ** 2)
    # no params: everything is a constant
    assert_like_numpy(run(la.export.stablehlo_of(z))[0], np.array([8.0, 26.0]))


def test_pending_params_are_evaluated_and_views_refused():
    with la.options(eager_threshold=0):
        x = la.asarray(np.arange(4.0)) + 1  # pending
        y = x * 2
        text = la.export.stablehlo_of(y, params=[x])
        assert_like_numpy(run(text, np.ones(4))[0], np.full(4, 2.0))
        with pytest.raises(ValueError, match="view"):
            la.export.stablehlo_of(x * 2, params=[x[1:]])


def test_shapes_empty_and_zero_d():
    check(lambda xp, a, b: (a + 1, a.sum(axis=0), b * 2, b, xp.concatenate([a, a])),
          np.zeros((0, 3)), np.float32(2.5))


def test_identity_and_repeated_outputs():
    text = la.export.stablehlo(lambda a: (a, a, a + 0), np.arange(3, dtype=np.int16))
    got = run(text, np.array([4, 5, 6], np.int16))
    for g in got:
        assert_like_numpy(g, np.array([4, 5, 6], np.int16))


def test_fn_writing_into_its_input():
    def prog(xp, a):
        a = a.copy() if xp is np else a
        a[1:] = a[:-1] * 2
        return a + 0
    check(prog, np.arange(5.0))


def test_unsupported_op_names_it():
    with pytest.raises(UnsupportedOpError, match="arcsinh.*complex128"):
        la.export.stablehlo(la.arcsinh, np.ones(2, complex))


def test_values_computed_while_tracing_are_refused():
    with pytest.raises(ValueError, match="computed a value while tracing"):
        la.export.stablehlo(lambda a: a * float(a.sum()), np.ones(3))
    with pytest.raises(ValueError, match="computed a value while tracing"):
        la.export.stablehlo(lambda a: la.unique(a), np.ones(3))  # a NumPy fallback


def test_unknown_instruction_names_it():
    from lazyarray.graph.node import Node

    x = la.asarray(np.ones(3))
    odd = Array(Node("mystery", (x._node,), (3,), np.dtype(np.float64)))
    with pytest.raises(UnsupportedOpError, match="'mystery'"):
        la.export.stablehlo_of(odd, params=[x])


def test_exported_text_is_valid_stablehlo():
    prog, *args = STRUCTURAL["argmax"]
    printed = parse(la.export.stablehlo(lambda *a: prog(la, *a), *args))
    assert "stablehlo.reduce" in printed


# ---- whole programs (hypothesis) ------------------------------------------------------------------

_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "fmax", "hypot", "arctan2",
           "copysign", "logaddexp", "divide", "floor_divide", "remainder"]
_UNARY = ["sin", "tanh", "abs", "negative", "square", "floor", "exp", "log1p", "arcsinh"]


@st.composite
def _programs(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    elements = st.floats(-5, 5, width=32)
    args = [draw(hnp.arrays(dtype, s, elements=elements)) for s in shapes.input_shapes]
    steps = []
    for k in range(draw(st.integers(1, 6))):
        n = 2 + k  # values available: the inputs, then each step's result
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(_BINARY)), draw(st.integers(0, n - 1)),
                          draw(st.integers(0, n - 1))))
        else:
            steps.append((draw(st.sampled_from(_UNARY)), draw(st.integers(0, n - 1))))
    reduce_axis = draw(st.sampled_from([None, 0, -1]))
    return args, steps, reduce_axis


@given(_programs())
@settings(max_examples=10)
def test_random_programs_match_numpy(program):
    args, steps, reduce_axis = program

    def prog(xp, a, b):
        vals = [a, b]
        for name, *idx in steps:
            f = getattr(xp, "absolute" if name == "abs" else name)
            vals.append(f(*(vals[i] for i in idx)))
        out = vals[-1]
        if reduce_axis is None or out.ndim == 0:
            return out, out.sum()
        return out, out.max(axis=reduce_axis)

    check(prog, *args, rtol=1e-4)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_inlined_constants_are_exact(dt):
    """Non-splat constants of every dtype (raw bytes; bools as a list), NaN and extremes."""
    vals = _values(dt, "add", 0)[:6]
    table = vals[::-1].copy()
    check(lambda xp, a: (a, xp.asarray(table) if xp is np else la.asarray(table),
                         xp.zeros((0, 2), dt) + 0), vals)


def _finite(dt):
    vals = _values(dt, "add", 0)
    if dt.kind in "fc":
        vals = vals[np.isfinite(vals)]
    return np.resize(vals, (3, 4)).astype(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_structural_ops_on_every_dtype(dt):
    """Reductions, arg-reductions, scans, movement, writes, select and matmul in each dtype."""
    def prog(xp, a):
        small = a[:, :2]
        return (a.sum(axis=0), a.prod(axis=1), a.max(axis=0), a.min(axis=1),
                xp.argmax(a, axis=1), xp.argmin(a, axis=0), xp.cumsum(a, axis=1),
                a.T[::-1], xp.concatenate([a, small], axis=1), xp.pad(a, 1),
                xp.where(a == a[0], a, a[1]), small.T @ small, a.any(axis=0), a.all(axis=1))
    check(prog, _finite(dt))


def test_docs_example_is_current():
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "export.md").read_text()
    start = doc.index("```\nmodule @lazyarray_export") + 4
    shown = doc[start:doc.index("```", start)]

    def f(x, w):
        return la.maximum(x @ w, 0).sum(axis=0)

    args = np.zeros((8, 4), np.float32), np.zeros((4, 3), np.float32)
    assert la.export.stablehlo(f, *args) == shown


_INT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "fmod", "maximum",
               "minimum", "bitwise_and", "bitwise_xor", "left_shift", "right_shift", "gcd"]
_INT_DTYPES = [np.int8, np.int16, np.int64, np.uint8, np.uint32, np.uint64, np.bool_]
_MOVES = ["T", "flip", "cumsum", "sum0", "slice", "concat", "none"]


@st.composite
def _int_programs(draw):
    """Integer programs with mixed dtypes (NumPy's promotions insert converts), movement,
    scans and reductions."""
    shape = draw(st.sampled_from([(3, 4), (2, 2), (1, 5)]))
    dts = [draw(st.sampled_from(_INT_DTYPES)) for _ in range(2)]
    args = [draw(hnp.arrays(dt, shape, elements=hnp.from_dtype(np.dtype(dt), min_value=0,
                                                               max_value=9)
                            if np.dtype(dt).kind == "u" else
                            hnp.from_dtype(np.dtype(dt), min_value=-9, max_value=9)
                            if np.dtype(dt).kind == "i" else None)) for dt in dts]
    steps = [(draw(st.sampled_from(_INT_BINARY)), draw(st.integers(0, 1 + k)),
              draw(st.integers(0, 1 + k)), draw(st.sampled_from(_MOVES)))
             for k in range(draw(st.integers(1, 4)))]
    return args, steps


def _move(xp, x, how):
    if how == "T":
        return x.T.T
    if how == "flip":
        return x[::-1, ::-1]
    if how == "cumsum":
        return xp.cumsum(x, axis=1)
    if how == "sum0":
        return x - x.sum(axis=0, keepdims=True) // 3
    if how == "slice":
        return x[:, :1] * x
    if how == "concat":
        return xp.concatenate([x[1:], x[:1]], axis=0)
    return x


@given(_int_programs())
@settings(max_examples=10)
def test_random_integer_programs_match_numpy(program):
    args, steps = program

    def prog(xp, a, b):
        vals = [a, b]
        for name, i, j, how in steps:
            x, y = vals[i], vals[j]
            if name in ("left_shift", "right_shift") and (x.dtype == bool or y.dtype == bool):
                name = "bitwise_xor"
            if name in ("subtract", "gcd") and x.dtype == bool and y.dtype == bool:
                name = "add"
            if name in ("bitwise_and", "bitwise_xor", "gcd", "left_shift", "right_shift") and \
                    np.result_type(x.dtype, y.dtype).kind == "f":
                name = "maximum"  # int64 with uint64 promotes to float64
            vals.append(_move(xp, getattr(xp, name)(x, y), how))
        return tuple(vals[2:])

    check(prog, *args)
