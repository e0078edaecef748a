"""Random straight-line programs over views, in-place writes and pending lazy expressions,
run with NumPy and with lazyarray side by side (the engine of tests/test_version_fuzz.py).

A program is data: a tuple of statements, each a small tuple built from expression tuples
(see `render_expr` and `render`).  Rendered, a statement is Python source that names the
array namespace ``xp``; `check_program` executes that source statement by statement, once
with ``xp = numpy`` (the oracle) and once with ``xp = lazyarray``, so the source printed for
a failing program (`Program.source`) is exactly what ran, and is itself a reproducer.

Observations.  A program calls ``check(label, value)`` where it forces a value (and, at its
end, on every surviving name, on ``flags.writeable`` and on ``shares_memory`` of pairs);
each observation of lazyarray is compared at once with NumPy's observation at the same
point: kind, shape, dtype and values.  A statement NumPy raises on is wrapped in
``try``/``except`` and observed as "raised <first builtin exception class>": lazyarray must
raise the same class there.

Tolerances.  Values are tracked with an absolute error bound while the program is drawn:
0 for values that every correct implementation computes bit for bit (integers; + - * /
sqrt, comparisons, copies and casts of such values), and a bound propagated from the
inexact operations otherwise (transcendental functions, powers, complex products, float
reductions and products whose summation order is free).  Exact values are compared with
the dtype's base tolerance (float32/complex64 1e-6, float64/complex128 1e-12, relative, no
absolute part); inexact values also get ``4 * bound`` absolute.  Operations that are
discontinuous (comparisons, ``//``, ``%``, ``**``, casts to integers or bool, masks, where
conditions, divisors) only ever read exact values, so a last-bit difference can never be
amplified into a false report.

Not drawn, because NumPy's result is not a reference there: undefined casts (NaN or
out-of-range floats into integers), integer division by zero and ``INT_MIN // -1``;
integer powers with negative exponents (a value-dependent error, which lazyarray documents
raising when the value is computed); assignments whose value overlaps the target where
NumPy's result depends on its loop order (``a[::2] = a[:5]``, ``np.copyto(a[::3], a[::2])``,
``a[a > 0] = a[::-1]``, ``a[a[::-1]] = 0``: NumPy 2.4 reads values, or the mask, after it
has overwritten them); ``np.negative`` of 4-byte items into a strided ``out=`` (a NumPy 2.4
SIMD bug).  Everything runs under ``np.errstate(all="ignore")``, where lazyarray may also
update buffers in place.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
from hypothesis import strategies as st

# ---------------------------------------------------------------------------------------------
# sizes and dtypes
# ---------------------------------------------------------------------------------------------

#: base shapes per size tier: tiny arrays run on the eager tier, ~3000 elements on the
#: interpreter/trace tier, ~100_001 elements on compiled kernels (default options)
SHAPES = {
    "tiny": [(3,), (5,), (6,), (4, 5), (3, 4), (2, 3, 4)],
    "mid": [(3000,), (3001,), (50, 60), (60, 50), (10, 15, 20)],
    "large": [(100_001,), (317, 316)],
}
DTYPES = ["float64", "float64", "float32", "int64", "int32", "int8", "uint8", "bool",
          "complex128"]
#: relative tolerance per result dtype (values not bit-reproducible also get an absolute part)
RTOL = {"float16": 1e-3, "float32": 1e-6, "complex64": 1e-6, "float64": 1e-12,
        "complex128": 1e-12}

INT_LITERALS = [0, 1, 2, 3, -1, -2, 7, 300]
FLOAT_LITERALS = [0.5, -1.5, 2.5, 0.0, 1000.0]
COMPLEX_LITERALS = [1j, (2 - 1j)]
BOOL_LITERALS = [True, False]
DIVISORS = [2, 3, -3, 7, 0.5, -1.5]

ARITH = ["+", "-", "*", "/", "//", "%", "**"]
COMPARE = ["<", "<=", "==", "!=", ">", ">="]
AUGMENT = ["+", "-", "*", "/", "//"]
#: operations whose result jumps on a last-bit change of an operand: exact operands only
DISCONTINUOUS = {"//", "%", "**", *COMPARE}
UFUNC_NAMES = {"+": "add", "-": "subtract", "*": "multiply", "/": "true_divide",
               "//": "floor_divide", "maximum": "maximum"}

# ---------------------------------------------------------------------------------------------
# rendering: expressions and statements as Python source
# ---------------------------------------------------------------------------------------------


def _render_item(item) -> str:
    if item is Ellipsis:
        return "..."
    if item is None:
        return "None"
    if isinstance(item, slice):
        parts = ["" if v is None else str(v) for v in (item.start, item.stop, item.step)]
        return ":".join(parts[:2]) if item.step is None else ":".join(parts)
    if isinstance(item, list):
        return repr(item)
    if isinstance(item, tuple):  # an expression (a mask)
        return render_expr(item)
    return repr(item)


def render_key(key: tuple) -> str:
    if len(key) == 0:
        return "()"
    if len(key) == 1:
        return _render_item(key[0])
    return ", ".join(_render_item(k) for k in key)


def _literal(v) -> str:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return f"float({str(v)!r})"
    return repr(v)


def _atom(expr) -> str:
    """`expr` rendered so that it can be followed by `.attr`, `[key]` or an operator."""
    s = render_expr(expr)
    if expr[0] in ("bin", "un") or (expr[0] == "lit" and s.startswith("-")):
        return f"({s})"
    return s


def render_expr(expr) -> str:
    """Python source of an expression tuple:

    ("n", name) | ("lit", value) | ("data", seed, shape, dtype) | ("idx", base, key) |
    ("attr", base, name) | ("meth", base, name, args, kwargs) | ("fn", name, args, kwargs) |
    ("py", name, args) | ("bin", op, lhs, rhs) | ("un", op, operand) | ("tuple", items)
    (args: tuples of expressions, kwargs: tuples of (keyword, expression)).
    """
    tag = expr[0]
    if tag == "n":
        return expr[1]
    if tag == "lit":
        return _literal(expr[1])
    if tag == "tuple":
        items = [render_expr(e) for e in expr[1]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if tag == "data":
        return render_data(*expr[1:])
    if tag == "idx":
        return f"{_atom(expr[1])}[{render_key(expr[2])}]"
    if tag == "attr":
        return f"{_atom(expr[1])}.{expr[2]}"
    if tag in ("meth", "fn", "py"):
        args = [render_expr(a) for a in expr[3 if tag == "meth" else 2]]
        if tag != "py":
            kwargs = expr[4 if tag == "meth" else 3]
            args += [f"{k}={render_expr(v)}" for k, v in kwargs]
        call = "(" + ", ".join(args) + ")"
        if tag == "meth":
            return f"{_atom(expr[1])}.{expr[2]}{call}"
        if tag == "fn":
            return f"xp.{expr[1]}{call}"
        return f"{expr[1]}{call}"
    if tag == "bin":
        return f"{_atom(expr[2])} {expr[1]} {_atom(expr[3])}"
    if tag == "un":
        return f"{expr[1]}{_atom(expr[2])}"
    raise ValueError(f"unknown expression {expr!r}")


def render_data(seed, shape, dtype) -> str:
    """NumPy source for a base array's data: small integers (quarters for floats, so that
    sums stay exact for a while), zeros included."""
    rng = f"numpy.random.default_rng({seed})"
    if dtype == "bool":
        return f"{rng}.integers(0, 2, {shape!r}).astype(bool)"
    if dtype == "uint8":
        return f"{rng}.integers(0, 10, {shape!r}).astype('uint8')"
    if dtype.startswith("int"):
        return f"{rng}.integers(-9, 10, {shape!r}).astype({dtype!r})"
    if dtype.startswith("complex"):
        return f"({rng}.integers(-9, 10, {(*shape, 2)!r}) @ numpy.array([1, 1j]))"
    return f"({rng}.integers(-36, 37, {shape!r}) / 4).astype({dtype!r})"


def render(stmt, indent: str = "") -> list[str]:
    """Source lines of a statement tuple:

    ("let", name, expr) | ("set", target, key, value) | ("aug", target, op, value) |
    ("do", expr) | ("del", name) | ("check", label, expr, err) | ("raises", stmt) |
    ("src", text)
    """
    tag = stmt[0]
    if tag == "let":
        return [f"{indent}{stmt[1]} = {render_expr(stmt[2])}"]
    if tag == "set":
        return [f"{indent}{_atom(stmt[1])}[{render_key(stmt[2])}] = {render_expr(stmt[3])}"]
    if tag == "aug":
        return [f"{indent}{render_expr(stmt[1])} {stmt[2]}= {render_expr(stmt[3])}"]
    if tag == "do":
        return [f"{indent}{render_expr(stmt[1])}"]
    if tag == "del":
        return [f"{indent}del {stmt[1]}"]
    if tag == "check":
        return [f"{indent}check({stmt[1]!r}, {render_expr(stmt[2])})"]
    if tag == "raises":
        inner = render(stmt[1], indent + "    ")
        return [f"{indent}try:", *inner, f"{indent}except Exception as exc:",
                f"{indent}    check('raised', exc)", f"{indent}else:",
                f"{indent}    check('raised', None)"]
    if tag == "src":
        return [indent + line for line in stmt[1].splitlines()]
    raise ValueError(f"unknown statement {stmt!r}")


HEADER = """\
import numpy, lazyarray as la
xp = la  # xp = numpy runs the reference; with la.options(...) as the test names
numpy.seterr(all="ignore")  # as the tests run: lazyarray may then update buffers in place
def check(label, value):  # lazyarray must observe what NumPy observes here
    if not isinstance(value, (bool, BaseException, type(None))):
        value = numpy.asarray(value)
    print(label, repr(value))
