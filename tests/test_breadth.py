"""Breadth: joining, splitting, rearranging, products and statistics against NumPy, on the
interpreter and the compiled path; NumPy functions dispatch to lazyarray (__array_function__)."""

import warnings

import numpy as np
import pytest

import lazyarray as la

warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5))
Y = rng.integers(0, 9, (4, 3))
v = rng.standard_normal(5)
Xn = X.copy()
Xn[0, 1] = np.nan
Xn[2, 2] = np.inf
Yn = Xn + 1e-9
I = rng.integers(0, 3, (4, 5))  # noqa: E741
w = rng.random(5)

CASES = {
 "concat1": lambda xp, A: xp.concatenate([A(X), A(Y)], axis=1),
 "concat0": lambda xp, A: xp.concatenate([A(X), A(X)]),
 "concatNone": lambda xp, A: xp.concatenate([A(X), A(Y)], axis=None),
 "stack": lambda xp, A: xp.stack([A(X), A(X) * 2], axis=-1),
 "vstack": lambda xp, A: xp.vstack([A(v), A(v)]),
 "hstack": lambda xp, A: xp.hstack([A(v), A(v)]),
 "column_stack": lambda xp, A: xp.column_stack([A(v), A(v)]),
 "dstack": lambda xp, A: xp.dstack([A(X), A(X)]),
 "split": lambda xp, A: xp.array_split(A(X), 3, axis=1)[2],
 "flip": lambda xp, A: xp.flip(A(X)),
 "flip0": lambda xp, A: xp.flip(A(X), 0),
 "rot90": lambda xp, A: xp.rot90(A(X)),
 "rot90_3": lambda xp, A: xp.rot90(A(X), 3),
 "roll": lambda xp, A: xp.roll(A(X), 2, axis=1),
 "rollN": lambda xp, A: xp.roll(A(X), -3),
 "roll2": lambda xp, A: xp.roll(A(X), (1, 2), axis=(0, 1)),
 "tile": lambda xp, A: xp.tile(A(v), (2, 3)),
 "tile2": lambda xp, A: xp.tile(A(X), 2),
 "repeat": lambda xp, A: xp.repeat(A(X), 2, axis=0),
 "repeatN": lambda xp, A: xp.repeat(A(X), 3),
 "diff": lambda xp, A: xp.diff(A(X), n=2),
 "diff0": lambda xp, A: xp.diff(A(X), axis=0, prepend=0),
 "pad_c": lambda xp, A: xp.pad(A(X), ((1, 2), (0, 3)), constant_values=7),
 "pad_edge": lambda xp, A: xp.pad(A(X), 2, mode="edge"),
 "pad_wrap": lambda xp, A: xp.pad(A(X), ((1, 2), (3, 1)), mode="wrap"),
 "pad_reflect": lambda xp, A: xp.pad(A(X), ((1, 2), (3, 1)), mode="reflect"),
 "pad_sym": lambda xp, A: xp.pad(A(X), ((1, 2), (3, 1)), mode="symmetric"),
 "diagonal": lambda xp, A: xp.diagonal(A(X), 1),
 "diagonal-": lambda xp, A: xp.diagonal(A(X), -2),
 "trace": lambda xp, A: xp.trace(A(X)),
 "diag1": lambda xp, A: xp.diag(A(v), 1),
 "diag2": lambda xp, A: xp.diag(A(X)),
 "triu": lambda xp, A: xp.triu(A(X), 1),
 "tril": lambda xp, A: xp.tril(A(X), -1),
 "mesh": lambda xp, A: xp.meshgrid(A(v), A(v[:3]))[1],
 "mesh_ij": lambda xp, A: xp.meshgrid(A(v), A(v[:3]), indexing="ij")[0],
 "bcast": lambda xp, A: xp.broadcast_arrays(A(v), A(X))[0],
 "outer": lambda xp, A: xp.outer(A(v), A(v)),
 "matmul": lambda xp, A: A(X) @ A(X).T,
 "dot1": lambda xp, A: xp.dot(A(v), A(v)),
}
CASES.update({
 "isclose": lambda xp, A: xp.isclose(A(Xn), A(Yn)),
 "isclose_nan": lambda xp, A: xp.isclose(A(Xn), A(Yn), equal_nan=True),
 "isclose_f32": lambda xp, A: xp.isclose(A(Xn.astype(np.float32)), A(Yn), rtol=1e-6),
 "isclose_int": lambda xp, A: xp.isclose(A(I), A(Xn + 2.0), atol=1.5),
 "isclose_c": lambda xp, A: xp.isclose(A(Xn + 1j), A(Yn.astype(np.complex64)), equal_nan=True),
 "allclose": lambda xp, A: xp.allclose(A(Xn), A(Yn), equal_nan=True),
 "array_equal": lambda xp, A: xp.array_equal(A(Xn), A(Xn), equal_nan=True),
 "array_equiv": lambda xp, A: xp.array_equiv(A(I[0]), A(I)),
 "nan_to_num": lambda xp, A: xp.nan_to_num(A(Xn)),
 "nan_to_num2": lambda xp, A: xp.nan_to_num(A(Xn), nan=-1, posinf=9),
 "ptp": lambda xp, A: xp.ptp(A(I), axis=0),
 "count_nonzero": lambda xp, A: xp.count_nonzero(A(I)),
 "count_nonzero_ax": lambda xp, A: xp.count_nonzero(A(I), axis=1),
 "average": lambda xp, A: xp.average(A(I)),
 "average_w": lambda xp, A: xp.average(A(I), axis=1, weights=A(w)),
 "nansum": lambda xp, A: xp.nansum(A(Xn), axis=0),
 "nanmax": lambda xp, A: xp.nanmax(A(Xn), axis=1),
 "nanmin": lambda xp, A: xp.nanmin(A(Xn)),
 "nanmean": lambda xp, A: xp.nanmean(A(Xn), axis=0),
 "polyval": lambda xp, A: xp.polyval([1.0, -2.0, 3.0], A(w)),
})

