"""NumPy's memory layout of new arrays (order "K"), checked against NumPy.

NumPy lays out a ufunc's, `astype`'s, `np.copy`'s, a `*_like`'s or an advanced index's
result in the memory order of its inputs (`a.T + 1` is F-contiguous), and whether a later
`reshape` or `ravel` is a view follows from that layout. lazyarray records the order on the
result's storage (`Storage.perm`), so flags, strides (of the axes longer than one), the
view-or-copy rule and `ravel(order="K")` are NumPy's; writes through views of such arrays
land where NumPy's would.
"""

from __future__ import annotations

import numpy
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyarray as la
from lazyarray.storage import memory_order

MODES = {"default": {}, "interp": {"backend": "numpy"}, "compiled": {"eager_threshold": 0}}


def _layout(a):
    """Strides of the axes longer than one, and the contiguity flags."""
    return (tuple(s for s, n in zip(a.strides, a.shape) if n > 1),
            a.flags.c_contiguous, a.flags.f_contiguous)


CASES = {
    "add_of_a_transpose": lambda m, x: x.T + 1,
    "exp_of_a_transpose": lambda m, x: m.exp(x.T),
    "product_of_transposes": lambda m, x: x.T * x.T,
    "f_and_c_operands_conflict_so_c": lambda m, x: x.T + m.ones_like(x.T, order="C"),
    "broadcast_row_and_f_operand": lambda m, x: x.T + x[:, 0],
    "ufunc_with_dtype": lambda m, x: m.add(x.T, 1.0, dtype=m.float32),
    "comparison": lambda m, x: x.T > 1,
    "where": lambda m, x: m.where(x.T > 2, x.T, 0.0),
    "clip": lambda m, x: m.clip(x.T, 1, 5),
    "round": lambda m, x: x.T.round(),
    "astype": lambda m, x: x.T.astype(m.float32),
    "astype_order_c": lambda m, x: x.T.astype(m.float32, order="C"),
    "np_copy": lambda m, x: m.copy(x.T),
    "copy_method_is_c": lambda m, x: x.T.copy(),
    "copy_order_k": lambda m, x: x.T.copy(order="K"),
    "copy_order_a": lambda m, x: x.T.copy(order="A"),
    "copy_order_f": lambda m, x: x.copy(order="F"),
    "array": lambda m, x: m.array(x.T),
    "array_order_f": lambda m, x: m.array(x, order="F"),
    "asarray_order_f": lambda m, x: m.asarray(x, order="F"),
    "asfortranarray": lambda m, x: m.asfortranarray(x),
    "ascontiguousarray": lambda m, x: m.ascontiguousarray(x.T),
    "zeros_like": lambda m, x: m.zeros_like(x.T),
    "full_like": lambda m, x: m.full_like(x.T, 2.0),
    "zeros_like_order_c": lambda m, x: m.zeros_like(x.T, order="C"),
    "zeros_order_f": lambda m, x: m.zeros((3, 4), order="F"),
    "cumsum_along_an_axis": lambda m, x: m.cumsum(x.T, axis=0),
    "concatenate": lambda m, x: m.concatenate([x.T, x.T]),
    "stack": lambda m, x: m.stack([x.T, x.T]),
    "sort": lambda m, x: m.sort(x.T, axis=0),
    "fancy_index_in_the_middle": lambda m, x: x.T[:, [0, 1]],
    "fancy_index_of_a_3d_array": lambda m, x: x.reshape(3, -1, 1)[:, [0, 1]],
    "reshape_of_an_f_result_copies": lambda m, x: (x.T + 1).reshape(-1),
    "ravel_k_of_an_f_result": lambda m, x: (x.T + 1).ravel(order="K"),
    "transpose_of_an_f_result": lambda m, x: (x.T + 1).T,
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("n", [4, 100_001])
@pytest.mark.parametrize("case", list(CASES))
def test_result_layout_is_numpys(case, n, mode):
    f = CASES[case]
    xn = numpy.arange(3.0 * n).reshape(3, n)
    with numpy.errstate(all="ignore"), la.options(**MODES[mode]):
        want = f(numpy, xn)
        got = f(la, la.asarray(xn))
        assert _layout(got) == _layout(want)
        numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-13)  # (exp: an ulp)
        # a reshape is a view exactly where NumPy's is
        assert la.shares_memory(got.reshape(-1), got) == numpy.shares_memory(
            want.reshape(-1), want)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("n", [5, 100_001])