"""


@dataclasses.dataclass(frozen=True)
class Program:
    """A straight-line program (statement tuples) and the error bound of each check."""

    stmts: tuple

    def source(self, mark: int | None = None) -> str:
        out = []
        for k, stmt in enumerate(self.stmts):
            lines = render(stmt)
            if k == mark:
                lines[0] += "  # <-- here"
            out += lines
        return HEADER + "\n".join(out)

    def __repr__(self):
        return "Program(\n" + self.source() + "\n)"

    def _repr_pretty_(self, printer, cycle):  # Hypothesis prints a falsifying program so
        printer.text(repr(self))


_CODE: dict[str, object] = {}


def _compiled(stmt):
    src = "\n".join(render(stmt))
    code = _CODE.get(src)
    if code is None:
        code = _CODE[src] = compile(src, "<program>", "exec")
    return code


# ---------------------------------------------------------------------------------------------
# observing and comparing
# ---------------------------------------------------------------------------------------------


def builtin_exception(exc: BaseException) -> str:
    """The first builtin class in the exception's MRO: NumPy's UFuncTypeError is TypeError,
    AxisError is ValueError."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return type(exc).__name__


def observe(value):
    """A comparable snapshot of `value` (forces a lazy array)."""
    if isinstance(value, BaseException):
        return ("raised", builtin_exception(value))
    if value is None:
        return ("raised", None)
    if type(value) is bool:
        return ("bool", value)
    # a Python number (float(x.sum()), or NumPy's `1j - float64 scalar`) compares as the 0-d
    # array lazyarray gives for it
    return ("array", np.array(np.asarray(value), copy=True))


def _describe(got, want) -> str:
    bad = ~((got == want) | (_isnan(got) & _isnan(want)))
    idx = np.argwhere(bad) if bad.ndim else np.zeros((1, 0), dtype=int)
    lines = [f"{int(bad.sum())} of {bad.size} elements differ"]
    for i in idx[:6]:
        t = tuple(int(v) for v in i)
        lines.append(f"  at {t}: lazyarray={got[t]!r} numpy={want[t]!r}")
    if got.size <= 24:
        lines.append(f"  lazyarray = {got!r}\n  numpy     = {want!r}")
    return "\n".join(lines)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _isnan(a):
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)


def compare(got, want, err: float) -> tuple[str, str] | None:
    """None when lazyarray's observation `got` matches NumPy's `want`, else (what differs:
    "kind", "outcome", "shape", "dtype" or "values"; a description)."""
    if got[0] != want[0]:
        return "kind", f"lazyarray observed {got!r}, NumPy {want!r}"
    if got[0] in ("raised", "bool"):
        return None if got[1] == want[1] else (
            "outcome", f"lazyarray: {got[1]!r}, NumPy: {want[1]!r}")
    g, w = got[1], want[1]
    if g.shape != w.shape:
        return "shape", f"shape: lazyarray {g.shape}, NumPy {w.shape}"
    if g.dtype != w.dtype:
        return "dtype", f"dtype: lazyarray {g.dtype}, NumPy {w.dtype}"
    if w.dtype.kind not in "fc":
        return None if np.array_equal(g, w) else ("values", _describe(g, w))
    rtol = RTOL.get(w.dtype.name, 1e-12)
    try:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=4 * err, equal_nan=True)
    except AssertionError as e:
        return "values", (f"(rtol={rtol}, atol={4 * err:.3g})\n" + _describe(g, w) + "\n"
                          + str(e)[:600])
    return None


class ProgramMismatch(AssertionError):
    """lazyarray observed something else than NumPy, or raised where NumPy did not.

    Subclasses name what differs, so that Hypothesis reports each kind of failure it finds
    as a distinct bug instead of the first one only."""


class ValueMismatch(ProgramMismatch):
    """A forced value differs (values, shape, dtype or kind of result)."""


