"""Library calls: work done by NumPy's own compiled routines (sort, LAPACK, FFT), as graph
nodes (XLA's custom-call).

`custom-call(x, ...)` with attribute `target` (a name below) and the target's static
parameters runs `LIBRARY[target].run(*operands, **params)` between kernels, on whole
buffers; the elementwise work before and after it still fuses into kernels. A call with
several results (`eigh`, `qr`, `svd`, `slogdet`, ...) is one node per result, told apart by
`output`; an evaluation runs the call once for all of them (`call`).

Parameters are ints, strings, tuples of ints or None (then left out of the attributes), so
the HLO text prints and parses them back (`custom-call(%0), target=sort, axis=-1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class LibraryCall:
    name: str
    run: Callable  # (*operands, **params) -> ndarray, or a tuple for several results
    params: tuple[str, ...] = ()  # static parameter names, in attribute order
    outputs: int = 1


def _sort(a, axis, kind=None):
    return np.sort(a, axis=axis, kind=kind)


def _argsort(a, axis, kind=None):
    return np.argsort(a, axis=axis, kind=kind)


def _partition(a, kth, axis):
    return np.partition(a, kth, axis=axis)


def _argpartition(a, kth, axis):
    return np.argpartition(a, kth, axis=axis)


def _searchsorted(a, v, *sorter, side="left"):
    return np.searchsorted(a, v, side=side, sorter=sorter[0] if sorter else None)


def _fft(fn: str):
    f = getattr(np.fft, fn)

    def run(a, n=None, axis=-1, norm=None):
        return f(a, n=n, axis=axis, norm=norm)

    return run


def _fftn(fn: str):
    f = getattr(np.fft, fn)

    def run(a, s=None, axes=None, norm=None):
        return f(a, s=s, axes=axes, norm=norm)

    return run


def _linalg(fn: str, **fixed):
    f = getattr(np.linalg, fn)

    def run(*xs, **params):
        res = f(*xs, **fixed, **params)
        return tuple(np.asarray(r) for r in res) if isinstance(res, tuple) else res

    return run


LIBRARY: dict[str, LibraryCall] = {c.name: c for c in [
    LibraryCall("sort", _sort, ("axis", "kind")),
    LibraryCall("argsort", _argsort, ("axis", "kind")),
    LibraryCall("partition", _partition, ("kth", "axis")),
    LibraryCall("argpartition", _argpartition, ("kth", "axis")),
    LibraryCall("searchsorted", _searchsorted, ("side",)),
    *(LibraryCall(f, _fft(f), ("n", "axis", "norm"))
      for f in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")),
    *(LibraryCall(f, _fftn(f), ("s", "axes", "norm"))
      for f in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn")),
    LibraryCall("lexsort", lambda *keys, axis: np.lexsort(keys, axis=axis), ("axis",)),
    LibraryCall("interp", lambda x, xp, fp, period=None:
                np.interp(x, xp, fp, period=None if period is None else _float(period)),
                ("period",)),
    LibraryCall("convolve", lambda a, v, mode: np.convolve(a, v, mode), ("mode",)),
    LibraryCall("correlate", lambda a, v, mode: np.correlate(a, v, mode), ("mode",)),
    LibraryCall("isin", lambda e, t, invert=False, kind=None:
                np.isin(e, t, invert=invert, kind=kind), ("invert", "kind")),
    LibraryCall("digitize", lambda x, bins, right=False: np.digitize(x, bins, right),
                ("right",)),
    LibraryCall("histogram", lambda a, *w, bins, density=None:
                np.histogram(a, bins=bins, weights=w[0] if w else None, density=density),
                ("bins", "density"), 2),
    LibraryCall("histogram_range", lambda a, *w, bins, lo, hi, density=None:
                np.histogram(a, bins=bins, range=(_float(lo), _float(hi)),
                             weights=w[0] if w else None, density=density),
                ("bins", "lo", "hi", "density"), 2),
    LibraryCall("choose", lambda a, *choices, mode: np.choose(a, choices, mode=mode),
                ("mode",)),
    # x.view(dtype): the same bytes read as another dtype (XLA's bitcast-convert)
    LibraryCall("bitcast", lambda x, dtype: np.ascontiguousarray(x).view(np.dtype(dtype)),
                ("dtype",)),
    LibraryCall("solve", _linalg("solve")),
    LibraryCall("inv", _linalg("inv")),
    LibraryCall("det", _linalg("det")),
    LibraryCall("pinv", _linalg("pinv"), ("hermitian",)),
    LibraryCall("cholesky", _linalg("cholesky"), ("upper",)),
    LibraryCall("matrix_power", _linalg("matrix_power"), ("n",)),
    LibraryCall("eigvals", _linalg("eigvals")),
    LibraryCall("eigvalsh", _linalg("eigvalsh"), ("UPLO",)),
    LibraryCall("svdvals", _linalg("svd", compute_uv=False)),
    LibraryCall("matrix_rank", _linalg("matrix_rank"), ("hermitian",)),
    LibraryCall("eig", _linalg("eig"), (), 2),
    LibraryCall("eigh", _linalg("eigh"), ("UPLO",), 2),
    LibraryCall("slogdet", _linalg("slogdet"), (), 2),
    LibraryCall("qr", _linalg("qr"), ("mode",), 2),
    LibraryCall("svd", _linalg("svd"), ("full_matrices", "hermitian"), 3),
]}


def _float(text) -> float:
    """A float parameter: stored as its repr (a string attribute), read back exactly."""
    return float(text)


def params_of(attrs) -> dict:
    """A custom-call's static parameters from its attributes (absent: None)."""
    call = LIBRARY[dict(attrs)["target"]]
    d = dict(attrs)
    return {p: _decode(d.get(p)) for p in call.params}


def attrs_for(target: str, params: dict, output: int | None = None) -> tuple:
    """The attributes of a custom-call node (None parameters left out)."""
    call = LIBRARY[target]
    out = [("target", target)]
    out += [(p, _encode(params[p])) for p in call.params if params.get(p) is not None]
    if call.outputs > 1:
        out.append(("output", output))
    return tuple(out)


def _encode(v):
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return tuple(int(x) for x in v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return str(v)


def _decode(v):
    if v in ("true", "false"):
        return v == "true"
    return v


def parse_param(text: str):
    """An attribute value as the parser reads it (ints back to ints)."""
    try:
        return int(text)
    except ValueError:
        return text


def call(ins, xs: list, memo: dict | None = None, sources: tuple = ()):
    """Run a custom-call instruction (or graph node) on its operand values; with `memo` (one
    per evaluation) and `sources` (what identifies the operands in that evaluation: their
    instruction numbers or nodes' ids), a multi-result call runs once for all its results."""
    attrs = ins.attrs
    target = dict(attrs)["target"]
    spec = LIBRARY[target]
    if spec.outputs == 1:
        return np.asarray(spec.run(*xs, **params_of(attrs)))
    key = (tuple(a for a in attrs if a[0] != "output"), sources)
    res = None if memo is None else memo.get(key)
    if res is None:
        res = spec.run(*xs, **params_of(attrs))
        if memo is not None:
            memo[key] = res
    return np.asarray(res[dict(attrs)["output"]])
