"""Differential fuzzing of whole programs that mix views, in-place writes and pending lazy
expressions: every version of every array must be what NumPy says it is.

Hypothesis draws straight-line programs (tests/fuzz_programs.py): 10-40 statements over 2-3
base arrays of one size tier (views of views, copies, elementwise expressions and
reductions kept alive, writes through views, in-place operators, ``out=``, ``copyto``,
``put``, ``fill``, deletions, forcing at random points), then forces every surviving name
in a drawn order and compares ``flags.writeable`` and ``shares_memory``.  Each program runs
with NumPy and with lazyarray under three option sets:

* ``default``  -- the eager tier for tiny arrays, the interpreter/trace tier for mid-sized
  ones, compiled kernels for large ones;
* ``interp``   -- ``backend="numpy"``, the reference interpreter everywhere;
* ``compiled`` -- ``eager_threshold=0``, compiled kernels even for 3-element arrays.

A failure prints the program as Python source (``xp = la`` or ``xp = numpy``), marked at
the statement where lazyarray's observation first differs; Hypothesis shrinks it first.

Budgets: the quick test draws 30 programs per tier and option set (6 for the large tier,
which compiles kernels) in the default ``ci`` profile, scaled with the profile's
``max_examples`` (``thorough``: x20).  The ``slow`` test reads ``LAZYARRAY_FUZZ_EXAMPLES``
(default 100 per tiny/mid cell, a tenth of that for large ones);
``LAZYARRAY_FUZZ_EXAMPLES=10000 python -m pytest tests/test_version_fuzz.py -m slow -n 2``
runs 10^4 programs per cell.

Directed tests run the five families of version hazards (write after read through slices,
``+=`` after a pending read, shifted self-assignment, writes through views of views,
stencil updates into an array a pending expression reads), the known-issue forms and the
programs the fuzzer found (reduced by hand), at 5 and 100_001 elements, forcing the named
results in every order.  The whole file takes about a minute on 2 cores (``-n 2``).
"""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import Phase, given, note, settings

import lazyarray as la
from fuzz_programs import Program, check_program, programs

COMPILED_BACKEND = os.environ.get("LAZYARRAY_TEST_BACKEND", "cpu")
MODES = {
    "default": {},
    "interp": {"backend": "numpy"},
    "compiled": {"backend": COMPILED_BACKEND, "eager_threshold": 0},
    # the default tier: interpreted while a worker process compiles, then the kernels
    "tiered": {"compile": "background", "eager_threshold": 0},
}
SIZES = ["tiny", "mid", "large"]
QUICK = {"tiny": 30, "mid": 30, "large": 6}  # programs per (size, mode) in the ci profile
LONG = int(os.environ.get("LAZYARRAY_FUZZ_EXAMPLES", "100"))
# LAZYARRAY_FUZZ_SHRINK=0: report failing programs as drawn, without shrinking them (a
# failing program's shrinking reruns it hundreds of times, compiling as it goes)
SHRINK = os.environ.get("LAZYARRAY_FUZZ_SHRINK", "1") not in ("0", "false", "no")


def _quick_budget(size: str) -> int:
    return max(1, round(QUICK[size] * settings.default.max_examples / 25))


