"""Lazy expression DAG nodes.

A Node is an HLO-style operation (same opcodes and attributes as `ir`) whose shape and dtype
were inferred when it was built. Leaves are `buffer` nodes (a NumPy array the graph owns) and
`constant` nodes (a 0-d scalar, a kernel argument once compiled). Materializing a node turns
it into a `buffer` leaf and drops its inputs, so the graph behind it can be freed.
"""

from __future__ import annotations

import numpy as np

MAX_DEPTH = 10_000  # a node whose pending graph is deeper is materialized when built
FETCH = None  # set by the CUDA backend: node -> host copy of its device buffer


class Node:
    __slots__ = ("op", "srcs", "shape", "dtype", "attrs", "_host", "device", "depth",
                 "__weakref__")

    def __init__(self, op: str, srcs: tuple[Node, ...], shape: tuple[int, ...], dtype: np.dtype,
                 attrs: tuple = (), value: np.ndarray | None = None):
        self.op = op
        self.srcs = srcs
        self.shape = shape
        self.dtype = dtype
        self.attrs = attrs
        self._host = value
        self.device = None  # a buffer resident on the GPU: its flat device array (backends)
        # depth of the pending graph behind this node: long loops are cut at MAX_DEPTH
        depth = 0
        for s in srcs:
            if s.depth > depth:
                depth = s.depth
        self.depth = depth + 1

    @property
    def value(self) -> np.ndarray | None:
        """The buffer's NumPy array; a GPU-resident buffer is copied to the host on first read
        (a counted transfer) and kept there too."""
        v = self._host
        if v is None:
            if self.device is not None:
                v = self._host = FETCH(self)
                v.setflags(write=False)
        elif type(v) is np.ndarray and v.flags.writeable:  # an eager-tier leaf (see `leaf`)
            v.setflags(write=False)
        return v

    @value.setter
    def value(self, v) -> None:
        self._host = v

    @property
    def on_host(self) -> bool:
        """Does reading `value` cost no device transfer?"""
        return self._host is not None or self.device is None

    @property
    def opcode(self) -> str:  # the IR's name for `op`, so the interpreter runs nodes directly
        return self.op

    @property
    def realized(self) -> bool:
        return self.op == "buffer"

    def realize(self, value: np.ndarray) -> None:
        """Become a buffer leaf holding `value` (read-only: graphs built earlier may share it)."""
        value.setflags(write=False)
        self.op, self.srcs, self.attrs, self.value, self.depth = "buffer", (), (), value, 1

    def realize_device(self, flat) -> None:
        """Become a buffer leaf whose data lives on the GPU (`flat`: C-order device array)."""
        self.op, self.srcs, self.attrs, self.depth = "buffer", (), (), 1
        self._host, self.device = None, flat

    def attr(self, name: str, default=None):
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    def __repr__(self) -> str:
        return f"Node({self.op}, {self.dtype}{list(self.shape)}, {self.attrs})"


def buffer(array: np.ndarray) -> Node:
    array.setflags(write=False)
    return leaf(array)


_new_node = Node.__new__


def leaf(array: np.ndarray) -> Node:
    """A buffer node over `array`, which nothing else refers to (the eager tier's hot path:
    no __init__ call; the array is made read-only when `value` first hands it out, which
    costs less than doing it for every tiny intermediate)."""
    n = _new_node(Node)
    n.op, n.srcs, n.shape, n.dtype, n.attrs = "buffer", (), array.shape, array.dtype, ()
    n._host, n.device, n.depth = array, None, 1
    return n


def constant(value, dtype: np.dtype) -> Node:
    if not (isinstance(value, np.ndarray) and value.dtype == dtype):
        value = np.asarray(value, dtype=dtype)
    return Node("constant", (), (), dtype, (), value)


def toposort(roots: list[Node]) -> list[Node]:
    """Pending nodes reachable from `roots` (realized nodes are leaves), inputs first: a
    depth-first post-order taking each node's inputs left to right.

    Iterative, so a 100,000-node chain does not hit the recursion limit.
    """
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(root.srcs))]
        while stack:
            node, srcs = stack[-1]
            for s in srcs:
                if id(s) not in seen:
                    seen.add(id(s))
                    stack.append((s, iter(s.srcs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order
