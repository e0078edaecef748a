"""Storages and views: NumPy's aliasing semantics on lazy values (DESIGN section 4).

A Storage holds the current version of a base array's value as a graph node. An Array is a
view onto a storage: the chain of view operations that leads from the base to it. Reading a
view applies the chain to the storage's current node; writing through any view replaces the
storage's node with a functional `update` of the old version, so every view reads the new
value while arrays computed earlier keep the old one.

Whether an operation is a view or a copy, and which elements a write touches, NumPy itself
decides: every Array carries a *proxy*, a NumPy array over a fake one-element buffer with the
view's exact shape, strides and offset relative to its base (never dereferenced). `reshape`
is a view exactly when `proxy.reshape(..., copy=False)` succeeds; `broadcast_to` proxies are
read-only; `shares_memory` compares proxies of one storage.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from lazyarray.graph.node import Node


class Storage:
    __slots__ = ("__weakref__", "_fake", "node")

    def __init__(self, node: Node):
        self.node = node
        self._fake = None

    def fake(self) -> np.ndarray:
        """The base's proxy: C-ordered strides over a one-element buffer."""
        if self._fake is None:
            node = self.node
            strides, step = [], node.dtype.itemsize
            for n in reversed(node.shape):
                strides.append(step)
                step *= max(n, 1)
            self._fake = as_strided(np.zeros(1, node.dtype), node.shape, tuple(reversed(strides)))
        return self._fake

    def region(self, proxy: np.ndarray) -> tuple[int, tuple[int, ...]]:
        """(element offset, element strides) of a proxy of this storage, in the base's flat
        C order."""
        item = self.node.dtype.itemsize
        base = self.fake().__array_interface__["data"][0]
        offset = (proxy.__array_interface__["data"][0] - base) // item
        return offset, tuple(s // item for s in proxy.strides)


def strided_view(flat: np.ndarray, offset: int, shape, strides) -> np.ndarray:
    """The elements at `offset + sum(i_k * strides_k)` of a flat array, as a (writable) view."""
    item = flat.dtype.itemsize
    if 0 in shape:
        return flat[:0].reshape(shape) if len(shape) else flat[:0]
    return as_strided(flat[offset:], shape, tuple(s * item for s in strides))


def apply_update(base: np.ndarray, value: np.ndarray, offset: int, strides, inplace: bool):
    """The `update` instruction: `base` with the strided region replaced by `value`."""
    out = base if inplace else np.array(base, copy=True, order="C")
    strided_view(out.reshape(-1), offset, value.shape, strides)[...] = value
    return out
