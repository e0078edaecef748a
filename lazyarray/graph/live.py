"""Live pending arrays, for co-materialization.

When an evaluation computes some pending nodes, arrays the program still holds may need work
the evaluation does anyway: K11, K13 and K33 of a mixing kernel share `slope` and `taper`,
temporaries no array holds. Forced one at a time, each evaluation would compute them again,
where NumPy computes them once. So the storages of pending lazy results are remembered here
(weakly: an array the program dropped is never computed), and `partners` names those whose
graphs reach work of the evaluation: the scheduler computes them in the same evaluation, as
extra results (of the same kernels wherever the fusion pass can merge them), and each becomes a
computed buffer that its later reads take as it is.
"""

from __future__ import annotations

import itertools
import operator
import weakref

from lazyarray.ops.table import OPS

MAX_LIVE = 64  # pending storages remembered (the most recent ones; a power of two)
MAX_WALK = 4096  # nodes walked per evaluation looking for shared work
# nodes that cost nothing to compute again: views and conversions of what they read
_FREE = frozenset({"broadcast", "reshape", "transpose", "slice", "convert", "constant",
                   "buffer"})
# what a partner may compute: operations that raise nothing NumPy would raise at their own
# line (a gather's index, a library call's singular matrix, an integer power's negative
# exponent stay with the line that asks for their value)
_QUIET = frozenset(OPS) | _FREE | {"select", "reduce", "argreduce", "update", "pad",
                                   "concatenate", "iota"}

_ring: list = [None] * MAX_LIVE  # weak references to the storages, the newest overwriting
_next = itertools.count().__next__  # the oldest (a list and a counter: 0.2 us a remember)
_ref = weakref.ref
_WHEN = operator.itemgetter(0)  # (when it was remembered, ...)


def remember(storage) -> None:
    """Remember `storage` (of a pending lazy result) while it lives."""
    n = _next()
    _ring[n & (MAX_LIVE - 1)] = (n, _ref(storage))


def partners(order: list, roots: list) -> list:
    """The pending nodes of remembered live storages worth computing with the evaluation of
    `roots` (`order`: their pending nodes, inputs first): a node the evaluation computes
    anyway (a held temporary such as `slope`), or one whose graph reaches computed work of
    the evaluation (not only views or conversions) and adds at most as much new work as
    `_worth` allows. None of them holds an operation that may raise."""
    results = {id(n) for n in roots}
    first: dict = {}  # a candidate node's id -> [when it was first remembered, the node]
    for i, entry in enumerate(_ring):
        if entry is None:
            continue
        st = entry[1]()
        node = None if st is None else st.node
        if node is None or not node.srcs:  # gone, or computed: forgotten
            _ring[i] = None
        elif id(node) not in results:
            known = first.get(id(node))
            if known is None:
                first[id(node)] = [entry[0], node]
            elif entry[0] < known[0]:
                known[0] = entry[0]
    if not first:  # (the usual case in a loop: what is forced is what was pending)
        return []
    # oldest first, whatever slot each landed in: the same program finds its partners in the
    # same order however far the ring has turned (the order is part of the plan's key)
    candidates = [node for _, node in sorted(first.values(), key=_WHEN)]
    inner = {id(n): n for n in order}
    found, budget = [], MAX_WALK
    for node in candidates:
        if id(node) in inner:  # computed by this evaluation anyway: keep its value
            if node.op in _QUIET and _quiet_node(node):
                found.append(node)
            continue
        shared, new, budget = _walk(node, inner, results, budget)
        if budget <= 0:
            break
        if shared and new is not None and _worth(shared, new):
            found.append(node)
    return found


def _worth(shared: int, new: int) -> bool:
    """Is computing a partner now worth it: `shared` operations it would compute again later,
    `new` of its own (wasted if the program never reads it)."""
    return new <= 4 * shared + 8


def _walk(node, inner: dict, results: set, budget: int) -> tuple[int, int | None, int]:
    """(operations of the evaluation the graph of `node` reaches, not counting its results,
    which stay computed; its own operations, or None when one may raise; the walk budget
    left; `results`: the ids of the evaluation's results)."""
    shared, new = 0, 0
    seen, stack = {id(node)}, [node]
    while stack:
        n = stack.pop()
        budget -= 1
        if budget <= 0:
            return 0, None, budget
        if id(n) in inner:
            shared += n.op not in _FREE and id(n) not in results
            continue
        if not n.srcs:
            continue
        if n.op not in _QUIET or not _quiet_node(n):
            return 0, None, budget
        new += n.op not in _FREE
        for s in n.srcs:
            if id(s) not in seen:
                seen.add(id(s))
                stack.append(s)
    return shared, new, budget


def _quiet_node(n) -> bool:
    """An integer power (a negative exponent raises in NumPy) is not quiet."""
    return not (n.op == "power" and n.dtype.kind in "iu")
