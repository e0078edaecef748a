"""The dask backend: an optimized HLO module becomes a Dask graph of chunk tasks.

Each top-level instruction of the optimized module maps to dask.array machinery:

- parameters: `dask.array.from_array` with the `chunks` option (dask arrays keep theirs);
- views (`slice`, `transpose`, `reshape`, `broadcast`): dask's own, so they rechunk only
  when dask must;
- a loop fusion: one task per chunk running the fusion's compiled kernel (the executor's
  `run_fusion`, serial, on the chunk's arrays): kernels are keyed without sizes, so every
  chunk of every worker process shares one kernel, built once per process;
- an input fusion: per-chunk partial reductions with their fused producers, combined by dask's
  reduction tree (`sum`, `prod`, `max`, ...), then the epilogue elementwise on the result;
  an arg-reduction computes its operand per chunk and combines with `dask.array.argmax`;
- slices of one parameter at several offsets (stencils): one overlapped array
  (`dask.array.overlap.overlap`) whose blocks carry the halo the offsets need;
- `dot`: `dask.array.matmul` (blockwise);
- a scan (`cumsum`, `cumprod`): its operand per chunk, then dask's `cumreduction`;
- anything else (writes, unusual fusions): gathered into one NumPy array and run whole,
  counted in `cache_info()["gathered"]` and logged.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import sys

import numpy as np

try:
    import dask
    import dask.array as da
    from dask.array.core import unify_chunks
    from dask.array.reductions import cumreduction
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the dask backend needs dask: pip install 'dask[array,distributed]'"
                      ) from exc

from lazyarray import config, stats
from lazyarray.backends import Backend
from lazyarray.graph.node import Node, toposort
from lazyarray.ir.hlo import Builder, Instr, MOVEMENT, Module, SOURCES
from lazyarray.ir.interpret import apply_movement, evaluate
from lazyarray.ir.lower import lower
from lazyarray.ops.table import REDUCTIONS, reduce_init
from lazyarray.passes import DEVICE_PIPELINE, optimize
from lazyarray.runtime import executor, kernels, native
from lazyarray.runtime.executor import run_fusion
from lazyarray.codegen.layout import load_points

log = logging.getLogger("lazyarray")

# how dask combines per-chunk partials of each reduction (to_apply name -> dask.array function)
_COMBINE = {"add": da.sum, "multiply": da.prod, "maximum": da.max, "minimum": da.min,
            "or": da.any, "and": da.all}


# ---- building the graph (client side) --------------------------------------------------------


def input_chunks(chunks, shape: tuple[int, ...]):
    """The `chunks` option for one input: a tuple applies to the trailing axes."""
    if isinstance(chunks, tuple):
        chunks = chunks[len(chunks) - len(shape):] if len(chunks) >= len(shape) else \
            (-1,) * (len(shape) - len(chunks)) + chunks
    return chunks if shape else ()


def source(value, chunks) -> da.Array:
    if isinstance(value, da.Array):
        return value
    return da.from_array(value, chunks=input_chunks(chunks, np.shape(value)))


def build(m: Module, args: list, chunks=None) -> list:
    """The module's outputs as dask arrays (nothing is computed)."""
    chunks = config.get().chunks if chunks is None else chunks
    vals: list = [None] * len(m.instrs)
    for i, ins in enumerate(m.instrs):
        op, xs = ins.opcode, [vals[o] for o in ins.operands]
        if op == "parameter":
            vals[i] = source(args[ins.attr("index")], chunks)
        elif op == "constant":
            vals[i] = da.from_array(ins.value)
        elif op in MOVEMENT:
            vals[i] = move(ins, xs[0])
        elif op == "fusion":
            vals[i] = fusion(ins, xs)
        elif op == "get-tuple-element":
            vals[i] = xs[0][ins.attr("index")]
        elif op == "dot":
            vals[i] = da.matmul(*xs).astype(ins.dtype, copy=False)
        else:
            vals[i] = gathered(ins, xs, f"{op} is not chunked")
    return [vals[o] for o in m.outputs]


def compute(m: Module, args: list) -> list[np.ndarray]:
    """Run the module on the current dask scheduler (a distributed Client when one is active)."""
    return list(dask.compute(*build(m, args)))


def move(ins: Instr, x):
    """A view instruction on a dask array (dask decides whether it must rechunk)."""
    if ins.opcode == "broadcast":
        placed = [1] * len(ins.shape)
        for d, n in zip(ins.attr("dimensions"), x.shape, strict=True):
            placed[d] = n
        return da.broadcast_to(x.reshape(placed), ins.shape)
    if ins.opcode == "reshape":
        try:
            return x.reshape(ins.shape)
        except NotImplementedError:  # dims split unevenly: through the flat array (a rechunk)
            return x.reshape(-1).reshape(ins.shape)
    return apply_movement(ins, x)


