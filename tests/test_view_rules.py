"""NumPy's view-or-copy rules, identities and flags, differential against lazyarray.

For every NumPy function or method that either returns its input, a view of it, or a new
array, the same call is made on a NumPy array and on a lazyarray array built from the same
data (the owner itself or a view of it: slices, negative steps, ``.T``, ``broadcast_to``,
read-only arrays), and lazyarray must agree with NumPy on:

* identity: ``result is input`` exactly where NumPy's is (``asarray``, ``astype(copy=False)``,
  ``array(copy=None)``, ``require``, ``atleast_1d``, ...), and the same exception where NumPy
  refuses to copy (``copy=False``);
* view-ness: ``shares_memory(result, input)``, whether ``result.base`` is None, and, where
  NumPy's base is the input or its owner, the same base;
* flags: ``writeable``, ``c_contiguous``, ``f_contiguous``, ``owndata``;
* values, shape and dtype; a write through a writeable result is seen by the owner, the
  input and another view taken before it; a NumPy scalar result (full reductions, an element)
  is a value, not a view: writes through a reshape of it reach neither it nor the input;
* read-only results reject every write path (``r[0] = 1``, ``r[...] = 1``, ``r += 1``,
  ``add(r, 1, out=r)``, ``copyto``, ``fill``, ``put``, ``sort``) with NumPy's exception, and
  leave the data unchanged;
* the ``writeable`` flag: clearing it (``flags.writeable = False``, ``flags["WRITEABLE"]``,
  ``setflags(write=False)``) blocks writes, setting it back on an owner allows them, views
  taken before keep their own flag, and setting it where NumPy refuses raises.

Every test runs under the default options, the NumPy interpreter (``backend="numpy"``) and
compiled kernels for every evaluation (``eager_threshold=0``).  A failing case lists every
disagreement it found, each as ``aspect: numpy ..., lazyarray ...``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lazyarray as la

MODES = {
    "default": {},
    "interp": {"backend": "numpy"},
    "compiled": {"eager_threshold": 0},
}


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request):
    """Run the test under the default options, the interpreter and compiled kernels."""
    with la.options(**MODES[request.param]):
        yield request.param


# ---- inputs ----------------------------------------------------------------------------


def _read_only(xp, a):
    """The owner itself, made read-only."""
    a.setflags(write=False)
    return a


def _read_only_view(xp, a):
    """A read-only view of a writeable owner."""
    v = a[:, 1:5] if a.ndim == 2 else a[1:9]
    v.setflags(write=False)
    return v


def _owner(kind: str) -> np.ndarray:
    """The NumPy array that owns the data of every input of a kind."""
    if kind == "1d":
        return np.arange(12.0)
    if kind == "complex":
        return (np.arange(24.0) + 1j * np.arange(24.0)[::-1]).reshape(4, 6).copy()
    return np.arange(24.0).reshape(4, 6).copy()


# input name -> view of the owner (same code on both sides)
SOURCES = {
    "2d": {
        "owner": lambda xp, a: a,
        "rows": lambda xp, a: a[1:3],  # a C-contiguous view
        "cols": lambda xp, a: a[:, 1:5],  # not contiguous
        "negstep": lambda xp, a: a[::-1, ::-2],
        "T": lambda xp, a: a.T,  # F-contiguous
        "bcast": lambda xp, a: xp.broadcast_to(a[0], (4, 6)),  # read-only, stride 0
        "readonly": _read_only,
        "ro_view": _read_only_view,
    },
    "1d": {
        "owner": lambda xp, a: a,
        "step": lambda xp, a: a[::2],
        "negstep": lambda xp, a: a[::-1],
        "bcast": lambda xp, a: xp.broadcast_to(a[:1], (12,)),
        "readonly": _read_only,
    },
    "complex": {
        "owner": lambda xp, a: a,
        "cols": lambda xp, a: a[:, 1:5],
        "T": lambda xp, a: a.T,
        "bcast": lambda xp, a: xp.broadcast_to(a[0], (4, 6)),
        "readonly": _read_only,
    },
}


def build_with(kind: str, fn, xp):
    """(owner, fn(xp, owner)) for one side: lazyarray's owner is built from a copy of NumPy's
    data."""
    owner = _owner(kind)
    if xp is la:
        owner = la.asarray(owner.copy())
    return owner, fn(xp, owner)


def build(kind: str, source: str, xp):
    """(owner, input) for one side."""
    return build_with(kind, SOURCES[kind][source], xp)


# ---- operations ------------------------------------------------------------------------


# op name -> (input kind, fn(xp, a)); fn returns an array, a tuple/list of arrays or a scalar
OPS: dict[str, tuple[str, object]] = {
    # identity and copy keywords
    "astype_same_copy_false": ("2d", lambda xp, a: a.astype(a.dtype, copy=False)),
    "astype_same": ("2d", lambda xp, a: a.astype(a.dtype)),
    "astype_other_copy_false": ("2d", lambda xp, a: a.astype(np.float32, copy=False)),
    "asarray": ("2d", lambda xp, a: xp.asarray(a)),
    "asarray_same_dtype": ("2d", lambda xp, a: xp.asarray(a, dtype=a.dtype)),
    "asarray_other_dtype": ("2d", lambda xp, a: xp.asarray(a, dtype=np.float32)),
    "asarray_copy_false": ("2d", lambda xp, a: xp.asarray(a, copy=False)),
    "asarray_copy_true": ("2d", lambda xp, a: xp.asarray(a, copy=True)),
    "asarray_other_dtype_copy_false": (
        "2d", lambda xp, a: xp.asarray(a, dtype=np.float32, copy=False)),
    "asarray_order_F": ("2d", lambda xp, a: xp.asarray(a, order="F")),
    "asanyarray": ("2d", lambda xp, a: xp.asanyarray(a)),
    "ascontiguousarray": ("2d", lambda xp, a: xp.ascontiguousarray(a)),
    "asfortranarray": ("2d", lambda xp, a: xp.asfortranarray(a)),
    "ascontiguousarray_1d": ("1d", lambda xp, a: xp.ascontiguousarray(a)),
    "asfortranarray_1d": ("1d", lambda xp, a: xp.asfortranarray(a)),
    "array": ("2d", lambda xp, a: xp.array(a)),
    "array_copy_false": ("2d", lambda xp, a: xp.array(a, copy=False)),
    "array_copy_none": ("2d", lambda xp, a: xp.array(a, copy=None)),
    "array_copy_false_other_dtype": (
        "2d", lambda xp, a: xp.array(a, dtype=np.float32, copy=False)),
    "array_copy_false_order_F": ("2d", lambda xp, a: xp.array(a, order="F", copy=False)),
    "array_copy_none_order_C": ("2d", lambda xp, a: xp.array(a, order="C", copy=None)),
    "require": ("2d", lambda xp, a: xp.require(a)),
    "require_C": ("2d", lambda xp, a: xp.require(a, requirements="C")),
    "require_F": ("2d", lambda xp, a: xp.require(a, requirements="F")),
    "require_W": ("2d", lambda xp, a: xp.require(a, requirements="W")),
    "require_O": ("2d", lambda xp, a: xp.require(a, requirements="O")),
    "require_same_dtype_A": ("2d", lambda xp, a: xp.require(a, a.dtype, ["A"])),
    "copy_method": ("2d", lambda xp, a: a.copy()),
    "copy_function": ("2d", lambda xp, a: xp.copy(a)),
    "view": ("2d", lambda xp, a: a.view()),
    "view_int64": ("2d", lambda xp, a: a.view(np.int64)),
    "view_float32": ("2d", lambda xp, a: a.view(np.float32)),
    # indexing
    "index_ellipsis": ("2d", lambda xp, a: a[...]),
    "index_empty_tuple": ("2d", lambda xp, a: a[()]),
    "index_row": ("2d", lambda xp, a: a[1]),
    "index_slices": ("2d", lambda xp, a: a[1:, ::2]),
    "index_newaxis": ("2d", lambda xp, a: a[None]),
    "index_element": ("2d", lambda xp, a: a[1, 2]),
    "index_element_1d": ("1d", lambda xp, a: a[3]),
    "index_fancy": ("2d", lambda xp, a: a[[0, 1]]),
    "index_fancy_mixed": ("2d", lambda xp, a: a[1:, [0, 2]]),
    "index_bool": ("2d", lambda xp, a: a[a > 3]),
    "take": ("2d", lambda xp, a: xp.take(a, [0, 2], axis=1)),
    # shape manipulation
    "reshape_flat": ("2d", lambda xp, a: a.reshape(-1)),
    "reshape_two_rows": ("2d", lambda xp, a: a.reshape(2, -1)),
    "reshape_same_shape": ("2d", lambda xp, a: a.reshape(a.shape)),
    "reshape_order_F": ("2d", lambda xp, a: a.reshape(-1, order="F")),
    "reshape_copy_false": ("2d", lambda xp, a: a.reshape(-1, copy=False)),
    "reshape_fn_copy_false": ("2d", lambda xp, a: xp.reshape(a, -1, copy=False)),
    "reshape_fn_copy_true": ("2d", lambda xp, a: xp.reshape(a, a.shape, copy=True)),
    "reshape_column_1d": ("1d", lambda xp, a: a.reshape(-1, 1)),
    "ravel": ("2d", lambda xp, a: a.ravel()),
    "ravel_F": ("2d", lambda xp, a: a.ravel("F")),
    "ravel_K": ("2d", lambda xp, a: a.ravel("K")),
    "ravel_fn": ("2d", lambda xp, a: xp.ravel(a)),
    "ravel_1d": ("1d", lambda xp, a: a.ravel()),
    "flatten": ("2d", lambda xp, a: a.flatten()),
    "squeeze_nothing": ("2d", lambda xp, a: a.squeeze()),
    "squeeze_axis0": ("2d", lambda xp, a: xp.squeeze(a[:1], 0)),
    "expand_dims": ("2d", lambda xp, a: xp.expand_dims(a, 0)),
    "expand_dims_1d": ("1d", lambda xp, a: xp.expand_dims(a, -1)),
    "swapaxes": ("2d", lambda xp, a: xp.swapaxes(a, 0, 1)),
    "swapaxes_same_axis": ("2d", lambda xp, a: a.swapaxes(0, 0)),
    "moveaxis": ("2d", lambda xp, a: xp.moveaxis(a, 0, -1)),
    "transpose_method": ("2d", lambda xp, a: a.transpose()),
    "transpose_identity": ("2d", lambda xp, a: a.transpose(0, 1)),
    "transpose_fn": ("2d", lambda xp, a: xp.transpose(a)),
    "T": ("2d", lambda xp, a: a.T),
    "T_T": ("2d", lambda xp, a: a.T.T),
    "T_1d": ("1d", lambda xp, a: a.T),
    "mT": ("2d", lambda xp, a: a.mT),
    "matrix_transpose": ("2d", lambda xp, a: xp.matrix_transpose(a)),
    "permute_dims": ("2d", lambda xp, a: xp.permute_dims(a, (1, 0))),
    "atleast_1d": ("2d", lambda xp, a: xp.atleast_1d(a)),
    "atleast_2d": ("2d", lambda xp, a: xp.atleast_2d(a)),
    "atleast_3d": ("2d", lambda xp, a: xp.atleast_3d(a)),
    "atleast_1d_two": ("2d", lambda xp, a: xp.atleast_1d(a, a[0])),
    "atleast_1d_1d": ("1d", lambda xp, a: xp.atleast_1d(a)),
    "atleast_2d_1d": ("1d", lambda xp, a: xp.atleast_2d(a)),
    "atleast_3d_1d": ("1d", lambda xp, a: xp.atleast_3d(a)),
    "split": ("2d", lambda xp, a: xp.split(a, 2)),
    "array_split": ("2d", lambda xp, a: xp.array_split(a, 3, axis=1)),
    "vsplit": ("2d", lambda xp, a: xp.vsplit(a, 2)),
    "split_1d": ("1d", lambda xp, a: xp.split(a, [2, 5])),
    "unstack": ("2d", lambda xp, a: xp.unstack(a)),
    "flip": ("2d", lambda xp, a: xp.flip(a)),
    "flip_axis1": ("2d", lambda xp, a: xp.flip(a, 1)),
    "fliplr": ("2d", lambda xp, a: xp.fliplr(a)),
    "flipud": ("2d", lambda xp, a: xp.flipud(a)),
    "rot90": ("2d", lambda xp, a: xp.rot90(a)),
    "rot90_twice": ("2d", lambda xp, a: xp.rot90(a, 2)),
    "flip_1d": ("1d", lambda xp, a: xp.flip(a)),
    "broadcast_to": ("2d", lambda xp, a: xp.broadcast_to(a, (2, *a.shape))),
    "broadcast_to_same_shape": ("2d", lambda xp, a: xp.broadcast_to(a, a.shape)),
    # (the broadcast result: test_broadcast_arrays_results_are_read_only)
    "broadcast_arrays": ("2d", lambda xp, a: xp.broadcast_arrays(a, a[:1])[0]),
    "broadcast_arrays_1d": ("1d", lambda xp, a: xp.broadcast_arrays(a, a[:1])[0]),
    # real and imaginary parts, conjugates
    "real_of_real": ("2d", lambda xp, a: a.real),
    "imag_of_real": ("2d", lambda xp, a: a.imag),
    "real_fn_of_real": ("2d", lambda xp, a: xp.real(a)),
    "imag_fn_of_real": ("2d", lambda xp, a: xp.imag(a)),
    "conj_method_of_real": ("2d", lambda xp, a: a.conj()),
    "conjugate_ufunc_of_real": ("2d", lambda xp, a: xp.conjugate(a)),
    "real": ("complex", lambda xp, a: a.real),
    "imag": ("complex", lambda xp, a: a.imag),
    "real_fn": ("complex", lambda xp, a: xp.real(a)),
    "imag_fn": ("complex", lambda xp, a: xp.imag(a)),
    "real_T": ("complex", lambda xp, a: a.real.T),
    "imag_slice": ("complex", lambda xp, a: a.imag[1:, ::2]),
    "real_reshape": ("complex", lambda xp, a: a.real.reshape(-1)),
    "conj_method": ("complex", lambda xp, a: a.conj()),
    "view_complex_as_float": ("complex", lambda xp, a: a.view(np.float64)),
    # diagonals
    "diagonal": ("2d", lambda xp, a: a.diagonal()),
    "diagonal_fn_offset": ("2d", lambda xp, a: xp.diagonal(a, 1)),
    "diag_of_2d": ("2d", lambda xp, a: xp.diag(a)),
    "diag_of_1d": ("1d", lambda xp, a: xp.diag(a)),
    "trace": ("2d", lambda xp, a: xp.trace(a)),
    # reductions and products: NumPy scalars (or new arrays along an axis)
    "sum": ("2d", lambda xp, a: a.sum()),
    "max": ("2d", lambda xp, a: a.max()),
    "mean_fn": ("2d", lambda xp, a: xp.mean(a)),
    "sum_axis0": ("2d", lambda xp, a: a.sum(axis=0)),
    "sum_keepdims": ("2d", lambda xp, a: a.sum(keepdims=True)),
    "dot_1d": ("1d", lambda xp, a: xp.dot(a, a)),
    "vdot_1d": ("1d", lambda xp, a: xp.vdot(a, a)),
    "inner_1d": ("1d", lambda xp, a: xp.inner(a, a)),
    "matmul_1d": ("1d", lambda xp, a: a @ a),
    "sum_1d": ("1d", lambda xp, a: a.sum()),
    # functions that always return a new array
    "concatenate_one": ("2d", lambda xp, a: xp.concatenate([a])),
    "stack_one": ("2d", lambda xp, a: xp.stack([a])),
    "hstack_one": ("2d", lambda xp, a: xp.hstack([a])),
    "tile_once": ("2d", lambda xp, a: xp.tile(a, 1)),
    "repeat_once": ("2d", lambda xp, a: xp.repeat(a, 1, axis=0)),
    "roll_zero": ("2d", lambda xp, a: xp.roll(a, 0)),
    "sort_fn": ("2d", lambda xp, a: xp.sort(a)),
    "clip": ("2d", lambda xp, a: xp.clip(a, 1, 5)),
    "triu": ("2d", lambda xp, a: xp.triu(a)),
    "where": ("2d", lambda xp, a: xp.where(a > 3, a, 0)),
    "positive": ("2d", lambda xp, a: +a),
    "add_zero": ("2d", lambda xp, a: a + 0),
}

CASES = [(op, src) for op, (kind, _) in OPS.items() for src in SOURCES[kind]]


# ---- comparison ------------------------------------------------------------------------


class Diffs(list):
    """The disagreements of one case, reported all at once."""

    def check(self, what: str, lazy, ref) -> None:
        if lazy != ref:
            self.append(f"{what}: numpy {ref!r}, lazyarray {lazy!r}")

    def raise_if_any(self) -> None:
        assert not self, "\n".join(self)


def call(fn, *args):
    """(result, exception) of fn(*args), warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except Exception as exc:  # noqa: BLE001 -- compared with NumPy's exception below
            return None, exc


