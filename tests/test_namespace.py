"""Drop-in breadth: every public NumPy name resolves in lazyarray.

NumPy is the oracle: the public names of ``numpy``, ``numpy.linalg``, ``numpy.fft`` and
``numpy.random`` (their ``__all__``) must resolve in the matching lazyarray module; ufuncs
are lazyarray ufuncs with NumPy's attributes; dtypes, scalar types and constants are NumPy's
own objects; names lazyarray does not implement are counted fallbacks that return lazy
arrays; ``lazyarray._coverage`` classifies all of them.
"""

import importlib
import types
import warnings

import numpy as np
import pytest

import lazyarray as la
from lazyarray import _coverage

MODULES = [("numpy", "lazyarray"), ("numpy.linalg", "lazyarray.linalg"),
           ("numpy.fft", "lazyarray.fft"), ("numpy.random", "lazyarray.random")]


def _np_attr(module, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(module, name)


def _public(np_name):
    mod = importlib.import_module(np_name)
    return [(n, _np_attr(mod, n)) for n in _coverage.public_names(mod) if hasattr(mod, n)]


# Public NumPy names that do not resolve yet, and why (each has an xfail test below that
# turns into a failure once the name resolves: then delete the entry).
KNOWN_GAPS: dict[tuple[str, str], str] = {}


# ---- every public name resolves --------------------------------------------------------------
@pytest.mark.parametrize("np_name,la_name", MODULES, ids=[m for m, _ in MODULES])
def test_every_public_name_resolves(np_name, la_name):
    la_mod = importlib.import_module(la_name)
    missing, not_callable = [], []
    for name, np_obj in _public(np_name):
        if (np_name, name) in KNOWN_GAPS:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                obj = getattr(la_mod, name)
            except AttributeError:
                missing.append(name)
                continue
        if callable(np_obj) and not callable(obj):
            not_callable.append(name)
    assert not missing, f"{la_name} lacks public names of {np_name}: {missing}"
    assert not not_callable, f"{la_name}: not callable where NumPy's are: {not_callable}"


def test_submodules_are_lazyarrays():
    for sub in ("linalg", "fft", "random", "testing"):
        mod = getattr(la, sub)
        assert isinstance(mod, types.ModuleType)
        assert mod.__name__ == f"lazyarray.{sub}", f"la.{sub} is {mod.__name__}"
    # the other NumPy submodules resolve to NumPy's own
    assert la.emath is np.emath
    assert la.exceptions is np.exceptions


def test_star_imports():
    ns = {}
    exec("from lazyarray.linalg import *; from lazyarray.fft import *; "
         "from lazyarray.random import *; from lazyarray.testing import *", ns)
    for name in ("norm", "solve", "fft", "rfftfreq", "default_rng", "Generator",
                 "assert_allclose", "assert_raises"):
        assert name in ns, name
    assert ns["norm"] is la.linalg.norm
    assert ns["Generator"] is la.random.Generator


# ---- ufuncs ----------------------------------------------------------------------------------
UFUNC_NAMES = sorted(n for n, o in _public("numpy") if isinstance(o, np.ufunc))

# Not elementwise over lazyarray's dtypes: they need only resolve to a callable (lazyarray's
# function or a fallback), like test_elementwise.SKIPPED_UFUNCS.
NON_ELEMENTWISE = {
    "matmul": "gufunc with core dimensions",
    "matvec": "gufunc with core dimensions",
    "vecmat": "gufunc with core dimensions",
    "vecdot": "gufunc with core dimensions",
    "isnat": "defined only for datetime64/timedelta64",
}


@pytest.mark.parametrize("name", UFUNC_NAMES)
def test_ufunc_is_lazy_with_numpys_attributes(name):
    ref = getattr(np, name)
    obj = getattr(la, name)
    if name in NON_ELEMENTWISE:
        assert callable(obj)
        return
    assert isinstance(obj, la.ufunc), f"la.{name} is {type(obj)}"
    for attr in ("nin", "nout", "nargs", "identity", "__name__"):
        assert getattr(obj, attr) == getattr(ref, attr), attr


def test_ufunc_aliases_are_the_same_object():
    for alias, name in [("abs", "absolute"), ("conj", "conjugate"), ("mod", "remainder"),
                        ("true_divide", "divide"), ("pow", "power")]:
        assert getattr(la, alias) is getattr(la, name)


# ---- dtypes, scalar types, constants ---------------------------------------------------------
SCALAR_TYPES = sorted(n for n, o in _public("numpy")
                      if isinstance(o, type) and issubclass(o, np.generic))
CONSTANTS = sorted(n for n, o in _public("numpy")
                   if not callable(o) and not isinstance(o, types.ModuleType)
                   and not n.startswith("__"))  # __version__ is lazyarray's own


def test_scalar_types_are_numpys():
    assert len(SCALAR_TYPES) > 30
    wrong = [n for n in SCALAR_TYPES if getattr(la, n) is not getattr(np, n)]
    assert not wrong, wrong


@pytest.mark.parametrize("name", CONSTANTS)
def test_constants_are_numpys(name):
    assert getattr(la, name) is _np_attr(np, name)


def test_dtype_objects_are_numpys():
    assert la.float64 is np.float64
    assert la.bool is np.bool and la.bool_ is np.bool_
    assert la.dtype is np.dtype
    assert la.finfo is np.finfo and la.iinfo is np.iinfo
    assert la.dtype("float32") == np.float32
    assert la.pi == np.pi and la.e == np.e
    assert la.inf == np.inf and np.isnan(la.nan)
    assert la.newaxis is None
    assert la.ndarray is la.Array


# ---- fallbacks -------------------------------------------------------------------------------
def _current_fallback(candidates):
    """The first (name, call) whose top-level name is a fallback now (the lead implements
    functions natively over time)."""
    for name, call in candidates:
        if _coverage.classify(getattr(np, name), la, name) == "fallback":
            return name, call
    pytest.skip("every candidate is native now")


def test_fallbacks_are_counted():
    x = la.asarray(np.arange(6.0)[::-1])
    name, call = _current_fallback([
        ("sort", lambda: la.sort(x)), ("cumsum", lambda: la.cumsum(x)),
        ("unique", lambda: la.unique(x)), ("argsort", lambda: la.argsort(x)),
        ("ediff1d", lambda: la.ediff1d(x)), ("trapezoid", lambda: la.trapezoid(x)),
        ("sinc", lambda: la.sinc(x)),
    ])
    before = la.cache_info()["fallbacks"]
    call()
    call()
    assert la.cache_info()["fallbacks"] == before + 2, name
    before = la.cache_info()["fallbacks"]
    la.linalg.lstsq(la.eye(3), x[:3])  # submodule fallbacks count too
    la.linalg.eigvals(la.eye(3))
    assert la.cache_info()["fallbacks"] == before + 2
    before = la.cache_info()["fallbacks"]
    la.fft.fft(x)  # library calls (custom-call nodes) are native: no fallback
    la.linalg.det(la.eye(3))
    assert la.cache_info()["fallbacks"] == before


X = np.random.default_rng(3).standard_normal((4, 5))
V = np.array([3, 1, 2, 3, 1, 0, 2])

REPRESENTATIVE = {
    "sort": lambda xp, A: xp.sort(A(X), axis=0),
    "sort_last": lambda xp, A: xp.sort(A(X)),
    "argsort": lambda xp, A: xp.argsort(A(X), axis=1),
    "cumsum": lambda xp, A: xp.cumsum(A(X), axis=1),
    "cumsum_flat": lambda xp, A: xp.cumsum(A(V)),
    "cumprod": lambda xp, A: xp.cumprod(A(V)[:4]),
    "unique": lambda xp, A: xp.unique(A(V)),
    "unique_counts": lambda xp, A: xp.unique(A(V), return_counts=True),
    "concatenate": lambda xp, A: xp.concatenate([A(X), A(X) * 2], axis=1),
    "searchsorted": lambda xp, A: xp.searchsorted(xp.sort(A(V)), A(np.array([0, 2, 5]))),
    "take": lambda xp, A: xp.take(A(X), [0, 3, 3], axis=1),
    "nonzero": lambda xp, A: xp.nonzero(A(V)),
    "median": lambda xp, A: xp.median(A(X), axis=0),
    "percentile": lambda xp, A: xp.percentile(A(X), 30, axis=1),
    "histogram": lambda xp, A: xp.histogram(A(X), bins=4),
    "einsum": lambda xp, A: xp.einsum("ij,kj->ik", A(X), A(X)),
    "convolve": lambda xp, A: xp.convolve(A(V), A(np.array([1.0, -1.0]))),
    "interp": lambda xp, A: xp.interp(A(np.array([0.5, 2.5])), A(np.arange(4.0)),
                                      A(np.arange(4.0) ** 2)),
    "real_of_result": lambda xp, A: xp.real(A(X) * 1j),
}


def _check(actual, expected, what):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), what
        for i, (a, e) in enumerate(zip(actual, expected)):
            _check(a, e, f"{what}[{i}]")
        return
    assert isinstance(actual, la.Array), f"{what}: {type(actual)} is not a lazy Array"
    a = np.asarray(actual)
    assert a.shape == expected.shape and a.dtype == expected.dtype, what
    np.testing.assert_allclose(a, expected, rtol=1e-12, atol=0, err_msg=what)