def gathered(ins: Instr, xs: list, why: str = "not chunked", count: bool = True):
    """Run `ins` on whole (gathered) operands in one task: the fallback, counted and logged
    (`count=False`: a 0-d computation, which is one chunk anyway)."""
    if count:
        stats.bump("gathered")
        log.info("lazyarray dask backend: %s runs gathered in one task (%s)", ins.opcode, why)
    task = dask.delayed(_run_whole, pure=True)(ins, config.get().cache_dir, *xs)
    if ins.opcode == "fusion" and len(ins.value.outputs) > 1:
        comp = ins.value
        return tuple(da.from_delayed(task[k], comp.instrs[o].shape, comp.instrs[o].dtype)
                     for k, o in enumerate(comp.outputs))
    return da.from_delayed(task, ins.shape, ins.dtype)


def _run_whole(ins: Instr, cache_dir: str | None, *xs):
    if ins.opcode == "fusion":
        with _kernel_options(cache_dir):
            out = run_fusion(ins, [np.asarray(x) for x in xs], None, False, serial=True)
        return out[0] if len(out) == 1 else tuple(out)
    return evaluate(ins, [np.asarray(x) for x in xs])


def _kernel_options(cache_dir: str | None):
    """Tasks run on other threads or processes: carry the caller's kernel cache directory."""
    if cache_dir is None or config.get().cache_dir == cache_dir:
        return contextlib.nullcontext()
    return config.options(cache_dir=cache_dir)


class _Decline(Exception):
    """This fusion does not chunk; it runs gathered."""


def fusion(ins: Instr, xs: list):
    comp: Module = ins.value
    try:
        plan = _Plan(comp)
        if not plan.space:
            return gathered(ins, xs, count=False)
        if 0 in plan.space:
            raise _Decline("an empty iteration space")
        return plan.build(xs)
    except _Decline as why:
        return gathered(ins, xs, str(why))