def _exc_name(exc) -> str:
    return "no exception" if exc is None else type(exc).__name__


def same_exception(diffs: Diffs, what: str, got, ref) -> None:
    """lazyarray raises where NumPy does, an exception of NumPy's type."""
    ok = (got is None) if ref is None else isinstance(got, type(ref))
    if not ok:
        diffs.append(f"{what}: numpy {_exc_name(ref)}, lazyarray {_exc_name(got)}"
                     + (f" ({got})" if got is not None else ""))


def values(x):
    """A lazyarray (or NumPy) result forced to NumPy."""
    return np.asarray(x)


def same_values(diffs: Diffs, what: str, lazy, ref) -> None:
    got, exc = call(values, lazy)
    if exc is not None:
        diffs.append(f"{what} values: lazyarray raised {type(exc).__name__}: {exc}")
        return
    ref = np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        diffs.append(f"{what} shape/dtype: numpy {ref.shape} {ref.dtype}, "
                     f"lazyarray {got.shape} {got.dtype}")
    elif not np.array_equal(got, ref, equal_nan=True):
        diffs.append(f"{what} values: numpy {ref.tolist()}, lazyarray {got.tolist()}")


def _flags(x) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broadcast_arrays' writeable flag warns in NumPy 2
        f = x.flags
        return {k: bool(getattr(f, k)) for k in
                ("writeable", "c_contiguous", "f_contiguous", "owndata")}


