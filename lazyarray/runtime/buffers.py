"""Where a launch's results go: the buffers a kernel is handed (results, reduction partials),
buffer donation and writes in place, and the per-module facts they rest on (each buffer's
last reader, the writes that overwrite a whole array).

Outputs are allocated by NumPy (fast, reusable pages), never inside the kernel.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from lazyarray import stats
from lazyarray.codegen.body import (acc_dtype, fp_check, has_row_lanes, reduce_may_raise,
                                    row_lanes)
from lazyarray.codegen.cpu import partial_mode
from lazyarray.codegen.layout import Launch, moment_blocks, span
from lazyarray.ir import fpstate
from lazyarray.ir.hlo import MOVEMENT, Module
from lazyarray.ops.table import reduce_init
from lazyarray.passes.rows import row_space
from lazyarray.runtime import pool
from lazyarray.storage import box, copy_outside, strided_view

MAX_CHUNKS = 64  # partial rows of a reduction over its outer dim (fixed: deterministic sums)
CHUNK_ROWS = 32  # rows per chunk at least, where each chunk has partials of a row's length
# computations (or modules) a memo keeps, here, in the prepared launches and in the
# executor's, before it starts afresh
PREPARED_COMPUTATIONS = 4096


def _nchunks(sizes, kept) -> int:
    """Chunks of dim 0 of a chunked reduction: fixed by the shape (deterministic sums). Where
    rows are kept (`X.sum(axis=0)`), a chunk spans CHUNK_ROWS rows or more, so that its
    partials stay small beside its input (a (100, 10000) column sum with 64 chunks of
    4 partial rows: 2.7 ms, NumPy's 0.27; with 3 chunks, 0.2 ms)."""
    if not kept:
        return max(1, min(sizes[0], MAX_CHUNKS))
    rows = sizes[0] // CHUNK_ROWS
    return max(1, min(rows, MAX_CHUNKS, (1 << 22) // max(1, math.prod(kept))))


def _inits(comp: Module) -> list:
    """Per reduction of `comp`, its start value in its accumulator's dtype."""
    return [reduce_init(ins.attr("to_apply"), acc_dtype(ins.attr("to_apply"), ins.dtype))
            for ins in comp.instrs if ins.opcode == "reduce"]


def kernel_args(comp: Module, launch: Launch, store=None) -> tuple[list, list, list]:
    """(results as the HLO shapes them, the kernel's arguments before the array loads,
    after them): the kernel takes `head + launch.arrays + tail`. `store`: a write's new
    version, (whole buffer, the region the kernel stores into)."""
    spec, sizes = launch.spec, launch.sizes
    kept = tuple(n for n, r in zip(sizes, spec.reduced, strict=True) if not r)
    canon_shape = (sizes if spec.kind in ("loop", "scan") else kept) or (1,)
    if store is not None:
        return [store[0]], [store[1]], [*launch.scalars, *launch.flat_strides, *sizes]
    results = [pool.empty(comp.instrs[o].shape, comp.instrs[o].dtype) for o in comp.outputs]
    if spec.kind == "row":  # (rows, elements) results, and per-row ones
        full = row_space(comp)[0]
        head = [r.reshape(sizes if r.shape == full else sizes[:1]) for r in results]
        return results, head, [*launch.scalars, *launch.flat_strides, *sizes, *_inits(comp)]
    if spec.kind == "moments":  # one value per kept element; partials per block
        rb, nblocks, w = moment_blocks(*sizes)
        acc = acc_dtype("add", next(i for i in comp.instrs if i.opcode == "reduce").dtype)
        head = [r.reshape(sizes[1]) for r in results]
        head += [np.zeros((nblocks, sizes[1]), acc) for _ in range(2)]
        return results, head, [*launch.scalars, *sizes, rb, nblocks, w]
    head = [r.reshape(canon_shape) for r in results]
    inits = []
    if spec.kind == "reduce":
        inits = _inits(comp)
        lanes = row_lanes(spec, math.prod(kept))
        nparts = _nchunks(sizes, kept) * lanes if spec.chunked else 1
        shape = (nparts, *kept) if partial_mode(spec) else (1,)
        head += [np.full(shape, init, init.dtype) for init in inits]
    tail = [*launch.scalars, *launch.flat_strides, *sizes]
    if spec.kind == "reduce":
        tail += [*inits, _nchunks(sizes, kept) if spec.chunked else 1]
        tail += [lanes] if has_row_lanes(spec) else []
    if spec.kind == "scan":
        ins = next(i for i in comp.instrs if i.opcode == "scan")
        name = ins.attr("to_apply")
        tail.append(reduce_init(name, acc_dtype(name, ins.dtype)))
    if spec.tables:
        tail.append(np.zeros(1, np.int64))  # the kernel's out-of-range flag
    return results, head, tail


def donor_candidates(comp: Module, launch: Launch, operands: list) -> tuple[int, ...]:
    """Operands whose buffer a single-output loop kernel may write its result into: same
    shape and dtype as the result, read only at the index being written (no view, no
    broadcast), so every element is read before it is overwritten, in the same iteration."""
    if launch.spec.kind != "loop" or len(comp.outputs) != 1:
        return ()
    out = comp.instrs[comp.outputs[0]]
    full = tuple(range(launch.spec.rank))
    gathered_params = gathered(comp)
    ok = []
    for j, a in enumerate(operands):
        if not isinstance(a, np.ndarray) or a.shape != out.shape or a.dtype != out.dtype \
                or j in gathered_params:  # (a gather reads it anywhere: `v[idx] // v`)
            continue
        reads = [(p, dims) for p, dims in launch.spec.loads
                 if comp.instrs[load_base(comp, p)].opcode == "parameter"
                 and comp.instrs[load_base(comp, p)].attr("index") == j]
        if reads and all(comp.instrs[p].opcode == "parameter" and dims == full
                         for p, dims in reads):
            ok.append(j)
    return tuple(ok)


_gathered_memo: dict = {}


def gathered(comp: Module) -> frozenset:
    """The parameters of a fusion that a gather reads (at any element: never a donor)."""
    known = _gathered_memo.get(comp)
    if known is None:
        if len(_gathered_memo) >= PREPARED_COMPUTATIONS:
            _gathered_memo.clear()
        known = _gathered_memo[comp] = frozenset(
            comp.instrs[load_base(comp, ins.operands[0])].attr("index")
            for ins in comp.instrs if ins.opcode == "gather"
            and comp.instrs[load_base(comp, ins.operands[0])].opcode == "parameter")
    return known


def donate(results: list, head: list, operands: list, donors: tuple, candidates: tuple) -> None:
    """Write the result into a dead operand's buffer (XLA's buffer donation for kernels)."""
    for j in donors:
        if j in candidates:
            a = writable(operands[j])
            results[0] = a
            head[0] = a.reshape(head[0].shape)
            stats.bump("buffers_donated")
            return


def load_base(comp: Module, i: int) -> int:
    """The instruction a load at `i` reads through its views (movements)."""
    while comp.instrs[i].opcode in MOVEMENT:
        i = comp.instrs[i].operands[0]
    return i


# The in-place rule for writes. A write's kernel stores into the old version's own buffer only
# when (1) no one can observe the old version any more: the buffer was made by this execution,
# or is an input that nothing outside the pending graph holds (engine._sole_buffers), and no
# later instruction reads it, directly or through a view (`donatable`); and (2) the kernel
# reads the old buffer nowhere but at the element it is storing, so each element is read
# before it is overwritten, in the same iteration (`hazard`). Otherwise the new version is a
# fresh (pooled) buffer: the elements outside the region copied, the region stored by the
# kernel, which reads the old buffer only -- read once, written once.
def hazard(launch: Launch, base: np.ndarray, strict: bool = False) -> bool:
    """Does the kernel read an element of `base` that it stores, other than at the very
    element it stores? A read of `base` outside the written region is no hazard (the
    tridiagonal solve's `cp[..., k] = c[..., k] / (b[..., k] - a[..., k] * cp[..., k - 1])`:
    column k - 1 is read, column k written); regions are compared exactly
    (`np.shares_memory`, within a bounded effort: beyond it, a hazard).

    `strict`: any read of the written region counts, at the very element too (an update
    that owes NumPy's exact warnings re-reads its operands after the store when it flagged:
    the executor then keeps the region's old values aside)."""
    offset, st = launch.region
    item = base.dtype.itemsize
    at = base.__array_interface__["data"][0] + offset * item
    here = (tuple(launch.sizes), tuple(s * item for s in st))
    region = None
    for a in (*launch.views, *launch.scalar_views) if strict else launch.views:
        if np.may_share_memory(a, base) and (strict or
                (a.shape, a.strides) != here or a.__array_interface__["data"][0] != at):
            if region is None:
                region = strided_view(base.reshape(-1), offset, launch.sizes or (1,), st or (1,))
            try:
                if np.shares_memory(a, region, max_work=HAZARD_WORK):
                    return True
            except np.exceptions.TooHardError:
                return True
    return False


HAZARD_WORK = 1 << 16  # bound on `np.shares_memory`'s search per read view (`hazard`)


def new_version(comp: Module, launch: Launch, base: np.ndarray, inplace: bool,
                fresh: bool = False):
    """(the new version's buffer, the region of it the kernel stores into, canonical);
    `fresh`: the rest of a new buffer is written later (`covering_updates`): not copied."""
    out = version_buffer(comp, base, inplace, fresh)
    offset, st = launch.region
    if launch.spec.flat_store:  # from the region's first element to its last
        return out, out.reshape(-1)[offset:offset + span(launch.sizes, st)]
    view = strided_view(out.reshape(-1), offset, launch.sizes or (1,), st or (1,))
    return out, view


def version_buffer(comp: Module, base: np.ndarray, inplace: bool, fresh: bool = False):
    """The buffer an update fusion's new version lives in: the old version's own (`inplace`),
    else a new one holding the old values outside the written region (left unfilled there
    when `fresh`)."""
    if inplace:
        return writable(base)
    root = comp.instrs[comp.outputs[0]]
    out = pool.empty(base.shape, base.dtype)
    if not fresh:
        copy_outside(out, base, root.attr("offset"), comp.instrs[root.operands[1]].shape,
                     root.attr("strides"))
    return out


def owes_exact_warnings(comp: Module) -> bool:
    """Must this fusion keep its operands intact? When NumPy's error state warns (the
    default) and the kernel may count a floating-point event, the fusion is re-run on its
    operands to learn NumPy's exact warnings (`kernels.recheck_flags`): so no operand is
    written in place (the result goes to a fresh, pooled buffer instead), except a matrix
    product's result, which a recheck computes again (`kernels.regenerated`; a dense
    layer's bias + relu)."""
    return fpstate.active() is not None and _may_flag(comp)


@functools.lru_cache(maxsize=512)
def _may_flag(comp: Module) -> bool:

    return any(fp_check(comp, i) is not None or ins.opcode in ("reduce", "scan")
               and reduce_may_raise(comp, i) for i, ins in enumerate(comp.instrs))


def donatable(m: Module, i: int, o: int, last_use: list[int], value: np.ndarray,
              free: frozenset = frozenset(), older: dict | None = None) -> bool:
    """May instruction i write into operand o's buffer (XLA's buffer donation)?

    A buffer this execution made (not an output), or a parameter listed in `free` (an input
    nothing outside the pending graph holds), whose last reader is i: no one can observe the
    old version any more. Operand o may be a view of all of such a buffer (a reshape): then
    the buffer it views must be neither a result nor read after i, through any view.

    A write (an update) may also take a buffer that later instructions still read, when they
    read it only through slices outside the region it writes (`_later_reads_elsewhere`: the
    tridiagonal solve's `dp[..., k]` reads column k - 1 of the `cp` that `cp[..., k] =` wrote
    before it): those elements are the same in both versions. `older` (per version written
    in place, the older versions sharing its buffer) makes the readers of those older
    versions readers of this buffer too.
    """
    b = o
    while m.instrs[b].opcode in MOVEMENT:
        b = m.instrs[b].operands[0]
    src = m.instrs[b]
    if (o in m.outputs or b in m.outputs or not isinstance(value, np.ndarray)
            or not value.flags.c_contiguous or not whole_owner(value)):
        return False
    shared = [v for v in (older or {}).get(b, ()) if _readers(m).get(v, [-1])[-1] > i]
    if last_use[o] != i or last_use[b] != i or shared:
        if b != o or not _later_reads_elsewhere(m, i, (o, *shared), value):
            return False
    if src.opcode == "parameter":
        return src.attr("index") in free
    return src.opcode != "constant" and value.flags.writeable


def note_in_place(m: Module, older: dict, i: int, o: int, vals: list) -> None:
    """After write i into operand o: when it wrote o's buffer (in place), version i shares
    that buffer with o and with the versions o shared it with (`donatable` then counts their
    later readers as readers of i's buffer). Versions nobody reads after i are dropped: a
    loop of in-place writes keeps the list short, not one entry per iteration."""
    new, old = vals[i], vals[o]
    if isinstance(new, np.ndarray) and isinstance(old, np.ndarray) and \
            new.__array_interface__["data"][0] == old.__array_interface__["data"][0]:
        readers = _readers(m)
        older[i] = tuple(v for v in (o, *older.get(o, ())) if readers.get(v, (-1,))[-1] > i)


def _written_base(m: Module, ins) -> tuple[int, tuple, int, tuple] | None:
    """(the operand a write stores into, the shape, offset and strides of its region), or
    None when `ins` is not a write."""
    if ins.opcode == "fusion" and ins.attr("kind") == "update":
        comp = ins.value
        root = comp.instrs[comp.outputs[0]]
        base = ins.operands[comp.instrs[root.operands[0]].attr("index")]
        shape = comp.instrs[root.operands[1]].shape
        return base, shape, root.attr("offset"), root.attr("strides")
    if ins.opcode == "update":
        shape = m.instrs[ins.operands[1]].shape
        return ins.operands[0], shape, ins.attr("offset"), ins.attr("strides")
    return None


@functools.lru_cache(maxsize=1024)
def _sliced_reads(comp: Module, k: int) -> tuple | None:
    """The slices (per dimension, increasing) through which fusion `comp` reads its
    parameter k, when it reads that parameter only through slices; else None."""
    params = {j for j, ins in enumerate(comp.instrs)
              if ins.opcode == "parameter" and ins.attr("index") == k}
    out = []
    for ins in comp.instrs:
        if params.isdisjoint(ins.operands):
            continue
        if ins.opcode != "slice":
            return None
        sel = []
        for start, stop, step in ins.attr("slices"):
            n = len(range(start, stop, step))
            if step < 0:  # the same elements, in increasing order
                start, step = start + (n - 1) * step, -step
            sel.append(slice(start, start + n * step, step) if n else slice(0, 0))
        out.append(tuple(sel))
    return tuple(out)


_readers_of: dict[Module, dict] = {}  # module -> {instruction: the instructions reading it}


def _readers(m: Module) -> dict[int, list[int]]:
    known = _readers_of.get(m)
    if known is None:
        known = {}
        for j, ins in enumerate(m.instrs):
            for o in dict.fromkeys(ins.operands):
                known.setdefault(o, []).append(j)
        if len(_readers_of) >= PREPARED_COMPUTATIONS:
            _readers_of.clear()
        _readers_of[m] = known
    return known


_elsewhere: dict[Module, dict] = {}  # module -> {(i, versions): `_later_reads_elsewhere`}


def _later_reads_elsewhere(m: Module, i: int, versions: tuple, value: np.ndarray) -> bool:
    """Is i a write into `versions[0]` of which every later reader of the versions (the old
    version, and older ones sharing its buffer) reads, through slices, only elements outside
    the written region (compared exactly, within a bounded effort)? `value` is the old
    version's C-contiguous buffer, so the answer depends on the module alone: it is
    remembered per module (a replayed evaluation asks again at every write)."""
    known = _elsewhere.get(m)
    if known is None:
        if len(_elsewhere) >= PREPARED_COMPUTATIONS:
            _elsewhere.clear()
        known = _elsewhere[m] = {}
    key = (i, versions)
    answer = known.get(key)
    if answer is None:
        answer = known[key] = _reads_elsewhere(m, i, versions, value)
    return answer


def _reads_elsewhere(m: Module, i: int, versions: tuple, value: np.ndarray) -> bool:
    written = _written_base(m, m.instrs[i])
    if written is None or written[0] != versions[0]:
        return False
    _, shape, offset, strides = written
    region = strided_view(value.reshape(-1), offset, shape or (1,), strides or (1,))
    for o, j in ((o, j) for o in versions for j in _readers(m).get(o, ())):
        if j <= i:
            continue
        ins = m.instrs[j]
        if ins.opcode != "fusion" or (_written_base(m, ins) or (None,))[0] == o:
            return False
        for k, x in enumerate(ins.operands):
            if x != o:
                continue
            reads = _sliced_reads(ins.value, k)
            if reads is None:
                return False
            for sel in reads:
                try:
                    if np.shares_memory(value[sel], region, max_work=HAZARD_WORK):
                        return False
                except np.exceptions.TooHardError:
                    return False
    return True


def whole_owner(a: np.ndarray) -> bool:
    """Is `a` its memory's owner, or a view of all of it (a pooled buffer, a donated input)?"""
    base = a.base
    return a.flags.owndata or (isinstance(base, np.ndarray) and base.flags.owndata
                               and base.nbytes == a.nbytes and a.flags.c_contiguous)


def writable(a: np.ndarray) -> np.ndarray:
    """A writable alias of a donated buffer (inputs are read-only: graphs may share them; a
    donated one no longer has readers). The buffer itself stays read-only."""
    if a.flags.writeable:
        return a
    owner = a if a.base is None else a.base
    was = owner.flags.writeable
    owner.flags.writeable = True
    w = a.view()
    w.flags.writeable = True
    owner.flags.writeable = was
    return w


_last_uses: dict[Module, tuple] = {}  # module -> (per instruction, its buffer's last reader;
#                                      per instruction, the values dead after it)


def _buffer_last_uses(m: Module) -> list[int]:
    """Per instruction, the last instruction that reads its buffer, directly or through a
    view of it (a view taken early and read late keeps the buffer alive)."""
    last = [-1] * len(m.instrs)
    for i, ins in enumerate(m.instrs):
        for o in ins.operands:
            last[o] = i
    for o in m.outputs:
        last[o] = len(m.instrs)  # results outlive the execution
    for i in range(len(m.instrs) - 1, -1, -1):
        if m.instrs[i].opcode in MOVEMENT:
            base = m.instrs[i].operands[0]
            last[base] = max(last[base], last[i])
    return last


def uses(m: Module) -> tuple[list[int], list[list[int]]]:
    """(each instruction's buffer's last reader, the buffers each instruction reads last),
    memoized per module."""
    known = _last_uses.get(m)
    if known is None:
        last_use = _buffer_last_uses(m)
        dead: list[list[int]] = [[] for _ in m.instrs]
        for o, last in enumerate(last_use):
            if 0 <= last < len(m.instrs):
                dead[last].append(o)
        if len(_last_uses) >= PREPARED_COMPUTATIONS:
            _last_uses.clear()
        known = _last_uses[m] = (last_use, dead)
    return known


def why_copied(dead: bool, interpreted: bool) -> str:
    """explain()'s reason for a write that did not run in place (`hazard`, `donatable`)."""
    if not dead:
        return ("copied: the old version is still observable (an array, a view, a pending "
                "expression or a later instruction reads it)")
    if interpreted:
        return "copied: run by the interpreter (no kernel, or an empty region)"
    return "copied: the written value reads the old buffer outside the written element"


def write_kind(inplace: bool, fresh: bool) -> str:
    """explain()'s word for a write: into its old version's buffer, into a new buffer with the
    old version copied outside the region, or into a new buffer left unfilled there."""
    return "in place" if inplace else "new" if fresh else "copy"


def _update_region(m: Module, i: int):
    """(base operand, offset, strides, region shape) of instruction i when it is a write
    (an `update`, or an update fusion whose value does not read its base); else None."""
    ins = m.instrs[i]
    if ins.opcode == "update":
        return (ins.operands[0], ins.attr("offset"), ins.attr("strides"),
                m.instrs[ins.operands[1]].shape)
    if ins.opcode != "fusion" or ins.attr("kind") != "update":
        return None
    comp = ins.value
    root = comp.instrs[comp.outputs[0]]
    p = root.operands[0]
    if any(p in c.operands for j, c in enumerate(comp.instrs) if j != comp.outputs[0]):
        return None  # the value reads the old version
    return (ins.operands[comp.instrs[p].attr("index")], root.attr("offset"),
            root.attr("strides"), comp.instrs[root.operands[1]].shape)


_covering: dict[Module, frozenset] = {}


def covering_updates(m: Module) -> frozenset:
    """The writes of `m` whose base is overwritten everywhere before anyone reads the new
    version: the chain of writes that starts there (each the one reader of the previous,
    reading it only as its base) stores disjoint boxes that tile the whole array
    (`concatenate`, `stack`, `block`). Their new buffer needs no copy of the old version:
    NumPy's concatenate of two 10^6 arrays in 1.1 ms, against 1.9 ms with a zero fill first.
    Memoized per module."""
    known = _covering.get(m)
    if known is not None:
        return known
    readers: list[list[int]] = [[] for _ in m.instrs]
    for j, ins in enumerate(m.instrs):
        for o in ins.operands:
            readers[o].append(j)
    found = set()
    for i in range(len(m.instrs)):
        r = _update_region(m, i)
        if r is None:
            continue
        shape, boxes, j = m.instrs[r[0]].shape, [], i
        while r is not None:
            b = box(shape, r[1], r[3], r[2])
            if b is None or any(step != 1 for _, step, _ in b):
                break
            boxes.append(b)
            if _tiles(boxes, shape):
                found.add(i)
                break
            if j in m.outputs or len(readers[j]) != 1:
                break
            k = readers[j][0]
            r = _update_region(m, k)
            if r is not None and r[0] != j:
                break
            j = k
    if len(_covering) >= PREPARED_COMPUTATIONS:
        _covering.clear()
    known = _covering[m] = frozenset(found)
    return known


def _tiles(boxes: list, shape) -> bool:
    """Do these boxes (per axis (start, 1, count)) cover `shape` exactly, without overlap?"""
    if sum(math.prod(c for _, _, c in b) for b in boxes) != math.prod(shape):
        return False
    return all(any(s0 + c0 <= s1 or s1 + c1 <= s0 for (s0, _, c0), (s1, _, c1)
                   in zip(a, b, strict=True))
               for k, a in enumerate(boxes) for b in boxes[k + 1:])