class ExceptionMismatch(ProgramMismatch):
    """NumPy raised and lazyarray did not, or raised another exception class."""


class LazyRaised(ProgramMismatch):
    """lazyarray raised (at a statement or when forcing a value) where NumPy did not."""


class FlagsMismatch(ProgramMismatch):
    """``flags.writeable`` differs."""


class SharingMismatch(ProgramMismatch):
    """``shares_memory`` of two names differs."""


def _mismatch_class(label: str, what: str) -> type[ProgramMismatch]:
    if label.endswith(".flags.writeable"):
        return FlagsMismatch
    if label.startswith("shares_memory("):
        return SharingMismatch
    if label == "raised" or what == "outcome":
        return ExceptionMismatch
    return ValueMismatch


def _quiet():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")
    return ctx


def run(program: Program, xp, on_check) -> None:
    """Execute `program` with namespace `xp`; `on_check(k, label, value)` receives every
    observation (k: the statement's index)."""
    env = {"xp": xp, "numpy": np}
    current = [0]
    env["check"] = lambda label, value: on_check(current[0], label, value)
    for k, stmt in enumerate(program.stmts):
        current[0] = k
        try:
            exec(_compiled(stmt), env)
        except ProgramMismatch:
            raise
        except Exception as exc:
            if xp is np:
                raise
            raise LazyRaised(
                f"statement {k} raised {type(exc).__name__}: {exc} on lazyarray; "
                f"NumPy did not\n\n{program.source(mark=k)}") from exc


def _error_bound(program: Program, k: int) -> float:
    stmt = program.stmts[k]
    return stmt[3] if stmt[0] == "check" else 0.0


def check_program(program: Program, lazy_namespace) -> None:
    """Run `program` with NumPy, then with `lazy_namespace`, comparing every observation."""
    ref: list = []
    ctx = _quiet()
    try:
        with np.errstate(all="ignore"):
            run(program, np, lambda k, label, v: ref.append((k, label, observe(v))))
        seen = [0]

        def on_check(k, label, value):
            j = seen[0]
            seen[0] += 1
            if j >= len(ref):
                raise ExceptionMismatch(f"extra observation {label!r} at statement {k}\n\n"
                                      + program.source(mark=k))
            kr, label_r, want = ref[j]
            if (kr, label_r) != (k, label):
                raise ExceptionMismatch(
                    f"observation {j}: lazyarray at statement {k} ({label!r}), NumPy at "
                    f"statement {kr} ({label_r!r})\n\n" + program.source(mark=k))
            try:
                got = observe(value)
            except Exception as exc:
                raise LazyRaised(
                    f"forcing {label!r} (statement {k}) raised {type(exc).__name__}: {exc}"
                    f"\n\n{program.source(mark=k)}") from exc
            why = compare(got, want, _error_bound(program, k))
            if why:
                cls = _mismatch_class(label, why[0])
                raise cls(f"check {label!r} at statement {k} differs: {why[1]}\n\n"
                          + program.source(mark=k))

        with np.errstate(all="ignore"):
            run(program, lazy_namespace, on_check)
        if seen[0] != len(ref):
            k = ref[seen[0]][0]
            raise ExceptionMismatch(f"lazyarray skipped observation {ref[seen[0]][1]!r} at "
                                  f"statement {k}\n\n" + program.source(mark=k))
    finally:
        ctx.__exit__(None, None, None)


# ---------------------------------------------------------------------------------------------
# error bounds
# ---------------------------------------------------------------------------------------------


def _eps(dtype) -> float:
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype).eps) if dtype.kind in "fc" else 0.0


def _amax(v) -> float:
    a = np.abs(np.asarray(v))
    if a.dtype.kind == "b":
        a = a.astype(np.int8)
    a = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    return float(a.max()) if a.size else 0.0


def _min_nonzero_abs(v) -> float:
    a = np.abs(np.asarray(v, dtype=np.complex128 if np.iscomplexobj(v) else np.float64))
    a = a[a != 0]
    return float(a.min()) if a.size else 1.0


def _dtype(v):
    return np.asarray(v).dtype


def _inexact(v) -> bool:
    return _dtype(v).kind in "fc"


def binary_error(op, x, y, ex, ey, out) -> float:
    """A bound on the absolute error of `x op y` (values NumPy computed), given the bounds of
    the operands."""
    if not _inexact(out):
        return 0.0
    eo, mo = _eps(_dtype(out)), _amax(out)
    complex_op = _dtype(out).kind == "c" and op in ("*", "/", "**")
    base = 4 * eo * mo if (op == "**" or complex_op) else 0.0
    if ex == 0 and ey == 0:
        return base
    mx, my = _amax(x), _amax(y)
    if op in ("*",):
        e = ex * my + ey * mx + ex * ey
    elif op == "/":
        e = ex / _min_nonzero_abs(y)
    else:  # + - maximum minimum where
        e = ex + ey
    return e + base + 2 * eo * mo


def reduction_error(kind, x, ex, axis, out) -> float:
    """A bound on the error of a sum / mean / cumsum / max of `x` (summation order free)."""
    if not _inexact(out):
        return 0.0
    if kind == "max":
        return ex
    xa = np.abs(np.asarray(x)).astype(np.float64)
    n = xa.size if axis is None or xa.ndim == 0 else xa.shape[axis]
    s = _amax(np.sum(xa, axis=axis if xa.ndim else None))
    e = n * ex + (4 * math.sqrt(n) + 8) * _eps(_dtype(out)) * s
    if kind == "mean":
        e = e / max(n, 1) + 4 * _eps(_dtype(out)) * _amax(out)
    return e


def product_error(x, y, ex, ey, out) -> float:
    if not _inexact(out):
        return 0.0
    xa = np.abs(np.asarray(x)).astype(np.float64)
    ya = np.abs(np.asarray(y)).astype(np.float64)
    k = xa.shape[-1] if xa.ndim else 1
    s = _amax(np.dot(xa, ya.T if (xa.ndim == 2 and ya.ndim == 2 and ya.shape[0] != k)
                     else ya))
    return k * (ex * _amax(y) + ey * _amax(x)) + (4 * math.sqrt(k) + 8) * _eps(
        _dtype(out)) * s


# ---------------------------------------------------------------------------------------------
# drawing programs
# ---------------------------------------------------------------------------------------------


def _n(name):
    return ("n", name)


def _lit(v):
    return ("lit", v)


def _base_name(expr):
    while expr[0] in ("idx", "attr"):
        expr = expr[1]
    return expr[1] if expr[0] == "n" else None


