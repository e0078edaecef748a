"""Lazy expression DAG nodes.

A Node is an HLO-style operation (same opcodes and attributes as `ir`) whose shape and dtype
were inferred when it was built. Leaves are `buffer` nodes (a NumPy array the graph owns) and
`constant` nodes (a 0-d scalar, a kernel argument once compiled). Materializing a node turns
it into a `buffer` leaf and drops its inputs, so the graph behind it can be freed.
"""

from __future__ import annotations

import numpy as np

MAX_DEPTH = 10_000  # a node whose pending graph is deeper is materialized when built
# per backend holding device buffers (its name: `Node.holder`): node -> host copy of its
# device buffer; each device backend registers its own when its module loads
FETCH: dict = {}


class Node:
    __slots__ = ("op", "srcs", "shape", "dtype", "attrs", "_host", "device", "holder", "depth",
                 "__weakref__")

    def __init__(self, op: str, srcs: tuple[Node, ...], shape: tuple[int, ...], dtype: np.dtype,
                 attrs: tuple = (), value: np.ndarray | None = None):
        self.op = op
        self.srcs = srcs
        self.shape = shape
        self.dtype = dtype
        self.attrs = attrs
        self._host = value
        self.device = None  # a buffer resident on a device: its device array (backends)
        self.holder = None  # the name of the backend whose memory `device` is in
        # depth of the pending graph behind this node: long loops are cut at MAX_DEPTH
        depth = 0
        for s in srcs:
            if s.depth > depth:
                depth = s.depth
        self.depth = depth + 1

    @property
    def value(self) -> np.ndarray | None:
        """The buffer's NumPy array; a device-resident buffer is copied to the host on first
        read (a counted transfer, by the backend holding it) and kept there too."""
        v = self._host
        if v is None:
            if self.device is not None:
                v = self._host = FETCH[self.holder](self)
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

    def realize_device(self, flat, holder: str = "cuda") -> None:
        """Become a buffer leaf whose data lives on a device: `flat`, a device array of the
        backend named `holder` (CUDA's: flat, C order; XLA's: a `jax.Array` of the shape)."""
        self.op, self.srcs, self.attrs, self.depth = "buffer", (), (), 1
        self._host, self.device, self.holder = None, flat, holder

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
    n._host, n.device, n.holder, n.depth = array, None, None, 1
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