class _Plan:
    """How one fusion splits into chunk tasks.

    `template` is the fusion's chunkable part with every load (a view chain on a parameter)
    turned into a parameter of the iteration space's shape and every constant load into a
    broadcast scalar. Loop fusion: the whole fusion. Input fusion: its producers and
    reductions (the epilogue runs after dask combines the partials). Argreduce: the operand.
    """

    def __init__(self, comp: Module):
        self.comp = comp
        instrs = comp.instrs
        reds = [i for i, x in enumerate(instrs) if x.opcode in ("reduce", "argreduce", "scan")]
        if len({instrs[i].opcode for i in reds}) > 1:
            raise _Decline("mixed reductions")
        self.kind = instrs[reds[0]].opcode if reds else "loop"
        self.reds = reds
        after = [False] * len(instrs)  # computed from a reduction's result (the epilogue)
        for i, x in enumerate(instrs):
            after[i] = i in reds or any(after[o] for o in x.operands)
        self.after = after
        if reds:
            self.space = instrs[instrs[reds[0]].operands[0]].shape
            self.reduced = (tuple(instrs[reds[0]].attr("dimensions"))
                            if self.kind == "reduce" else (len(self.space) - 1,))
            if any(not after[o] for o in comp.outputs):
                raise _Decline("an output besides the reductions")
            along_last = self.kind in ("argreduce", "scan")  # a fused operand, then dask
            if along_last and comp.outputs != tuple(reds):
                raise _Decline(f"{self.kind} with an epilogue")
            roots = [instrs[r].operands[0] for r in reds] if along_last else reds
        else:
            self.space = instrs[comp.outputs[0]].shape
            self.reduced = ()
            if any(instrs[o].shape != self.space for o in comp.outputs):
                raise _Decline("outputs of different shapes")
            roots = list(comp.outputs)
        self.template, self.loads = self._template(roots)

    def _template(self, roots: list[int]) -> tuple[Module, list[int]]:
        comp, space = self.comp, self.space
        points = set(load_points(comp))
        b, new, loads = Builder(), {}, []

        def load(o: int) -> int:
            x = comp.instrs[o]
            base = o
            while comp.instrs[base].opcode in MOVEMENT:
                base = comp.instrs[base].operands[0]
            if comp.instrs[base].opcode == "constant":
                value = _scalar(comp, o)
                c = b.add(Instr("constant", (), (), x.dtype, (), value))
                if x.shape == ():
                    return c
                return b.add(Instr("broadcast", (c,), x.shape, x.dtype, (("dimensions", ()),)))
            if x.shape != space:
                raise _Decline("a load that does not span the iteration space")
            loads.append(o)
            return b.add(Instr("parameter", (), x.shape, x.dtype, (("index", len(loads) - 1),)))

        for i, x in enumerate(comp.instrs):
            if x.opcode in MOVEMENT or x.opcode in SOURCES or self.after[i] and i not in self.reds:
                continue
            if self.kind in ("argreduce", "scan") and i in self.reds:
                continue
            if not (x.is_elementwise or x.opcode == "reduce"):
                raise _Decline(f"{x.opcode} inside the fusion")
            ops = []
            for o in x.operands:
                if o not in new:
                    if o not in points:
                        raise _Decline("a view of a computed value inside the fusion")
                    new[o] = load(o)
                ops.append(new[o])
            new[i] = b.add(Instr(x.opcode, tuple(ops), x.shape, x.dtype, x.attrs, x.value))
        for r in roots:
            if r not in new:  # an argreduce straight on a load
                if r not in points:
                    raise _Decline("unsupported root")
                new[r] = load(r)
        if not loads:
            raise _Decline("no array load")
        return b.build([new[r] for r in roots]), loads

    # ---- dask side ----
    def build(self, xs: list, stencils: bool = True):
        comp, nd = self.comp, len(self.space)
        chains = [_chain(comp, o) for o in self.loads]
        # stencils: step-1 slices of one parameter at several offsets share one overlapped array
        by_param: dict[int, list[int]] = {}
        for k, (p, ch) in enumerate(chains):
            if stencils and len(ch) == 1 and ch[0].opcode == "slice" and all(
                    s[2] == 1 for s in ch[0].attr("slices")):
                by_param.setdefault(p, []).append(k)
        groups = {p: ks for p, ks in by_param.items() if len(ks) > 1}
        grouped = {k for ks in groups.values() for k in ks}
        plain = [k for k in range(len(chains)) if k not in grouped]
        plain_arrays = []
        for k in plain:
            p, ch = chains[k]
            x = xs[p]
            for m in ch:
                x = move(m, x)
            plain_arrays.append(x)
        regions = {}
        for p, ks in groups.items():
            starts = [[s[0] for s in chains[k][1][0].attr("slices")] for k in ks]
            lo = tuple(min(s[d] for s in starts) for d in range(nd))
            hi = tuple(max(s[d] for s in starts) for d in range(nd))
            width = tuple(h - lo_ for h, lo_ in zip(hi, lo))
            region = xs[p][tuple(slice(lo[d], hi[d] + self.space[d]) for d in range(nd))]
            regions[p] = (region, lo, width, ks, starts)
        # the chunks of the iteration space: unified over the plain loads, else the stencil's
        if plain_arrays:
            ind = tuple(range(nd))
            space_chunks, plain_arrays = unify_chunks(*[a for x in plain_arrays for a in (x, ind)])
            space_chunks = tuple(space_chunks[d] for d in ind)
        else:
            region, _, width, _, _ = next(iter(regions.values()))
            space_chunks = tuple(_trim(region.chunks[d], width[d]) for d in range(nd))
        args, recipes = list(plain_arrays), [None] * len(chains)
        for j, k in enumerate(plain):
            recipes[k] = (j, None)
        for region, lo, width, ks, starts in regions.values():
            if any(min(c) < w for c, w in zip(space_chunks, width) if w):
                return self.build(xs, stencils=False)  # chunks narrower than the reach
            ext = tuple(c[:-1] + (c[-1] + w,) for c, w in zip(space_chunks, width))
            region = region.rechunk(ext)
            depth = {d: (0, w) for d, w in enumerate(width)}
            args.append(da.overlap.overlap(region, depth=depth, boundary="none",
                                           allow_rechunk=False))
            for k, st in zip(ks, starts):
                recipes[k] = (len(args) - 1, tuple(s - lo_ for s, lo_ in zip(st, lo)), width)
        return self._tasks(args, tuple(recipes), space_chunks)

    def _tasks(self, args: list, recipes: tuple, space_chunks: tuple):
        comp, tpl = self.comp, self.template
        outs = [tpl.instrs[o] for o in tpl.outputs]
        if self.kind == "reduce":
            chunks = tuple((1,) * len(c) if d in self.reduced else c
                           for d, c in enumerate(space_chunks))
        else:
            chunks = space_chunks
        kw = {"chunks": chunks, "meta": np.empty((0,) * len(chunks), outs[0].dtype)}
        if all(tpl.instrs[o].opcode == "parameter" for o in tpl.outputs):
            # an arg-reduction or scan straight on a view: nothing to compute per chunk
            if len(outs) > 1 or recipes[0][1] is not None:
                raise _Decline(f"{self.kind} of a stencil view")
            blocks = args[recipes[0][0]]
        else:
            blocks = da.map_blocks(_run_block, *args, template=tpl, recipes=recipes,
                                   cache_dir=config.get().cache_dir,
                                   reduced=self.reduced if self.kind == "reduce" else (), **kw)
        if len(outs) == 1:
            parts = [blocks]
        else:
            parts = [blocks.map_blocks(operator.getitem, k, dtype=o.dtype,
                                       meta=np.empty((0,) * len(chunks), o.dtype))
                     for k, o in enumerate(outs)]
        if self.kind == "loop":
            return parts[0] if len(parts) == 1 else tuple(parts)
        if self.kind == "scan":
            vals = []
            for r, part in zip(self.reds, parts, strict=True):
                x = comp.instrs[r]
                name = x.attr("to_apply")
                ufunc = REDUCTIONS[name].ufunc
                vals.append(cumreduction(ufunc.accumulate, ufunc, reduce_init(name, x.dtype),
                                         part, axis=len(self.space) - 1, dtype=x.dtype))
            return vals[0] if len(vals) == 1 else tuple(vals)
        if self.kind == "argreduce":
            (r,) = self.reds
            f = da.argmax if comp.instrs[r].attr("to_apply") == "max" else da.argmin
            return f(parts[0], axis=-1).astype(comp.instrs[r].dtype, copy=False)
        vals: dict[int, object] = {}
        for r, part in zip(self.reds, parts, strict=True):
            x = comp.instrs[r]
            name = x.attr("to_apply")
            kw = {"dtype": x.dtype} if name in ("add", "multiply") else {}
            vals[r] = _COMBINE[name](part, axis=self.reduced, **kw).astype(x.dtype, copy=False)
        return _epilogue(comp, vals, self.after)


