"""NumPy's floating-point error state (`np.errstate`, `np.seterr`) on every tier.

NumPy reports divide-by-zero, overflow, underflow and invalid operations per ufunc call, as
its error state says: ignore, warn (a `RuntimeWarning` such as "divide by zero encountered in
divide"), raise (`FloatingPointError`), call, print or log. lazyarray reproduces it so:

* An evaluation under "raise", "call", "print" or "log" for any category, or "warn" for
  underflow, runs on the interpreter (`compiled_ok` is False): NumPy's own loops report.
* Otherwise every category is "ignore" or "warn". The categories in "warn" are *recorded*
  during the evaluation (`recording`): NumPy calls of the interpreter run with them turned
  to "raise"; a `FloatingPointError` gives NumPy's exact message, which is recorded, and the
  call is repeated with that category ignored (so one call can report several categories,
  in NumPy's order). Compiled kernels cannot read NumPy's state: each counts the elements
  where an instruction *may* have raised a flag (a non-finite result from operands that are
  not NaN, an integer division by zero, a float-to-int cast out of range) and returns the
  count; a kernel that returns non-zero has its fusion re-run on the interpreter, recording,
  which decides exactly what NumPy reports. The kernel's values are kept.
* At the end of the evaluation the recorded messages are issued once each, as
  `RuntimeWarning`s attributed to the user's line that forced the evaluation (`emit`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import warnings

import numpy as np

try:  # NumPy 2 keeps its error state in a context variable: reading it is cheap
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ
except ImportError:  # pragma: no cover - another NumPy layout: np.geterr each time
    _EXTOBJ = None

CATEGORIES = ("divide", "over", "under", "invalid")
_CATEGORY_OF = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
                "invalid value": "invalid"}
_KERNEL_SAFE = ("ignore", "warn")  # modes a compiled kernel can honour


def compiled_ok() -> bool:
    """May compiled kernels run under the error state in force? Kernels detect divide,
    overflow and invalid (so "ignore" and "warn" are fine) but not underflow. Memoized on
    NumPy's state object, as `_warn_state` is."""
    global _ok
    obj = _EXTOBJ.get() if _EXTOBJ is not None else None
    if obj is not None and _ok[0] is obj:
        return _ok[1]
    err = np.geterr()
    ok = err["under"] == "ignore" and all(
        err[c] in _KERNEL_SAFE for c in ("divide", "over", "invalid"))
    if obj is not None:
        _ok = (obj, ok)
    return ok


_ok: tuple = (None, False)  # (NumPy's error state object, compiled_ok() under it)


class Recorder:
    """The floating-point warnings one evaluation owes, in the order they arose."""

    __slots__ = ("messages", "raising", "warn")

    def __init__(self, warn: frozenset[str]):
        self.warn = warn  # the categories in "warn"
        self.messages: list[str] = []
        self.raising = {c: "raise" for c in warn}  # np.errstate overrides that record them

    def add(self, message: str) -> None:
        if message not in self.messages:
            self.messages.append(message)


_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "lazyarray_fp_recorder", default=None)


def active() -> Recorder | None:
    """The recorder of the evaluation in progress in this thread (None: nothing warns)."""
    return _current.get()


_last: tuple = (None, frozenset(), None)  # (NumPy state object, its "warn" set, raising state)


def _warn_state() -> tuple:
    """(state, the categories in "warn", the same state with those raising), memoized on
    NumPy's state object (np.geterr costs microseconds)."""
    global _last
    obj = _EXTOBJ.get() if _EXTOBJ is not None else None
    last = _last
    if obj is not None and last[0] is obj:
        return last
    err = np.geterr()
    warn = frozenset(c for c in CATEGORIES if err[c] == "warn")
    raising = None
    if _EXTOBJ is not None and warn:
        with np.errstate(**{c: "raise" for c in warn}):
            raising = _EXTOBJ.get()
    state = (obj, warn, raising)
    if obj is not None:
        _last = state
    return state


@contextlib.contextmanager
def recording():
    """Record the warnings of one evaluation; yields the Recorder, or None when no category is
    in "warn" (then nothing is checked and nothing recorded)."""
    warn = _warn_state()[1]
    if not warn:
        yield None
        return
    rec = Recorder(warn)
    token = _current.set(rec)
    try:
        yield rec
    finally:
        _current.reset(token)


def category(exc: FloatingPointError) -> str | None:
    """The errstate category of NumPy's "<what> encountered in <ufunc>" message."""
    text = str(exc)
    for prefix, cat in _CATEGORY_OF.items():
        if text.startswith(prefix):
            return cat
    return None


def retry(rec: Recorder, exc: FloatingPointError, fn, *args):
    """`fn(*args)` raised `exc` under the recording state: record it (or re-raise a category
    the user set to "raise"), then repeat the call with the recorded categories ignored,
    until it completes. Returns its result."""
    overrides = dict(rec.raising)
    while True:
        cat = category(exc)
        if cat not in rec.warn or overrides.get(cat) != "raise":
            raise exc
        rec.add(str(exc))
        overrides[cat] = "ignore"
        try:
            with np.errstate(**overrides):
                return fn(*args)
        except FloatingPointError as again:
            exc = again


def call(fn, *args):
    """`fn(*args)` (a NumPy call) under the caller's error state, recording its warnings when an
    evaluation is recording."""
    rec = _current.get()
    if rec is None:
        return fn(*args)
    try:
        with np.errstate(**rec.raising):
            return fn(*args)
    except FloatingPointError as exc:
        return retry(rec, exc, fn, *args)


_INTERNAL = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # lazyarray
             os.path.dirname(np.__file__) + os.sep)


def user_frame():
    """The innermost frame outside lazyarray and NumPy: the user's line (None if none)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_INTERNAL):
        f = f.f_back
    return f


def emit(rec: Recorder | None, frame=None) -> None:
    """Issue the recorded warnings as NumPy would, attributed to `frame` (default: the user's
    line, `user_frame`)."""
    if rec is None or not rec.messages:
        return
    frame = frame or user_frame()
    if frame is None:
        for message in rec.messages:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    g = frame.f_globals
    registry = g.setdefault("__warningregistry__", {})
    for message in rec.messages:
        # no module_globals: a loader that cannot give source (code from stdin, a REPL)
        # would make showing the warning fail; the line is read from the file name instead
        warnings.warn_explicit(message, RuntimeWarning, frame.f_code.co_filename,
                               frame.f_lineno, g.get("__name__", "<string>"), registry)
