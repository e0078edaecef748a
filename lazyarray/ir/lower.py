"""graph (Node DAG) -> HLO Module.

Realized nodes become parameters (their arrays are returned as the module's arguments),
constant nodes become `constant` instructions; every other node maps to one instruction.
"""

from __future__ import annotations

import numpy as np

from lazyarray.graph.node import Node, toposort
from lazyarray.ir.hlo import Builder, Instr, Module


def lower(roots: list[Node], order: list[Node] | None = None,
          leaf=None) -> tuple[Module, list[np.ndarray]]:
    """The module computing `roots` (`order`: their toposort, if the caller has it).

    `leaf(node)` gives a buffer node's argument (default: its NumPy array; the CUDA backend
    passes its device array)."""
    b = Builder()
    ids: dict[int, int] = {}
    args: list[np.ndarray] = []
    arg_index: dict[int, int] = {}
    for node in toposort(roots) if order is None else order:
        if node.op == "buffer":
            v = node.value if leaf is None else leaf(node)
            k = arg_index.setdefault(id(v), len(args))
            if k == len(args):
                args.append(v)
            ins = Instr("parameter", (), node.shape, node.dtype, (("index", k),))
        elif node.op == "constant":
            ins = Instr("constant", (), (), node.dtype, (), node.value)
        else:
            ins = Instr(node.op, tuple([ids[id(s)] for s in node.srcs]), node.shape,
                        node.dtype, node.attrs)
        ids[id(node)] = b.add(ins)
    return b.build([ids[id(r)] for r in roots]), args
