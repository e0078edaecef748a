"""Size buckets: one XLA program for every length of a leading axis within a bucket.

XLA compiles a program per shape. A loop over growing sizes (`for n in sizes: x =
la.asarray(data[:n]); ...`) would compile once per size; instead, when a module's leading
axis of length ``n`` can be padded without changing any element the user sees, the program
is built for the bucket's length ``N >= n`` (`bucket`: the next of 16, 20, 24, 28, 32, 40,
48, 56, 64, ... -- at most 25 % more elements) and takes ``n`` as an argument:

- every array whose leading axis is that ``n`` (*padded*) is held on the device with ``N``
  rows: uploads are padded on the host as they go up, results stay padded where they live,
  and a read on the host takes the first ``n`` rows (`xla._fetch`);
- elementwise operations, conversions, `where`, broadcasts that keep or create the leading
  axis, reshapes of the trailing axes, slices of whole rows, scans, reductions over other
  axes, argmax/argmin over the last axis of a 2-D or higher array, row-wise products (`(n,
  k) @ (k, m)`) and updates of whole rows compute the padding rows too, from whatever values
  they hold: no element of the first ``n`` rows reads them; a slice or an update of part of
  the first ``n`` rows (`x[i]`, `x[1:-1]`, `x[i, 3:] = v`) never reaches the padding;
- a reduction over the leading axis reads the first ``n`` rows only (the others are replaced
  by the reduction's identity), and a check (an integer raised to a negative power, a strict
  subnormal) looks at the first ``n`` rows only;
- any other instruction that touches a padded array (gathers, transposes, reversed rows,
  sorts, host fallbacks) leaves the module unbucketed: it compiles for its exact shape, as
  before, and reads a padded argument's first ``n`` rows inside the program.

Buckets are for lengths that vary: a module family (its structure with the length masked)
runs exact programs for its first two lengths, as `jax.jit` would; from its third length on,
its buckets' programs (`xla._lengths_vary`). ``LAZYARRAY_XLA_BUCKETS`` (read
when the backend loads): ``1`` (default) so, ``always`` from a family's first length (the
differential suite runs so: every bucketable module padded), ``0`` never.
"""

from __future__ import annotations

from dataclasses import dataclass

from lazyarray.ir.hlo import Instr, Module
from lazyarray.ops.table import OPS

SMALLEST = 16  # lengths up to this share the bucket of 16
# the length a module family's key is written with (`xla._lengths_vary`): no real length;
# rows of more elements than this are never bucketed, so that its shapes' sizes fit int64
FAMILY_ROWS = 1 << 31
_ELEMENTWISE_EXTRA = frozenset({"convert", "select"})


def bucket(n: int) -> int:
    """The bucket of length `n`: the smallest of 16, then m * 2**k for m in 4..7 (20, 24,
    28, 32, 40, ...), that is at least `n`."""
    if n <= SMALLEST:
        return SMALLEST
    step = 1 << max((n - 1).bit_length() - 3, 0)  # a quarter of the power of two below n
    return -(-n // step) * step


@dataclass(frozen=True)
class Bucketed:
    """A module rewritten for its bucket: `module` has every padded instruction's leading
    extent `size` instead of `n`; `padded` holds those instructions' indices."""

    module: Module
    n: int
    size: int
    padded: frozenset


def _leading(ins: Instr) -> int | None:
    return ins.shape[0] if ins.shape else None


def _length(module: Module) -> int | None:
    """The candidate length: the leading extent of the first output (else parameter) of
    rank 1 or more."""
    instrs = module.instrs
    for k in (*module.outputs, *(i for i, ins in enumerate(instrs)
                                 if ins.opcode == "parameter")):
        if instrs[k].shape:
            return instrs[k].shape[0]
    return None


def _fits(ins: Instr, pad: list[bool], k: int, instrs) -> bool:
    """May instruction `k` run over padded rows (see the module docstring)?"""
    op = ins.opcode
    ops = [instrs[o] for o in ins.operands]
    padded_in = [pad[o] for o in ins.operands]
    if op == "parameter":
        return True
    if op == "constant":
        return not pad[k]
    if op in OPS or op in _ELEMENTWISE_EXTRA:
        return all(p or not o.shape for o, p in zip(ops, padded_in)) if pad[k] else \
            not any(padded_in)
    if op == "broadcast":
        dims = tuple(ins.attr("dimensions"))
        if padded_in[0]:
            return pad[k] and dims[0] == 0
        # a new leading axis, or one of length 1 broadcast: every row the same
        return not pad[k] or 0 not in dims or ops[0].shape[dims.index(0)] == 1
    if op == "reshape":
        return padded_in[0] == pad[k] and (not pad[k] or _rows(ops[0]) == _rows(ins))
    if op == "scan":
        return padded_in[0] == pad[k]
    if op == "reduce":
        dims = tuple(ins.attr("dimensions"))
        if not padded_in[0]:
            return not pad[k]
        return (not pad[k]) if 0 in dims else pad[k]
    if op == "argreduce":
        return padded_in[0] == pad[k] and (not pad[k] or len(ops[0].shape) >= 2)
    if op == "slice":  # whole rows of a padded array, or any part of its first n rows
        if not padded_in[0]:
            return not pad[k]
        return not pad[k] or tuple(ins.attr("slices")[0]) == (0, ops[0].shape[0], 1)
    if op == "update":  # into a padded base: a region of its first n rows, or whole rows
        if not padded_in[0] or not pad[k]:
            return not pad[k] and not any(padded_in)
        row = _rows(ops[0])
        return not padded_in[1] or (ins.attr("offset") < row and ops[1].shape
                                    and ins.attr("strides")[0] == row)
    if op == "dot":
        if not any(padded_in):
            return not pad[k]
        return (pad[k] and padded_in[0] and not padded_in[1] and len(ops[0].shape) == 2
                and len(ops[1].shape) in (1, 2))
    return not pad[k] and not any(padded_in)


def padded_to(ins: Instr, size: int) -> Instr:
    """`ins` with `size` rows (its shape, and a reshape's target shape)."""
    attrs = tuple((k, (size, *v[1:])) if k == "shape" else
                  (k, ((0, size, 1), *v[1:])) if k == "slices" else (k, v)
                  for k, v in ins.attrs)
    return Instr(ins.opcode, ins.operands, (size, *ins.shape[1:]), ins.dtype, attrs, ins.value)


def _rows(ins: Instr) -> int:
    out = 1
    for d in ins.shape[1:]:
        out *= d
    return out


def bucketed(module: Module, host_only) -> Bucketed | None:
    """`module` for its bucket, or None when it must compile for its exact shapes.
    `host_only(ins, module)`: does an instruction run on the host (never bucketed)?"""
    n = _length(module)
    if n is None:
        return None
    instrs = module.instrs
    pad = [ins.shape[:1] == (n,) for ins in instrs]
    if not any(pad) or any(p and _rows(ins) >= FAMILY_ROWS for p, ins in zip(pad, instrs)):
        return None
    for k, ins in enumerate(instrs):
        if not _fits(ins, pad, k, instrs) or (pad[k] and host_only(ins, module)):
            return None
    size = bucket(n)
    new = tuple(padded_to(ins, size) if pad[k] else ins for k, ins in enumerate(instrs))
    return Bucketed(Module(new, module.outputs, module.name), n, size,
                    frozenset(k for k, p in enumerate(pad) if p))