CASES.update({
    "cumsum": lambda xp, A: xp.cumsum(A(X)),
    "cumsum0": lambda xp, A: xp.cumsum(A(X), axis=0),
    "cumsum1": lambda xp, A: A(X).cumsum(axis=-1),
    "cumprod": lambda xp, A: xp.cumprod(A(X) * 0.1 + 1, axis=1),
    "cumsum_i8": lambda xp, A: xp.cumsum(A(Y.astype(np.int8)), axis=1),
    "cumsum_expr": lambda xp, A: xp.cumsum(xp.sin(A(X)) * 2, axis=0)[::3] + 1,
    "acc_max": lambda xp, A: xp.maximum.accumulate(A(X), axis=1),
    "cumsum_0d": lambda xp, A: xp.cumsum(A(np.float64(3))),
    "cumsum_empty": lambda xp, A: xp.cumsum(A(np.zeros((0, 3))), axis=1),
    "cumsum_T": lambda xp, A: xp.cumsum(A(X).T, axis=1),
})


V3 = rng.standard_normal((4, 3))
W3 = rng.standard_normal((3, 4))
Z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
F = rng.standard_normal((2, 3)).astype(np.float32)
CASES.update({  # functions composed of lazy operations (lazyarray/_composite.py)
    "select": lambda xp, A: xp.select([A(X) > 0.5, A(X) < -0.5], [A(X) * 2, A(I)], -1.0),
    "select_f32": lambda xp, A: xp.select([A(F) > 0], [A(F)]),
    "select_bcast": lambda xp, A: xp.select([A(v) > 0], [A(X)], A(w)),
    "sinc": lambda xp, A: xp.sinc(A(np.r_[X.ravel(), 0.0, -0.0])),
    "sinc_int": lambda xp, A: xp.sinc(A(I)),
    "fix": lambda xp, A: xp.fix(A(Xn) * 3),
    "fix_int": lambda xp, A: xp.fix(A(I)),
    "isposinf": lambda xp, A: xp.isposinf(A(np.r_[Xn.ravel(), -np.inf])),
    "isneginf": lambda xp, A: xp.isneginf(A(np.r_[Xn.ravel(), -np.inf])),
    "isreal": lambda xp, A: xp.isreal(A(X)),
    "iscomplex": lambda xp, A: xp.iscomplex(A(I)),
    "real": lambda xp, A: xp.real(A(Z)),
    "real_f": lambda xp, A: xp.real(A(X)),
    "kron": lambda xp, A: xp.kron(A(X[:2, :3]), A(I[:3, :2])),
    "kron_1_2": lambda xp, A: xp.kron(A(v[:3]), A(X[:2, :2])),
    "kron_0d": lambda xp, A: xp.kron(A(np.float64(2.5)), A(v)),
    "tensordot": lambda xp, A: xp.tensordot(A(X), A(X), axes=([1], [1])),
    "tensordot2": lambda xp, A: xp.tensordot(A(X.reshape(2, 2, 5)), A(X.reshape(2, 5, 2)), 2),
    "tensordot0": lambda xp, A: xp.tensordot(A(v[:2]), A(v), 0),
    "matvec": lambda xp, A: xp.matvec(A(X), A(v)),
    "matvec_b": lambda xp, A: xp.matvec(A(X.reshape(2, 2, 5)), A(X[:2, None, :])),
    "vecmat": lambda xp, A: xp.vecmat(A(Z[0, :3]), A(Z)),
    "vecmat_r": lambda xp, A: xp.vecmat(A(v[:4]), A(X)),
    "cross": lambda xp, A: xp.cross(A(V3), A(V3[::-1] * 2)),
    "cross_ax": lambda xp, A: xp.cross(A(W3), A(W3 + 1), axisa=0, axisb=0, axisc=0),
    "cross_int": lambda xp, A: xp.cross(A(Y[:, :3]), A(I[:, :3])),
    "trapezoid": lambda xp, A: xp.trapezoid(A(X)),
    "trapezoid_x": lambda xp, A: xp.trapezoid(A(X), A(np.cumsum(w)), axis=1),
    "trapezoid_dx": lambda xp, A: xp.trapezoid(A(I), dx=0.5, axis=0),
    "ediff1d": lambda xp, A: xp.ediff1d(A(X), to_begin=[-1, -2], to_end=9),
    "ediff1d_i": lambda xp, A: xp.ediff1d(A(I)),
    "nancumsum": lambda xp, A: xp.nancumsum(A(Xn), axis=1),
    "nancumprod": lambda xp, A: xp.nancumprod(A(Xn * 0.1)),
    "nancumsum_int": lambda xp, A: xp.nancumsum(A(I), axis=0),
    "nanvar": lambda xp, A: xp.nanvar(A(Xn), axis=0),
    "nanvar_ddof": lambda xp, A: xp.nanvar(A(Xn), axis=1, ddof=1, keepdims=True),
    "nanvar_all": lambda xp, A: xp.nanvar(A(Xn)),
    "nanstd": lambda xp, A: xp.nanstd(A(Xn), axis=1),
    "nanstd_int": lambda xp, A: xp.nanstd(A(I), axis=1),
    "nanvar_allnan": lambda xp, A: xp.nanvar(A(np.array([[np.nan, 1.0], [np.nan, 2.0]])), axis=0),
    "cov": lambda xp, A: xp.cov(A(X)),
    "cov_T": lambda xp, A: xp.cov(A(X), rowvar=False, bias=True),
    "cov_y": lambda xp, A: xp.cov(A(v), A(w)),
    "cov_ddof": lambda xp, A: xp.cov(A(I), ddof=2),
    "cov_1d": lambda xp, A: xp.cov(A(v)),
    "cov_c": lambda xp, A: xp.cov(A(Z)),
    "corrcoef": lambda xp, A: xp.corrcoef(A(X)),
    "corrcoef_y": lambda xp, A: xp.corrcoef(A(v), A(w)),
    "gradient": lambda xp, A: xp.gradient(A(X))[1],
    "gradient0": lambda xp, A: xp.gradient(A(X), 0.5, axis=0),
    "gradient2": lambda xp, A: xp.gradient(A(I), 2.0, edge_order=2)[0],
    "gradient1d": lambda xp, A: xp.gradient(A(v), 3.0),
    "append": lambda xp, A: xp.append(A(X), A(I)),
    "append_ax": lambda xp, A: xp.append(A(X), A(I), axis=0),
    "rollaxis": lambda xp, A: xp.rollaxis(A(X.reshape(2, 2, 5)), 2),
    "rollaxis_s": lambda xp, A: xp.rollaxis(A(X.reshape(2, 2, 5)), 0, 3),
    "diagflat": lambda xp, A: xp.diagflat(A(X[:2, :2]), -1),
    "resize": lambda xp, A: xp.resize(A(v), (3, 4)),
    "resize_small": lambda xp, A: xp.resize(A(X), 7),
    "resize_empty": lambda xp, A: xp.resize(A(np.zeros(0)), (2, 2)),
    "block": lambda xp, A: xp.block([[A(X), A(I)], [A(X) * 2, A(np.zeros((4, 5)))]]),
    "block_1d": lambda xp, A: xp.block([A(v), A(w), A(np.float64(1.0))]),
    "block_3": lambda xp, A: xp.block([[[A(v)]], [[A(w)]]]),
    "tri": lambda xp, A: xp.tri(4, 6, 1) + A(np.zeros(1)),
    "tri_i": lambda xp, A: xp.tri(5, k=-2, dtype=int) + A(np.zeros(1, int)),
    "indices": lambda xp, A: xp.indices((2, 3)) + A(np.zeros(1, int)),
    "indices_s": lambda xp, A: xp.indices((2, 3), sparse=True)[1] + A(np.zeros(1, int)),
    "hanning": lambda xp, A: xp.hanning(9) + A(np.zeros(1)),
    "hamming": lambda xp, A: xp.hamming(8) + A(np.zeros(1)),
    "blackman": lambda xp, A: xp.blackman(7) + A(np.zeros(1)),
    "bartlett": lambda xp, A: xp.bartlett(6) + A(np.zeros(1)),
    "hanning1": lambda xp, A: xp.hanning(1) + A(np.zeros(1)),
    "logspace": lambda xp, A: xp.logspace(0, 2, 7) + A(np.zeros(1)),
    "logspace_b": lambda xp, A: xp.logspace(1, 3, 5, base=2.0, endpoint=False) + A(np.zeros(1)),
    "copy": lambda xp, A: xp.copy(A(X)),
    "einsum_mm": lambda xp, A: xp.einsum("ij,jk->ik", A(X), A(X.T)),
    "einsum_chain": lambda xp, A: xp.einsum("ij,jk,kl->", A(X), A(X.T), A(I)),
    "einsum_diag": lambda xp, A: xp.einsum("ii->i", A(X[:, :4])),
    "einsum_trace": lambda xp, A: xp.einsum("ii", A(X[:, :4])),
    "einsum_T": lambda xp, A: xp.einsum("ij->ji", A(I)),
    "einsum_batch": lambda xp, A: xp.einsum("bij,bkj->bik", A(X.reshape(2, 2, 5)),
                                            A(X.reshape(2, 2, 5))),
    "einsum_ell": lambda xp, A: xp.einsum("...ij,jk->...ik", A(X.reshape(2, 2, 5)), A(X.T)),
    "einsum_outer": lambda xp, A: xp.einsum("i,j", A(v), A(w)),
    "einsum_implicit": lambda xp, A: xp.einsum("ij,kj", A(X), A(I)),
    "einsum_rowdot": lambda xp, A: xp.einsum("ij,ij->i", A(X), A(X)),
    "einsum_int": lambda xp, A: xp.einsum("ij,ik->jk", A(I), A(Y)),
    # batched dots, matrix-vector products and outer products: broadcast product and sum
    "einsum_bmv": lambda xp, A: xp.einsum("bij,bj->bi", A(X.reshape(2, 2, 5)), A(X[:2])),
    "einsum_bvm": lambda xp, A: xp.einsum("bi,bij->bj", A(X[:2, :2]), A(X.reshape(2, 2, 5))),
    "einsum_bdot_broadcast": lambda xp, A: xp.einsum("bi,bi->b", A(X[:1]), A(X)),
    "einsum_outer_batch": lambda xp, A: xp.einsum("ij,kj->ikj", A(X), A(X[:3])),
    "einsum_int8_rowdot": lambda xp, A: xp.einsum("ij,ij->i", A((I * 37).astype(np.int8)),
                                                  A((I * 91).astype(np.int8))),
    "einsum_bool_rowdot": lambda xp, A: xp.einsum("ij,ij->i", A(I > 1), A(I < 3)),
    "astype": lambda xp, A: xp.astype(A(X), np.int16),
})


