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

The buffer's memory order is NumPy's too: a result NumPy lays out in another order than C
(`a.T + 1` is F-contiguous: ufuncs, `astype` and `copy` keep the order "K" of their
inputs) records it as `perm`, the axes from slowest to fastest. The fake base then has
NumPy's strides, so flags, strides and every view-or-copy decision are NumPy's, and a region
is an offset and strides in that memory order. The value itself stays a logical graph node;
a write translates its region through `transpose(node, perm)` (see `Array._write`).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from lazyarray.graph.node import Node


class Storage:
    __slots__ = ("__weakref__", "_fake", "leaf_trace", "node", "perm", "scalar")

    def __init__(self, node: Node, scalar: bool | None = None, perm: tuple | None = None):
        self.node = node
        self._fake = None
        # NumPy's memory order of the axes (slowest first; None: C order): a computed value
        # (NumPy's own result, an F-ordered `a.T + 1` of the eager tier) brings its own
        self.perm = perm if perm is not None or node._host is None else order_of(node._host)
        self.leaf_trace = None  # (node, error state, its large leaf trace): array._large_leaf
        # a NumPy scalar's value (a 0-d result of a computation), immutable: no view shares
        # it and no write reaches it; a 0-d *array* (asarray, zeros(()), ...) clears this
        self.scalar = not node.shape if scalar is None else scalar

    def fake(self) -> np.ndarray:
        """The base's proxy: NumPy's strides (C order, or `perm`'s) over a one-element
        buffer."""
        if self._fake is None:
            node = self.node
            self._fake = as_strided(np.zeros(1, node.dtype), node.shape,
                                    packed_strides(node.shape, node.dtype.itemsize, self.perm))
        return self._fake

    def region(self, proxy: np.ndarray) -> tuple[int, tuple[int, ...]]:
        """(element offset, element strides) of a proxy of this storage, in the base's flat
        C order."""
        item = self.node.dtype.itemsize
        base = self.fake().__array_interface__["data"][0]
        offset = (proxy.__array_interface__["data"][0] - base) // item
        return offset, tuple(s // item for s in proxy.strides)


def packed_strides(shape, itemsize: int, perm=None) -> tuple[int, ...]:
    """Byte strides of a packed array of `shape` whose axes lie in memory in the order
    `perm` (slowest first; None: C order)."""
    strides, step = [0] * len(shape), itemsize
    for d in reversed(perm if perm is not None else range(len(shape))):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def order_of(v) -> tuple[int, ...] | None:
    """The memory order of a NumPy value (slowest axis first); None for C order."""
    if type(v) is not np.ndarray or v.ndim < 2 or v.flags.c_contiguous:
        return None
    return memory_order(((v.shape, v.strides),), v.shape)


@functools.lru_cache(maxsize=4096)  # (layouts recur: the same views in every loop iteration)
def memory_order(layouts, shape, copy: bool = False) -> tuple[int, ...] | None:
    """The order (slowest axis first) in which NumPy lays out a new array of `shape`
    computed from arrays with these layouts (a tuple of (shape, strides) pairs) under order "K": an
    insertion sort over the axes in which an operand votes on two axes only where it is
    longer than one along both, and C order wins a conflict. A ufunc's iterator also leaves
    out the votes of stride-zero (broadcast) axes; a copy (`astype`, `np.copy`, `*_like`,
    `concatenate`) counts them, so a copy of `broadcast_to(row, (4, 6))` is F-ordered.
    None for C order."""
    n = len(shape)
    if n < 2:
        return None
    votes = []
    for shp, strides in layouts:
        pad = n - len(shp)
        votes.append([None] * pad + [None if m == 1 or not (s or copy) else abs(s)
                                     for s, m in zip(strides, shp)])
    order = list(range(n - 1, -1, -1))  # fastest first, as the iterator keeps them
    for i0 in range(1, n):
        pos, j0 = i0, order[i0]
        for i1 in range(i0 - 1, -1, -1):
            j1, undecided, swap = order[i1], True, False
            for v in votes:
                if v[j0] is not None and v[j1] is not None:
                    if v[j1] <= v[j0]:
                        swap = False
                    elif undecided:
                        swap = True
                    undecided = False
            if not undecided:
                if not swap:
                    break
                pos = i1
        if pos != i0:
            order.insert(pos, order.pop(i0))
    order.reverse()
    return None if order == sorted(order) else tuple(order)


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


MAX_STEP = 8  # a box with a larger step along an axis: its complement is copied whole


def box(shape, offset: int, region_shape, strides):
    """The region `offset + sum(i_k * strides_k)` as a box of the C-ordered base `shape`:
    per base axis (start, step, count), or None when it is not one (a reshape view that
    merged axes, ...). Negative steps visit the same elements as the positive box."""
    n = len(shape)
    if n == 0:
        return None
    base_strides, step = [0] * n, 1
    for d in range(n - 1, -1, -1):
        base_strides[d] = step
        step *= shape[d]
    low = offset + sum(s * (c - 1) for s, c in zip(strides, region_shape) if s < 0)
    out = [[(low // base_strides[d]) % shape[d], 1, 1] for d in range(n)]
    if sum(out[d][0] * base_strides[d] for d in range(n)) != low:
        return None
    used = set()
    for s, c in zip(strides, region_shape, strict=True):
        if c == 1:
            continue
        s = abs(s)
        d = next((d for d in range(n) if shape[d] > 1 and base_strides[d] <= s
                  and (d == 0 or s < base_strides[d - 1])), None)
        if d is None or d in used or s % base_strides[d]:
            return None
        used.add(d)
        start, st = out[d][0], s // base_strides[d]
        if start + st * (c - 1) >= shape[d]:
            return None
        out[d] = [start, st, c]
    return [tuple(b) for b in out]


def copy_outside(out: np.ndarray, base: np.ndarray, offset: int, region_shape, strides) -> None:
    """Copy every element of `base` into `out` except the strided region a write replaces
    (the region is about to be written whole). Falls back to copying everything."""
    b = box(base.shape, offset, region_shape, strides)
    if b is None or any(st > MAX_STEP for _, st, _ in b):
        np.copyto(out, base)
        return
    prefix: tuple = ()
    for n, (start, st, c) in zip(base.shape, b, strict=True):
        last = start + st * (c - 1)
        pieces = [slice(0, start), slice(last + 1, n)]
        pieces += [slice(start + r, last, st) for r in range(1, st)]
        for p in pieces:
            key = (*prefix, p)
            if p.start < p.stop:
                out[key] = base[key]
        prefix = (*prefix, slice(start, last + 1, st))