@pytest.mark.parametrize("case", sorted(REPRESENTATIVE))
def test_representative_calls_match_numpy(case):
    fn = REPRESENTATIVE[case]
    expected = fn(np, np.asarray)
    actual = fn(la, la.asarray)
    _check(actual, expected, case)
    # the result is an ordinary lazy array: building on it stays lazy and matches NumPy
    first = actual[0] if isinstance(actual, tuple) else actual
    ref = expected[0] if isinstance(expected, tuple) else expected
    _check(first * 2 + 1, ref * 2 + 1, f"{case} * 2 + 1")


# ---- coverage report -------------------------------------------------------------------------
def test_coverage_table_totals():
    rows, totals = _coverage.table()
    assert set(totals) == {"numpy", "numpy.linalg", "numpy.fft", "numpy.random", "all"}
    for np_name, _ in MODULES:
        n = len(_coverage.public_names(importlib.import_module(np_name)))
        assert sum(totals[np_name].values()) == n
        assert sum(1 for m, _, _ in rows if m == np_name) == n
    assert all(c in _coverage.CATEGORIES for _, _, c in rows)
    for c in _coverage.CATEGORIES:
        assert totals["all"][c] == sum(totals[m][c] for m, _ in MODULES)
    status = {(m, n): c for m, n, c in rows}
    assert status["numpy", "add"] == "native-lazy"
    assert status["numpy", "sum"] == "native-lazy"
    assert status["numpy", "float64"] == "n/a"
    assert status["numpy", "pi"] == "n/a"
    assert status["numpy", "linalg"] == "n/a"
    assert status["numpy", "can_cast"] == "numpy"
    assert status["numpy.linalg", "norm"] == "native-lazy"
    assert status["numpy.linalg", "solve"] == "native-lazy"  # a library call
    assert status["numpy.linalg", "lstsq"] == "fallback"
    assert status["numpy.linalg", "LinAlgError"] == "n/a"
    assert status["numpy.fft", "fft"] == "native-lazy"
    assert status["numpy.random", "default_rng"] == "fallback"
    assert status["numpy.random", "shuffle"] == "fallback"
    assert status["numpy.random", "seed"] == "numpy"
    assert status["numpy.random", "Generator"] == "n/a"