def _chain(comp: Module, o: int) -> tuple[int, list[Instr]]:
    """(fusion operand index, view instructions from it to `o`, in order)."""
    chain = []
    while comp.instrs[o].opcode in MOVEMENT:
        chain.append(comp.instrs[o])
        o = comp.instrs[o].operands[0]
    return comp.instrs[o].attr("index"), chain[::-1]


def _scalar(comp: Module, o: int):
    """The value of a view chain on a constant (a broadcast scalar) as a 0-d array."""
    chain = []
    while comp.instrs[o].opcode in MOVEMENT:
        chain.append(comp.instrs[o])
        o = comp.instrs[o].operands[0]
    v = comp.instrs[o].value
    for m in reversed(chain):
        v = apply_movement(m, v)
    return np.asarray(v.reshape(-1)[0] if v.size else v.dtype.type(0), dtype=v.dtype)


def _trim(chunks: tuple[int, ...], width: int) -> tuple[int, ...]:
    """A region's chunks less `width` elements at the end (the stencil's reach)."""
    out, cut_width = list(chunks), width
    while width:
        cut = min(width, out[-1])
        out[-1] -= cut
        width -= cut
        if not out[-1] and len(out) > 1:
            out.pop()
    if len(out) > 1 and out[-1] < cut_width:  # a sliver: join it to its neighbour
        last = out.pop()
        out[-1] += last
    return tuple(out)


def _epilogue(comp: Module, vals: dict, after: list[bool]):
    """The instructions computed from the combined reductions, as dask operations."""
    for i, x in enumerate(comp.instrs):
        if i in vals or x.opcode == "parameter":
            continue
        if x.opcode == "constant":
            vals[i] = x.value  # 0-d: broadcasting places it
        elif x.opcode in MOVEMENT:
            src = vals.get(x.operands[0])
            if src is not None:
                vals[i] = src if isinstance(src, np.ndarray) else move(x, src)
        elif after[i]:
            xs = [vals[o] for o in x.operands]
            if all(isinstance(v, np.ndarray) for v in xs):
                vals[i] = np.broadcast_to(evaluate(x, xs), x.shape)
            else:
                vals[i] = da.map_blocks(_evaluate_block, *xs, ins=x, dtype=x.dtype,
                                        meta=np.empty((0,) * len(x.shape), x.dtype))
    outs = [vals[o] for o in comp.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)


# ---- running a chunk (worker side) ---------------------------------------------------------


