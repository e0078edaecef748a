"""Integer-array (advanced) indexing as the lazy `gather` opcode, against NumPy: values,
dtype, shape and IndexError messages; take / take_along_axis / compress; fusion of a gather
with its consumers (asserted on the optimized HLO and the kernel count); out-of-range lazily
computed indices raising IndexError at materialization on the compiled path."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyarray as la
from helpers import assert_like_numpy
from lazyarray.ir.interpret import interpret
from lazyarray.ir.text import parse_module, print_module
from lazyarray.passes import run_pipeline

INDEX_DTYPES = [np.dtype(t) for t in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8")]


def _outcome(fn):
    try:
        return "ok", fn()
    except (IndexError, ValueError, TypeError) as e:
        return type(e).__name__, str(e)


def _same(np_fn, la_fn):
    """Same result as NumPy, or the same exception type and message."""
    want = _outcome(np_fn)
    got = _outcome(lambda: np.asarray(la_fn()))
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        assert_like_numpy(got[1], want[1])
    else:
        assert got[1] == want[1]


# ---- hand-picked keys ------------------------------------------------------------------------

X = np.arange(60.0).reshape(3, 4, 5)
KEYS = [
    [0, 2, -1],
    ([0, 2], [1, 3]),
    ([[0], [2]], [1, 3, -4]),
    (slice(None), [3, 0, 0]),
    (slice(None), [1, 2], [0, 4]),            # adjacent: in place
    ([1, 2], slice(1, 3), [0, 4]),            # separated by a slice: to the front
    (0, slice(None), [1, 2]),                 # an int counts as an index array
    (Ellipsis, [4, -5]),
    ([0], None, [1]),                         # separated by None
    (slice(None), [0], None, [1]),
    (None, [1, 2], slice(None, None, -1)),
    (np.array([[True, False, True, True]] * 3),),
    (slice(None), np.array([True, False, True, True])),
    (np.array([True, False, True]), [0, 1], slice(2, None)),
    ([],),
    (np.zeros((0, 2), np.int64),),
    (np.array(1), [0, 3]),
    ([[1]], [[2]], [[3]]),
    ([0, 5],),                                # out of range
    (slice(None), [-5]),
    ([0, 1], [0, 1, 2]),                      # shape mismatch
    (0, 0, 0, [0]),                           # too many indices
    (np.array([True, False]),),               # mask of the wrong length
    # several errors at once: NumPy reports a mask's shape, then an int's bounds, then the
    # broadcast (naming the arrays' shapes only), then an array's bounds
    (5, [0, 1, 2], [0, 1]),
    (0, [0, 1, 2], [7, 7]),
    ([0, 1, 2], [7, 7], 9),
    (np.array([True, False]), 9, [0, 1]),
    (np.array([True, False, True]), [0, 1, 2, 3], 9),
    ([0, 1], 9, np.array([True, False, True, True, False, False])),
    (9, 9, [0]),
]
EMPTY = np.zeros((0, 0, 0))


@pytest.mark.parametrize("lazy", [False, True])
def test_an_int_out_of_bounds_before_a_broadcast_mismatch(mode, lazy):
    """Found by a random search: an int and index arrays that do not broadcast, on an empty
    array: NumPy's IndexError is the int's bounds, not the broadcast."""
    key = (0, np.array([], np.int8), np.array([0, 0], np.int8))
    a = la.asarray(EMPTY)
    lkey = tuple(la.asarray(k) + 0 if lazy and isinstance(k, np.ndarray) else k for k in key)
    _same(lambda: EMPTY[key] - 1, lambda: a[lkey] - 1)


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_keys(mode, key):
    a = la.asarray(X)
    _same(lambda: X[key], lambda: a[key])
    _same(lambda: X[key] * 2 + 1, lambda: a[key] * 2 + 1)
    _same(lambda: (X + 1)[key], lambda: (a + 1)[key])


def test_index_dtypes_and_negative(mode):
    a = la.asarray(X)
    for dt in INDEX_DTYPES:
        i = np.array([0, 2, 1], dt)
        _same(lambda: X[:, i], lambda: a[:, i])
        _same(lambda: X[:, la.asarray(i) * 1], lambda: a[:, la.asarray(i) * 1])
    big = np.array([2**64 - 1], np.uint64)  # NumPy casts to intp: -1, the last element
    _same(lambda: X[big], lambda: a[big])


def test_zero_d_and_empty(mode):
    _same(lambda: np.float64(3.0)[np.array([0])] if False else np.array(3.0)[[0]],
          lambda: la.asarray(np.array(3.0))[[0]])
    e = np.zeros((0, 3))
    _same(lambda: e[:, [1, 2]], lambda: la.asarray(e)[:, [1, 2]])
    _same(lambda: e[:, [5]], lambda: la.asarray(e)[:, [5]])  # checked though empty
    _same(lambda: e[[]], lambda: la.asarray(e)[[]])
    z = np.zeros((3, 0))
    _same(lambda: z[[1, 2]], lambda: la.asarray(z)[[1, 2]])


def test_lazy_index_arrays(mode):
    a = la.asarray(X)
    i = la.asarray(np.array([3, 1, 7, 0]))
    _same(lambda: X[:, np.array([3, 1, 7, 0]) % 4, 1:], lambda: a[:, i % 4, 1:])
    _same(lambda: X[:, np.array([3, 1, 7, 0]), 1:], lambda: a[:, i, 1:])  # 7 is out of range
    mask = la.asarray(X[:, 0, 0]) > 10
    _same(lambda: X[X[:, 0, 0] > 10], lambda: a[mask])


# ---- hypothesis: random arrays, index arrays and keys ----------------------------------------


@st.composite
def _key(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    key = []
    i = 0
    ndim = len(shape)
    while i < ndim:
        kind = draw(st.sampled_from(["array", "array", "slice", "int", "none", "stop"]))
        if kind == "stop":
            break
        if kind == "none":
            key.append(None)
            continue
        n = shape[i]
        if kind == "slice":
            key.append(slice(draw(st.none() | st.integers(-6, 6)),
                             draw(st.none() | st.integers(-6, 6)),
                             draw(st.sampled_from([None, 1, 2, -1, -2]))))
        elif kind == "int":
            key.append(draw(st.integers(-n - 1, n)))
        else:
            dt = draw(st.sampled_from(INDEX_DTYPES))
            lo, hi = max(-n - 2, np.iinfo(dt).min), min(n + 1, np.iinfo(dt).max)
            ishape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
            key.append(draw(hnp.arrays(dt, ishape, elements=st.integers(lo, hi))))
        i += 1
    if not any(isinstance(k, np.ndarray) for k in key):
        key.append(np.array([0, -1]))
    pos = draw(st.integers(0, len(key)))
    if draw(st.booleans()):
        key.insert(pos, Ellipsis)
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    lazy = draw(st.booleans())
    return data, tuple(key), lazy


@settings(max_examples=30)
@given(_key())
def test_random_keys(mode, case):
    data, key, lazy = case
    a = la.asarray(data)
    if lazy:  # index arrays computed lazily: checked at materialization
        lkey = tuple(la.asarray(k) + 0 if isinstance(k, np.ndarray) and k.ndim else k
                     for k in key)
    else:
        lkey = key
    _same(lambda: data[key] - 1, lambda: a[lkey] - 1)


# (shape, axis, indices, mode): empty results and empty axes, found by a random search; NumPy
# checks mode='raise' indices once per element before the axis (none there: none checked)
EMPTY_TAKES = [((0, 0), 0, np.array(0), "raise"), ((0, 0), 0, np.array(0), "clip"),
               ((0, 3), 1, [5], "raise"), ((0, 3), 1, [5], "wrap"), ((3, 0), 0, [5], "raise"),
               ((3, 0), 0, [5], "clip"), ((0,), 0, [], "raise"), ((0,), 0, [0], "clip"),
               ((0,), 0, [0], "raise"), ((2, 0, 2), 1, [1], "raise"), ((2, 0, 2), 1, [1], "wrap"),
               ((2, 0, 0), 1, [1], "raise"), ((0, 2), None, [0], "raise"),
               ((0, 2), None, [], "raise"), ((3,), 0, np.zeros(0, int), "raise"),
               ((0, 0), 1, np.array(3), "raise"), ((2, 0), 0, [-3, 1], "raise")]


@pytest.mark.parametrize("case", EMPTY_TAKES, ids=range(len(EMPTY_TAKES)))
def test_take_of_empty_arrays(mode, case):
    shape, axis, ind, md = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    a = la.asarray(x)
    _same(lambda: np.take(x, ind, axis=axis, mode=md), lambda: la.take(a, ind, axis=axis, mode=md))
    _same(lambda: np.take(x, ind, axis=axis, mode=md),
          lambda: la.take(a, la.asarray(np.asarray(ind, np.intp)) * 1, axis=axis, mode=md))


EMPTY_BROADCASTS = [((0, 0), ([5], np.zeros(0, int))), ((3, 0), ([5], np.zeros(0, int))),
                    ((3, 4), ([5], np.zeros(0, int))), ((3, 4), (np.zeros((2, 0), int) + 7, [1])),
                    ((3, 4), (5, np.zeros(0, int))), ((3, 0), ([5],)), ((0, 0), ([0],))]


@pytest.mark.parametrize("case", EMPTY_BROADCASTS, ids=range(len(EMPTY_BROADCASTS)))
def test_index_arrays_broadcast_to_nothing_are_not_checked(mode, case):
    """Index arrays whose broadcast is empty read nothing, and NumPy checks none of their
    values (an int is checked always); take_along_axis likewise (found by a random search)."""
    shape, key = case
    x = np.arange(float(np.prod(shape))).reshape(shape)
    a = la.asarray(x)
    _same(lambda: x[key], lambda: a[key])
    _same(lambda: x[key], lambda: (a * 1.0)[tuple(la.asarray(k) * 1 if isinstance(k, np.ndarray)
                                                  else k for k in key)])
    e = np.zeros((0, 0), np.int32)
    _same(lambda: np.take_along_axis(e, np.array([[0]]), axis=0),
          lambda: la.take_along_axis(la.asarray(e), np.array([[0]]), axis=0))


@pytest.mark.parametrize("case", [((0, 0), (np.array([0], np.int8),)),
                                  ((3, 4), (np.array([7]), slice(1, 1))),
                                  ((3, 4), (np.array([2]), slice(1, 1))),
                                  ((0, 0), (np.zeros(0, int),))], ids=range(4))
def test_lazy_indices_of_an_empty_result_are_checked(mode, case):
    """An empty result whose index arrays do not broadcast to nothing: NumPy checks them, so
    lazily computed ones are computed at the call (the gather would read none of them)."""
    shape, key = case
    x = np.zeros(shape)
    lkey = tuple(la.asarray(k) + 0 if isinstance(k, np.ndarray) else k for k in key)
    _same(lambda: x[key], lambda: la.asarray(x)[lkey])
    _same(lambda: x[key], lambda: (la.asarray(x) * 1.0)[lkey])


@pytest.mark.parametrize("case", [((2, 0), (slice(-3, None, -1), np.array([], np.int8))),
                                  ((3, 4), (slice(-5, None, -1),)),
                                  ((3, 4), (slice(None), slice(-9, None, -2))),
                                  ((3, 4), (slice(-9, None, -1), [1, 2]))], ids=range(4))
def test_empty_backward_slices(mode, case):
    """A backward slice that selects nothing normalizes to (-1, -1, -1), whose start NumPy's
    slicing would read as the last element: it is stored as (0, 0, 1) (found by a random
    search: the gather after it read the whole axis)."""
    shape, key = case
    x = np.arange(float(np.prod(shape))).reshape(shape)
    _same(lambda: x[key] - 1, lambda: la.asarray(x)[key] - 1)
    _same(lambda: x[key] - 1, lambda: (la.asarray(x) * 1.0)[key] - 1)


def test_take_wrap_on_an_empty_axis_returns():
    """NumPy 2.4's take(mode='wrap') never returns on an empty axis when the result is empty
    too; lazyarray gives the empty result, as mode='clip' does."""
    x = np.zeros((0, 0), np.int32)
    for ind in (np.array(0), la.asarray(np.array(0)) * 1):
        got = la.take(la.asarray(x), ind, axis=0, mode="wrap")
        assert_like_numpy(got, np.take(x, np.array(0), axis=0, mode="clip"))


@settings(max_examples=20)
@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
                  elements=st.integers(-100, 100)),
       st.data())
def test_take_and_take_along_axis(mode, x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    n = x.size if axis is None else x.shape[axis]
    ind = data.draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                               elements=st.integers(-n - 2, n + 2)))
    md = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    # NumPy 2.4's own take(mode="wrap") never returns on an empty axis when the result is
    # empty too (e.g. x of shape (1, 0, 0), axis=1): no oracle there
    assume(not (md == "wrap" and n == 0 and x.size == 0))
    a = la.asarray(x)
    _same(lambda: np.take(x, ind, axis=axis, mode=md), lambda: la.take(a, ind, axis=axis, mode=md))
    _same(lambda: np.take(x, ind, axis=axis, mode=md) + 1,
          lambda: la.take(a, la.asarray(ind) * 1, axis=axis, mode=md) + 1)
    if axis is not None:
        along = tuple(data.draw(st.sampled_from([1, s])) for s in x.shape)
        along = along[:axis % x.ndim] + (data.draw(st.integers(0, 3)),) + along[axis % x.ndim + 1:]
        ind2 = data.draw(hnp.arrays(np.int64, along, elements=st.integers(-n - 1, n)))
        _same(lambda: np.take_along_axis(x, ind2, axis=axis),
              lambda: la.take_along_axis(a, ind2, axis=axis))
        _same(lambda: np.take_along_axis(x, ind2, axis=axis),
              lambda: la.take_along_axis(a, la.asarray(ind2) + 0, axis=axis))
        cond = data.draw(hnp.arrays(bool, data.draw(st.integers(0, n + 1))))
        _same(lambda: np.compress(cond, x, axis=axis), lambda: la.compress(cond, a, axis=axis))


def test_methods_and_namespace_are_native():
    from lazyarray._coverage import classify

    for name in ("take", "take_along_axis", "compress"):
        assert classify(getattr(np, name), la, name) == "native-lazy"
    a = la.asarray(np.arange(5.0))
    la.reset_stats()
    assert_like_numpy(np.asarray(a.take([4, 0])), np.arange(5.0).take([4, 0]))
    assert_like_numpy(np.asarray(a.compress([1, 0, 1])), np.arange(5.0).compress([1, 0, 1]))
    assert la.cache_info()["fallbacks"] == 0


# ---- fusion, kernels, errors at materialization ------------------------------------------------


def test_gather_fuses_into_one_kernel(compiled):
    rng = np.random.default_rng(0)
    n = 5000
    xv, yv = rng.standard_normal(n), rng.standard_normal(n)
    iv = rng.integers(-n, n, n)
    x, y, idx = la.asarray(xv), la.asarray(yv), la.asarray(iv)
    r = (x[idx] * 2 + y).sum()
    rep = la.explain(r)
    assert len(rep.kernels) == 1
    assert "gather(%0, %1), axes={0}, offset_dims={}" in rep.hlo_after
    assert rep.hlo_after.count("fusion(") == 1
    la.reset_stats()
    assert float(r) == pytest.approx((xv[iv] * 2 + yv).sum())
    info = la.cache_info()
    assert info["kernels_launched"] == 1 and info["fallbacks"] == 0


def test_gather_of_lazy_indices_and_2d_fuses(compiled):
    xv = np.arange(2000.0).reshape(40, 50)
    x = la.asarray(xv)
    i = la.asarray(np.arange(40)[::-1].copy())
    r = x[39 - i, 3:] + 1.0  # index arithmetic, the gather and the add: one kernel
    rep = la.explain(r)
    assert len(rep.kernels) == 1
    assert "gather(" in rep.hlo_after and "subtract" in rep.hlo_after.split("ENTRY")[0]
    la.reset_stats()
    assert_like_numpy(np.asarray(r), xv[39 - np.arange(40)[::-1], 3:] + 1.0)
    flat = la.asarray(np.arange(40.0))
    r1 = flat[(i * 7) % 40] * 2  # 1-d: the index needs no broadcast, so modulo fuses too
    assert len(la.explain(r1).kernels) == 1
    assert_like_numpy(np.asarray(r1), np.arange(40.0)[(np.arange(40)[::-1] * 7) % 40] * 2)
    assert la.cache_info()["fallbacks"] == 0


def test_signature_is_size_polymorphic(compiled):
    def run(n):
        x = la.asarray(np.arange(float(n)))
        i = la.asarray(np.arange(n)[::-1].copy())
        return np.asarray(x[i] * 3.0)

    run(1000)
    la.reset_stats()
    assert_like_numpy(run(3000), np.arange(3000.0)[::-1] * 3.0)
    assert la.cache_info()["misses"] == 0


@pytest.mark.parametrize("n", [1000, 300_000])  # serial and parallel kernels
def test_out_of_range_lazy_index_raises_at_materialization(compiled, n):
    x = la.asarray(np.arange(float(n)))
    i = la.asarray(np.arange(n)) * 3  # computed lazily: indices up to 3n
    y = x[i] * 2  # building it is fine: the values are not known
    la.reset_stats()
    first = -(-n // 3) * 3  # the first multiple of 3 out of range, as NumPy reports it
    with pytest.raises(IndexError, match=f"index {first} is out of bounds for axis 0 with size {n}"):
        np.asarray(y)
    assert la.cache_info()["kernels_launched"] >= 1  # the compiled kernel flagged it
    with pytest.raises(IndexError, match="out of bounds"):
        float((x[-i - 1]).sum())
    ok = x[i % n] * 2  # the same kernel with indices in range still runs
    assert_like_numpy(np.asarray(ok), (np.arange(float(n))[(np.arange(n) * 3) % n]) * 2)


def test_concrete_index_errors_at_build():
    a = la.asarray(np.arange(5.0))
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 5"):
        a[[1, 10]]
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 5"):
        la.take(a, np.array([10]))
    with la.options(eager_threshold=0):
        b = a * 2  # pending
        with pytest.raises(IndexError, match="index -6 is out of bounds"):
            b[[-6]]


# ---- IR: text round trip, interpreter, verifier ------------------------------------------------

GATHER_HLO = """HloModule main