def test_coverage_does_not_resolve_names(monkeypatch):
    """Classifying reads module dicts only: it never runs a module __getattr__, and a name not
    resolved yet classifies as it will resolve."""
    calls = []

    def spy(name):
        calls.append(name)
        raise AttributeError(name)

    for mod in (la, la.linalg, la.fft, la.random):
        monkeypatch.setitem(vars(mod), "__getattr__", spy)
    fallbacks = [n for n in np.linalg.__all__
                 if _coverage.classify(getattr(np.linalg, n), la.linalg, n) == "fallback"]
    for name in [n for n, o in list(vars(la.linalg).items()) if _coverage.is_fallback(o)]:
        monkeypatch.delitem(vars(la.linalg), name)  # as if never resolved
    rows, totals = _coverage.table()
    assert not calls
    assert totals["numpy.linalg"]["fallback"] == len(fallbacks) > 0


def test_fallback_wrappers_are_recognized():
    assert _coverage.is_fallback(la.linalg.lstsq)
    assert not _coverage.is_fallback(la.fft.fft)
    assert _coverage.is_fallback(la.random.default_rng)
    assert _coverage.is_fallback(la.random.shuffle)
    assert not _coverage.is_fallback(la.linalg.norm)
    assert not _coverage.is_fallback(la.add)
    assert not _coverage.is_fallback(np.sort)


def test_coverage_main(tmp_path, capsys):
    assert _coverage.main([]) == 0
    out = capsys.readouterr().out
    assert "native-lazy" in out and "numpy.linalg: " in out
    path = tmp_path / "coverage.md"
    assert _coverage.main(["--markdown", str(path)]) == 0
    text = path.read_text()
    assert text.startswith("# NumPy coverage")
    assert "| `norm` | native-lazy |" in text
    assert "python -m lazyarray coverage --markdown" in text
    assert _coverage.main(["--bogus"]) == 2
