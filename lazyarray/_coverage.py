"""How each public NumPy name resolves in lazyarray, and the fallback wrappers of the submodules.

Every public name of ``numpy``, ``numpy.linalg``, ``numpy.fft`` and ``numpy.random`` (its
``__all__``) resolves in the matching lazyarray module. Each is one of:

``native-lazy``
    lazyarray implements it itself: calls build graph nodes and compute nothing.
``fallback``
    NumPy's function run on computed inputs, array results wrapped as lazy Arrays; every
    call adds one to ``cache_info()["fallbacks"]``.
``numpy``
    NumPy's own function, re-exported unchanged (dtype and printing utilities, the legacy
    random seeding functions): it takes no array data.
``n/a``
    classes, dtypes and scalar types, constants and modules (NumPy's own objects, except
    ``ndarray`` and lazyarray's own submodules and wrapper classes).

``python -m lazyarray coverage`` prints the totals and the fallbacks;
``python -m lazyarray coverage --markdown docs/coverage.md`` writes the full table.
"""

from __future__ import annotations

import functools
import importlib
import sys
import textwrap
import types
import warnings

import numpy as np

from lazyarray.array import numpy_fallback

CATEGORIES = ("native-lazy", "fallback", "numpy", "n/a")

# (NumPy module, lazyarray module)
MODULES = (
    ("numpy", "lazyarray"),
    ("numpy.linalg", "lazyarray.linalg"),
    ("numpy.fft", "lazyarray.fft"),
    ("numpy.random", "lazyarray.random"),
)


# ---- fallback wrappers (shared by the submodules) -------------------------------------------
def fallback(func):
    """A counted fallback to NumPy's `func`, as ``lazyarray.__getattr__`` makes them.

    Parameters
    ----------
    func : callable
        A NumPy function.

    Returns
    -------
    functools.partial
        ``partial(numpy_fallback, func)`` carrying `func`'s name and docstring: calls compute
        lazy inputs, run `func` and wrap array results as lazy Arrays.
    """
    return functools.wraps(func)(functools.partial(numpy_fallback, func))


def mark_fallback(func):
    """Mark a hand-written wrapper that runs NumPy on computed inputs as a fallback."""
    func.__lazyarray_fallback__ = True
    return func


def is_fallback(obj) -> bool:
    """Whether `obj` is a fallback wrapper (a partial of ``numpy_fallback`` or marked as one)."""
    if isinstance(obj, functools.partial):
        return obj.func is numpy_fallback
    return getattr(obj, "__dict__", {}).get("__lazyarray_fallback__") is True


def module_getattr(np_module: types.ModuleType, namespace: dict, name: str):
    """The module ``__getattr__`` of lazyarray's submodules, by the top-level rule.

    A public name of `np_module` resolves to NumPy's object, except functions: those become a
    counted `fallback`, cached in `namespace`.
    """
    if name.startswith("_") or not hasattr(np_module, name):
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    obj = getattr(np_module, name)
    if callable(obj) and not isinstance(obj, type):
        obj = namespace[name] = fallback(obj)
    return obj


