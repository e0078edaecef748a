"""The bad-input table: every native public function, called with bad arguments, raises what
NumPy raises on the same call -- at the call, without computing anything.

For each native-lazy name of the `numpy` namespace (see `lazyarray._coverage`), the calls are
built from NumPy's own signature: an axis out of range (positive and negative), a float
axis, a repeated axis, an unknown dtype, an `out=` of the wrong shape, operands that do not
broadcast, no arguments at all, an unknown keyword. Whatever NumPy raises on a call,
lazyarray must raise an exception of the same type (or a subclass: `AxisError` is both a
`ValueError` and an `IndexError`), with pending (unevaluated) inputs, and without
materializing them; where NumPy accepts the call, lazyarray must accept it too and agree on
the result's shape and dtype.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import lazyarray as la
from lazyarray._coverage import classify, public_names

SHAPE = (3, 4)

# functions whose first parameter is not an array, or that take no array at all
SKIP = {
    "arange", "linspace", "logspace", "geomspace", "eye", "identity", "zeros", "ones", "empty",
    "full", "fromfunction", "indices", "tri", "meshgrid", "ogrid", "mgrid", "result_type",
    "can_cast", "promote_types", "min_scalar_type", "finfo", "iinfo", "broadcast_shapes",
    "seterr", "geterr", "errstate", "set_printoptions", "get_printoptions",
    "printoptions", "asarray", "array", "asanyarray", "ascontiguousarray", "from_dlpack",
    "frombuffer", "fromiter", "fromstring", "fromfile", "load", "save", "loadtxt", "genfromtxt",
    "einsum_path", "issubdtype", "isdtype", "dtype", "vectorize", "frompyfunc",
}


def native_functions() -> list[str]:
    names = []
    for name in public_names(np):
        if name in SKIP:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np_obj = getattr(np, name, None)
        if classify(np_obj, la, name) == "native-lazy":
            names.append(name)
    return names


def _params(f) -> dict | None:
    try:
        return dict(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return None


def _nin(f) -> int:
    """How many leading array arguments to pass."""
    if isinstance(f, np.ufunc):
        return f.nin
    ps = _params(f)
    if ps is None:
        return 1
    n = 0
    for p in ps.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
        elif p.kind is p.VAR_POSITIONAL:
            n = max(n, 2)
    return max(1, n)


def bad_calls(name: str) -> list[tuple[str, tuple, dict]]:
    """(label, args as shapes, kwargs) of the bad calls that apply to NumPy's `name`."""
    f = getattr(np, name)
    ps = _params(f) or {}
    ufunc = isinstance(f, np.ufunc)
    n = _nin(f)
    arrays = (SHAPE,) * n
    calls = [("no arguments", (), {}), ("unknown keyword", arrays, {"not_a_keyword": 1})]
    if "axis" in ps:
        calls += [("0-d, axis=1", ((),) * n, {"axis": 1})]
        calls += [("axis=2", arrays, {"axis": 2}), ("axis=-3", arrays, {"axis": -3}),
                  ("axis=1.5", arrays, {"axis": 1.5}), ("axis=(0, 0)", arrays, {"axis": (0, 0)}),
                  ("axis=(0, 5)", arrays, {"axis": (0, 5)})]
    if "dtype" in ps or ufunc:
        calls.append(("dtype=bogus", arrays, {"dtype": "not_a_dtype"}))
    if "out" in ps or ufunc:
        calls.append(("out wrong shape", arrays, {"out": (5,)}))
    if n >= 2:
        calls.append(("no broadcast", ((3,), (4,)) + ((3,),) * (n - 2), {}))
    if "keepdims" in ps:
        calls.append(("keepdims, axis=9", arrays, {"axis": 9, "keepdims": True}))
    return calls


CASES = [(name, *call) for name in native_functions() for call in bad_calls(name)]


def _inputs(xp, shapes, dtype=np.float64):
    rng = np.random.default_rng(0)
    vals = [rng.random(s).astype(dtype) + 0.5 for s in shapes]
    if xp is np:
        return vals
    return [la.asarray(v) * 1.0 for v in vals]  # pending: nothing computed yet


def _kwargs(xp, kwargs):
    out = dict(kwargs)
    if "out" in out:
        out["out"] = np.empty(out["out"]) if xp is np else la.empty(out["out"])
    return out


def _call(xp, name, shapes, kwargs):
    return getattr(xp, name)(*_inputs(xp, shapes), **_kwargs(xp, kwargs))


@pytest.mark.parametrize("name, label, shapes, kwargs", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_bad_input_like_numpy(name, label, shapes, kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = _call(np, name, shapes, kwargs)
            np_exc = None
        except Exception as exc:  # noqa: BLE001 - whatever NumPy raises is the oracle
            np_exc = exc
        args = _inputs(la, shapes)
        before = la.cache_info()["materializations"]
        try:
            got = getattr(la, name)(*args, **_kwargs(la, kwargs))
            la_exc = None
        except Exception as exc:  # noqa: BLE001
            la_exc = exc
        evaluated = la.cache_info()["materializations"] - before
    if np_exc is None:
        assert la_exc is None, f"NumPy accepts {name}({label}); lazyarray raised {la_exc!r}"
        for g, e in zip(_leaves(got), _leaves(expected)):
            assert np.shape(g) == np.shape(e), f"{name}({label}): shape"
            if hasattr(e, "dtype") and hasattr(g, "dtype"):
                assert g.dtype == e.dtype, f"{name}({label}): dtype {g.dtype} != {e.dtype}"
        return
    assert la_exc is not None, f"NumPy raises {np_exc!r} on {name}({label}); lazyarray did not"
    assert isinstance(la_exc, type(np_exc)), (
        f"{name}({label}): NumPy raises {type(np_exc).__name__}: {np_exc}; lazyarray raises "
        f"{type(la_exc).__name__}: {la_exc}")
    assert str(la_exc), f"{name}({label}): an empty error message"
    assert evaluated == 0, f"{name}({label}): the error came after computing the inputs"


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _leaves(v)]
    return [x]


def test_the_table_is_large():
    """Guard against the table silently shrinking (a broken signature probe)."""
    assert len(native_functions()) > 150
    assert len(CASES) > 800
