"""The program corpus (lazyarray.tools.corpus) gives NumPy's answers on lazyarray.

Every program runs unchanged with ``numpy`` and with ``lazyarray`` at its ``"test"`` size:
the outputs have NumPy's dtypes and shapes, integer and boolean outputs are equal, and
floating-point ones agree to ``rtol=1e-10`` (with ``atol`` 1e-12 times the largest value,
for sums taken in another order). The slow variant forces the compiled tier
(``eager_threshold=0``) so that every graph becomes a Numba kernel, however small.
"""

from __future__ import annotations

import numpy
import pytest

import lazyarray
from lazyarray.tools.corpus import PROGRAMS
from lazyarray.tools.corpus import runner


LIMIT = 600.0  # seconds: a guard against hangs (a program still running then fails), not a timing


def _check(name: str) -> None:
    module = PROGRAMS[name]
    inputs = module.make(module.SIZES["test"], 0)
    want = runner.materialize(module.run(numpy, *inputs))
    try:
        with runner.time_limit(LIMIT):
            got = runner.materialize(module.run(lazyarray, *inputs))
    except runner.TimeLimit as exc:
        pytest.fail(f"{name} on lazyarray: {exc}")
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, (name, i, g.dtype, w.dtype)
        assert g.shape == w.shape, (name, i, g.shape, w.shape)
        if w.dtype.kind in "biu":
            numpy.testing.assert_array_equal(g, w, err_msg=f"{name} output {i}")
        else:
            atol = runner.ATOL_SCALE * float(numpy.max(numpy.abs(w))) if w.size else 0.0
            numpy.testing.assert_allclose(g, w, rtol=runner.RTOL, atol=atol, equal_nan=True,
                                          err_msg=f"{name} output {i}")
    # the inputs are the caller's: a program that writes in place works on its own copy
    again = module.make(module.SIZES["test"], 0)
    for a, b in zip(inputs, again):
        numpy.testing.assert_array_equal(a, b, err_msg=f"{name} changed its input")


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_numpy(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_numpy_compiled(name):
    with lazyarray.options(eager_threshold=0):
        _check(name)


def test_corpus_shape():
    """At least twelve programs, each with a docstring, the three size labels, make and run."""
    assert len(PROGRAMS) >= 12
    for name, module in PROGRAMS.items():
        assert (module.__doc__ or "").strip(), name
        assert {"test", "64K", "4M"} <= set(module.SIZES), name
        assert callable(module.make) and callable(module.run), name


def test_compare_reports_differences():
    a = (numpy.arange(4.0),)
    assert runner.compare(a, a) is None
    assert "dtype" in runner.compare((numpy.arange(4),), a)
    assert "shape" in runner.compare((numpy.arange(3.0),), a)
    assert runner.compare((a[0] * (1 + 1e-9),), a) is not None
    assert runner.compare((numpy.array([True, False]),), (numpy.array([True, True]),))


def test_runner_prints_the_table(capsys):
    status = runner.main(["--programs", "heat2d,floyd_warshall", "--sizes", "test",
                          "--repeat", "1", "--quiet"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "heat2d" in out and "floyd_warshall" in out and "geometric mean" in out
    assert runner.main(["--programs", "nope"]) == 2


def test_runner_times_outputs_read_one_by_one_against_together(capsys):
    """`--together`: the warm run again with one `evaluate` of every output before they are
    read; the table gains its time and the ratio of the two."""
    status = runner.main(["--programs", "shallow_water", "--sizes", "test", "--repeat", "2",
                          "--quiet", "--together"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "la together ms" in out and "1-by-1/together" in out
    row = [ln for ln in out.splitlines() if ln.startswith("| shallow_water")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[7]) > 0 and float(cells[8]) > 0 and cells[9] == "ok"


@pytest.mark.slow
def test_ocean_column_at_a_new_size_compiles_nothing():
    """The first-run script of the corpus at 100^3 after 40^3: every kernel is keyed by
    structure, not size (the tiers and launch variants are the same at both sizes)."""
    module = PROGRAMS["ocean_column"]
    with lazyarray.options(compile="now"):
        for shape, compiles in (((40, 40, 40), None), ((100, 100, 100), 0)):
            inputs = module.make({"shape": shape, "steps": 1}, 0)
            before = lazyarray.cache_info()
            got = [numpy.asarray(v) for v in module.run(lazyarray, *inputs)]
            want = module.run(numpy, *inputs)
            after = lazyarray.cache_info()
            for g, w in zip(got, want):
                numpy.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
            if compiles is not None:
                assert after["compiles"] - before["compiles"] == compiles
                assert after["misses"] - before["misses"] == 0