# ---- classification --------------------------------------------------------------------------
def public_names(module: types.ModuleType) -> list[str]:
    """A module's public names: its ``__all__`` if it has one, else names without a leading
    underscore."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return sorted(set(names))


def _is_callable_function(obj) -> bool:
    return callable(obj) and not isinstance(obj, (type, types.ModuleType))


def classify(np_obj, la_module: types.ModuleType, name: str) -> str:
    """The category of one public NumPy name in a lazyarray module (one of `CATEGORIES`).

    Reads the lazyarray module's ``__dict__`` only: a name absent there resolves through the
    module's ``__getattr__``, which turns functions into fallbacks and returns everything else
    as NumPy's object.
    """
    if not _is_callable_function(np_obj):
        return "n/a"
    if name not in vars(la_module):
        return "fallback"
    obj = vars(la_module)[name]
    if is_fallback(obj):
        return "fallback"
    if obj is np_obj:
        return "numpy"
    if not _is_callable_function(obj):
        return "n/a"
    return "native-lazy"


def table() -> tuple[list[tuple[str, str, str]], dict[str, dict[str, int]]]:
    """Classify every public name of numpy, numpy.linalg, numpy.fft and numpy.random.

    Returns
    -------
    rows : list of (module, name, category)
        `module` is the NumPy module's name, sorted by module then name.
    totals : dict
        ``{module: {category: count}}`` for each module and ``"all"`` summed over them.
    """
    rows = []
    totals: dict[str, dict[str, int]] = {}
    for np_name, la_name in MODULES:
        np_mod, la_mod = importlib.import_module(np_name), importlib.import_module(la_name)
        counts = totals[np_name] = dict.fromkeys(CATEGORIES, 0)
        for name in public_names(np_mod):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np_obj = getattr(np_mod, name, None)
            cat = classify(np_obj, la_mod, name)
            counts[cat] += 1
            rows.append((np_name, name, cat))
    totals["all"] = {c: sum(t[c] for t in list(totals.values())) for c in CATEGORIES}
    return rows, totals


# ---- report ---------------------------------------------------------------------------------
def _totals_lines(totals) -> list[str]:
    width = max(len(m) for m in totals)
    head = f"{'module':<{width}}  " + "  ".join(f"{c:>11}" for c in CATEGORIES) + "  total"
    lines = [head]
    for mod, counts in totals.items():
        lines.append(f"{mod:<{width}}  " + "  ".join(f"{counts[c]:>11}" for c in CATEGORIES)
                     + f"  {sum(counts.values()):>5}")
    return lines


def render_text(rows, totals) -> str:
    """Totals per module, then each module's fallbacks."""
    out = [f"lazyarray coverage of NumPy {np.__version__} public names", ""]
    out += _totals_lines(totals)
    for np_name, _ in MODULES:
        names = [n for m, n, c in rows if m == np_name and c == "fallback"]
        if names:
            out += ["", f"{np_name}: {len(names)} fallbacks"]
            out += textwrap.wrap(", ".join(names), 96, initial_indent="  ",
                                 subsequent_indent="  ")
    return "\n".join(out) + "\n"


def render_markdown(rows, totals) -> str:
    """The full table as Markdown (docs/coverage.md)."""
    out = [
        "# NumPy coverage",
        "",
        "<!-- Generated by `python -m lazyarray coverage --markdown docs/coverage.md`;"
        " do not edit. -->",
        "",
        f"Generated with NumPy {np.__version__} by `python -m lazyarray coverage --markdown "
        "docs/coverage.md` (regenerate it after adding an op). Every public name (`__all__`) of "
        "`numpy`, `numpy.linalg`, `numpy.fft` and `numpy.random` resolves in the matching "
        "lazyarray module, as:",
        "",
        "- **native-lazy**: lazyarray's own implementation; calls build graph nodes.",
        "- **fallback**: NumPy's function run on computed inputs, array results wrapped as lazy"
        " Arrays; each call is counted in `cache_info()[\"fallbacks\"]`.",
        "- **numpy**: NumPy's own function re-exported unchanged (takes no array data).",
        "- **n/a**: classes, dtypes and scalar types, constants, modules.",
        "",
        "## Totals",
        "",
        "| module | " + " | ".join(CATEGORIES) + " | total |",
        "|---|" + "---:|" * (len(CATEGORIES) + 1),
    ]
    for mod, counts in totals.items():
        label = "**all**" if mod == "all" else f"`{mod}`"
        out.append(f"| {label} | " + " | ".join(str(counts[c]) for c in CATEGORIES)
                   + f" | {sum(counts.values())} |")
    for np_name, la_name in MODULES:
        out += ["", f"## `{np_name}` (`{la_name}`)", "", "| name | status |", "|---|---|"]
        out += [f"| `{n}` | {c} |" for m, n, c in rows if m == np_name]
    return "\n".join(out) + "\n"


USAGE = """usage: python -m lazyarray coverage [--markdown [PATH]]

  (no option)        print the totals and every module's fallbacks
  --markdown [PATH]  write the full table as Markdown to PATH (default: standard output)"""


def main(argv: list[str]) -> int:
    """``python -m lazyarray coverage [--markdown [PATH]]``; returns the exit status."""
    argv = list(argv)
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[:1] == ["--markdown"] and len(argv) <= 2:
        rows, totals = table()
        text = render_markdown(rows, totals)
        if len(argv) == 1 or argv[1] == "-":
            sys.stdout.write(text)
        else:
            with open(argv[1], "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {argv[1]}")
        return 0
    if argv:
        print(USAGE, file=sys.stderr)
        return 2
    sys.stdout.write(render_text(*table()))
    return 0
