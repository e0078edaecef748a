"""What one statement of the corpus's Python loops costs: NumPy against lazyarray, in
microseconds per statement, each statement run in its own loop over the rows, columns or
elements the corpus program walks (64K sizes).

    python asv_bench/tools/loop_statements.py
    python asv_bench/tools/loop_statements.py --statements thomas,syrk --repeat 31

The loop-heavy corpus programs (docs/corpus.md) are these statements run thousands of
times; their ratio to NumPy is, to a few percent, this table's. Each loop runs twice before
it is timed (the eager tier's paths warm, nothing left to compile); the best of `--repeat`
runs is divided by the loop's trip count.

The third column is a floor: the same statements on NumPy arrays held by the thinnest
wrapper a Python library can be (`Thin`: indexing, item assignment and the operators
forwarded to NumPy, and nothing else: no laziness, no checks). Whatever a library adds per
statement in Python, it pays at least this; `NumPy / thin` is the best ratio to NumPy any
design that runs each statement of the loop through Python-level calls can reach.
"""

from __future__ import annotations

import argparse
import operator
import time

import numpy

import lazyarray

# name -> (loop header, statement, trip count): the statements as the corpus writes them
STATEMENTS = {
    "thomas": ("for k in range(1, 64):",
               "cp[..., k] = c[..., k] / (b[..., k] - a[..., k] * cp[..., k - 1])", 63),
    "gauss_seidel": ("for i in range(1, 255):",
                     "u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] "
                     "+ u[i, 2:] - 0.01 * f[i, 1:-1])", 254),
    "gramschmidt_dot": ("for j in range(1, 128):", "r[k, j] = np.dot(q[:, k], qa[:, j])", 127),
    "gramschmidt_update": ("for j in range(1, 128):",
                           "qa[:, j] = qa[:, j] - q[:, k] * r[k, j]", 127),
    "syrk": ("for i in range(0, 256, 8):", "cc[i, :i + 1] += 1.5 * ak[i, k] * ak[:i + 1, k]",
             32),
    "forward_subst": ("for i in range(1, 256):",
                      "x[i] = (rhs[i] - low[i, :i] @ x[:i]) / low[i, i]", 255),
    "covariance": ("for j in range(64):",
                   "cov[i, j] = np.sum(d[:, i] * d[:, j]) / 1023; cov[j, i] = cov[i, j]", 64),
    "view": ("for k in range(1, 64):", "a[..., k]", 63),
    "two_views_subtracted": ("for k in range(1, 64):", "a[..., k] - b[..., k]", 63),
    "element_read": ("for j in range(1, 128):", "r[k, j]", 127),
}


class Thin:
    """A NumPy array behind the least a Python wrapper can do: each operation forwarded."""

    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def __getitem__(self, key):
        return Thin(self.a[key])

    def __setitem__(self, key, value):
        self.a[key] = value.a if type(value) is Thin else value


def _forward(op):
    """`Thin`'s operator and reflected operator over NumPy's `op`."""
    return (lambda self, other: Thin(op(self.a, other.a if type(other) is Thin else other)),
            lambda self, other: Thin(op(other.a if type(other) is Thin else other, self.a)))


def _forward_in_place(op):
    def method(self, other):
        op(self.a, other.a if type(other) is Thin else other)
        return self
    return method


for _name in ("add", "sub", "mul", "truediv", "matmul"):
    _m, _r = _forward(getattr(operator, _name))
    setattr(Thin, f"__{_name}__", _m)
    setattr(Thin, f"__r{_name}__", _r)
for _name in ("iadd", "isub", "imul"):
    setattr(Thin, f"__{_name}__", _forward_in_place(getattr(operator, _name)))


class ThinNamespace:
    """The functions the statements call, on `Thin` arrays."""

    array = staticmethod(lambda v: Thin(numpy.array(v)))
    dot = staticmethod(lambda a, b: Thin(numpy.dot(a.a, b.a)))
    sum = staticmethod(lambda a: Thin(numpy.sum(a.a)))


def _names(np) -> dict:
    """The arrays the statements read and write, made with `np` from the same values."""
    rng = numpy.random.default_rng(0)
    a3 = rng.random((32, 32, 64))
    grid = rng.random((256, 256))
    q = rng.random((512, 128))
    low = numpy.tril(rng.random((256, 256))) + 256 * numpy.eye(256)
    values = dict(a=a3, b=a3 + 3, c=a3 * 0.5, cp=a3.copy(), u=grid.copy(), f=grid, q=q,
                  qa=q.copy(), r=numpy.zeros((128, 128)), cc=rng.random((256, 256)),
                  ak=rng.random((256, 16)), low=low, rhs=rng.random((256, 64)),
                  x=numpy.zeros((256, 64)), d=rng.random((1024, 64)), cov=numpy.zeros((64, 64)))
    names = {k: np.array(v) for k, v in values.items()}  # (ThinNamespace.array wraps)
    names.update(np=np, i=5, j=2, k=3)
    return names


def per_statement(np, name: str, repeat: int) -> float:
    """Microseconds per statement `name` with the namespace `np` (best of `repeat` loops)."""
    header, statement, trips = STATEMENTS[name]
    names = _names(np)
    exec(f"def loop():\n    {header}\n        {statement}\n", names)
    loop = names["loop"]
    loop()
    loop()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        loop()
        best = min(best, time.perf_counter() - t0)
    return best / trips * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--statements", default=",".join(STATEMENTS))
    p.add_argument("--repeat", type=int, default=15)
    a = p.parse_args(argv)
    print("| statement | NumPy us | lazyarray us | thinnest wrapper us | lazyarray / NumPy "
          "| NumPy / thin | NumPy / lazyarray |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in a.statements.split(","):
        t_np = per_statement(numpy, name, a.repeat)
        t_la = per_statement(lazyarray, name, a.repeat)
        t_thin = per_statement(ThinNamespace, name, a.repeat)
        print(f"| {name} | {t_np:.2f} | {t_la:.2f} | {t_thin:.2f} | {t_la / t_np:.2f} "
              f"| {t_np / t_thin:.2f} | {t_np / t_la:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
