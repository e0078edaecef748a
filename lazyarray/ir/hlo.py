"""The HLO module: a flat SSA list of instructions in topological order.

An instruction refers to its operands by position in the module. Opcodes are the graph's:
an elementwise op's table name (printed with its HLO name), or one of `parameter`,
`constant`, `convert`, `select`, `broadcast`, `reshape`, `transpose`, `slice`, `reduce`,
`argreduce`, `scan`, `gather`, `update`, `fusion`, `get-tuple-element`. `gather(x, i_0, ...)`
reads `x` through integer index operands of the result's shape (ops/indexing.py). `update(base, value)` is `base` with the
elements at `offset + sum(i_k * strides_k)` (flat, C order) replaced by `value` (a write);
`dot(a, b)` is NumPy's matmul, a library (BLAS) call; `custom-call(x, ...)` is another
library call (sort, LAPACK, FFT: ops/library.py). A fusion's `value` is the fused computation, itself
a Module whose parameters are the fusion's operands.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MOVEMENT = frozenset({"broadcast", "reshape", "transpose", "slice"})
SOURCES = frozenset({"parameter", "constant"})
REDUCE_LIKE = frozenset({"reduce", "argreduce", "scan"})


@dataclass(slots=True, eq=False)  # immutable by convention (frozen=True triples build cost)
class Instr:
    opcode: str
    operands: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: tuple[tuple[str, object], ...] = ()
    value: object = None  # constant: 0-d array; fusion: the fused Module

    def attr(self, name: str, default=None):
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    @property
    def is_elementwise(self) -> bool:
        return self.opcode not in _NOT_ELEMENTWISE

    def key(self) -> tuple:
        """Structural identity (for CSE): equal keys compute equal values."""
        v = self.value
        if isinstance(v, np.ndarray):
            v = (v.dtype.str, v.tobytes())
        elif v is not None:
            v = id(v)
        return (self.opcode, self.operands, self.shape, self.dtype, self.attrs, v)


# run by the executor between kernels: a write, and library calls (XLA's custom-call)
LIBRARY = frozenset({"update", "dot", "custom-call"})
_NOT_ELEMENTWISE = MOVEMENT | SOURCES | REDUCE_LIKE | LIBRARY | {"fusion", "get-tuple-element",
                                                                  "gather"}


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Module:
    instrs: tuple[Instr, ...]
    outputs: tuple[int, ...]
    name: str = "main"
    key: tuple | None = None  # structural key (opcodes, shapes, dtypes, attrs, constant values)

    @property
    def params(self) -> list[Instr]:
        ps = [i for i in self.instrs if i.opcode == "parameter"]
        return sorted(ps, key=lambda i: i.attr("index"))

    def users(self) -> list[list[int]]:
        users: list[list[int]] = [[] for _ in self.instrs]
        for i, ins in enumerate(self.instrs):
            for o in ins.operands:
                users[o].append(i)
        return users


def rebuild(module: Module, keep: list[bool]) -> Module:
    """The module with only the instructions marked in `keep`, operands renumbered."""
    new_id: dict[int, int] = {}
    instrs: list[Instr] = []
    for i, ins in enumerate(module.instrs):
        if keep[i]:
            new_id[i] = len(instrs)
            instrs.append(Instr(ins.opcode, tuple(new_id[o] for o in ins.operands), ins.shape,
                                ins.dtype, ins.attrs, ins.value))
    return Module(tuple(instrs), tuple(new_id[o] for o in module.outputs), module.name)


class Builder:
    """Appends instructions, de-duplicating structurally equal ones (CSE as you build)."""

    def __init__(self) -> None:
        self.instrs: list[Instr] = []
        self._seen: dict[tuple, int] = {}

    def add(self, ins: Instr) -> int:
        k = ins.key()
        found = self._seen.get(k)
        if found is not None:
            return found
        i = self._seen[k] = len(self.instrs)
        self.instrs.append(ins)
        return i

    def build(self, outputs, name: str = "main") -> Module:
        outputs = tuple(outputs)
        return Module(tuple(self.instrs), outputs, name, (tuple(self._seen), outputs))


_split: dict = {}  # update fusion computation -> (value computation, base operand position)


def split_update(ins: Instr) -> tuple[Instr, int, Instr]:
    """An update fusion as (a loop fusion computing the written value, the position of the
    base among the fusion's operands, the update instruction): for backends that store the
    value with a separate copy (CUDA)."""
    comp: Module = ins.value
    found = _split.get(id(comp))
    if found is None or found[0] is not comp:
        root = comp.instrs[comp.outputs[0]]
        value = comp.instrs[root.operands[1]]
        assert comp.outputs == (len(comp.instrs) - 1,)  # the write is built last
        sub = Module(comp.instrs[:-1], (root.operands[1],), comp.name)
        fusion = Instr("fusion", ins.operands, value.shape, value.dtype,
                       (("kind", "loop"), ("reason", ins.attr("reason", ""))), sub)
        k = comp.instrs[root.operands[0]].attr("index")
        if len(_split) > 4096:
            _split.clear()
        found = _split[id(comp)] = (comp, fusion, k, root)
    return found[1], found[2], found[3]
