"""Structural checks of an HLO module (`verify(module)` raises VerifyError).

Operands refer to earlier instructions, outputs exist, fused computations verify too, and
instructions with a shape rule of their own obey it (gather: see ops/indexing.py).
"""

from __future__ import annotations

from lazyarray.ir.hlo import Instr, Module
from lazyarray.ops.indexing import other_axes


class VerifyError(ValueError):
    """The module breaks an invariant of the IR."""


def _gather(m: Module, i: int, ins: Instr) -> None:
    data = m.instrs[ins.operands[0]]
    indices = [m.instrs[o] for o in ins.operands[1:]]
    axes, offset_dims = ins.attr("axes"), ins.attr("offset_dims")
    where = f"%{i} gather"
    if axes is None or offset_dims is None:
        raise VerifyError(f"{where}: needs axes and offset_dims")
    if not axes or len(axes) != len(indices) or len(set(axes)) != len(axes) or any(
            not 0 <= a < len(data.shape) for a in axes):
        raise VerifyError(f"{where}: axes {axes} must name distinct operand axes, one per "
                          f"index operand ({len(indices)})")
    others = other_axes(len(data.shape), axes)
    if len(offset_dims) != len(others) or len(set(offset_dims)) != len(offset_dims) or any(
            not 0 <= d < len(ins.shape) or ins.shape[d] != data.shape[a]
            for d, a in zip(offset_dims, others, strict=True)):
        raise VerifyError(f"{where}: offset_dims {offset_dims} do not place operand axes "
                          f"{others} of {data.shape} in the result {ins.shape}")
    if ins.dtype != data.dtype:
        raise VerifyError(f"{where}: result dtype {ins.dtype} is not the operand's {data.dtype}")
    for ix in indices:
        if ix.shape != ins.shape or ix.dtype.kind not in "iu":
            raise VerifyError(f"{where}: index operands must be integer arrays of the result's "
                              f"shape {ins.shape}, got {ix.dtype}{list(ix.shape)}")


def verify(m: Module) -> None:
    for i, ins in enumerate(m.instrs):
        if any(not 0 <= o < i for o in ins.operands):
            raise VerifyError(f"%{i} {ins.opcode}: an operand is not an earlier instruction")
        if ins.opcode == "gather":
            _gather(m, i, ins)
        elif ins.opcode == "fusion":
            verify(ins.value)
    if not m.outputs or any(not 0 <= o < len(m.instrs) for o in m.outputs):
        raise VerifyError("outputs must name instructions")
