"""MLIR text for StableHLO: values, types, and one method per emitted op (generic op syntax).

Used by `lazyarray.export` (structural instructions) and `_export_elementwise` (the NumPy
elementwise semantics as StableHLO op sequences). Nothing here imports an MLIR library: the
output is plain text that any StableHLO consumer parses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np


class UnsupportedOpError(NotImplementedError):
    """An instruction (or an op on a dtype) that the StableHLO export cannot express."""


_ELEM = {
    "b": "i1", "i1": "i8", "i2": "i16", "i4": "i32", "i8": "i64",
    "u1": "ui8", "u2": "ui16", "u4": "ui32", "u8": "ui64",
    "f2": "f16", "f4": "f32", "f8": "f64", "c8": "complex<f32>", "c16": "complex<f64>",
}  # fmt: skip


def elem_type(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    return _ELEM["b" if dtype.kind == "b" else dtype.str[1:]]


def tensor_type(shape: tuple[int, ...], dtype: np.dtype) -> str:
    dims = "".join(f"{n}x" for n in shape)
    return f"tensor<{dims}{elem_type(dtype)}>"


@dataclass(frozen=True, slots=True)
class Value:
    """An SSA value of the function being emitted."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.dtype)


def _float_literal(x) -> str:
    # the IEEE bit pattern: exact, and NaN/inf need no special spelling
    bits = np.asarray(x).view(f"u{np.asarray(x).dtype.itemsize}")
    return f"0x{int(bits):0{2 * np.asarray(x).dtype.itemsize}X}"


def scalar_literal(value, dtype: np.dtype) -> str:
    """One element of a `dense<...>` attribute, exactly."""
    v = np.asarray(value).astype(dtype)
    if dtype.kind == "b":
        return "true" if v else "false"
    if dtype.kind in "iu":
        return str(int(v))
    if dtype.kind == "f":
        return _float_literal(v)
    return f"({_float_literal(v.real)}, {_float_literal(v.imag)})"


def dense_literal(array: np.ndarray) -> str:
    """`dense<...>` for a whole array: a splat, bools as a nested list, else raw hex bytes."""
    a = np.ascontiguousarray(array)
    if a.size == 0:
        return "dense<>"
    flat = a.reshape(-1)
    if a.size == 1 or (flat == flat[0]).all():
        return f"dense<{scalar_literal(flat[0], a.dtype)}>"
    if a.dtype.kind == "b":
        return "dense<" + str(a.tolist()).replace("True", "true").replace("False", "false") + ">"
    return f'dense<"0x{a.astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()}">'


def _dims(xs) -> str:
    return "array<i64" + "".join(f": {', '.join(str(int(x)) for x in xs)}" if xs else "") + ">"


