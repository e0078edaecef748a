"""np.errstate / np.seterr on every tier: the same RuntimeWarnings (category and message) as
NumPy for the same program, attributed to the line that forced the evaluation; "ignore" is
silent; "raise" raises NumPy's FloatingPointError."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import lazyarray as la
from lazyarray.codegen.body import fp_check
from lazyarray.codegen.cpu import render


def _f64(xp, n):
    return xp.asarray(np.arange(n, dtype=np.float64))


def _i64(xp, n):
    return xp.asarray(np.arange(n, dtype=np.int64))


# name -> program(xp, n): each NumPy run warns (or not) as the comment says
PROGRAMS = {
    "divide": lambda xp, n: 1.0 / (_f64(xp, n) - _f64(xp, n)),  # divide
    "log": lambda xp, n: xp.log(-_f64(xp, n)),  # divide (log 0), invalid (log < 0)
    "exp": lambda xp, n: xp.exp(1000.0 * _f64(xp, n)),  # overflow
    "masked_log": lambda xp, n: xp.where(_f64(xp, n) > 3, xp.log(_f64(xp, n) - 3), 0.0),
    "cast": lambda xp, n: (_f64(xp, n) * 1e300 * 1e10).astype(np.int64),  # over, invalid cast
    "int_floor_divide": lambda xp, n: _i64(xp, n) // (_i64(xp, n) * 0),
    "int_remainder": lambda xp, n: _i64(xp, n) % (_i64(xp, n) * 0),
    "sum_overflow": lambda xp, n: (_f64(xp, n) + 1e308).sum(),  # overflow in reduce
    "float32_overflow": lambda xp, n: xp.asarray(np.full(n, 1e30, np.float32)) * np.float32(1e10),
    "inf_minus_inf": lambda xp, n: (_f64(xp, n) * 1e308 * 10) - (_f64(xp, n) * 1e308 * 10),
    # overflows that exp(-inf) = 0 hides from the result (checks moved down the chain)
    "square_under_exp": lambda xp, n: xp.exp(-((_f64(xp, n) * 1e154) ** 2)).sum(),
    "subtract_under_exp": lambda xp, n: xp.exp(-((_f64(xp, n) * 1e307 - (-1.7e308)) ** 2)),
    "nan_under_exp": lambda xp, n: xp.exp(-((xp.asarray(np.full(n, np.nan)) - 1.0) ** 2)),
    # checks of values of known sign (codegen/cpu.py `_sign`): one compare each
    "square_overflow": lambda xp, n: (_f64(xp, n) * 1e200) ** 2,  # overflow, a value >= 0
    "float32_square": lambda xp, n: xp.asarray(np.full(n, 3e19, np.float32)) ** 2,  # overflow
    "negative_sqrt": lambda xp, n: -xp.sqrt(_f64(xp, n) - 2.0),  # invalid, a value <= 0
    # loops keep the running maximum of magnitude bits (`_magnitude_bits`): a NaN with its
    # sign bit set, float32 and complex values still reach the exact checks
    "signed_nan": lambda xp, n: xp.sqrt(_f64(xp, n) - 2.0) * 2.0,  # invalid: -NaN (x86)
    "float32_nan_input": lambda xp, n: xp.asarray(np.full(n, np.nan, np.float32)) * 2,
    "complex_overflow": lambda xp, n: (_f64(xp, n) * (1 + 1e300j)) * 1e10,  # overflow
    "complex_nan_input": lambda xp, n: (xp.asarray(np.full(n, np.nan)) * 1j + 1.0) * 2.0,
    "clean": lambda xp, n: _f64(xp, n) * 2.0 + 1.0,  # nothing
    "nan_input": lambda xp, n: xp.asarray(np.full(n, np.nan)) * 2.0 + 1.0,  # nothing
}

TIERS = {  # name -> (options, array size)
    "eager": ({}, 6),  # tiny computed inputs: NumPy's call right away
    "interp": ({"backend": "numpy"}, 40_000),  # above the eager tier's 32,768 elements
    "compiled": ({"eager_threshold": 0}, 1000),  # serial kernels
    "parallel": ({"eager_threshold": 0}, 300_000),  # parallel kernels (worker threads)
}


def _numpy_warnings(program, n) -> list[tuple[type, str]]:
    with warnings.catch_warnings(record=True) as got, np.errstate(all="warn", under="ignore"):
        warnings.simplefilter("always")
        program(np, n)
    return list(dict.fromkeys((w.category, str(w.message)) for w in got))


def _lazy_warnings(program, n, opts):
    with warnings.catch_warnings(record=True) as got, np.errstate(all="warn", under="ignore"), \
            la.options(**opts):
        warnings.simplefilter("always")
        value = np.asarray(program(la, n))  # the forcing line
    return value, got


@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_warns_as_numpy_does(name, tier):
    program = PROGRAMS[name]
    opts, n = TIERS[tier]
    expected = _numpy_warnings(program, n)
    first = _lazy_warnings(program, n, opts)[1]  # (cheap checks may flag NaN inputs: once)
    assert list(dict.fromkeys((w.category, str(w.message)) for w in first)) == expected
    before = la.cache_info()
    value, got = _lazy_warnings(program, n, opts)
    after = la.cache_info()
    if tier in ("compiled", "parallel"):  # kernels ran; they flagged exactly when NumPy warns
        assert after["kernels_launched"] > before["kernels_launched"]
        assert (after["fp_rechecks"] > before["fp_rechecks"]) == bool(expected)
    assert list(dict.fromkeys((w.category, str(w.message)) for w in got)) == expected
    for w in got:  # at the user's line, not inside lazyarray -- except on the eager tier,
        # whose operators call NumPy directly under the caller's error state: NumPy's own
        # warning, naming lazyarray's line (docs/semantics.md, deviation 7)
        if tier != "eager":
            assert w.filename == __file__, (w.filename, w.lineno)
    with np.errstate(all="ignore"):
        ref = np.asarray(program(np, n))
    np.testing.assert_allclose(value, ref, rtol=1e-12)


@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize("name", ["divide", "log", "exp", "cast", "int_floor_divide"])
def test_ignore_is_silent(name, tier):
    opts, n = TIERS[tier]
    with warnings.catch_warnings(record=True) as got, np.errstate(all="ignore"), \
            la.options(**opts):
        warnings.simplefilter("always")
        np.asarray(PROGRAMS[name](la, n))
    assert got == []


@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize("name", ["divide", "exp", "log", "int_floor_divide", "sum_overflow"])
def test_raise_raises_numpys_error(name, tier):
    opts, n = TIERS[tier]
    with np.errstate(all="raise", under="ignore"):
        with pytest.raises(FloatingPointError) as numpy_error:
            PROGRAMS[name](np, n)
        with la.options(**opts), pytest.raises(FloatingPointError) as lazy_error:
            np.asarray(PROGRAMS[name](la, n))
    assert str(lazy_error.value) == str(numpy_error.value)


@pytest.mark.parametrize("category", ["divide", "invalid"])
def test_one_category_warns_the_other_ignored(category):
    """errstate per category: only the category left on "warn" is reported."""
    other = {"divide": "invalid", "invalid": "divide"}[category]
    x = la.asarray(np.arange(1000.0))
    with warnings.catch_warnings(record=True) as got, la.options(eager_threshold=0), \
            np.errstate(**{category: "warn", other: "ignore", "over": "ignore"}):
        warnings.simplefilter("always")
        np.asarray(la.log(-x))
    word = {"divide": "divide by zero", "invalid": "invalid value"}[category]
    assert [str(w.message) for w in got] == [f"{word} encountered in log"]


def test_mixed_raise_and_warn_runs_numpys_loops():
    x = la.asarray(np.arange(1000.0))
    with warnings.catch_warnings(record=True) as got, la.options(eager_threshold=0), \
            np.errstate(divide="warn", invalid="raise"):
        warnings.simplefilter("always")
        with pytest.raises(FloatingPointError, match="invalid value encountered in log"):
            np.asarray(la.log(-x))
    assert [str(w.message) for w in got] == ["divide by zero encountered in log"]


def test_under_warn_and_call_are_honoured():
    x = la.asarray(np.full(1000, 1e-300))
    seen = []
    with warnings.catch_warnings(record=True) as got, la.options(eager_threshold=0), \
            np.errstate(under="warn"):
        warnings.simplefilter("always")
        np.asarray(x * 1e-300)
    assert [str(w.message) for w in got] == ["underflow encountered in multiply"]
    with la.options(eager_threshold=0), np.errstate(all="call", call=lambda *a: seen.append(a)):
        np.asarray(1.0 / (x - x))
    assert seen and seen[0][0] == "divide by zero"


def test_warnings_as_errors_leave_the_value_computed():
    x = la.asarray(np.arange(100_000.0))
    with la.options(eager_threshold=0), np.errstate(all="warn", under="ignore"), \
            warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        y = 1.0 / (x - x)
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide"):
            np.asarray(y)
        got = np.asarray(y)  # computed already: no second evaluation, no second warning
    assert np.isinf(got).all()


def test_jit_replay_warns_at_the_call():
    @la.jit
    def f(a):
        return 1.0 / a

    zeros = np.zeros(1000)
    with la.options(eager_threshold=0), np.errstate(all="warn", under="ignore"):
        f(np.ones(1000))
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            f(zeros)  # a replay
    assert [(w.filename, str(w.message)) for w in got] == [
        (__file__, "divide by zero encountered in divide")]


def test_kernels_recheck_only_when_a_flag_may_be_raised():
    """NaN inputs propagate quietly: the kernel with cheap checks flags them once (a recheck
    on NumPy finds no warning), and its fusion is compiled with exact checks from then on,
    which let them pass (no recheck, no warning); a division by zero rechecks."""
    nan = la.asarray(np.full(100_000, np.nan))
    ones = la.asarray(np.ones(100_000))
    la.cache_clear()
    with la.options(eager_threshold=0), np.errstate(all="warn", under="ignore"), \
            warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        before = dict(la.cache_info())
        np.asarray(la.sqrt(nan * 2.0 + ones))
        after = la.cache_info()
        assert after["fp_rechecks"] == before["fp_rechecks"] + 1
        assert after["checks_escalated"] == before["checks_escalated"] + 1
        for _ in range(3):
            np.asarray(la.sqrt(nan * 2.0 + ones))
        assert la.cache_info()["fp_rechecks"] == after["fp_rechecks"]
        assert la.cache_info()["checks_escalated"] == after["checks_escalated"]
        np.asarray(ones / (ones - 1.0))
        assert la.cache_info()["fp_rechecks"] == after["fp_rechecks"] + 1
    assert [str(w.message) for w in got] == ["divide by zero encountered in divide"]


def test_cheap_checks_compile_one_multiply_add_per_value_and_escalate_on_a_flag():
    """A new kernel checks a value by one multiply-add (`chk`), not by its operands' NaN tests;
    a flag while warnings are recorded escalates its fusion to exact checks (a new kernel:
    its own key), whatever raised it, and every warning stays NumPy's: an overflow in one
    element and a NaN in another, before and after the escalation."""
    data = np.linspace(1.0, 2.0, 50_000)
    x = la.asarray(data)
    la.cache_clear()
    with la.options(eager_threshold=0), np.errstate(all="warn", under="ignore"):
        (cheap,) = la.explain(x * 3.0 + 1.0).kernels
        assert "chk = " in cheap.source and "== x" not in cheap.source
        assert not cheap.entry.exact
        mixed = data.copy()
        mixed[7], mixed[9] = np.nan, 1e308
        y = la.asarray(mixed)
        for round_ in range(3):
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                out = np.asarray(y * 3.0 + 1.0)
            assert [str(w.message) for w in got] == ["overflow encountered in multiply"]
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(out, mixed * 3.0 + 1.0)
            (k,) = la.explain(y * 3.0 + 1.0).kernels
            assert k.entry.exact and k.key != cheap.key and "== x" in k.source
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the exact kernel: no flag for NaN alone
            y2 = la.asarray(np.where(np.isnan(mixed), np.nan, data))
            before = la.cache_info()["fp_rechecks"]
            np.asarray(y2 * 3.0 + 1.0)
            assert la.cache_info()["fp_rechecks"] == before


def test_fp_checks_in_generated_code():
    """Which instructions a kernel checks (read from the source: nothing compiles)."""
    x = la.asarray(np.ones(100_000))
    i = la.asarray(np.ones(100_000, np.int64))
    src = {}
    with la.options(eager_threshold=0):  # (a cast of a computed array is NumPy's otherwise)
        exprs = {
            "abs(x) + 1": la.abs(x) + 1.0,  # abs: quiet; add: checked
            "i // i": i // i,  # integer division: divisor == 0
            "x.astype(int32)": x.astype(np.int32),  # cast: range
            "x > 0": x > 0,  # comparison: never
        }
        for k, e in exprs.items():
            (kernel,) = la.explain(e).kernels
            comp = kernel.comp
            src[k] = (kernel.source,
                      [comp.instrs[j].opcode for j in range(len(comp.instrs)) if fp_check(comp, j)])
    assert src["abs(x) + 1"][1] == ["add"]
    assert src["i // i"][1] == ["floor_divide"] and "== 0" in src["i // i"][0]
    assert src["x.astype(int32)"][1] == ["convert"]
    assert src["x > 0"][1] == []
    assert all("return fpe" in s for s, _ in src.values())


def test_checks_move_down_chains_of_one_operand_ops():
    """W4's `exp(-(x - y)**2)`: the subtraction and the square are checked once, as the
    negation's inf or NaN where neither input is NaN (not three checks per element). In a
    reduction kernel (W4 itself) the check is looser: the negation's inf or NaN alone (the
    interpreter settles it, as for a sum that is not finite)."""
    x, y = la.asarray(np.ones(1000)), la.asarray(np.ones(1000))
    e = la.exp(-((x[:, None] - y[None, :]) ** 2))
    with la.options(eager_threshold=0, math="fast"):  # (NumPy's loops check after the call)
        (loop,) = la.explain(e).kernels
        (reduction,) = la.explain(e.sum(axis=1)).kernels
        sources = [render(k.comp, k.entry.cache_key[1], exact=True)
                   for k in (loop, reduction)]  # (the exact checks: see the test above)
    for kernel, source in zip((loop, reduction), sources):
        comp = kernel.comp
        checked = set(re.findall(r"\(\(x(\d+) - x\1\) != \(x\1 - x\1\)\)", source))
        assert {comp.instrs[int(i)].opcode for i in checked} <= {"exp"}
        (sub,) = [i for i, ins in enumerate(comp.instrs) if ins.opcode == "subtract"]
        a, b = comp.instrs[sub].operands
        exact = f"(x{a} == x{a}) & (x{b} == x{b})"
        assert (exact in source) == (kernel is loop)
        # the negation is <= 0 or NaN: not finite where it is not >= -max (one compare), and
        # its exp needs no upper clamp
        (neg,) = [i for i, ins in enumerate(comp.instrs) if ins.opcode == "negative"]
        assert f"(not (x{neg} >= -1.7976931348623157e+308))" in source
        assert f"_h.exp_nonpositive(x{neg})" in source


def test_loose_reduction_checks_still_report_exactly():
    """A reduction kernel counts a NaN that came in as a possible flag; the interpreter then
    finds none, so no warning; an overflow inside it still warns, at the user's line."""
    x = la.asarray(np.array([1.0, np.nan, 3.0] * 20))
    with np.errstate(all="warn", under="ignore"), la.options(eager_threshold=0):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = np.asarray(la.max(x * 2.0))  # NaN in, NaN out: no flag
        assert np.isnan(got)
        big = la.asarray(np.full(60, 1e200))
        with pytest.warns(RuntimeWarning, match="overflow") as rec:
            np.asarray(la.max(big * big))
        assert rec[0].filename == __file__