def test_writes_through_views_of_an_f_result_land_in_numpys_order(n, mode):
    def program(m, x):
        t = m.sqrt(x.T)  # F-ordered
        u = t.T.reshape(-1)  # a view (t.T is C-contiguous)
        u[1:4] = -1.0
        v = t.reshape(-1)  # a copy
        v[:2] = 7.0
        t[0, :] += 100.0
        w = t.T.ravel()  # a view again
        return t, u, v, w

    xn = numpy.arange(2.0 * n).reshape(2, n)
    with la.options(**MODES[mode]):
        for g, w in zip(program(la, la.asarray(xn)), program(numpy, xn), strict=True):
            numpy.testing.assert_array_equal(numpy.asarray(g), w)
            assert _layout(g) == _layout(w)


@st.composite
def operands(draw):
    """Two or three NumPy arrays of one broadcast shape with random memory orders,
    reversals, slices and broadcast axes."""
    ndim = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        perm = draw(st.permutations(range(ndim)))
        base = numpy.zeros(tuple(shape[p] * 2 for p in perm))
        a = base[tuple(slice(None, None, draw(st.sampled_from([1, 2, -1]))) for _ in perm)]
        a = a[tuple(slice(0, shape[p]) for p in perm)].transpose(numpy.argsort(perm))
        if draw(st.booleans()):  # a broadcast axis
            d = draw(st.integers(0, ndim - 1))
            a = a[tuple(slice(0, 1) if k == d else slice(None) for k in range(ndim))]
        if draw(st.booleans()):  # fewer dimensions (broadcast from the left)
            a = a[(0,) * draw(st.integers(1, ndim - 1))]
        ops.append(a)
    return ops


@settings(max_examples=300)
@given(operands())
def test_memory_order_is_numpys_iterator_order(ops):
    out = ops[0] + 0
    if len(ops) == 3:  # (a ufunc of three: NumPy's where)
        out = numpy.where(ops[0] > -1, ops[1], ops[2])
    elif len(ops) == 2:
        out = ops[0] + ops[1]
    shape = out.shape
    perm = memory_order(tuple((o.shape, o.strides) for o in ops), shape)
    from lazyarray.storage import packed_strides
    strides = packed_strides(shape, out.itemsize, perm)
    assert [s for s, n in zip(strides, shape) if n > 1] == \
        [s for s, n in zip(out.strides, shape) if n > 1]


@pytest.mark.parametrize("fn", ["array", "asarray"])
@pytest.mark.parametrize("order", [None, "C", "F", "K", "A"])
@pytest.mark.parametrize("source", ["list", "c_small", "f_small", "f_large", "f_view"])
def test_constructors_keep_numpys_layout(fn, order, source):
    """`array`/`asarray` of NumPy data in each order: the strides, flags and `isfortran` of
    NumPy's result (an F-ordered input stays F, `order="F"` of a list is F), a copy all the
    same (the one documented aliasing deviation)."""
    src = {"list": [[1.0, 2, 3], [4, 5, 6]], "c_small": np.arange(6.0).reshape(2, 3),
           "f_small": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
           "f_large": np.asfortranarray(np.ones((300, 400))),
           "f_view": np.asfortranarray(np.ones((40, 30)))[:, ::2]}[source]
    kw = {} if order is None else {"order": order}
    want, got = getattr(np, fn)(src, **kw), getattr(la, fn)(src, **kw)
    if want is src:  # NumPy returns the array itself: lazyarray copies NumPy data on entry
        want = np.array(src, order="K")  # (docs/semantics.md), keeping its order
    assert np.isfortran(want) == la.isfortran(got)
    assert (want.flags.c_contiguous, want.flags.f_contiguous) == (
        got.flags.c_contiguous, got.flags.f_contiguous)
    if want.flags.c_contiguous or want.flags.f_contiguous:
        assert want.strides == got.strides
    np.testing.assert_array_equal(np.asarray(got), want)