ENTRY %main {
  %0 = f64[4,5] parameter(0)
  %1 = s32[3,5] parameter(1)
  %2 = f64[3,5] gather(%0, %1), axes={0}, offset_dims={1}
  %3 = f64[] constant(2.0)
  %4 = f64[3,5] broadcast(%3), dimensions={}
  ROOT %5 = f64[3,5] multiply(%2, %4)
}
"""


def test_hlo_round_trip_interpret_and_fuse():
    m = parse_module(GATHER_HLO)
    assert print_module(m) == GATHER_HLO
    x = np.arange(20.0).reshape(4, 5)
    i = np.broadcast_to(np.array([[3], [-1], [0]], np.int32), (3, 5))
    (got,) = interpret(m, [x, i])
    assert_like_numpy(got, x[[3, -1, 0]] * 2)
    opt = run_pipeline(m)
    text = print_module(opt)
    assert text.count("fusion(") == 1 and "gather(%0, %1), axes={0}, offset_dims={1}" in text
    assert print_module(parse_module(text)) == text
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        interpret(m, [x, np.full((3, 5), 4, np.int32)])


def test_verifier_checks_gather():
    from lazyarray.ir.verify import VerifyError, verify

    verify(parse_module(GATHER_HLO))
    bad = GATHER_HLO.replace("offset_dims={1}", "offset_dims={0}")
    with pytest.raises(VerifyError, match="gather"):
        verify(parse_module(bad))
    bad = GATHER_HLO.replace("s32[3,5] parameter(1)", "f64[3,5] parameter(1)")
    with pytest.raises(VerifyError, match="gather"):
        verify(parse_module(bad))


def test_advanced_writes_still_work(mode):
    def prog(xp, a):
        a = a.copy()
        a[[0, 0], [1, 1]] += 1  # a repeated index adds once
        a[:, [0, 2]] = -a[:, [1, 3]]
        a[a[:, 0] > 0] = 7
        return a

    x = np.arange(12.0).reshape(3, 4)
    assert_like_numpy(np.asarray(prog(la, la.asarray(x))), prog(np, x))


def test_reason_gather(compiled):
    """A computed table read through an index needs a buffer: its fusion ends there."""
    x = la.asarray(np.arange(3000.0))
    idx = la.asarray(np.arange(3000)[::-1].copy())
    r = (x * 2)[idx] + 1
    kinds = sorted((k.kind, k.reason) for k in la.explain(r).kernels)
    assert kinds == [("loop", "gather"), ("loop", "output")]
    assert_like_numpy(np.asarray(r), (np.arange(3000.0) * 2)[::-1] + 1)
