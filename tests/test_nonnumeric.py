"""Arrays of dtypes the compiler does not handle (structured, strings, bytes, objects, void,
datetimes) are NumPy's own arrays, made by NumPy and counted as fallbacks, and they mix with
lazy numeric arrays: whole programs of both kinds run unchanged and give NumPy's answers."""

import numpy as np
import pytest

import lazyarray as la
from tests.helpers import assert_like_numpy

DTYPES = ["U3", "S2", object, [("x", float), ("y", np.int32)], "V4", "datetime64[D]",
          "timedelta64[s]"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("make", ["zeros", "ones", "empty", "full"])
def test_creation_gives_numpys_array(make, dtype):
    args = ((4,), b"ab" if make == "full" and np.dtype(dtype).kind == "S" else 0) \
        if make == "full" else ((4,),)
    before = la.cache_info()["fallbacks"]
    got = getattr(la, make)(*args, dtype=dtype)
    want = getattr(np, make)(*args, dtype=dtype)
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    if make != "empty" and got.dtype.kind != "O":
        assert got.tobytes() == want.tobytes()
    elif make != "empty":
        assert got.tolist() == want.tolist()
    assert la.cache_info()["fallbacks"] == before + 1


def test_namespace_functions_run_numpys_on_non_numeric_arrays():
    w = np.array(["pear", "fig", "apple", "fig"])
    for name, args in (("sort", (w,)), ("argsort", (w,)), ("concatenate", ([w, w],)),
                       ("unique", (w,)), ("searchsorted", (np.sort(w), "fig")),
                       ("flip", (w,)), ("stack", ([w, w],)), ("tile", (w, 2)),
                       ("repeat", (w, 2)), ("take", (w, [0, 2])), ("roll", (w, 1)),
                       ("atleast_2d", (w,)), ("isin", (w, ["fig"]))):
        before = la.cache_info()["fallbacks"]
        got, want = getattr(la, name)(*args), getattr(np, name)(*args)
        assert np.asarray(got).tolist() == want.tolist(), name
        assert la.cache_info()["fallbacks"] > before, name
    # the functions of hot loops, through their own paths
    for name, args in (("where", (w == "fig", w, "x")), ("argmax", (w,)), ("argmin", (w,)),
                       ("reshape", (w, (2, 2))), ("transpose", (w,)),
                       ("any", (w.astype(object),)), ("all", (w.astype(object),))):
        got, want = getattr(la, name)(*args), getattr(np, name)(*args)
        assert np.asarray(got).tolist() == np.asarray(want).tolist(), name
    with pytest.raises(TypeError):  # as NumPy: no maximum loop for strings
        la.max(w)


def test_array_asarray_and_likes_follow_numpy():
    words = ["ab", "c", "dea"]
    for fn in ("array", "asarray"):
        got = getattr(la, fn)(words)
        assert type(got) is np.ndarray and got.dtype == np.dtype("<U3")
        assert got.tolist() == words
    base = np.array(words)
    assert la.asarray(base) is np.asarray(base)  # NumPy's asarray: the same object
    assert la.array(base) is not base and la.array(base).tolist() == words
    for fn, extra in (("zeros_like", ()), ("ones_like", ()), ("empty_like", ()),
                      ("full_like", ("zz",))):
        got, want = getattr(la, fn)(base, *extra), getattr(np, fn)(base, *extra)
        assert type(got) is np.ndarray and got.dtype == want.dtype
        if fn != "empty_like":
            assert got.tolist() == want.tolist()
    objs = la.array([1, "a", None], dtype=object)
    assert objs.dtype == object and objs.tolist() == [1, "a", None]


def particles(xp):
    """A structured-array program: records of particles, numeric fields computed on."""
    p = xp.zeros(6, dtype=[("pos", float, 2), ("mass", float), ("id", np.int32)])
    p["id"] = np.arange(6)
    p["mass"] = xp.linspace(1.0, 2.0, 6)
    p["pos"][:, 0] = xp.arange(6) * 0.5
    p["pos"][:, 1] = xp.sin(xp.asarray(p["pos"][:, 0]))
    heavy = p[p["mass"] > 1.5]
    com = (xp.asarray(p["pos"]) * xp.asarray(p["mass"])[:, None]).sum(axis=0) / p["mass"].sum()
    return p, heavy, com, xp.sort(p, order="mass")["id"]


def words(xp):
    """A string-array program: cleaning, comparing, counting, joining with numbers."""
    w = xp.array(["  Apple", "banana ", "Cherry", "apple", "  date "])
    clean = xp.char.lower(xp.char.strip(w))
    is_apple = clean == "apple"
    lengths = xp.char.str_len(clean)
    score = xp.where(is_apple, 2.0, 1.0) * lengths
    order = xp.argsort(clean)
    return clean, is_apple, lengths, score, clean[order], xp.unique(clean)


@pytest.mark.parametrize("program", [particles, words])
def test_programs_of_non_numeric_arrays_run_unchanged(program):
    for got, want in zip(program(la), program(np), strict=True):
        if isinstance(got, la.ndarray):
            assert_like_numpy(got, want)
        else:
            got = np.asarray(got)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()


def test_a_lazy_array_written_into_a_structured_field():
    p = la.zeros(4, dtype=[("a", float), ("b", np.int64)])
    x = la.arange(4.0) * 2.0 + 1.0  # lazy
    p["a"] = x
    p["b"] = la.arange(4) ** 2
    assert p["a"].tolist() == [1.0, 3.0, 5.0, 7.0] and p["b"].tolist() == [0, 1, 4, 9]
    y = la.exp(p["a"])  # a numeric field: lazyarray's again
    assert isinstance(y, la.ndarray)
    assert_like_numpy(y, np.exp(np.array([1.0, 3.0, 5.0, 7.0])))
