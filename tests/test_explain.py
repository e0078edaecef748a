"""explain(): why each fusion ends where it does, the forcing line, cache misses explained,
build times and the bytes fusion keeps out of memory."""

import inspect

import numpy as np
import pytest

import lazyarray as la
from lazyarray.ir.text import parse_module, print_module
from lazyarray.passes.fusion import MAX_FUSION, REASONS

N = 40_000
rng = np.random.default_rng(7)
X = rng.random(N)
Y = rng.random(N)
M = rng.random((200, 200))


def reasons(*arrays):
    return sorted((k.kind, k.reason) for k in la.explain(*arrays).kernels)


def test_every_reason_has_a_description():
    assert set(REASONS) == {"output", "reduction", "view", "library", "max_size", "shared",
                            "gather"}


def test_reason_output_and_reduction(compiled):
    x = la.asarray(X)
    assert reasons(x * 2 + 1) == [("loop", "output")]
    # the mean is consumed broadcast by a loop: the reduction kernel ends at the reduction
    assert reasons(x - x.mean()) == [("input", "reduction"), ("loop", "output")]
    # a reduction that is itself the result
    assert reasons(np.sqrt(la.sum(x * x))) == [("input", "output")]


def test_reason_library(compiled):
    m = la.asarray(M)
    assert reasons(la.exp(m) @ m) == [("loop", "library")]


def test_reason_view_and_shared(compiled):
    x = la.asarray(X)
    e = la.exp(x)  # expensive, read by two kernels and through a slice: computed once
    assert ("loop", "view") in reasons(e.sum() + e[::2].sum())
    e = la.exp(x)
    assert ("loop", "shared") in reasons(e.sum(), e * 2)


def test_reason_max_size(compiled):
    z = la.asarray(X)
    for _ in range(MAX_FUSION + 10):
        z = z * 1.001 + 0.5
    got = reasons(z)
    assert ("loop", "max_size") in got and ("loop", "output") in got
    assert np.allclose(np.asarray(z), _chain_numpy(X, MAX_FUSION + 10))


def _chain_numpy(x, n):
    for _ in range(n):
        x = x * 1.001 + 0.5
    return x


def test_reason_printed_in_hlo_and_round_trips(compiled):
    x = la.asarray(X)
    r = la.explain(x - x.mean())
    assert "reason=reduction" in r.hlo_after and "reason=output" in r.hlo_after
    assert print_module(parse_module(r.hlo_after)) == r.hlo_after
    text = str(r)
    assert REASONS["reduction"] in text and REASONS["output"] in text


def test_plan_names_the_explain_line(compiled):
    x = la.asarray(X)
    r = la.explain(x + 1)
    line = inspect.currentframe().f_lineno - 1
    assert r.planned and r.forced_at.startswith(f"{__file__}:{line} in ")
    assert "la.explain(x + 1)" in r.forced_at


def test_last_evaluation_names_the_forcing_line(compiled):
    x = la.asarray(X)
    y = la.sin(x) * 3 - 1
    total = float(y.sum())  # the line that forces
    line = inspect.currentframe().f_lineno - 1
    r = la.explain()
    assert not r.planned and r.seconds > 0
    assert r.forced_at.startswith(f"{__file__}:{line} in test_last_evaluation_names")
    assert "float(y.sum())" in r.forced_at
    assert r.num_kernels == 1
    assert np.isclose(total, (np.sin(X) * 3 - 1).sum())
    assert "evaluation (" in str(r) and "forced at" in str(r)


def test_forcing_line_through_numpy_asarray(compiled):
    x = la.asarray(X)
    np.asarray(la.cos(x) + 2)
    line = inspect.currentframe().f_lineno - 1
    assert la.explain().forced_at.startswith(f"{__file__}:{line} ")


def test_forcing_line_on_interpreter_tier():
    with la.options(eager_threshold=100_000):  # 40,000: above the eager tier, not compiled
        x = la.asarray(X[:40_000])
        (x + 1).tolist()
        line = inspect.currentframe().f_lineno - 1
    r = la.explain()
    assert r.interpreted and r.num_kernels == 0
    assert r.forced_at.startswith(f"{__file__}:{line} ")


def test_miss_says_what_differs_from_the_nearest_signature(compiled):
    x = la.asarray(X)
    np.asarray(la.arctan(x) * 2.0 + 1.0)  # cached now
    r = la.explain(la.arctan(x) * 2.0 - 1.0)  # one op differs
    (k,) = r.kernels
    assert k.status == "miss"
    assert "+" in k.differs and "subtract" in k.differs and "add" in k.differs
    assert "differs from the nearest cached signature" in str(r)
    # the same program again: a hit, nothing to explain
    np.asarray(la.arctan(x) * 2.0 + 1.0)
    (k,) = la.explain().kernels
    assert k.status == "hit" and k.differs == ""


def test_layout_only_difference(compiled):
    a = la.asarray(M)
    np.asarray(la.arcsinh(a) + 1.0)
    (k,) = la.explain(la.arcsinh(a.T) + 1.0).kernels  # same HLO, transposed loads
    assert k.status == "miss"
    assert "launch layout" in k.differs


def test_build_time_and_origin(compiled):
    x = la.asarray(X)
    y = la.arccosh(x + 2.0) * la.log1p(x)  # built in this process: compiled or from disk
    np.asarray(y)
    (k,) = la.explain().kernels
    if k.status == "miss":
        assert k.origin in ("compiled", "disk") and k.compile_s > 0
        assert "built=" in str(la.explain())
    np.asarray(la.arccosh(x + 2.0) * la.log1p(x))
    (k2,) = la.explain().kernels
    assert k2.status == "hit" and k2.key == k.key


def test_plan_is_a_miss_until_built(compiled):
    x = la.asarray(X)
    y = la.arcsin(x) * 0.25 - la.arctan(x)
    (k,) = la.explain(y).kernels  # planning renders the kernel but never builds it
    if k.origin == "":
        assert k.status == "miss"
    np.asarray(y)
    (k,) = la.explain(la.arcsin(x) * 0.25 - la.arctan(x)).kernels
    assert k.status == "hit"


def test_bytes_avoided(compiled):
    x, y = la.asarray(X), la.asarray(Y)
    # x*y is kept in registers: one float64 array of N never written
    assert la.explain(x * y + 2).bytes_avoided == N * 8
    # sum((x-y)**2): the difference and the square never exist
    r = la.explain(((x - y) ** 2).sum())
    assert r.bytes_avoided == 2 * N * 8
    assert f"intermediates avoided: {2 * N * 8} bytes" in str(r)
    assert la.explain(x + 1).bytes_avoided == 0


def test_explain_before_any_evaluation_is_an_error(monkeypatch):
    from lazyarray import engine

    monkeypatch.setattr(engine, "_last", None)
    with pytest.raises(ValueError, match="nothing has been evaluated"):
        la.explain()
