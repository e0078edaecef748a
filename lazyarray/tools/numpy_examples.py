"""NumPy's own docstring examples, run against lazyarray: a differential corpus.

For every function lazyarray resolves -- the public functions of ``numpy``, ``numpy.linalg``,
``numpy.fft`` and ``numpy.random`` (as ``python -m lazyarray coverage`` lists them), and
lazyarray's classes that stand in for NumPy's (``ndarray``, ``ufunc``, the random
generators) -- the ``>>>`` examples of NumPy's docstring of the same object run twice, each
time in a fresh namespace: with ``np`` bound to ``numpy``, then to ``lazyarray`` (an
example's own ``import numpy as np``, ``from numpy.linalg import ...`` are rebound to the
lazyarray module). Every statement compares:

- where NumPy raises, the exception: lazyarray raises the same class or a subclass;
- otherwise each displayed value: its ``repr`` (whitespace and addresses normalized) and,
  for arrays, dtype, shape and values (floats to ``rtol=1e-12`` with NaN where NumPy has
  NaN, anything else exactly); and what the statement prints.

Statements that draw random numbers (from the first use of ``np.random``, ``default_rng``
or a generator on, the whole of ``numpy.random``'s docstrings, outputs marked ``# random``
or uninitialized) compare exception, type, dtype and shape only; outputs marked
``# may vary`` skip the printed forms. ``+SKIP`` examples, and statements that NumPy itself
fails on here without the docstring expecting it (a missing package such as matplotlib, a
name a skipped example defines), are not counted.

Each function gets one class: ``passes`` (every example matches, no NumPy fallback ran),
``falls back`` (every example matches, with counted fallbacks:
``cache_info()["fallbacks"]``), ``differs`` (the first mismatch is a different result),
``errors`` (lazyarray raised where NumPy did not, or a statement hung or crashed its
worker), ``skipped`` (nothing to compare).

Docstrings run in worker processes, each statement under a time limit (``signal.alarm``),
each docstring under a limit of its own after which the worker is killed and replaced:
no example hangs the tool or takes it down. ::

    python3 -m lazyarray.tools.numpy_examples [--markdown docs/numpy_examples.md]
        [--json FILE] [--only NAME,...] [--jobs N]

Names are as they follow ``numpy.``: ``sum``, ``linalg.norm``, ``random.rand``. Without
``--markdown`` or ``--json`` the totals and every function that does not pass are printed.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import dataclasses
import doctest
import io
import json
import math
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import numpy

import lazyarray
from lazyarray import _coverage

CLASSES = ("passes", "falls back", "differs", "errors", "skipped")
STATEMENT_LIMIT = 20  # seconds one statement may run, in either run
DOCSTRING_LIMIT = (120, 10)  # a worker's seconds per docstring: base + per example
RTOL = 1e-12
WORKER = "lazyarray.tools.numpy_examples"

# NumPy module -> (NumPy module, lazyarray module)
MODULES = {
    "numpy": (numpy, lazyarray),
    "numpy.linalg": (numpy.linalg, lazyarray.linalg),
    "numpy.fft": (numpy.fft, lazyarray.fft),
    "numpy.random": (numpy.random, lazyarray.random),
}
# what an example's imports of NumPy become in the lazyarray run
REBIND = {"numpy": "lazyarray", "numpy.linalg": "lazyarray.linalg", "numpy.fft": "lazyarray.fft",
          "numpy.random": "lazyarray.random", "numpy.testing": "lazyarray.testing"}

# draws of random numbers, and timings: values that differ between runs
RANDOM_SOURCE = re.compile(r"\brandom\.|default_rng|RandomState|\brng\b|\btimeit\b")
RANDOM_WANT = re.compile(r"#\s*random|uninitiali[sz]ed", re.IGNORECASE)
MAY_VARY = re.compile(r"#\s*may vary", re.IGNORECASE)
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
REPR_HEAD = re.compile(r"[\w.]*")  # `np.float64`, `array`, `matrix`: what kind of object prints
PARSER = doctest.DocTestParser()


# ---- what runs -------------------------------------------------------------------------------
def qualified(np_module: str, attr: str) -> str:
    """The name below ``numpy.``: ``sum``, ``linalg.norm``."""
    return attr if np_module == "numpy" else f"{np_module.removeprefix('numpy.')}.{attr}"


def targets() -> list[dict]:
    """Every function the corpus runs, in coverage order (module, then name): ``name``,
    ``module``, ``attr`` and ``kind`` (the coverage category, or ``class`` for lazyarray's
    own classes that replace NumPy's)."""
    out = []
    for module, attr, kind in _coverage.table()[0]:
        np_mod, la_mod = MODULES[module]
        if kind == "n/a":
            ours = vars(la_mod).get(attr)
            if (attr.startswith("_") or not isinstance(ours, type)
                    or ours is getattr(np_mod, attr, None)):
                continue
            kind = "class"
        out.append({"name": qualified(module, attr), "module": module, "attr": attr,
                    "kind": kind})
    return out


def select_targets(only: list[str] | None) -> list[dict]:
    """`targets`, restricted to the names in `only` (all of them when None)."""
    every = targets()
    if not only:
        return every
    known = {t["name"]: t for t in every}
    missing = [n for n in only if n not in known]
    if missing:
        raise SystemExit(f"numpy_examples: not in the corpus: {', '.join(missing)}")
    return [known[n] for n in sorted(set(only), key=[t["name"] for t in every].index)]


def examples_of(module: str, attr: str) -> list[doctest.Example]:
    """The examples of NumPy's docstring of ``module.attr`` (none if it does not parse)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = getattr(MODULES[module][0], attr).__doc__ or ""
    try:
        return PARSER.get_examples(doc, f"{module}.{attr}")
    except ValueError:
        return []


# ---- one statement, in one namespace (the worker) --------------------------------------------
class _Timeout(BaseException):
    """The statement passed `STATEMENT_LIMIT` (a BaseException: examples catch Exception)."""


def _on_alarm(signum, frame):
    raise _Timeout


@contextlib.contextmanager
def _time_limit(seconds: int):
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@dataclasses.dataclass
class Outcome:
    """What one statement did: the values it displayed (snapshots), what it printed, the
    exception it raised, or that it hung."""

    shown: list = dataclasses.field(default_factory=list)
    printed: str = ""
    exc_type: type | None = None
    exc_msg: str = ""
    hung: bool = False
    fallbacks: int = 0


class _Rebind(ast.NodeTransformer):
    """Imports of ``numpy`` (and its linalg, fft, random, testing) load lazyarray's."""

    def visit_Import(self, node):
        for a in node.names:
            if a.asname and a.name in REBIND:
                a.name = REBIND[a.name]
            elif not a.asname and a.name.split(".")[0] == "numpy":
                a.name, a.asname = "lazyarray", "numpy"
        return node

    def visit_ImportFrom(self, node):
        if not node.level and node.module in REBIND:
            node.module = REBIND[node.module]
        return node


def _compile(source: str, rebind: bool):
    tree = ast.parse(source, "<example>", mode="single")
    if rebind:
        tree = ast.fix_missing_locations(_Rebind().visit(tree))
    return compile(tree, "<example>", "single")


def _is_array(value) -> bool:
    """Arrays and NumPy scalars (a lazyarray scalar is a 0-d Array that prints as one)."""
    return isinstance(value, (numpy.ndarray, numpy.generic, lazyarray.Array))


def snapshot(value) -> dict:
    """A displayed value as it is now: its repr, its type's name, a NumPy copy of an array (or
    of a NumPy scalar) and the snapshots of the items of a tuple or list that holds arrays."""
    snap = {"repr": repr(value), "type": type(value).__name__, "array": None, "items": None}
    if _is_array(value):
        snap["array"] = numpy.array(numpy.asarray(value), copy=True)
    elif isinstance(value, (tuple, list)) and any(_is_array(v) for v in value):
        snap["items"] = [snapshot(v) for v in value]
    return snap


def run_statement(source: str, namespace: dict, rebind: bool) -> Outcome:
    """Run one example's source as doctest does (displayed values recorded, not printed)."""
    out, printed = Outcome(), io.StringIO()

    def display(value):
        if value is not None:
            out.shown.append(snapshot(value))
            builtins._ = value

    saved = sys.displayhook
    sys.displayhook = display
    before = lazyarray.cache_info()["fallbacks"]
    try:
        with _time_limit(STATEMENT_LIMIT), contextlib.redirect_stdout(printed):
            exec(_compile(source, rebind), namespace)
    except _Timeout:
        out.hung = True
    except (Exception, SystemExit) as e:  # the example's exception is its outcome
        out.exc_type, out.exc_msg = type(e), _message(e)
    finally:
        sys.displayhook = saved
    out.fallbacks = lazyarray.cache_info()["fallbacks"] - before
    out.printed = printed.getvalue()
    return out


def _message(e: BaseException) -> str:
    try:
        return str(e)
    except Exception:
        return "?"


# ---- one docstring, twice (the worker) -------------------------------------------------------
_PRINT_OPTIONS = numpy.get_printoptions()
_ERROR_STATE = numpy.geterr()


def _reset_state() -> None:
    """What examples change globally, back as it was: print options, error state, seed."""
    numpy.set_printoptions(**_PRINT_OPTIONS)
    numpy.seterr(**_ERROR_STATE)
    numpy.random.seed(0)


def run_examples(examples, module, rebind: bool) -> list[Outcome | None]:
    """Every example in one fresh namespace with ``np`` = `module` (None for ``+SKIP``)."""
    _reset_state()
    namespace = {"np": module, "__name__": "__main__", "__builtins__": builtins}
    return [None if ex.options.get(doctest.SKIP) else run_statement(ex.source, namespace, rebind)
            for ex in examples]


def _has_output(o: Outcome | None) -> bool:
    """Whether NumPy's run of the statement shows something: a value, a print, an exception."""
    return o is not None and bool(o.shown or o.printed.strip() or o.exc_type is not None)


def modes(examples, module: str) -> list[str]:
    """Per example: ``random`` (dtype and shape only), ``vary`` (no printed forms) or
    ``exact``. Everything from the first random draw on is random."""
    out, drawn = [], module == "numpy.random"
    for ex in examples:
        drawn = drawn or bool(RANDOM_SOURCE.search(ex.source))
        if drawn or RANDOM_WANT.search(ex.source + ex.want):
            out.append("random")
        else:
            out.append("vary" if MAY_VARY.search(ex.source + ex.want) else "exact")
    return out


def run_docstring(module: str, attr: str) -> dict:
    """Both runs of one docstring and a verdict per example; ``fallbacks`` counts lazyarray's
    NumPy fallbacks in its run, ``fallback_at`` is the first statement that ran one."""
    examples = examples_of(module, attr)
    if not examples:
        return {"examples": 0, "fallbacks": 0, "fallback_at": None, "random": False,
                "verdicts": []}
    kinds = modes(examples, module)
    reference = run_examples(examples, numpy, rebind=False)
    ours = run_examples(examples, lazyarray, rebind=True)
    verdicts = [dict(judge(ex, a, b, m), statement=shorten(ex.source, 70), output=_has_output(a))
                for ex, a, b, m in zip(examples, reference, ours, kinds)]
    fell_back = [(ex, o.fallbacks) for ex, o in zip(examples, ours) if o and o.fallbacks]
    return {"examples": len(examples), "fallbacks": sum(n for _, n in fell_back),
            "fallback_at": shorten(fell_back[0][0].source, 50) if fell_back else None,
            "random": "random" in kinds, "verdicts": verdicts}


# ---- comparing -------------------------------------------------------------------------------
def normalized(text: str) -> str:
    """Whitespace collapsed, addresses blanked."""
    return " ".join(ADDRESS.sub("0x?", text).split())


def shorten(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def same_values(a: numpy.ndarray, b: numpy.ndarray) -> bool:
    """Equal values: floats to `RTOL` with NaN at the same places, anything else exactly."""
    try:
        if a.dtype.kind in "fc":
            numpy.testing.assert_allclose(b, a, rtol=RTOL, atol=0, equal_nan=True)
        else:
            numpy.testing.assert_array_equal(b, a)
    except AssertionError:
        return False
    except Exception:  # values NumPy cannot compare (mixed objects): their reprs decide
        return True
    return True


def compare_value(x: dict, y: dict, mode: str) -> str | None:
    """Why snapshot `y` (lazyarray) differs from `x` (NumPy), or None."""
    ax, ay = x["array"], y["array"]
    if (ax is None) != (ay is None):
        if mode == "random":
            return "type"
    elif ax is not None:
        if ax.dtype != ay.dtype:
            return "dtype"
        if ax.shape != ay.shape:
            return "shape"
        if mode != "random" and not same_values(ax, ay):
            return "values"
    elif x["items"] is not None and y["items"] is not None and len(x["items"]) == len(y["items"]):
        reason = next(filter(None, (compare_value(i, j, mode)
                                    for i, j in zip(x["items"], y["items"]))), None)
        if reason:
            return reason
    elif mode == "random" and x["type"] != y["type"]:
        return "type"
    if mode == "exact" and normalized(x["repr"]) != normalized(y["repr"]):
        return _repr_reason(x, y)
    return None


def _repr_reason(x: dict, y: dict) -> str:
    """Why equal values print differently: a NumPy scalar against a 0-d array, the last
    digits of floats (values within `RTOL`), or the repr as a whole."""
    ax, ay = x["array"], y["array"]
    if ax is None or ay is None:
        return "repr"
    same_kind = REPR_HEAD.match(x["repr"]).group() == REPR_HEAD.match(y["repr"]).group()
    if ax.ndim == 0 and not same_kind:
        return "scalar vs 0-d array"
    return "float digits" if same_kind and ax.dtype.kind in "fc" else "repr"


def _shown(o: Outcome, mode: str) -> str:
    """What a statement showed, for a note; of a random one or one that may vary only types,
    dtypes and shapes (the note stays the same from run to run)."""
    if o.exc_type is not None:
        return f"raises {o.exc_type.__name__}"
    if o.shown:
        return " ; ".join(s["repr"] if mode == "exact" else _summary(s) for s in o.shown)
    return "printed output" if mode != "exact" and o.printed else o.printed or "nothing"


def _summary(snap: dict) -> str:
    array = snap["array"]
    return snap["type"] if array is None else f"{snap['type']} {array.dtype}{array.shape}"


def _verdict(status: str, reason: str = "", numpy_text: str = "", ours_text: str = "") -> dict:
    return {"status": status, "reason": reason, "numpy": shorten(ADDRESS.sub("0x?", numpy_text)),
            "lazyarray": shorten(ADDRESS.sub("0x?", ours_text))}


def judge(example: doctest.Example, a: Outcome | None, b: Outcome | None, mode: str) -> dict:
    """The verdict on one example: `a` is NumPy's outcome, `b` lazyarray's; ``status`` is
    match, differs, error, hung or skipped, ``reason`` says why."""
    if a is None:
        return _verdict("skipped", "+SKIP")
    if a.hung:
        return _verdict("skipped", "NumPy passes the time limit")
    if a.exc_type is not None and example.exc_msg is None:
        missing = a.exc_type.__name__ == "ModuleNotFoundError"
        return _verdict("skipped", f"needs {a.exc_msg.split(chr(39))[1]}" if missing and
                        a.exc_msg.count("'") >= 2 else f"NumPy raises {a.exc_type.__name__}")
    if b.hung:
        return _verdict("hung", "time limit", _shown(a, mode), f"over {STATEMENT_LIMIT} s")
    if a.exc_type is not None:
        if b.exc_type is not None and issubclass(b.exc_type, a.exc_type):
            return _verdict("match")
        return _verdict("differs", "exception", _shown(a, mode), _shown(b, mode))
    if b.exc_type is not None:
        return _verdict("error", b.exc_type.__name__, _shown(a, mode),
                        f"{b.exc_type.__name__}: {b.exc_msg}")
    if mode == "exact" and normalized(a.printed) != normalized(b.printed):
        return _verdict("differs", "printed", a.printed, b.printed)
    if len(a.shown) != len(b.shown):
        return _verdict("differs", "displayed values", _shown(a, mode), _shown(b, mode))
    for x, y in zip(a.shown, b.shown):
        reason = compare_value(x, y, mode)
        if reason:
            return _verdict("differs", reason, _describe(x, reason), _describe(y, reason))
    return _verdict("match")


def _describe(snap: dict, reason: str) -> str:
    if reason in ("dtype", "shape") and snap["array"] is not None:
        return f"{getattr(snap['array'], reason)}"
    if reason == "type":  # (random statements only)
        return _summary(snap)
    return snap["repr"]


# ---- the worker process ----------------------------------------------------------------------
def worker_main() -> int:
    """Answer one JSON line per requested docstring on the original standard output; what
    examples write to the file descriptor goes nowhere."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    warnings.simplefilter("ignore")
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = run_docstring(request["module"], request["attr"])
        except Exception as e:  # the tool's own fault: reported as a failure, not a crash
            answer = {"failure": f"harness error {type(e).__name__}: {_message(e)}"}
        answers.write(json.dumps(answer) + "\n")
    return 0


class Worker:
    """A worker process: killed and started again when a docstring passes its limit or the
    process dies."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.proc = None
        self.buffer = b""

    def _start(self) -> None:
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
        self.proc = subprocess.Popen([sys.executable, "-m", WORKER, "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=self.workdir, env=env)
        self.buffer = b""

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def ask(self, target: dict, limit: float) -> dict:
        """The worker's answer for `target`, or ``{"failure": ...}`` when it hung or died."""
        if self.proc is None:
            self._start()
        try:
            self.proc.stdin.write((json.dumps(target) + "\n").encode())
            self.proc.stdin.flush()
            line = self._read_line(limit)
        except (BrokenPipeError, OSError):
            line = None
        if line is not None:
            return json.loads(line)
        code = self.proc.poll()
        failure = "timed out" if code is None else f"crashed (exit status {code})"
        self.stop()
        return {"failure": failure}

    def _read_line(self, limit: float) -> bytes | None:
        deadline = time.monotonic() + limit
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


# ---- the run and its classification ----------------------------------------------------------
def classify(record: dict) -> tuple[str, str]:
    """(class, note) of one function's record (see the module docstring)."""
    if record.get("failure"):
        return "errors", f"worker {record['failure']}"
    compared = [v for v in record["verdicts"] if v["status"] != "skipped"]
    if not compared:
        reasons = sorted({v["reason"] for v in record["verdicts"]})
        return "skipped", "; ".join(reasons) if reasons else "no examples"
    bad = next((v for v in compared if v["status"] != "match"), None)
    if bad is None:
        notes = ["random: dtype and shape only"] if record["random"] else []
        if record["fallbacks"]:
            first = f"{record['fallbacks']} fallbacks, first `{_cell(record['fallback_at'])}`"
            return "falls back", "; ".join([first] + notes)
        return "passes", "; ".join(notes)
    cls = "errors" if bad["status"] in ("error", "hung") else "differs"
    return cls, (f"{bad['reason']}: `{_cell(bad['statement'])}` NumPy `{_cell(bad['numpy'])}`,"
                 f" lazyarray `{_cell(bad['lazyarray'])}`")


def _cell(text: str) -> str:
    return text.replace("`", "'").replace("|", "¦")


def _failed_record(target: dict, failure: str) -> dict:
    """The record of a docstring whose worker hung or died: its examples count, unmatched."""
    examples = examples_of(target["module"], target["attr"])
    verdicts = [_verdict("skipped", "+SKIP") if ex.options.get(doctest.SKIP)
                else _verdict("hung", failure) for ex in examples]
    return {"examples": len(examples), "fallbacks": 0, "fallback_at": None, "random": False,
            "verdicts": verdicts, "failure": failure}


def finish(target: dict, record: dict) -> dict:
    """A worker's record with its target, counts and class."""
    if record.get("failure"):
        record = _failed_record(target, record["failure"])
    verdicts = record["verdicts"]
    compared = sum(v["status"] != "skipped" for v in verdicts)
    matched = sum(v["status"] == "match" for v in verdicts)
    cls, note = classify(record)
    return {**target, **record, "compared": compared, "matched": matched, "class": cls,
            "note": note}


def _limit(target: dict) -> float:
    base, per_example = DOCSTRING_LIMIT
    return base + per_example * len(examples_of(target["module"], target["attr"]))


def _work(chosen: list[dict], results: dict, workdir: str, progress) -> None:
    worker = Worker(workdir)
    try:
        for target in chosen:
            results[target["name"]] = finish(target, worker.ask(target, _limit(target)))
            progress(results[target["name"]])
    finally:
        worker.stop()


def run(chosen: list[dict], jobs: int = 1, progress=lambda record: None) -> list[dict]:
    """The records of `chosen`, in their order. `jobs` workers take every jobs-th target each
    (a fixed split: each worker sees the same docstrings in the same order every run)."""
    results: dict = {}
    jobs = max(1, jobs)
    with tempfile.TemporaryDirectory(prefix="numpy_examples_") as workdir:
        folders = [os.path.join(workdir, str(i)) for i in range(jobs)]  # files examples write
        for folder in folders:
            os.mkdir(folder)
        threads = [threading.Thread(target=_work, args=(chosen[i::jobs], results, folders[i],
                                                        progress))
                   for i in range(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return [results[t["name"]] for t in chosen]


def totals(records: list[dict]) -> dict:
    """Examples in the docstrings, compared, matched (and the percentage), skipped, hung or
    crashed statements, those compared that show something in NumPy's run (a value, a print,
    an exception) and how many of them match; functions per class."""
    examples = sum(r["examples"] for r in records)
    compared = sum(r["compared"] for r in records)
    matched = sum(r["matched"] for r in records)
    shown = [v for r in records for v in r["verdicts"]
             if v["status"] != "skipped" and v.get("output", True)]
    return {
        "functions": len(records),
        "examples": examples,
        "compared": compared,
        "matched": matched,
        # rounded down: a figure never shows a goal reached that is not
        "match_percent": math.floor(10000 * matched / compared) / 100 if compared else 100.0,
        "skipped": examples - compared,
        "with_output": len(shown),
        "with_output_matched": sum(v["status"] == "match" for v in shown),
        "hung": sum(v["status"] == "hung" for r in records for v in r["verdicts"]),
        "classes": {c: sum(r["class"] == c for r in records) for c in CLASSES},
    }


# ---- reports ---------------------------------------------------------------------------------
COMMAND = "python3 -m lazyarray.tools.numpy_examples --markdown docs/numpy_examples.md"


def render_markdown(records: list[dict]) -> str:
    t = totals(records)
    out = [
        "# NumPy's docstring examples",
        "",
        f"<!-- Generated by `{COMMAND}`; do not edit. -->",
        "",
        f"Generated with NumPy {numpy.__version__} by `{COMMAND}` (`--json FILE` writes every "
        "mismatch, `--only NAME,...` runs some functions). The `>>>` examples of NumPy's "
        "docstring of each function lazyarray resolves run twice, in fresh namespaces: with "
        "`np` bound to `numpy`, then to `lazyarray`. Each statement compares the exception "
        "where NumPy raises (lazyarray must raise the same class or a subclass), else every "
        "displayed value (its `repr`, and for arrays dtype, shape and values: floats to "
        "`rtol=1e-12`, the rest exactly) and what it prints. Statements that draw random "
        "numbers compare type, dtype and shape only. `+SKIP` examples and statements NumPy "
        "itself cannot run here (matplotlib, names from skipped examples) are not counted.",
        "",
        "Classes: **passes** (every example matches, no NumPy fallback ran), **falls back** "
        "(every example matches, through counted fallbacks), **differs** (the first mismatch "
        "is a different result), **errors** (lazyarray raised where NumPy did not, or a "
        "statement passed its time limit), **skipped** (nothing to compare). The note of a "
        "mismatch is its first one: why, the statement, NumPy's output, lazyarray's. "
        "`tests/test_numpy_examples.py` holds the match rate to a ratchet. The options apply: "
        "`LAZYARRAY_EAGER_THRESHOLD=0` runs the corpus on compiled kernels.",
        "",
        "## Totals",
        "",
        "| | |",
        "|---|---:|",
        f"| functions | {t['functions']} |",
        f"| examples in their docstrings | {t['examples']} |",
        f"| compared | {t['compared']} |",
        f"| matched | {t['matched']} ({t['match_percent']:.2f} %) |",
        f"| compared that show a value, print or raise | {t['with_output']} |",
        f"| of those, matched | {t['with_output_matched']} |",
        f"| not counted (skipped) | {t['skipped']} |",
    ]
    out += [f"| functions: {c} | {t['classes'][c]} |" for c in CLASSES]
    out += ["", "## Per function", "",
            "| name | kind | examples | compared | matched | class | note |",
            "|---|---|---:|---:|---:|---|---|"]
    out += [f"| `{r['name']}` | {r['kind']} | {r['examples']} | {r['compared']} | "
            f"{r['matched']} | {r['class']} | {r['note']} |" for r in records]
    return "\n".join(out) + "\n"


def render_text(records: list[dict]) -> str:
    t = totals(records)
    lines = [f"{t['functions']} functions, {t['examples']} examples, {t['compared']} compared, "
             f"{t['matched']} matched ({t['match_percent']:.2f} %), {t['hung']} hung",
             "  " + ", ".join(f"{c}: {n}" for c, n in t["classes"].items())]
    lines += [f"{r['name']:28s} {r['class']:10s} {r['matched']}/{r['compared']}  {r['note']}"
              for r in records if r["class"] not in ("passes", "falls back")]
    return "\n".join(lines) + "\n"


def _json_ready(records: list[dict]) -> dict:
    keep = ("name", "module", "kind", "examples", "compared", "matched", "class", "note",
            "fallbacks", "fallback_at", "random", "failure")
    rows = [{**{k: r.get(k) for k in keep},
             "mismatches": [v for v in r["verdicts"] if v["status"] not in ("match", "skipped")]}
            for r in records]
    return {"numpy": numpy.__version__, "totals": totals(records), "functions": rows}


def _progress(stream):
    done = [0]
    lock = threading.Lock()

    def report(record: dict) -> None:
        with lock:
            done[0] += 1
            if done[0] % 50 == 0:
                print(f"  {done[0]} functions run", file=stream, flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lazyarray.tools.numpy_examples",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", metavar="PATH", help="write the table as Markdown")
    parser.add_argument("--json", metavar="FILE", help="write every record as JSON")
    parser.add_argument("--only", metavar="NAME,...", help="run these functions only")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    records = run(select_targets(only), args.jobs, _progress(sys.stderr))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(render_markdown(records))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(_json_ready(records), f, indent=1, sort_keys=True)
    sys.stdout.write(render_text(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