class _Builder:
    """Draws a program statement by statement, running each on NumPy to know the shapes,
    dtypes, writeability and error bounds of the live names."""

    def __init__(self, draw, size: str, with_del: bool = True):
        self.draw = draw
        self.size = size
        self.with_del = with_del
        self.env = {"xp": np, "numpy": np, "check": lambda label, value: None}
        self.err: dict[str, float] = {}
        self.stmts: list = []
        self.count = 0
        self.cap = 0

    # ---- environment --------------------------------------------------------------------
    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def names(self, pred=None) -> list[str]:
        return [n for n in self.err if pred is None or pred(n)]

    def value(self, name):
        return self.env[name]

    def is_array(self, name) -> bool:
        return isinstance(self.env[name], np.ndarray)

    def pick(self, pred=None):
        names = self.names(pred)
        return self.draw(st.sampled_from(names)) if names else None

    def ev(self, expr):
        return eval(compile(render_expr(expr), "<expr>", "eval"), self.env)

    def ev_err(self, expr) -> float:
        name = _base_name(expr)
        return self.err.get(name, 0.0) if name else 0.0

    def emit(self, stmt, after=None) -> bool:
        try:
            exec(_compiled(stmt), self.env)
        except Exception:
            self.stmts.append(("raises", stmt))
            return False
        self.stmts.append(stmt)
        if after is not None:
            after()
        return True

    def emit_store(self, stmt, region_expr, value_expr, after) -> None:
        """Emit a statement that stores `value_expr` into the view `region_expr`, unless the
        value overlaps the region in a way NumPy gets wrong: its assignment copies an
        overlapping value only in some layouts, so ``a[::2] = a[:5]`` depends on its loop
        order (NumPy 2.4 gives [0, 1, 1, 3, 1, ...]).  Such a statement is undone and not
        drawn; lazyarray is compared with the copy-first result everywhere else."""
        try:
            region, value = self.ev(region_expr), self.ev(value_expr)
        except Exception:
            return self.emit(stmt, after)
        if not (isinstance(region, np.ndarray) and isinstance(value, np.ndarray)
                and region.flags.writeable and np.may_share_memory(region, value)):
            return self.emit(stmt, after)
        before, expected = region.copy(), np.empty_like(region)
        try:
            expected[...] = value
        except Exception:
            return self.emit(stmt, after)
        if not self.emit(stmt):
            return None
        if not _same(region, expected):
            region[...] = before
            self.stmts.pop()
            return None
        return after()

    def let(self, expr, err_fn) -> None:
        """`name = expr`; `err_fn(value)` gives the new name's error bound."""
        name = self.fresh()

        def after():
            self.err[name] = float(err_fn(self.env[name]))

        self.emit(("let", name, expr), after)

    def written(self, base: str, e_new: float) -> None:
        """`base`'s buffer was written with values of error bound `e_new`."""
        v = self.env[base]
        if not isinstance(v, np.ndarray):
            self.err[base] = e_new
            return
        for n in self.names(self.is_array):
            if np.may_share_memory(self.env[n], v):
                self.err[n] = max(self.err[n], e_new)

    # ---- pieces ---------------------------------------------------------------------------
    def small_or_any(self, lo, hi):
        return self.draw(st.one_of(st.integers(max(lo, -3), min(hi, 3)), st.integers(lo, hi)))

    def axis_item(self, n):
        kind = self.draw(st.sampled_from(["slice", "slice", "slice", "int", "full"]))
        if kind == "int" and n > 0:
            return self.small_or_any(-n, n - 1)
        if kind == "full":
            return slice(None)
        bound = st.one_of(st.none(), st.integers(-3, 3), st.integers(-n - 1, n + 1))
        step = self.draw(st.sampled_from([None, 1, 2, -1, -2, 3, -3]))
        return slice(self.draw(bound), self.draw(bound), step)

    def basic_key(self, shape) -> tuple:
        nd = len(shape)
        k = self.draw(st.integers(min(1, nd), nd))
        items = [self.axis_item(shape[i]) for i in range(k)]
        form = self.draw(st.sampled_from(["plain", "plain", "plain", "ellipsis", "newaxis",
                                          "tail"]))
        if form == "ellipsis":
            items.append(Ellipsis)
        elif form == "newaxis":
            items.insert(self.draw(st.integers(0, len(items))), None)
        elif form == "tail" and nd:
            items = [Ellipsis, self.axis_item(shape[-1])]
        return tuple(items) if items else (Ellipsis,)

    def fancy_key(self, shape) -> tuple:
        if not shape or shape[0] == 0:
            return ([0],)
        idx = st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=5)
        form = self.draw(st.sampled_from(["first", "first", "second", "pair"]))
        if form == "second" and len(shape) >= 2 and shape[1] > 0:
            return (slice(None), self.draw(st.lists(st.integers(-shape[1], shape[1] - 1),
                                                    min_size=1, max_size=5)))
        if form == "pair" and len(shape) >= 2 and shape[1] > 0:
            a = self.draw(idx)
            b = self.draw(st.lists(st.integers(-shape[1], shape[1] - 1), min_size=len(a),
                                   max_size=len(a)))
            return (a, b)
        return (self.draw(idx),)

    def literal(self, kinds="ifcb", nonzero=False):
        pools = []
        if "i" in kinds:
            pools += [INT_LITERALS] * 5
        if "f" in kinds:
            pools += [FLOAT_LITERALS] * 3
        if "c" in kinds:
            pools += [COMPLEX_LITERALS]
        if "b" in kinds:
            pools += [BOOL_LITERALS]
        pool = self.draw(st.sampled_from(pools))
        if nonzero:
            pool = [v for v in DIVISORS if any(isinstance(v, type(p)) for p in pool)] or [2]
        return _lit(self.draw(st.sampled_from(pool)))

    def window(self, d, t):
        """A slice of an axis of length d that has length t (d >= t)."""
        start = self.small_or_any(0, d - t) if d > t else 0
        form = self.draw(st.sampled_from(["fwd", "fwd", "rev", "step2"]))
        if form == "rev" and t > 0:
            last = start + t - 1
            return slice(last, start - 1 if start > 0 else None, -1)
        if form == "step2" and t > 0 and start + 2 * (t - 1) < d:
            return slice(start, start + 2 * t - 1, 2)
        if start == 0 and t == d:
            return slice(None)
        return slice(start, start + t)

    def fit(self, target_shape, pred=None, exact_shape=False, same=None):
        """An operand expression (a name, or a window of one) whose shape broadcasts to
        `target_shape` (equals it with `exact_shape`); `same` prefers that name."""
        cands = self.names(lambda n: (pred is None or pred(n)))
        if not cands:
            return None
        if same in cands and self.draw(st.booleans()):
            name = same
        else:
            name = self.draw(st.sampled_from(cands))
        shape = np.shape(self.env[name])
        t = tuple(target_shape)
        if exact_shape and len(shape) < len(t):
            return None
        key = []
        extra = len(shape) - len(t)
        for d in shape[:max(extra, 0)]:
            if d == 0:
                return None
            key.append(self.small_or_any(-d, d - 1))
        rest = shape[max(extra, 0):]
        tail = t[len(t) - len(rest):] if rest else ()
        windows = []
        for d, want in zip(rest, tail):
            if d == want:
                windows.append(self.window(d, want) if self.draw(st.booleans()) else slice(None))
            elif d > want:
                windows.append(self.window(d, want))
            elif d == 1 and not exact_shape:
                windows.append(slice(None))
            else:
                return None
        key += windows
        while key and key[-1] == slice(None):
            key.pop()
        return ("idx", _n(name), tuple(key)) if key else _n(name)

    def operand(self, pred=None, view_prob=0.35):
        """A name, or (sometimes) a basic-indexed view of one, inline."""
        name = self.pick(pred)
        if name is None:
            return None
        v = self.env[name]
        if isinstance(v, np.ndarray) and v.ndim and self.draw(st.floats(0, 1)) < view_prob:
            return ("idx", _n(name), self.basic_key(v.shape))
        return _n(name)

    def exact(self, name) -> bool:
        return self.err[name] == 0

    def writable_array(self, name) -> bool:
        v = self.env[name]
        return isinstance(v, np.ndarray) and (v.flags.writeable or self.draw(st.integers(0, 9))
                                              == 0)

    def value_for(self, target_value, exact_only=False):
        """A value to store into `target_value`: a literal or an operand that broadcasts."""
        if self.draw(st.integers(0, 9)) < 4:
            return self.literal()
        pred = self.exact if exact_only else None
        return self.fit(np.shape(target_value), pred) or self.literal()

    def safe_store(self, target_value, value_expr):
        """`value_expr`, or a literal if storing it would need an undefined cast (NaN or out
        of range into integers) or a discontinuous one of an inexact value."""
        tk = np.asarray(target_value).dtype.kind
        try:
            v = np.asarray(self.ev(value_expr))
        except Exception:
            return value_expr
        if tk in "iub" and v.dtype.kind in "fc":
            if self.ev_err(value_expr):
                return _lit(1)
            if tk in "iu":
                r = np.real(v)
                info = np.iinfo(np.asarray(target_value).dtype)
                if not (np.all(np.isfinite(r)) and np.all((r > info.min - 1) &
                                                          (r < info.max + 1))):
                    return _lit(1)
        return value_expr

    def pair_ok(self, op, xv, ex, yv, ey) -> bool:
        kx, ky = _dtype(xv).kind, _dtype(yv).kind
        if op in DISCONTINUOUS and (ex or ey):
            return False
        if op in ("//", "%"):
            if "c" in (kx, ky) or np.any(np.asarray(yv) == 0):
                return False
            if kx in "iu" and ky in "iu" and np.any(np.asarray(yv) == -1):
                return False  # INT_MIN // -1 overflows: undefined
        if op == "/" and (ey or (ex and np.any(np.asarray(yv) == 0))):
            return False
        if op == "**" and kx in "iub" and ky in "iub" and np.any(np.asarray(yv) < 0):
            return False  # a value-dependent error: lazyarray raises it when computing
        if op in ("maximum", "<", "<=", ">", ">=") and "c" in (kx, ky):
            return False
        return True

    def size_ok(self, *values) -> bool:
        try:
            shape = np.broadcast_shapes(*(np.shape(v) for v in values))
        except ValueError:
            return True  # NumPy raises: an observed outcome
        return math.prod(shape) <= self.cap

    # ---- statements -----------------------------------------------------------------------
    def s_view(self):
        name = self.pick(self.is_array)
        if name is None:
            return
        v = self.env[name]
        x = _n(name)
        src = name
        kind = self.draw(st.sampled_from(
            ["key", "key", "key", "T", "transpose", "reshape", "reshape", "ravel", "squeeze",
             "swapaxes", "real", "imag", "ellipsis", "newaxis", "reshape11"]))
        if kind == "key":
            expr = ("idx", x, self.basic_key(v.shape))
        elif kind == "T":
            expr = ("attr", x, "T")
        elif kind == "transpose":
            perm = tuple(self.draw(st.permutations(range(v.ndim))))
            expr = (("meth", x, "transpose", (_lit(perm),), ()) if self.draw(st.booleans())
                    else ("fn", "transpose", (x, _lit(perm)), ()))
        elif kind == "reshape":
            expr = ("meth", x, "reshape", (_lit(self.new_shape(v.size)),), ())
            if self.draw(st.booleans()):
                expr = ("fn", "reshape", (x, _lit(self.new_shape(v.size))), ())
        elif kind == "ravel":
            expr = ("meth", x, "ravel", (), ()) if self.draw(st.booleans()) else (
                "fn", "ravel", (x,), ())
        elif kind == "squeeze":
            expr = ("meth", x, "squeeze", (), ()) if self.draw(st.booleans()) else (
                "fn", "squeeze", (x,), ())
        elif kind == "swapaxes":
            i = self.draw(st.integers(-v.ndim, v.ndim - 1)) if v.ndim else 0
            j = self.draw(st.integers(-v.ndim, v.ndim - 1)) if v.ndim else 0
            expr = ("fn", "swapaxes", (x, _lit(i), _lit(j)), ())
        elif kind in ("real", "imag"):
            if v.dtype.kind != "c":
                other = self.pick(lambda n: self.is_array(n) and self.env[n].dtype.kind == "c")
                if other is not None and self.draw(st.integers(0, 3)):
                    x, src = _n(other), other
            expr = ("attr", x, kind)
        elif kind == "ellipsis":
            expr = ("idx", x, (Ellipsis,))
        elif kind == "newaxis":
            expr = ("idx", x, (None,))
        else:  # a size-1 value (a full reduction's scalar, ...) reshaped: a new array
            small = self.pick(lambda n: np.size(self.env[n]) == 1)
            if small is None:
                return
            expr = ("fn", "reshape", (_n(small), _lit((1, 1))), ())
            return self.let(expr, lambda out: self.err[small])
        self.let(expr, lambda out: self.err[src])

    def new_shape(self, size):
        divs = [d for d in range(2, 21) if size % d == 0]
        options = [(-1,), (size,), (1, size), (size, 1), (1, -1)]
        for d in divs[:4]:
            options += [(d, -1), (-1, d), (size // d, d)]
        return self.draw(st.sampled_from(options))

    def s_copy(self):
        name = self.pick()
        if name is None:
            return
        v = self.env[name]
        x = _n(name)
        e = self.err[name]
        kind = self.draw(st.sampled_from(
            ["fancy", "fancy", "mask", "mask", "copy", "npcopy", "array", "flatten", "astype",
             "astype_same", "asarray", "asarray_copy", "asarray_dtype", "ascontiguous",
             "broadcast", "broadcast_astype"]))
        is_arr = isinstance(v, np.ndarray)
        if kind in ("fancy", "mask", "flatten", "broadcast", "broadcast_astype") and (
                not is_arr or v.ndim == 0):
            kind = "copy" if is_arr else "asarray_copy"
        if kind == "fancy":
            return self.let(("idx", x, self.fancy_key(v.shape)), lambda out: e)
        if kind == "mask":
            mask = self.mask_for(v.shape)
            if mask is None:
                return
            return self.let(("idx", x, (mask,)), lambda out: e)
        if kind == "copy":
            return self.let(("meth", x, "copy", (), ()), lambda out: e)
        if kind == "npcopy":
            return self.let(("fn", "copy", (x,), ()), lambda out: e)
        if kind == "array":
            return self.let(("fn", "array", (x,), ()), lambda out: e)
        if kind == "flatten":
            return self.let(("meth", x, "flatten", (), ()), lambda out: e)
        if kind in ("astype", "asarray_dtype"):
            dt = self.cast_target(v, e)
            if kind == "astype":
                kw = (("copy", _lit(False)),) if self.draw(st.booleans()) else ()
                expr = ("meth", x, "astype", (_lit(dt),), kw)
            else:
                expr = ("fn", "asarray", (x,), (("dtype", _lit(dt)),))
            return self.let(expr, lambda out: e + (_eps(out.dtype) * _amax(out)
                                                   if e and out.dtype != v.dtype else 0))
        if kind == "astype_same":
            return self.let(("meth", x, "astype", (("attr", x, "dtype"),),
                             (("copy", _lit(False)),)), lambda out: e)
        if kind == "asarray":
            return self.let(("fn", "asarray", (x,), ()), lambda out: e)
        if kind == "asarray_copy":
            return self.let(("fn", "asarray", (x,), (("copy", _lit(True)),)), lambda out: e)
        if kind == "ascontiguous":
            return self.let(("fn", "ascontiguousarray", (x,), ()), lambda out: e)
        if v.size * 2 > self.cap:
            return
        shape = (2, *v.shape) if self.draw(st.booleans()) else v.shape
        expr = ("fn", "broadcast_to", (x, _lit(shape)), ())
        if kind == "broadcast_astype":
            expr = ("meth", expr, "astype", (("attr", x, "dtype"),), (("copy", _lit(False)),))
        self.let(expr, lambda out: e)

    def cast_target(self, v, e) -> str:
        """A dtype to cast `v` to; integers and bool only where the cast is defined and
        exact-to-exact."""
        dt = self.draw(st.sampled_from(DTYPES + ["float32", "complex64"]))
        kind = np.dtype(dt).kind
        src = np.asarray(v)
        if kind in "iub" and src.dtype.kind in "fc":
            if e:
                return "float64"
            if kind in "iu":
                r = np.real(src)
                info = np.iinfo(dt)
                if not (np.all(np.isfinite(r)) and np.all((r > info.min - 1) &
                                                          (r < info.max + 1))):
                    return "float64"
        return dt

    def mask_for(self, shape, target=None):
        """A boolean mask expression of `shape` (exact operands only).  A mask for a write
        into `target` never shares its memory: NumPy's boolean assignment reads such a mask
        while it writes (``a[a[::-1]] = 0`` depends on its loop order)."""
        if self.draw(st.booleans()):
            bools = self.fit(shape, lambda n: np.asarray(self.env[n]).dtype.kind == "b",
                             exact_shape=True)
            if bools is not None and np.shape(self.ev(bools)) == tuple(shape) and not (
                    target is not None and np.may_share_memory(self.ev(bools), target)):
                return bools
        x = self.fit(shape, lambda n: self.exact(n) and
                     np.asarray(self.env[n]).dtype.kind != "c", exact_shape=True)
        if x is None or np.shape(self.ev(x)) != tuple(shape):
            return None
        op = self.draw(st.sampled_from([">", "<", "==", "!=", ">=", "<="]))
        return ("bin", op, x, self.literal("if"))

    def s_unary(self):
        name = self.pick()
        if name is None:
            return
        x = self.operand(lambda n: n == name)
        v, e = self.ev(x), self.err[name]
        kind = self.draw(st.sampled_from(["neg", "abs", "exp", "sqrt", "square", "npneg",
                                          "invert"]))
        if kind in ("exp", "sqrt", "invert") and e:
            kind = "neg"
        if kind == "neg":
            return self.let(("un", "-", x), lambda out: e)
        if kind == "npneg":
            return self.let(("fn", "negative", (x,), ()), lambda out: e)
        if kind == "invert":
            return self.let(("un", "~", x), lambda out: 0.0)
        if kind == "abs":
            return self.let(("fn", "abs", (x,), ()), lambda out: e + (
                4 * _eps(out.dtype) * _amax(out) if np.asarray(v).dtype.kind == "c" else 0))
        if kind == "square":
            return self.let(("fn", "square", (x,), ()), lambda out: (
                2 * e * _amax(v) + e * e + (2 * _eps(_dtype(out)) * _amax(out) if e else 0)
                if _inexact(out) else 0.0))
        if kind == "exp":
            return self.let(("fn", "exp", (x,), ()),
                            lambda out: 4 * _eps(_dtype(out)) * _amax(out))
        # sqrt of abs: correctly rounded, except for abs of complex (hypot)
        return self.let(("fn", "sqrt", (("fn", "abs", (x,), ()),), ()), lambda out: (
            4 * _eps(_dtype(out)) * _amax(out) if np.asarray(v).dtype.kind == "c" else 0.0))

    def s_binary(self):
        op = self.draw(st.sampled_from(ARITH + ARITH + COMPARE + ["maximum"]))
        pred = self.exact if op in DISCONTINUOUS else None
        x = self.operand(pred)
        if x is None:
            return
        xv, ex = self.ev(x), self.ev_err(x)
        if self.draw(st.integers(0, 9)) < 3 or op == "**":
            y = self.literal(nonzero=op in ("//", "%"))
            if op == "**":
                y = _lit(self.draw(st.sampled_from([0, 1, 2, 3, -1, 2, 0.5, 2.5])))
        else:
            y = self.fit(np.shape(xv), pred, same=_base_name(x)) or self.literal()
        yv, ey = self.ev(y), self.ev_err(y)
        if not self.pair_ok(op, xv, ex, yv, ey):
            y = _lit(2)
            yv, ey = 2, 0.0
            if not self.pair_ok(op, xv, ex, yv, ey):
                return
        if not self.size_ok(xv, yv):
            return
        if self.draw(st.booleans()):  # operands swapped
            if self.pair_ok(op, yv, ey, xv, ex):
                x, y, xv, yv, ex, ey = y, x, yv, xv, ey, ex
        if x[0] == "lit" and y[0] == "lit":
            return
        if op == "maximum":
            expr = ("fn", "maximum", (x, y), ())
        else:
            expr = ("bin", op, x, y)
        self.let(expr, lambda out: binary_error(op, xv, yv, ex, ey, out))

    def s_where(self):
        name = self.pick()
        if name is None:
            return
        shape = np.shape(self.env[name])
        cond = self.mask_for(shape)
        if cond is None:
            return
        a = self.fit(shape) or self.literal()
        b = self.fit(shape) or self.literal()
        av, bv = self.ev(a), self.ev(b)
        if not self.size_ok(av, bv, self.ev(cond)):
            return
        ea, eb = self.ev_err(a), self.ev_err(b)
        self.let(("fn", "where", (cond, a, b), ()),
                 lambda out: (ea + eb + (2 * _eps(_dtype(out)) * _amax(out) if ea + eb else 0))
                 if _inexact(out) else 0.0)

    def s_reduce(self):
        x = self.operand(lambda n: self.is_array(n))
        if x is None:
            return
        v, e = self.ev(x), self.ev_err(x)
        if not isinstance(v, np.ndarray):
            return
        kind = self.draw(st.sampled_from(["sum", "sum", "max", "mean", "cumsum"]))
        if kind == "max" and v.dtype.kind == "c":
            kind = "sum"
        axis = None
        if v.ndim and self.draw(st.integers(0, 2)):
            axis = self.draw(st.integers(-v.ndim, v.ndim - 1))
        kw = () if axis is None else (("axis", _lit(axis)),)
        if self.draw(st.booleans()):
            expr = ("meth", x, kind, (), kw)
        else:
            expr = ("fn", kind, (x,), kw)
        self.let(expr, lambda out: reduction_error(kind, v, e, axis, out))

    def s_dot(self):
        x = self.operand(lambda n: self.is_array(n) and self.env[n].ndim in (1, 2))
        if x is None:
            return
        xv, ex = self.ev(x), self.ev_err(x)
        if not isinstance(xv, np.ndarray) or xv.ndim not in (1, 2):
            return
        k = xv.shape[-1]
        if xv.ndim == 2 and self.draw(st.booleans()):
            y = ("attr", x, "T")
        else:
            y = self.fit((k,), lambda n: self.is_array(n), exact_shape=True)
            if y is None:
                return
        yv, ey = self.ev(y), self.ev_err(y)
        if np.size(xv) * max(np.shape(yv)[-1:] + (1,)) > 4e7:
            return
        form = self.draw(st.sampled_from(["dot", "@", "matmul"]))
        expr = ("fn", "dot", (x, y), ()) if form == "dot" else (
            ("bin", "@", x, y) if form == "@" else ("fn", "matmul", (x, y), ()))
        self.let(expr, lambda out: product_error(xv, yv, ex, ey, out))

    # ---- writes ---------------------------------------------------------------------------
    def target(self):
        """A write target: a name (an array, mostly writable) or a view of one, inline."""
        name = self.pick(self.writable_array)
        if name is None:
            return None, None
        v = self.env[name]
        form = self.draw(st.sampled_from(["name", "name", "basic", "basic", "basic", "fancy",
                                          "mask"]))
        if form == "basic" and v.ndim:
            return name, ("idx", _n(name), self.basic_key(v.shape))
        if form == "fancy" and v.ndim:
            return name, ("idx", _n(name), self.fancy_key(v.shape))
        if form == "mask" and v.ndim:
            mask = self.mask_for(v.shape, target=v)
            if mask is not None:
                return name, ("idx", _n(name), (mask,))
        return name, _n(name)

    def s_setitem(self):
        name = self.pick(self.writable_array)
        if name is None:
            return
        v = self.env[name]
        form = self.draw(st.sampled_from(["basic", "basic", "basic", "fancy", "mask",
                                          "ellipsis", "colon"]))
        if v.ndim == 0:
            form = "ellipsis"
        if form == "basic":
            key = self.basic_key(v.shape)
        elif form == "fancy":
            key = self.fancy_key(v.shape)
        elif form == "mask":
            mask = self.mask_for(v.shape, target=v)
            if mask is None:
                return
            key = (mask,)
        elif form == "ellipsis":
            key = (Ellipsis,)
        else:
            key = (slice(None),)
        try:
            region = self.ev(("idx", _n(name), key))
        except Exception:
            region = v
        if form == "mask" and self.draw(st.booleans()):
            src = self.fit(v.shape, exact_shape=True, same=name)
            value = (("idx", src, key) if src is not None and np.shape(self.ev(src)) == v.shape
                     else self.literal())
        else:
            value = self.value_for(region)
            if form == "mask" and value[0] != "lit" and np.may_share_memory(self.ev(value), v):
                # NumPy's boolean-mask assignment reads an overlapping value as it writes
                # (a[a > 0] = a[::-1] depends on its loop order): not a reference to test with
                value = self.literal()
        value = self.safe_store(region, value)
        ev = self.ev_err(value) + self.cast_error(region, value)
        stmt = ("set", _n(name), key, value)
        if form in ("fancy", "mask"):  # NumPy's advanced assignment copies overlapping values
            self.emit(stmt, lambda: self.written(name, ev))
        else:
            self.emit_store(stmt, ("idx", _n(name), key), value, lambda: self.written(name, ev))

    def cast_error(self, target_value, value_expr) -> float:
        """Rounding of an inexact stored value into a narrower float target."""
        if not self.ev_err(value_expr):
            return 0.0
        tv = np.asarray(target_value).dtype
        vv = np.asarray(self.ev(value_expr))
        if tv.kind in "fc" and _eps(tv) > _eps(vv.dtype):
            return _eps(tv) * _amax(vv)
        return 0.0

    def s_augment(self):
        if self.draw(st.integers(0, 5)) == 0:  # a name bound to a NumPy scalar: rebinds
            name = self.pick(lambda n: not self.is_array(n))
            if name is None:
                return
            t = _n(name)
        else:
            name, t = self.target()
            if name is None:
                return
        op = self.draw(st.sampled_from(AUGMENT))
        try:
            tv = np.array(self.ev(t), copy=True)
        except Exception:
            tv = np.asarray(self.env[name])
        et = self.err[name]
        value = self.value_for(tv) if op not in ("//",) else self.literal(nonzero=True)
        if self.draw(st.integers(0, 3)) == 0:
            value = self.fit(np.shape(tv), same=name) or value
        vv, ev = self.ev(value), self.ev_err(value)
        if not self.pair_ok(op, tv, et, vv, ev):
            value, vv, ev = _lit(2), 2, 0.0
            if not self.pair_ok(op, tv, et, vv, ev):
                return
        if not self.size_ok(tv, vv):
            return

        def after():
            out = self.ev(t) if t[0] == "n" else self.ev(t)
            self.written(name, binary_error(op, tv, vv, et, ev, out)
                         + self.cast_error(out, value))

        self.emit(("aug", t, op, value), after)

    def s_copyto(self):
        name, dst = self.target()
        if name is None:
            return
        try:
            dv = self.ev(dst)
        except Exception:
            return
        src = self.fit(np.shape(dv), same=name) if self.draw(st.integers(0, 4)) else None
        src = src or self.literal()
        src = self.safe_store(dv, src)
        es = self.ev_err(src) + self.cast_error(dv, src)
        self.emit_store(("do", ("fn", "copyto", (dst, src), ())), dst, src,
                        lambda: self.written(name, es))

    def s_ufunc_out(self):
        name = self.pick(self.writable_array)
        if name is None:
            return
        v = self.env[name]
        dst = (("idx", _n(name), self.basic_key(v.shape)) if v.ndim and self.draw(
            st.booleans()) else _n(name))
        try:
            dv = self.ev(dst)
        except Exception:
            return
        if not isinstance(dv, np.ndarray):
            return
        op = self.draw(st.sampled_from(["+", "-", "*", "maximum", "negative", "negative"]))
        if op == "negative":
            src = dst if self.draw(st.booleans()) else (self.fit(dv.shape, same=name) or dst)
            es = self.ev_err(src)
            sv = np.asarray(self.ev(src))
            if sv.dtype.itemsize == 4 and not (sv.flags.c_contiguous and dv.flags.c_contiguous):
                # NumPy 2.4's SIMD negative of 4-byte items reads an input of stride 4 items
                # as contiguous when `out` is strided (np.negative(x[::4], out=y[::4]))
                return
            return self.emit(("do", ("fn", "negative", (src,), (("out", dst),))),
                             lambda: self.written(name, es))
        a = self.fit(dv.shape, same=name) or dst
        b = self.fit(dv.shape) if self.draw(st.booleans()) else self.literal()
        b = b or self.literal()
        av, bv, ea, eb = self.ev(a), self.ev(b), self.ev_err(a), self.ev_err(b)
        if not self.pair_ok(op, av, ea, bv, eb):
            return

        def after():
            out = self.ev(dst)
            self.written(name, binary_error(op, av, bv, ea, eb, out))

        self.emit(("do", ("fn", UFUNC_NAMES[op], (a, b), (("out", dst),))), after)

    def s_put_fill(self):
        name = self.pick(self.writable_array)
        if name is None:
            return
        v = self.env[name]
        kinds = {"b": "b", "u": "ib", "i": "ib"}.get(v.dtype.kind, "ifb")
        if self.draw(st.booleans()) and v.size:
            idx = self.draw(st.lists(st.integers(-v.size, v.size - 1), min_size=1, max_size=4))
            vals = [self.literal(kinds)[1] for _ in range(self.draw(st.integers(1, 2)))]
            vals = [abs(x) if v.dtype.kind == "u" and not isinstance(x, bool) else x
                    for x in vals]
            stmt = ("do", ("fn", "put", (_n(name), _lit(idx), _lit(vals)), ()))
        else:
            val = self.literal(kinds)[1]
            stmt = ("do", ("meth", _n(name), "fill", (_lit(val),), ()))
        self.emit(stmt, lambda: self.written(name, self.err[name]))

    def s_check(self):
        name = self.pick()
        if name is None:
            return
        v, e = self.env[name], self.err[name]
        if self.draw(st.integers(0, 3)) or not isinstance(v, np.ndarray):
            self.stmts.append(("check", name, _n(name), e))
            return
        conv = "complex" if v.dtype.kind == "c" else "float"
        expr = ("py", conv, (("meth", _n(name), "sum", (), ()),))
        with np.errstate(all="ignore"):
            # (the bound in the sum's own dtype: a float32 sum rounds as float32, in an order
            # of lazyarray's own; its Python float is only converted after)
            err = reduction_error("sum", v, e, None, np.asarray(v.sum()))
        self.stmts.append(("check", f"{conv}({name}.sum())", expr, err))

    def s_del(self):
        name = self.pick()
        if name is None or len(self.err) < 3:
            return
        self.stmts.append(("del", name))
        del self.env[name]
        del self.err[name]

    STATEMENTS = {
        "view": 6, "copy": 3, "unary": 2, "binary": 5, "where": 1, "reduce": 2, "dot": 1,
        "setitem": 5, "augment": 4, "copyto": 2, "ufunc_out": 2, "put_fill": 1, "check": 2,
        "del": 1,
    }

    # ---- the program ----------------------------------------------------------------------
    def build(self, n_statements: int) -> Program:
        shapes = SHAPES[self.size]
        main = self.draw(st.sampled_from(shapes))
        self.cap = 2 * math.prod(main) + 64
        for i in range(self.draw(st.integers(2, 3))):
            shape = main
            if i:
                form = self.draw(st.sampled_from(["same", "same", "trailing", "other"]))
                if form == "trailing" and len(main) > 1:
                    shape = main[1:]
                elif form == "other":
                    shape = self.draw(st.sampled_from(shapes))
            dtype = self.draw(st.sampled_from(DTYPES))
            seed = self.draw(st.integers(0, 99))
            name = "abc"[i]
            self.emit(("let", name, ("fn", "asarray", (("data", seed, shape, dtype),), ())))
            self.err[name] = 0.0
        kinds = [k for k, w in self.STATEMENTS.items() for _ in range(w)
                 if k != "del" or self.with_del]
        for _ in range(n_statements):
            getattr(self, "s_" + self.draw(st.sampled_from(kinds)))()
        names = self.names()
        for name in self.draw(st.permutations(names)):
            self.stmts.append(("check", name, _n(name), self.err[name]))
        for name in names:
            if self.is_array(name):
                self.stmts.append(("check", f"{name}.flags.writeable",
                                   ("attr", ("attr", _n(name), "flags"), "writeable"), 0.0))
        if len(names) >= 2:
            pairs = self.draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names))
                                       .filter(lambda p: p[0] != p[1]), max_size=6))
            for a, b in pairs:
                self.stmts.append(("check", f"shares_memory({a}, {b})",
                                   ("fn", "shares_memory", (_n(a), _n(b)), ()), 0.0))
        return Program(tuple(self.stmts))


@st.composite
def programs(draw, size: str = "tiny", min_statements: int = 10, max_statements: int = 40):
    """Straight-line programs over 2-3 base arrays of the `size` tier ("tiny", "mid",
    "large"), `min_statements` to `max_statements` statements before the final checks."""
    n = draw(st.integers(min_statements, max_statements))
    ctx = _quiet()
    try:
        with np.errstate(all="ignore"):
            return _Builder(draw, size).build(n)
    finally:
        ctx.__exit__(None, None, None)