def _base_kind(r, src, owner) -> str:
    """Where `r.base` points: none, the input, the input's owner, or something else."""
    base = r.base
    if base is None:
        return "none"
    if base is src:
        return "input"
    if base is owner:
        return "owner"
    return "other"


def compare_result(diffs, what, r_la, r_np, src_la, src_np, owner_la, owner_np) -> None:
    """Identity, view-ness, flags and values of one result."""
    if isinstance(r_np, (tuple, list)):
        diffs.check(f"{what} container", type(r_la).__name__, type(r_np).__name__)
        if not isinstance(r_la, (tuple, list)) or len(r_la) != len(r_np):
            diffs.append(f"{what}: numpy {len(r_np)} arrays, lazyarray {r_la!r}")
            return
        for k, (g, r) in enumerate(zip(r_la, r_np)):
            compare_result(diffs, f"{what}[{k}]", g, r, src_la, src_np, owner_la, owner_np)
        return
    same_values(diffs, what, r_la, r_np)
    shares = call(la.shares_memory, r_la, src_la)
    if shares[1] is not None:
        diffs.append(f"{what} shares_memory: lazyarray raised {shares[1]!r}")
    else:
        diffs.check(f"{what} shares_memory(result, input)", bool(shares[0]),
                    bool(np.shares_memory(r_np, src_np)))
    if isinstance(r_np, np.generic):  # a NumPy scalar: a value
        if not isinstance(r_la, (np.generic, la.Array)):
            diffs.append(f"{what} type: numpy {type(r_np).__name__}, "
                         f"lazyarray {type(r_la).__name__}")
        return
    if not isinstance(r_la, la.Array):
        diffs.append(f"{what} type: numpy ndarray, lazyarray {type(r_la).__name__}")
        return
    diffs.check(f"{what} is input", r_la is src_la, r_np is src_np)
    diffs.check(f"{what} is owner", r_la is owner_la, r_np is owner_np)
    # The documented deviation (docs/semantics.md, "Layout of copies"): a copy that NumPy
    # returns as a view of a temporary of its own owns its data here (its layout, flags and
    # strides are NumPy's: Storage.perm).
    copy = not np.shares_memory(r_np, src_np) and r_np is not src_np
    kind_np, kind_la = _base_kind(r_np, src_np, owner_np), _base_kind(r_la, src_la, owner_la)
    if kind_np == "other" and copy:
        diffs.check(f"{what} base (a copy: none or its own)", kind_la in ("none", "other"),
                    True)
    elif kind_np == "other":  # an internal NumPy object: only "has a base" is comparable
        diffs.check(f"{what} base is None", kind_la == "none", False)
    else:
        diffs.check(f"{what} base", kind_la, kind_np)
    got, exc = call(_flags, r_la)
    if exc is not None:
        diffs.append(f"{what} flags: lazyarray raised {exc!r}")
        return
    want = _flags(r_np)
    if copy:
        want["owndata"] = kind_la == "none"
    for k, v in want.items():
        diffs.check(f"{what} flags.{k}", got[k], v)