class Emitter:
    """Appends ops to a function body; every op returns its result `Value`."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0
        self._indent = "    "

    # ---- the generic op form --------------------------------------------------------------

    def fresh(self) -> str:
        self._count += 1
        return f"%{self._count - 1}"

    def op(self, name: str, operands, shape, dtype, attrs: str = "", region: str = "",
           nresults: int = 1):
        res = self.fresh()
        ins = ", ".join(o.name for o in operands)
        in_types = ", ".join(o.type for o in operands)
        if nresults == 1:
            outs = [Value(res, tuple(shape), np.dtype(dtype))]
            out_type = outs[0].type
            lhs = res
        else:  # shape/dtype: one per result
            outs = [Value(f"{res}#{k}", tuple(s), np.dtype(d))
                    for k, (s, d) in enumerate(zip(shape, dtype, strict=True))]
            out_type = "(" + ", ".join(o.type for o in outs) + ")"
            lhs = f"{res}:{nresults}"
        reg = f" ({region})" if region else ""
        att = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f'{self._indent}{lhs} = "stablehlo.{name}"({ins}){reg}{att} : '
                          f"({in_types}) -> {out_type}")
        return outs[0] if nresults == 1 else outs

    def region(self, arg_types: list[tuple[tuple[int, ...], np.dtype]], body) -> str:
        """`{ ^bb0(args): ... stablehlo.return }` with `body(*args) -> Value | list[Value]`."""
        saved_lines, saved_indent = self.lines, self._indent
        self.lines, self._indent = [], saved_indent + "    "
        args = [Value(self.fresh().replace("%", "%a"), s, np.dtype(d)) for s, d in arg_types]
        outs = body(*args)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        ret_types = ", ".join(o.type for o in outs)
        self.lines.append(f'{self._indent}"stablehlo.return"({", ".join(o.name for o in outs)}) : '
                          f"({ret_types}) -> ()")
        head = ", ".join(f"{a.name}: {a.type}" for a in args)
        text = "{\n" + f"{saved_indent}  ^bb0({head}):\n" + "\n".join(self.lines) + \
            f"\n{saved_indent}}}"
        self.lines, self._indent = saved_lines, saved_indent
        return text

    def live_lines(self, results: list[Value]) -> list[str]:
        """The emitted ops that the results depend on (ops are pure: the rest is dead)."""
        names = re.compile(r"%[A-Za-z0-9_]+")
        needed = {r.name.split("#")[0] for r in results}
        keep = []
        for line in reversed(self.lines):
            defined = names.match(line.lstrip()).group(0)
            if defined in needed:
                keep.append(line)
                needed.update(n for n in names.findall(line) if n != defined)
        return keep[::-1]

    # ---- constants and shapes --------------------------------------------------------------

    def constant(self, array: np.ndarray) -> Value:
        array = np.asarray(array)
        return self.op("constant", [], array.shape, array.dtype,
                       f"value = {dense_literal(array)} : {tensor_type(array.shape, array.dtype)}")

    def full(self, value, like: Value, dtype=None) -> Value:
        """A splat constant of `like`'s shape (and `dtype`, default `like`'s)."""
        dt = np.dtype(like.dtype if dtype is None else dtype)
        t = tensor_type(like.shape, dt)
        return self.op("constant", [], like.shape, dt,
                       f"value = dense<{scalar_literal(value, dt)}> : {t}")

    def broadcast_in_dim(self, x: Value, shape, dims) -> Value:
        return self.op("broadcast_in_dim", [x], shape, x.dtype,
                       f"broadcast_dimensions = {_dims(dims)}")

    def reshape(self, x: Value, shape) -> Value:
        return x if tuple(shape) == x.shape else self.op("reshape", [x], shape, x.dtype)

    def transpose(self, x: Value, perm) -> Value:
        if tuple(perm) == tuple(range(len(perm))):
            return x
        shape = tuple(x.shape[p] for p in perm)
        return self.op("transpose", [x], shape, x.dtype, f"permutation = {_dims(perm)}")

    def slice(self, x: Value, starts, limits, strides) -> Value:
        shape = tuple(len(range(a, b, c)) for a, b, c in zip(starts, limits, strides, strict=True))
        return self.op("slice", [x], shape, x.dtype, f"start_indices = {_dims(starts)}, "
                       f"limit_indices = {_dims(limits)}, strides = {_dims(strides)}")

    def reverse(self, x: Value, dims) -> Value:
        return self.op("reverse", [x], x.shape, x.dtype, f"dimensions = {_dims(dims)}") \
            if dims else x

    def iota(self, shape, dim: int, dtype) -> Value:
        return self.op("iota", [], shape, dtype, f"iota_dimension = {dim} : i64")

    def pad(self, x: Value, value: Value, low, high, interior) -> Value:
        shape = tuple(lo + hi + n + max(n - 1, 0) * i
                      for n, lo, hi, i in zip(x.shape, low, high, interior, strict=True))
        return self.op("pad", [x, value], shape, x.dtype, f"edge_padding_low = {_dims(low)}, "
                       f"edge_padding_high = {_dims(high)}, interior_padding = {_dims(interior)}")

    # ---- elementwise helpers ---------------------------------------------------------------

    def ew(self, name: str, *xs: Value, dtype=None) -> Value:
        """An elementwise op; the result has the first operand's shape (and dtype by default)."""
        return self.op(name, xs, xs[0].shape, xs[0].dtype if dtype is None else dtype)

    def cmp(self, direction: str, x: Value, y: Value) -> Value:
        return self.op("compare", [x, y], x.shape, np.bool_,
                       f"comparison_direction = #stablehlo<comparison_direction {direction}>")

    def select(self, c: Value, x: Value, y: Value) -> Value:
        return self.op("select", [c, x, y], x.shape, x.dtype)

    def convert(self, x: Value, dtype) -> Value:
        dtype = np.dtype(dtype)
        return x if x.dtype == dtype else self.op("convert", [x], x.shape, dtype)

    def bitcast(self, x: Value, dtype) -> Value:
        return self.op("bitcast_convert", [x], x.shape, dtype)