@pytest.mark.parametrize("mode", ["interp", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name, mode):
    f = CASES[name]
    expected = np.asarray(f(np, np.asarray))
    opts = {"backend": "numpy"} if mode == "interp" else {"eager_threshold": 0}
    with la.options(**opts):
        got = np.asarray(f(la, la.asarray))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_views_from_splitting_and_flipping_alias_the_base():
    a = la.asarray(np.arange(12.0).reshape(3, 4))
    la.flip(a, 1)[0, 0] = -1
    la.split(a, 2, axis=1)[1][2, 0] = -2
    assert np.asarray(a)[0, 3] == -1 and np.asarray(a)[2, 2] == -2
    with pytest.raises(ValueError, match="read-only"):
        la.diagonal(a)[0] = 5


def test_numpy_functions_on_lazy_arrays_stay_lazy():
    x = la.asarray(np.arange(6.0).reshape(2, 3))
    la.reset_stats()
    for r in (np.sum(x), np.concatenate([x, x]), np.mean(x, axis=0), np.where(x > 2, x, 0),
              np.transpose(x), np.clip(x, 1, 2)):
        assert isinstance(r, la.ndarray)
    assert la.cache_info()["fallbacks"] == 0 and la.cache_info()["materializations"] == 0
    s = np.unique(x)  # a data-dependent shape: a counted fallback, still a lazy Array
    assert isinstance(s, la.ndarray) and la.cache_info()["fallbacks"] == 1


COMPOSED = ["select", "sinc", "fix", "isposinf", "isneginf", "kron", "tensordot", "matvec",
            "vecmat", "cross", "trapezoid", "ediff1d", "nancumsum", "nancumprod", "nanvar",
            "nanstd", "cov", "corrcoef", "gradient", "append", "rollaxis", "diagflat", "resize",
            "block", "tri", "indices", "hanning", "hamming", "blackman", "bartlett", "logspace",
            "copy", "astype", "real", "einsum"]


def test_composed_functions_are_native_and_lazy():
    """Built from lazy operations: no fallback, nothing computed until asked."""
    from lazyarray._coverage import classify

    cats = {n: classify(getattr(np, n), la, n) for n in COMPOSED}
    assert all(c == "native-lazy" for c in cats.values()), cats
    x = la.asarray(rng.standard_normal((50, 60)))
    la.reset_stats()
    with la.options(eager_threshold=0):
        outs = [la.cov(x), la.kron(x[:3, :3], x[:2, :2]), la.tensordot(x, x, ([1], [1])),
                la.gradient(x, axis=1), la.nanvar(x, axis=0), la.trapezoid(x),
                la.cross(x[:, :3], x[:, 3:6]), la.select([x > 0], [x], 0.5)]
    assert la.cache_info()["fallbacks"] == 0 and la.cache_info()["materializations"] == 0
    la.evaluate(*outs)
    assert la.cache_info()["fallbacks"] == 0


@pytest.mark.parametrize("call, exc, match", [
    (lambda xp: xp.select([xp.ones(3)], [xp.ones(3)]), TypeError, "invalid entry 0"),
    (lambda xp: xp.select([], []), ValueError, "empty condition list"),
    (lambda xp: xp.select([xp.ones(3) > 0], []), ValueError, "same length"),
    (lambda xp: xp.tensordot(xp.ones((2, 3)), xp.ones((4, 3)), ([0], [0])), ValueError,
     "shape-mismatch"),
    (lambda xp: xp.cross(xp.ones((2, 4)), xp.ones((2, 3))), ValueError, "incompatible"),
    (lambda xp: xp.isposinf(xp.ones(2) + 0j), TypeError, "complex"),
    (lambda xp: xp.gradient(xp.ones(1)), ValueError, "too small"),
    (lambda xp: xp.gradient(xp.ones(5), edge_order=3), ValueError, "edge_order"),
    (lambda xp: xp.cov(xp.ones((2, 2, 2))), ValueError, "more than 2 dimensions"),
    (lambda xp: xp.ediff1d(xp.ones(3, dtype=int), to_end=[1.5]), TypeError, "same_kind"),
    (lambda xp: xp.rollaxis(xp.ones((2, 3)), 2), np.exceptions.AxisError, "out of bounds"),
    (lambda xp: xp.rollaxis(xp.ones((2, 3)), 0, 4), np.exceptions.AxisError, "start"),
    (lambda xp: xp.block([[xp.ones(2)], xp.ones(2)]), ValueError, "depths are mismatched"),
    (lambda xp: xp.block((xp.ones(2),)), TypeError, "tuple"),
    (lambda xp: xp.resize(xp.ones(2), (-1, 2)), ValueError, "non-negative"),
    (lambda xp: xp.astype([1, 2], float), TypeError, "NumPy array"),
    (lambda xp: xp.einsum("ij,jk->ik", xp.ones((2, 3))), ValueError, "more operands"),
    (lambda xp: xp.einsum("ij", xp.ones((2, 3)), xp.ones(2)), ValueError, "fewer operands"),
    (lambda xp: xp.einsum("ij->ik", xp.ones((2, 3))), ValueError, "never appeared"),
    (lambda xp: xp.einsum("ijk", xp.ones((2, 3))), ValueError, "too many subscripts"),
])
def test_composed_bad_input_matches_numpy(call, exc, match):
    with pytest.raises(exc, match=match):
        call(np)
    with pytest.raises(exc, match=match):
        call(la)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="dimensions except for the concatenation axis"):
        la.concatenate([la.zeros((2, 3)), la.zeros((3, 4))])
    with pytest.raises(ValueError, match="zero-dimensional"):
        la.concatenate([la.zeros(()), la.zeros(())])
    with pytest.raises(ValueError, match="same shape"):
        la.stack([la.zeros(2), la.zeros(3)])
    with pytest.raises(ValueError, match="matmul"):
        la.zeros((2, 3)) @ la.zeros((2, 3))
    with pytest.raises(ValueError, match="equal division"):
        la.split(la.zeros(5), 2)