def _writeable(x):
    """x.flags.writeable, or what raised reading it."""
    got, exc = call(_flags, x)
    return f"raised {type(exc).__name__}" if exc is not None else got["writeable"]


def _arrays(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _write(xp, r):
    """Write -7 into the first element of r (a 0-d array: its element)."""
    r[(0,) * r.ndim] = -7


def _reshape_and_halve(xp, v):
    """Write through a reshape of a scalar result: NumPy's scalar is not affected."""
    w = xp.reshape(v, (1, 1))
    w /= 2
    return w


# ---- the view rule of every operation --------------------------------------------------


@pytest.mark.parametrize(("op", "source"), CASES, ids=[f"{o}-{s}" for o, s in CASES])
def test_view_rule_matches_numpy(op, source, mode):
    """Identity, sharing, base, flags and values of op(input) as NumPy's; writes through a
    writeable result reach the owner, the input and another view exactly as in NumPy."""
    kind, fn = OPS[op]
    owner_np, src_np = build(kind, source, np)
    owner_la, src_la = build(kind, source, la)
    other_np, other_la = owner_np.T, owner_la.T  # another view, taken before any write
    r_np, exc_np = call(fn, np, src_np)
    r_la, exc_la = call(fn, la, src_la)
    diffs = Diffs()
    same_exception(diffs, "call", exc_la, exc_np)
    if exc_np is not None or exc_la is not None:
        diffs.raise_if_any()
        return
    compare_result(diffs, "result", r_la, r_np, src_la, src_np, owner_la, owner_np)
    # writes through every writeable result, one after another
    for k, (g, r) in enumerate(zip(_arrays(r_la), _arrays(r_np))):
        if isinstance(r, np.generic):
            _, e_np = call(_reshape_and_halve, np, r)
            _, e_la = call(_reshape_and_halve, la, g)
            same_exception(diffs, f"reshape(result[{k}]) /= 2", e_la, e_np)
            same_values(diffs, f"after reshape(result[{k}]) /= 2: result", g, r)
        elif _flags(r)["writeable"] and r.size:
            _, e_np = call(_write, np, r)
            _, e_la = call(_write, la, g)
            same_exception(diffs, f"write to result[{k}]", e_la, e_np)
        else:
            continue
        for name, lz, ref in (("owner", owner_la, owner_np), ("input", src_la, src_np),
                              ("other view", other_la, other_np)):
            same_values(diffs, f"after write to result[{k}]: {name}", lz, ref)
        for j, (g2, r2) in enumerate(zip(_arrays(r_la), _arrays(r_np))):
            same_values(diffs, f"after write to result[{k}]: result[{j}]", g2, r2)
    diffs.raise_if_any()


# ---- read-only results reject every write ----------------------------------------------


def _iadd(xp, r):
    r += 1


WRITES = {
    "setitem": lambda xp, r: r.__setitem__(0 if r.ndim else (), 1),
    "setitem_ellipsis": lambda xp, r: r.__setitem__(Ellipsis, 1),
    "iadd": _iadd,
    "ufunc_out": lambda xp, r: xp.add(r, 1, out=r),
    "copyto": lambda xp, r: xp.copyto(r, 1),
    "fill": lambda xp, r: r.fill(1),
    "put": lambda xp, r: xp.put(r, [0], 1),
    "sort": lambda xp, r: r.sort(),
}


def _read_only_cases():
    """(op, source, k): cases whose k-th NumPy result array is read-only."""
    out = []
    for op, source in CASES:
        kind, fn = OPS[op]
        r, exc = call(fn, np, build(kind, source, np)[1])
        if exc is not None:
            continue
        for k, a in enumerate(_arrays(r)):
            if isinstance(a, np.ndarray) and a.size and not _flags(a)["writeable"]:
                out.append((op, source, k))
                break
    return out


READ_ONLY_CASES = _read_only_cases()


@pytest.mark.parametrize(("op", "source", "k"), READ_ONLY_CASES,
                         ids=[f"{o}-{s}" for o, s, _ in READ_ONLY_CASES])
def test_read_only_result_rejects_every_write(op, source, k, mode):
    """Every write path on a result NumPy makes read-only raises NumPy's exception (the
    same type, at the call) and changes nothing."""
    kind, fn = OPS[op]
    diffs = Diffs()
    for path, write in WRITES.items():
        owner_np, src_np = build(kind, source, np)
        owner_la, src_la = build(kind, source, la)
        r_np = _arrays(call(fn, np, src_np)[0])[k]
        r_la, exc = call(fn, la, src_la)
        if exc is not None:
            diffs.append(f"{path}: lazyarray raised {exc!r} computing the result")
            continue
        r_la = _arrays(r_la)[k]
        _, e_np = call(write, np, r_np)
        _, e_la = call(write, la, r_la)
        same_exception(diffs, path, e_la, e_np)
        same_values(diffs, f"{path}: result after", r_la, r_np)
        same_values(diffs, f"{path}: owner after", owner_la, owner_np)
    diffs.raise_if_any()


# ---- the writeable flag ----------------------------------------------------------------


def _clear_attr(a):
    a.flags.writeable = False


def _clear_item(a):
    a.flags["WRITEABLE"] = False


def _clear_setflags(a):
    a.setflags(write=False)


def _set_attr(a):
    a.flags.writeable = True


def _set_item(a):
    a.flags["WRITEABLE"] = True


def _set_setflags(a):
    a.setflags(write=True)


CLEAR = {"flags_attr": _clear_attr, "flags_item": _clear_item, "setflags": _clear_setflags}
SET = {"flags_attr": _set_attr, "flags_item": _set_item, "setflags": _set_setflags}


def _pair(kind="2d"):
    owner_np = _owner(kind)
    return owner_np, la.asarray(owner_np.copy())


@pytest.mark.parametrize("path", list(WRITES))
@pytest.mark.parametrize("how", list(CLEAR))
def test_clearing_writeable_blocks_writes_and_setting_it_back_allows_them(how, path, mode):
    """After clearing the flag every write path raises NumPy's exception and changes
    nothing; the flag reads False; setting it back on the owner allows the same write."""
    a_np, a_la = _pair()
    diffs = Diffs()
    _, e_np = call(CLEAR[how], a_np)
    _, e_la = call(CLEAR[how], a_la)
    same_exception(diffs, f"clear writeable via {how}", e_la, e_np)
    diffs.check("flags.writeable after clearing", _writeable(a_la),
                _flags(a_np)["writeable"])
    _, e_np = call(WRITES[path], np, a_np)
    _, e_la = call(WRITES[path], la, a_la)
    same_exception(diffs, f"{path} on the read-only array", e_la, e_np)
    same_values(diffs, "array after the refused write", a_la, a_np)
    _, e_np = call(SET[how], a_np)
    _, e_la = call(SET[how], a_la)
    same_exception(diffs, f"set writeable via {how}", e_la, e_np)
    diffs.check("flags.writeable after setting", _writeable(a_la),
                _flags(a_np)["writeable"])
    _, e_np = call(WRITES[path], np, a_np)
    _, e_la = call(WRITES[path], la, a_la)
    same_exception(diffs, f"{path} once writeable again", e_la, e_np)
    same_values(diffs, "array after the write", a_la, a_np)
    diffs.raise_if_any()


# views taken of the owner before it is made read-only, and how NumPy treats them
VIEWS_BEFORE = {
    "slice": lambda a: a[1:],
    "T": lambda a: a.T,
    "reshape": lambda a: a.reshape(-1),
    "real": lambda a: a.real,
    "index_ellipsis": lambda a: a[...],
}


@pytest.mark.parametrize("view", list(VIEWS_BEFORE))
@pytest.mark.parametrize("how", list(CLEAR))
def test_views_have_their_own_writeable_flag(how, view, mode):
    """A view taken before its owner is made read-only stays writeable (and its writes reach
    the owner); one taken after is read-only and cannot be made writeable."""
    a_np, a_la = _pair()
    before_np, before_la = VIEWS_BEFORE[view](a_np), VIEWS_BEFORE[view](a_la)
    CLEAR[how](a_np)
    call(CLEAR[how], a_la)
    after_np, after_la = VIEWS_BEFORE[view](a_np), VIEWS_BEFORE[view](a_la)
    diffs = Diffs()
    diffs.check("view taken before: writeable", _writeable(before_la),
                _flags(before_np)["writeable"])
    diffs.check("view taken after: writeable", _writeable(after_la),
                _flags(after_np)["writeable"])
    _, e_np = call(_write, np, before_np)
    _, e_la = call(_write, la, before_la)
    same_exception(diffs, "write through the view taken before", e_la, e_np)
    _, e_np = call(_write, np, after_np)
    _, e_la = call(_write, la, after_la)
    same_exception(diffs, "write through the view taken after", e_la, e_np)
    _, e_np = call(SET[how], after_np)
    _, e_la = call(SET[how], after_la)
    same_exception(diffs, "make the view taken after writeable", e_la, e_np)
    same_values(diffs, "owner", a_la, a_np)
    same_values(diffs, "view taken before", before_la, before_np)
    diffs.raise_if_any()


# results whose writeable flag someone tries to set
SET_WRITEABLE = {
    "broadcast_to": ("2d", lambda xp, a: xp.broadcast_to(a[0], (3, 6))),
    "diagonal": ("2d", lambda xp, a: a.diagonal()),
    "imag_of_real": ("2d", lambda xp, a: a.imag),
    "view_of_read_only_owner": ("2d", lambda xp, a: _read_only(xp, a)[1:]),
    "read_only_owner": ("2d", _read_only),
    "read_only_view_of_writeable_owner": ("2d", _read_only_view),
    "broadcast_arrays": ("2d", lambda xp, a: xp.broadcast_arrays(a[0], a)[0]),
}


@pytest.mark.parametrize("case", list(SET_WRITEABLE))
def test_setting_writeable_true_follows_numpy(case, mode):
    """Setting the flag raises where NumPy refuses; where NumPy allows it, writes through the
    array afterwards reach the same memory."""
    kind, fn = SET_WRITEABLE[case]
    owner_np, r_np = build_with(kind, fn, np)
    owner_la, r_la = build_with(kind, fn, la)
    diffs = Diffs()
    _, e_np = call(_set_attr, r_np)
    _, e_la = call(_set_attr, r_la)
    same_exception(diffs, "flags.writeable = True", e_la, e_np)
    diffs.check("flags.writeable after", _writeable(r_la),
                _flags(r_np)["writeable"])
    if e_np is None:
        _, e_np = call(_write, np, r_np)
        _, e_la = call(_write, la, r_la)
        same_exception(diffs, "write after setting the flag", e_la, e_np)
    same_values(diffs, "owner", owner_la, owner_np)
    same_values(diffs, "result", r_la, r_np)
    diffs.raise_if_any()


# ---- broadcast_arrays: writeable with a warning, as in NumPy 2 ----------------------------


def _warnings_of(fn, *args):
    """(exception, categories of FutureWarning/DeprecationWarning raised) of fn(*args)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(*args)
            exc = None
        except Exception as e:  # noqa: BLE001 -- compared with NumPy's
            exc = e
    cats = sorted({w.category.__name__ for w in caught
                   if issubclass(w.category, (FutureWarning, DeprecationWarning))})
    return exc, cats


@pytest.mark.parametrize("what", ["write_not_broadcast"])
def test_broadcast_arrays_warn_as_numpy(what, mode):
    """NumPy 2's broadcast_arrays results: an array already of the broadcast shape is returned
    itself and takes writes. (A broadcast one is writeable in NumPy 2, with a warning on
    write, deprecated; lazyarray's is read-only, as `broadcast_to`'s: see
    `test_broadcast_arrays_results_are_read_only` and docs/semantics.md.)"""
    a_np, a_la = _pair()
    r_np, r_la = np.broadcast_arrays(a_np[0], a_np), la.broadcast_arrays(a_la[0], a_la)
    k = 1 if what == "write_not_broadcast" else 0
    act = {
        "read_flag": lambda xp, r: r.flags.writeable,
        "write_broadcast": _write,
        "write_not_broadcast": _write,
    }[what]
    e_np, w_np = _warnings_of(act, np, r_np[k])
    e_la, w_la = _warnings_of(act, la, r_la[k])
    diffs = Diffs()
    same_exception(diffs, what, e_la, e_np)
    diffs.check(f"{what} warnings", w_la, w_np)
    same_values(diffs, "owner", a_la, a_np)
    same_values(diffs, "result", r_la[k], r_np[k])
    diffs.raise_if_any()


def test_broadcast_arrays_results_are_read_only(mode):
    """The documented deviation: a broadcast result of broadcast_arrays is read-only, as
    NumPy's `broadcast_to` is (NumPy 2 deprecates writing to it); a write raises and changes
    nothing."""
    a_np, a_la = _pair()
    r_la = la.broadcast_arrays(a_la[0], a_la)
    assert r_la[1] is a_la and not r_la[0].flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        r_la[0][...] = -7.0
    np.testing.assert_array_equal(np.asarray(a_la), a_np)
