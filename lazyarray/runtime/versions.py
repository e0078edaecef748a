"""The version rule: when a write may destroy the version it replaces.

A storage holds its base's current value as a graph node (its *version*); a write replaces
it with a new node, an `update` of the old one, so every array computed before the write
keeps reading the old version. The old version's buffer may be overwritten -- a write in
place, a buffer donated to a kernel's output, a temporary reused -- only when no live reader
can still observe it. A reader is anything that holds the version:

- an Array or view whose value it is (through its storage's slot);
- a pending node, reachable from a live Array, that reads it (`c = -t[1:]` before
  `t[1:] = 0`: `c`'s graph holds `t`'s old node among its operands);
- a queued evaluation (its argument list holds the buffer);
- a NumPy array handed out (`np.asarray(a)`, `np.asarray(a[2:])`: it holds the buffer, or
  a view of it holds the buffer's owner).

Every reader holds a strong reference to the node or to its buffer, and a dead reader
holds none, so CPython's reference counts *are* the reader counts: exact, with dead readers
already gone, with no registry of weak references to keep in step. This module holds the
one test, asked by every path that writes outside an evaluation (the eager tier's writes in
`array.py`); an evaluation asks the same question of its inputs (`engine._sole_buffers`,
with this module's probe counts) and of its own buffers (`buffers.donatable`: no later
instruction reads the old version), and then whether the kernel reads the old buffer only
at the element it stores (`buffers.hazard`). Where the rule says no, the write copies;
`explain()` says which writes ran in place and why the others did not.
"""

from __future__ import annotations

import sys

import numpy as np

from lazyarray.graph.node import Node
from lazyarray.runtime import pool


def _probe() -> tuple[int, int]:
    """(references to a version's node, to its buffer) when only the storage holds the node
    and only the node holds the buffer, as `version_is_dead` counts them (the counts differ
    between Python versions, so they are measured)."""
    a = np.empty(1)
    slot = [Node("buffer", (), (1,), a.dtype, (), a)]
    del a
    node = slot[0]
    value = node._host
    return _measure(node, value)


def _measure(node: Node, value: np.ndarray) -> tuple[int, int]:
    return _counts(node, value)  # (as deep as `version_is_dead`'s call)


def _counts(node: Node, value: np.ndarray) -> tuple[int, int]:
    return sys.getrefcount(node), sys.getrefcount(value)


_SOLE = _probe()


def version_is_dead(node: Node, value: np.ndarray) -> bool:
    """May the buffer `value` of the version `node`, held by one storage, be overwritten?

    True when nothing but that storage holds `node` (no other array, view, pending node or
    queued evaluation reads this version), nothing but `node` holds `value` (no NumPy array
    was handed out), the buffer is the whole of its memory (it owns its data, or is the one
    view of a pooled buffer nobody else holds), C-contiguous, and on the host (a GPU copy of
    it would go stale). The caller holds `node` and `value` in one local variable each, as
    the probe does."""
    nref, vref = _counts(node, value)
    return (nref <= _SOLE[0] and vref <= _SOLE[1] and node.op == "buffer"
            and (value.flags.owndata or pool.sole(value)) and value.flags.c_contiguous
            and node.device is None)


def version_is_private(node: Node, value: np.ndarray) -> bool:
    """`version_is_dead`'s reader test alone: nothing but the storage holds `node`, nothing
    but `node` holds `value`, on the host -- though the buffer may be a view of memory it
    does not own (a constant fill's broadcast, a NumPy input's copy-free view) or strided.
    Such a version may be replaced by a private C-ordered copy of itself, which is then
    dead (`Array._region_buffer`). The caller holds each in one local variable."""
    nref, vref = _counts(node, value)
    return (nref <= _SOLE[0] and vref <= _SOLE[1] and node.op == "buffer"
            and node.device is None)
