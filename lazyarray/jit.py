"""`jit`: trace a function once per signature, then replay its optimized program.

A call looks up its signature: the options in force, the structure of the arguments, the
value of every static argument (Python scalars, strings, None, and what `static_argnums` /
`static_argnames` name) and, per array argument, its dtype, shape and strides. The first
call with a signature runs the function on lazy stand-ins for the array arguments, lowers
the arrays it returns to one HLO module and optimizes it (a *trace*). Every later call with
that signature binds the new arrays to the module's parameters and runs the optimized
module straight away: no graph is built, no pass runs, the kernels come from the cache.

Shapes are part of the signature (as in JAX): Python code may read ``x.shape``, and its
answer is baked into the trace. A new shape traces again, but the kernels are
shape-polymorphic, so a retrace compiles nothing new.

What cannot be traced runs without jit, with a `JitWarning`, and that signature is not
traced again: Python control flow on a traced value (``if x.sum() > 0``), anything else that
computes a traced value while tracing (``float(x)``, a NumPy function lazyarray does not
implement), and writes into an argument or into an array created outside the function.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from dataclasses import dataclass

import numpy as np

from lazyarray import config, engine, stats
from lazyarray.array import Array
from lazyarray.graph.node import Node, buffer, toposort
from lazyarray.ir import fpstate
from lazyarray.ir.hlo import Module
from lazyarray.ir.lower import lower
from lazyarray.runtime.executor import execute

__all__ = ["jit", "JitWarning"]


class JitWarning(UserWarning):
    """A jitted function could not be traced and runs without jit."""


_SCALARS = (bool, int, str, bytes, type(None), type(Ellipsis))


@dataclass
class _Program:
    """One trace: the optimized module and how to feed it and wrap its results."""

    module: Module | None
    params: list  # per module parameter: ("arg", k) or ("const", array)
    outs: list  # per output leaf: ("node", j) module output j | ("arg", k) | ("value", v)
    tree: object  # output structure, with leaf positions
    plain: bool = False  # untraceable: run the function without jit


def _flatten(x, leaves: list, key: bool = True):
    """Structure of `x` with array leaves replaced by their index in `leaves`.

    `key`: the structure is a signature (arguments): dict keys are sorted, floats compared by
    their bits, and other values must be hashable. Otherwise (results) values are kept as
    they are."""
    if isinstance(x, (Array, np.ndarray, np.generic)):
        leaves.append(x)
        return ("leaf", len(leaves) - 1)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_flatten(v, leaves, key) for v in x))
    if isinstance(x, dict):
        keys = sorted(x, key=repr) if key else list(x)
        return ("dict", tuple((k, _flatten(x[k], leaves, key)) for k in keys))
    if not key or isinstance(x, _SCALARS):
        return ("static", type(x).__name__, x)
    if isinstance(x, float):  # by bits: nan and -0.0 are keys like any other value
        return ("float", x.hex())
    if isinstance(x, complex):
        return ("complex", x.real.hex(), x.imag.hex())
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"jit: argument of type {type(x).__name__} is neither an array nor "
                        "hashable; mark it static (static_argnums) with a hashable value, or "
                        "pass arrays") from None
    return ("static", type(x).__name__, x)


def _unflatten(tree, leaves: list):
    tag = tree[0]
    if tag == "leaf":
        return leaves[tree[1]]
    if tag == "static":
        return tree[2]
    if tag == "float":
        return float.fromhex(tree[1])
    if tag == "complex":
        return complex(float.fromhex(tree[1]), float.fromhex(tree[2]))
    if tag == "dict":
        return {k: _unflatten(v, leaves) for k, v in tree[1]}
    items = [_unflatten(v, leaves) for v in tree[1]]
    return tuple(items) if tag == "tuple" else items


def _layout(x) -> tuple:
    if isinstance(x, Array):
        return ("A", x.dtype, x.shape)
    a = np.asarray(x)
    return ("N", a.dtype, a.shape, a.strides)


def _value(x) -> np.ndarray:
    """The array argument's current value (an Array is computed if it is pending)."""
    return x._value() if isinstance(x, Array) else np.asarray(x)