def _evaluate_block(*blocks, ins: Instr):
    return evaluate(ins, list(blocks))


def _run_block(*blocks, template: Module, recipes: tuple, reduced: tuple,
               cache_dir: str | None):
    loads = []
    for recipe in recipes:
        block = blocks[recipe[0]]
        if recipe[1] is None:
            loads.append(block)
        else:
            _, offset, width = recipe
            loads.append(block[tuple(slice(o, o + n - w)
                                     for o, n, w in zip(offset, block.shape, width))])
    space = loads[0].shape
    comp = respace(template, space, reduced)
    ins = Instr("fusion", (), (), comp.instrs[comp.outputs[0]].dtype,
                (("kind", "input" if reduced else "loop"),), comp)
    with _kernel_options(cache_dir):
        outs = run_fusion(ins, loads, None, False, serial=True)
    if reduced:
        keep = tuple(1 if d in reduced else n for d, n in enumerate(space))
        outs = [o.reshape(keep) for o in outs]
    return outs[0] if len(outs) == 1 else tuple(outs)


def respace(template: Module, space: tuple[int, ...], reduced: tuple[int, ...]) -> Module:
    """The template over a chunk's iteration space (every shape rewritten; the masked text,
    and so the kernel, stay the same)."""
    kept = tuple(n for d, n in enumerate(space) if d not in reduced)
    instrs = tuple(
        x if x.opcode == "constant" else
        Instr(x.opcode, x.operands, kept if x.opcode == "reduce" else space, x.dtype, x.attrs,
              x.value)
        for x in template.instrs)
    return Module(instrs, template.outputs, template.name)


# ---- public entry points ------------------------------------------------------------------


foreign_leaves = False  # set once a dask array enters a graph (engine.materialize checks it)


def from_dask(darr) -> Node:
    """The graph node of a lazy array over a dask array (its chunks are kept; see
    `lazyarray.from_dask`)."""
    global foreign_leaves
    if not isinstance(darr, da.Array):
        raise TypeError(f"from_dask expects a dask.array.Array, not {type(darr).__name__}")
    if np.dtype(darr.dtype).kind not in "biufc":
        raise TypeError(f"from_dask: unsupported dtype {darr.dtype} (bool and numbers only)")
    if not isinstance(darr._meta, np.ndarray):
        raise TypeError(f"from_dask needs NumPy chunks, not {type(darr._meta).__name__}")
    if any(np.isnan(n) for n in darr.shape):
        raise ValueError("from_dask needs known chunk sizes: call darr.compute_chunk_sizes()")
    foreign_leaves = True
    dtype = np.dtype(darr.dtype)
    leaf = Node("buffer", (), tuple(int(n) for n in darr.shape), dtype, (), darr)
    # a pending copy over the leaf: reading the array computes it like any other
    return Node("convert", (leaf,), leaf.shape, dtype)


def kernel_builds() -> dict[str, int]:
    """Per kernel key, how many times this process built it (compiled or loaded from disk):
    the dispatchers' specializations and the kernels linked from native images.
    `Client.run(kernel_builds)` asks every worker."""

    with kernels.cache_lock:
        entries = list(kernels.cache.values())
    builds = {e.key: (0 if e.kernel is None else sum(len(k.overloads) for k in e.kernel))
              + sum(isinstance(k, native.Kernel) for pair in e.native.values() for k in pair)
              for e in entries}
    return {key: n for key, n in builds.items() if n}


def resolve_leaves(order) -> None:
    """Compute the dask leaves of a graph into NumPy buffers (for the other backends). A
    dask leaf is a host object: a buffer living on a device is not read (that would fetch it)."""
    for n in order:
        if n.op == "buffer" and isinstance(n._host, da.Array):
            n.realize(np.asarray(n._host.compute()))


def to_dask(node, chunks=None):
    """The dask array computing `node` (see `Array.to_dask`)."""

    if node.realized:
        return source(node.value, config.get().chunks if chunks is None else chunks)
    if node.op == "convert" and node.srcs[0].realized and node.srcs[0].dtype == node.dtype \
            and isinstance(node.srcs[0].value, da.Array):
        return node.srcs[0].value  # from_dask(d).to_dask() is d
    order = toposort([node])
    module, args = lower([node], order)
    return build(optimize(module, DEVICE_PIPELINE), args, chunks)[0]


def _run(m: Module, args: list, trace=None, dry: bool = False) -> list:
    """The protocol's run: the module's outputs, computed on the dask scheduler."""
    return compute(m, args)


BACKEND = Backend("dask", DEVICE_PIPELINE, _run, module=sys.modules[__name__])