def _run_fuzz(size: str, mode: str, examples: int) -> None:
    phases = [p for p in settings.default.phases if SHRINK or p != Phase.shrink]

    @settings(max_examples=examples, phases=phases)
    @given(programs(size))
    def program_matches_numpy(program: Program):
        opts = ", ".join(f"{k}={v!r}" for k, v in MODES[mode].items())
        note(f"size tier {size!r}; lazyarray runs under la.options({opts})")
        with la.options(**MODES[mode]):
            check_program(program, la)

    program_matches_numpy()


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("size", SIZES)
def test_programs_match_numpy(size, mode):
    """Random programs: every observation equals NumPy's (quick budget)."""
    _run_fuzz(size, mode, _quick_budget(size))


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("size", SIZES)
def test_programs_match_numpy_long(size, mode):
    """Random programs, LAZYARRAY_FUZZ_EXAMPLES of them per tiny/mid cell."""
    _run_fuzz(size, mode, LONG if size != "large" else max(1, LONG // 10))


# ---- directed programs ----------------------------------------------------------------------
#
# Each is a list of source lines (``{N}`` is the size; a line starting with "!" is one NumPy
# raises on: lazyarray must raise the same builtin exception class) and the names it leaves;
# the program is run once per order of forcing those names, then checks their writeability
# and which of them share memory.

FAMILIES = {
    "write_after_read_through_slices": ([
        "t = xp.asarray(-numpy.arange(1.0, {N} + 1.0))",
        "c = -t[1:]",
        "t[1:] = 0.0",
    ], ["t", "c"]),
    "augment_after_pending_read": ([
        "a = xp.asarray(numpy.linspace(-1.0, 1.0, {N}))",
        "b = a * 2",
        "a += 1",
    ], ["a", "b"]),
    "shifted_self_assignment": ([
        "x = xp.asarray(numpy.arange({N}, dtype=float) ** 2 / 4)",
        "y = x[1:] - x[:-1]",
        "x[1:] = y",
        "z = x * 1",
    ], ["x", "y", "z"]),
    "writes_through_views_of_views": ([
        "a = xp.asarray(numpy.arange(float({N})))",
        "v = a[::2]",
        "w = v[1:]",
        "e = a + 0",
        "w[...] = 7",
    ], ["a", "v", "w", "e"]),
    "stencil_into_an_array_a_pending_expression_reads": ([
        "u = xp.asarray(numpy.sin(numpy.linspace(0.0, 3.0, {N})))",
        "out = u.copy()",
        "out[1:-1] = (u[:-2] + u[2:]) / 2",
        "r = out * 2",
        "out[1:-1] = (out[:-2] + out[2:]) / 2",
        "s = out[1:-1] - u[1:-1]",
    ], ["u", "out", "r", "s"]),
    "negated_slice_then_zeroed": ([  # c[:3] is [2, 3, 4]
        "t = xp.asarray(-numpy.arange(1.0, {N} + 1.0))",
        "t[0] = 1.0",
        "c = -t[1:]",
        "t[1:] = 0.0",
        "check('c[:3]', c[:3])",
    ], ["t", "c"]),
    "exp_of_a_pending_sum_then_writes": ([
        "a = xp.asarray(numpy.linspace(-1.0, 1.0, {N}))",
        "b = a + 1.0",
        "c = xp.exp(b)",
        "b[...] = 0.0",
        "d = c[::3] * 2.0",
        "a[:min(10, {N} // 3)] = d[:min(10, {N} // 3)]",  # a[:10] = d[:10]
        "check('c[:3]', c[:3])",
    ], ["a", "b", "c", "d"]),
}

KNOWN_FORMS = {
    "astype_same_dtype_without_copy_is_the_array": ([
        "a = xp.asarray(numpy.arange({N}, dtype=float))",
        "b = a.astype(a.dtype, copy=False)",
        "a -= b",
    ], ["a", "b"]),
    "ascontiguousarray_of_contiguous_is_the_array": ([
        "a = xp.asarray(numpy.arange({N}, dtype=float))",
        "c = xp.ascontiguousarray(a)",
        "c[0] = 9.0",
    ], ["a", "c"]),
    "reshaped_scalar_product_is_a_new_array": ([
        "x = xp.asarray(numpy.arange({N}, dtype=float) % 7)",
        "y = xp.asarray(numpy.ones({N}))",
        "v = xp.dot(x, y)",
        "w = xp.reshape(v, (1, 1))",
        "w /= 2",
    ], ["v", "w"]),
    "astype_of_a_broadcast_is_read_only": ([
        "a = xp.asarray(numpy.arange({N}, dtype=float))",
        "c = xp.broadcast_to(a, (2, {N})).astype(a.dtype, copy=False)",
        "!c += c",
    ], ["a", "c"]),
    "copyto_between_overlapping_views": ([
        "v = xp.asarray(numpy.arange({N}, dtype=float))",
        "xp.copyto(v[1:], v[:-1])",
    ], ["v"]),
    "asarray_copy_true_is_a_copy": ([
        "x = xp.asarray(numpy.arange({N}, dtype=float))",
        "y = xp.asarray(numpy.ones({N}))",
        "r = xp.asarray(x, copy=True)",
        "r += y",
    ], ["x", "r"]),
    "in_place_subtract_that_cannot_cast_raises_type_error": ([
        "a = xp.asarray(numpy.arange({N}, dtype='int8'))",
        "f = xp.asarray(numpy.full({N}, 0.5))",
        "!a -= 1.5",
        "!a -= f",
        "u = xp.asarray(numpy.arange({N}, dtype='uint8'))",
        "!u -= numpy.int64(1)",
    ], ["a", "u"]),
}

# minimal programs the fuzzer found (reduced by hand), kept as regression tests
FOUND = {
    # NumPy lays out `a.T + 1` in F order (its ufuncs, astype, copy and *_like keep order
    # "K"), so its reshape(-1) is a copy; lazyarray's buffers were all C-ordered, and the
    # reshape was a view that the write went through (Storage.perm now)
    "reshape_of_a_result_numpy_lays_out_in_fortran_order_copies": ([
        "a = xp.asarray(numpy.arange(2.0 * {N}).reshape(2, {N}))",
        "t = a.T + 1",
        "r = t.reshape(-1)",
        "r[0] = 100.0",
    ], ["t", "r"]),
    "views_of_an_f_ordered_result_write_through_in_numpys_memory_order": ([
        "a = xp.asarray(numpy.arange(3.0 * {N}).reshape(3, {N}))",
        "t = xp.exp(a.T * 1e-6)",
        "u = t.T.reshape(-1)",  # NumPy: t.T is C-contiguous, so this is a view
        "u[1:4] = -1.0",
        "w = t.ravel(order='K')",  # memory order: a copy in t's F order
        "s = xp.copy(t)",  # order K: F again
        "v = s.reshape(-1)",  # a copy
        "v[:2] = 7.0",
        "f = a[:, [0, 2]]",  # a fancy index's result: index axis slowest in memory
        "g = f.reshape(-1)",
        "g[0] = 3.0",
        "h = xp.zeros_like(t)",
        "h.T.reshape(-1)[:3] = 2.0",
        "check('u', u)",
        "check('w', w)",
        "check('v', v)",
        "check('g', g)",
    ], ["t", "s", "f", "h"]),
    "forcing_a_read_of_a_written_array_leaves_the_array": ([
        "c = xp.asarray(numpy.arange(1.0, {N} + 1.0))",
        "c[:2] = 0.0",
        "v = c + 1",
        "check('v', v)",
    ], ["c", "v"]),
    "pending_read_of_a_written_array_then_augment": ([
        "a = xp.asarray(numpy.arange(float({N})))",
        "a[:2] = 5.0",
        "s = a * 2",
        "t = a[-1] + 0",
        "a += 1",
        "check('a', a)",
    ], ["a", "s", "t"]),
    "casting_write_of_a_pending_expression_into_its_operand": ([
        "a = xp.asarray(numpy.arange({N}))",
        "v = a * 0.5",
        "a[...] = v",
        "check('a', a)",
    ], ["a", "v"]),
    "write_through_a_view_after_a_pending_read": ([
        "c = xp.asarray(numpy.zeros({N}))",
        "w = c[None]",
        "w[:, :2] = 1.0",
        "v = w * 1",
        "w[...] = 5.0",
        "check('c', c)",
    ], ["c", "w", "v"]),
    "write_into_a_pending_expression_another_one_reads": ([
        "a = xp.asarray(numpy.arange(float({N})))",
        "a[0] = 3.0",
        "v = a * 2",
        "c = v[2:5] + 0",
        "v[0] = 7.0",
        "check('v', v)",
    ], ["a", "v", "c"]),
    "augment_by_a_pending_reduction_then_fancy_and_full_writes": ([
        "a = xp.asarray(numpy.arange(float({N})).reshape(-1, 1) * [1.0, 2.0])",
        "s = a.sum(axis=0)",
        "a -= s[-1]",
        "a[[1]] = -1.0",
        "a[...] = s",
    ], ["a", "s"]),
    "fancy_augment_of_a_pending_expression_by_itself": ([
        "a = xp.asarray(numpy.arange(1.0, {N} + 1.0))",
        "v = a + 0",
        "v[numpy.roll(numpy.arange({N}), 1)] += v",  # v[[2, 0, 1]] += v at 3 elements
    ], ["a", "v"]),
    "copyto_of_the_same_elements_into_a_read_only_view_copies_nothing": ([
        "a = xp.asarray(numpy.arange(float({N})))",
        "v = a.imag",  # read-only zeros
        "xp.copyto(v[:], v)",  # NumPy: the same elements in the same order: no write, no check
        "!xp.copyto(v[::-1], v)",  # reversed: ValueError (read-only)
        "r = xp.broadcast_to(a, (2, {N}))",
        "!xp.copyto(r, a)",
    ], ["a", "v"]),
    "python_complex_times_a_float64_scalar_is_a_python_complex": ([
        "a = xp.asarray(numpy.arange({N}).astype('uint8'))",
        "f = xp.asarray(numpy.zeros({N}))",
        "s = xp.dot(f, f)",  # a float64 scalar
        "z = 1j * s",  # Python's complex (float64 subclasses float), not a complex128
        "!a[-1:] = z",  # NumPy: TypeError (int() of a complex)
        "!f[:2] = z",  # TypeError (float() of a complex)
        "check('z', z)",
    ], ["a", "f"]),
    "read_only_out_is_reported_before_the_operand_types": ([
        "b = xp.asarray(numpy.arange({N}) % 2 == 0)",
        "v = b.imag",  # read-only zeros
        "!xp.subtract(v, v, out=v)",  # NumPy: ValueError (read-only), not the bool TypeError
        "!xp.negative(v, out=v)",
    ], ["b", "v"]),
    "python_int_out_of_range_is_reported_before_the_read_only_destination": ([
        "a = xp.asarray(numpy.arange({N}).astype('uint8'))",
        "r = xp.broadcast_to(a, (2, {N}))",
        "!xp.copyto(r, -2)",  # NumPy: OverflowError (the int's range comes first)
        "!xp.copyto(r, 300)",
    ], ["a", "r"]),
    "read_only_destination_is_reported_before_casting": ([
        "a = xp.asarray(numpy.arange({N}))",
        "r = xp.broadcast_to(a, (2, {N}))",
        "!xp.copyto(r, 1.5)",
        "!xp.subtract(r, 1.5, out=r)",
        "!r -= 1.5",
    ], ["a", "r"]),
    # a mask key with a value that is a view of the target: the test for `a[k] = a[k]`
    # compared the mask with the view's slicing key, elementwise, and raised ValueError
    # ("truth value ... ambiguous") where NumPy writes nothing (no element selected)
    "a_view_of_the_target_written_through_an_empty_mask": ([
        "a = xp.asarray(numpy.arange(2.0 * {N}).reshape(2, {N}))",
        "b = a * 1.5",
        "b[a > 1e9] = b[0, 0:0]",
        "b[a < 0] = b[1, :0]",
        "c = a.copy()",
        "c[xp.asarray(numpy.zeros((2, {N}), bool))] = c[1, 0:0]",
    ], ["b", "c"]),
}


def directed_program(lines: list[str], n: int, order) -> Program:
    stmts = []
    for line in lines:
        line = line.replace("{N}", str(n))
        stmts.append(("raises", ("src", line[1:])) if line.startswith("!") else ("src", line))
    stmts += [("check", name, ("n", name), 0.0) for name in order]
    stmts += [("check", f"{name}.flags.writeable",
               ("attr", ("attr", ("n", name), "flags"), "writeable"), 0.0) for name in order]
    stmts += [("check", f"shares_memory({a}, {b})", ("fn", "shares_memory",
                                                     (("n", a), ("n", b)), ()), 0.0)
              for a, b in itertools.combinations(order, 2)]
    return Program(tuple(stmts))


def _every_order(lines, names, n, mode):
    failures = []
    orders = list(itertools.permutations(names))
    for order in orders:
        with la.options(**MODES[mode]):
            try:
                check_program(directed_program(lines, n, order), la)
            except AssertionError as exc:
                failures.append((order, exc))
    if failures:
        bad = ", ".join("(" + " ".join(o) + ")" for o, _ in failures)
        raise AssertionError(f"{len(failures)} of {len(orders)} forcing orders fail: {bad}\n"
                             f"first failure, forcing {' '.join(failures[0][0])}:\n"
                             f"{failures[0][1]}")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("n", [5, 100_001])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_in_every_forcing_order(family, n, mode):
    lines, names = FAMILIES[family]
    _every_order(lines, names, n, mode)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("n", [5, 100_001])
@pytest.mark.parametrize("form", list(KNOWN_FORMS))
def test_known_issue_form_in_every_forcing_order(form, n, mode):
    lines, names = KNOWN_FORMS[form]
    _every_order(lines, names, n, mode)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("n", [5, 100_001])
@pytest.mark.parametrize("program", list(FOUND))
def test_found_program_in_every_forcing_order(program, n, mode):
    lines, names = FOUND[program]
    _every_order(lines, names, n, mode)