class _Tracing:
    """State of one trace: the traced input leaves, and the storages written meanwhile."""

    def __init__(self, inputs: list[Node]):
        self.inputs = {id(n) for n in inputs}
        self.written: list = []

    def check(self, nodes: list[Node]) -> None:
        """Called by engine.materialize while tracing: refuse to compute a traced value."""
        if any(id(n) in self.inputs for n in toposort(nodes)) or any(
                id(n) in self.inputs for n in nodes):
            raise _Untraceable("a traced value was computed while tracing (Python control "
                               "flow on it, float()/bool()/item(), or a NumPy fallback)")


class _Untraceable(Exception):
    pass


class Jitted:
    """A function traced once per signature (see `jit`)."""

    def __init__(self, fun, static_argnums=(), static_argnames=()):
        functools.update_wrapper(self, fun)
        self._fun = fun
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        self._static_nums = frozenset(static_argnums)
        self._static_names = frozenset(static_argnames)
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self._programs: dict = {}
        self._quick: dict = {}  # signatures of plain positional calls -> program
        self.traces = 0  # how many times the function was traced

    def _split(self, args, kwargs):
        """(signature key, array leaves) of a call."""
        leaves: list = []
        pos = []
        for i, a in enumerate(args):
            if i in self._static_nums:
                pos.append(("static", type(a).__name__, _hashable(a, i)))
            else:
                pos.append(_flatten(a, leaves))
        kw = []
        for k in sorted(kwargs):
            v = kwargs[k]
            kw.append((k, ("static", type(v).__name__, _hashable(v, k))
                       if k in self._static_names else _flatten(v, leaves)))
        tree = (tuple(pos), tuple(kw))
        key = (config.get(), tree, tuple(_layout(x) for x in leaves))
        return key, tree, leaves

    def _quick_key(self, args) -> tuple | None:
        """The signature of a call of plain positional arrays and scalars (the common case),
        or None to take the general path."""
        if self._static_nums:
            return None
        key = [config.get()]
        for a in args:
            t = type(a)
            if t is np.ndarray:
                key.append((a.dtype, a.shape, a.strides))
            elif t is Array:
                key.append((a.dtype, a.shape))
            elif t is float:
                key.append((t, a.hex()))  # by bits: nan, -0.0
            elif t is int or t is bool:
                key.append((t, a))
            else:
                return None
        return tuple(key)

    def __call__(self, *args, **kwargs):
        quick = None if kwargs else self._quick_key(args)
        prog = self._quick.get(quick) if quick is not None else None
        if prog is not None and not _strict():
            leaves = [a for a in args if type(a) is np.ndarray or type(a) is Array]
            stats.bump("jit_replays")
            return _run(prog, leaves, [_value(x) for x in leaves])
        key, tree, leaves = self._split(args, kwargs)
        if config.get().backend == "numpy" or _strict():
            return self._fun(*args, **kwargs)  # the interpreter tier: nothing to replay
        prog = self._programs.get(key)
        values = [_value(x) for x in leaves]
        if prog is None:
            prog = self._programs[key] = self._trace(tree, values)
            if quick is not None and not prog.plain:
                self._quick[quick] = prog
            if prog.plain:  # warned once per signature
                return self._fun(*args, **kwargs)
        elif prog.plain:
            return self._fun(*args, **kwargs)
        stats.bump("jit_replays")
        return _run(prog, leaves, values)

    def _trace(self, tree, values: list[np.ndarray]) -> _Program:
        self.traces += 1
        stats.bump("jit_traces")
        stand_ins = [Array(buffer(v.view())) for v in values]
        inputs = [a._storage.node for a in stand_ins]
        state = _Tracing(inputs)
        args, kwargs = _unflatten(("tuple", tree[0]), stand_ins), {
            k: _unflatten(v, stand_ins) for k, v in tree[1]}
        token = engine.TRACING.set(state)
        try:
            with config.options(eager_threshold=0):  # no eager tier: every op becomes a node
                result = self._fun(*args, **kwargs)
        except _Untraceable as why:
            return self._give_up(str(why))
        finally:
            engine.TRACING.reset(token)
        out_leaves: list = []
        out_tree = _flatten(result, out_leaves, key=False)
        kept = {id(a._storage) for a in out_leaves if isinstance(a, Array)}
        for ref in state.written:
            s = ref()
            if s is not None and id(s) not in kept:
                return self._give_up("the function writes into an argument or into an array "
                                     "created outside it")
        del args, kwargs, result
        return _program(out_tree, out_leaves, inputs)

    def _give_up(self, why: str) -> _Program:
        warnings.warn(f"jit({self.__name__}): cannot trace ({why}); running it without jit "
                      "for this signature", JitWarning, stacklevel=4)
        return _Program(None, [], [], None, plain=True)


def _strict() -> bool:
    """np.errstate(...="raise"), under="warn", ...: NumPy's own loops must run to report."""
    return not fpstate.compiled_ok()


def _hashable(v, where):
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"jit: static argument {where!r} of type {type(v).__name__} is not "
                        "hashable") from None
    return v


def _program(out_tree, out_leaves: list, inputs: list[Node]) -> _Program:
    arg_of = {id(n): k for k, n in enumerate(inputs)}
    nodes, outs = [], []
    for x in out_leaves:
        if not isinstance(x, Array):  # a NumPy value computed from static data
            outs.append(("value", np.array(x)))
            continue
        node = x._node
        if node.realized:
            outs.append(("arg", arg_of[id(node)]) if id(node) in arg_of
                        else ("value", node.value))
        else:
            outs.append(("node", len(nodes)))
            nodes.append(node)
    module, params = None, []
    if nodes:
        unique = list({id(n): n for n in nodes}.values())
        module, consts = lower(unique, toposort(unique))
        position = {id(n): j for j, n in enumerate(unique)}
        outs = [("node", position[id(nodes[o[1]])]) if o[0] == "node" else o for o in outs]
        by_value = {id(n.value): k for k, n in enumerate(inputs)}
        params = [("arg", by_value[id(c)]) if id(c) in by_value else ("const", c)
                  for c in consts]
        module = engine.optimize(module)
    return _Program(module, params, outs, out_tree)


def _run(prog: _Program, leaves: list, values: list[np.ndarray]):
    results = []
    if prog.module is not None:
        args = [values[k] if kind == "arg" else k for kind, k in prog.params]
        with fpstate.recording() as rec:
            try:
                results = execute(prog.module, args)
            finally:
                if rec is not None and rec.messages:
                    fpstate.emit(rec, engine.forcing_frame())
    out = []
    for kind, k in prog.outs:
        if kind == "node":
            out.append(Array(buffer(results[k])))
        elif kind == "arg":
            x = leaves[k]
            out.append(x if isinstance(x, Array) else Array(buffer(np.array(x))))
        else:
            out.append(Array(buffer(k)))
    return _unflatten(prog.tree, out)


def jit(fun=None, *, static_argnums=(), static_argnames=()):
    """Trace `fun` once per signature and replay its optimized program on later calls.

    Parameters
    ----------
    fun : callable
        A function of arrays (lazyarray Arrays, NumPy arrays or NumPy scalars, possibly in
        tuples, lists and dicts) and static values, returning arrays (or such containers).
    static_argnums : int or sequence of int, optional
        Positional arguments taken by value: part of the signature, baked into the trace.
        Python scalars, strings and None are always static.
    static_argnames : str or sequence of str, optional
        Keyword arguments taken by value.

    Returns
    -------
    callable
        Calls with a new signature trace `fun` (its Python code runs on lazy stand-ins, its
        arrays are optimized into one program); calls with a known signature run that
        program directly, building no graph. The result is computed Arrays.

    Notes
    -----
    The signature is the options in force, the argument structure, static values and each
    array's dtype, shape and strides. Python control flow on traced values, computing a
    traced value while tracing, and writes into arguments or outside arrays cannot be
    traced: such a call warns (`JitWarning`) and runs `fun` without jit, as do later calls
    with that signature. Under ``backend="numpy"`` or ``np.errstate(...="raise")`` the
    function always runs without jit.

    Examples
    --------
    >>> import lazyarray as la
    >>> @la.jit
    ... def axpy(a, x, y):
    ...     return a * x + y
    >>> axpy(2.0, la.arange(3.0), la.ones(3))
    array([1., 3., 5.])
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames)
    return Jitted(fun, static_argnums, static_argnames)
