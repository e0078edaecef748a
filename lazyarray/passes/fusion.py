"""Fusion: group instructions into kernels, XLA style.

- loop fusion: elementwise ops (with the views they read) over one iteration space;
- input fusion: a reduction with all of its elementwise producers;
- multi-output fusion: an output whose consumers all sit in one loop fusion joins it as an
  extra root, and independent fusions over the same iteration space (loop: same shape;
  input: same operand shape and reduced dimensions) that share an input become one kernel;
- update fusion: a write `update(base, value)` is the root of the loop that computes `value`,
  iterating over the written region: the kernel stores each element straight into the new
  version's buffer (the runtime decides whether that is the old buffer, in place, or a copy).

A cheap producer with consumers in several fusions is recomputed in each; an expensive one
becomes the root of its own fusion. Movement ops (views) are never roots: they stay on the
buffers they read, and the runtime applies them as NumPy strides at launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import heapq
import math

from lazyarray.ir.hlo import MOVEMENT, REDUCE_LIKE, SOURCES, Builder, Instr, Module
from lazyarray.ops.table import OPS, Cost


@dataclass
class Group:
    kind: str  # "loop" | "input" | "update" (a write, with the loop computing its value)
    #            | "library" (a plain write or library call: ordered like a kernel)
    roots: list[int]
    members: set[int] = field(default_factory=set)
    deps: set[int] = field(default_factory=set)  # groups whose roots this one reads
    bases: set[int] = field(default_factory=set)  # instruction ids read from outside
    reason: str = ""  # why the kernel ends at its roots (see REASONS)

    def space(self, m: Module):
        """The iteration space: (operand shape, reduced dims) for input, (shape,) for loop."""
        r = m.instrs[self.roots[0]]
        if self.kind == "input":
            return (r.opcode, m.instrs[r.operands[0]].shape, r.attr("dimensions"))
        return ("loop", r.shape)


MAX_FUSION = 128  # instructions per kernel: bounds compile time; long chains become a few kernels

# Why a fusion ends at its root: the `reason=` attribute of a fusion instruction.
REASONS = {
    "output": "its value is a result of this evaluation (a materialization point)",
    "reduction": "its root is a reduction, scan or arg-reduction: consumers need the whole result",
    "view": "its value is read through a view (slice, transpose, broadcast, reshape), so it "
            "needs a buffer of its own",
    "library": "its value feeds a library call (dot, sort, LAPACK, FFT), or is the array a "
               "later write (update) changes",
    "max_size": f"the kernel reached MAX_FUSION ({MAX_FUSION}) instructions",
    "shared": "an expensive op read by several kernels is computed once, not per kernel "
              "(or a cheap value computed from one)",
    "gather": "its value is read through index arrays (gather): random access needs a buffer",
}


def is_cheap(ins: Instr) -> bool:
    if ins.opcode == "gather":  # random reads: computed once, not per consumer kernel
        return False
    return ins.opcode not in OPS or OPS[ins.opcode].cost is Cost.CHEAP


def _needs_buffer(m: Module, u: int, i: int) -> bool:
    """Does instruction u read i other than element by element in its own iteration space?
    (through a view, as a gather's table, as a library call's operand, or as the value of a
    write that cannot fuse with it: one into a view, which the executor runs)"""
    user = m.instrs[u]
    if user.opcode == "gather":
        return user.operands[0] == i
    return user.opcode in MOVEMENT or (not user.is_elementwise and user.opcode not in REDUCE_LIKE
                                       and not (_written_by(m, u, i) and _fusable_write(m, u)))


def _base(m: Module, i: int) -> int:
    while m.instrs[i].opcode in MOVEMENT:
        i = m.instrs[i].operands[0]
    return i


def _written_by(m: Module, u: int, i: int) -> bool:
    """Is instruction i the value (not the base) of update u, so that u can fuse with it?"""
    ins = m.instrs[u]
    return ins.opcode == "update" and ins.operands[1] == i and ins.operands[0] != i


def _fusable_write(m: Module, i: int) -> bool:
    """An update whose base is a buffer of its own (a parameter or a computed value, not a view
    or a broadcast constant): the fused kernel writes into that buffer or a copy of it."""
    base = m.instrs[m.instrs[i].operands[0]]
    return base.opcode not in MOVEMENT and base.opcode != "constant"


def assign_groups(m: Module) -> list[Group]:
    """The fusion groups of `m`: the greedy walk with the long-chain rules (`_assign` with a
    walk), a second walk with its moves, unless either makes two groups read each other
    (then the plain walk, where each value a cut crosses starts a group of its own)."""
    users = m.users()
    walk = (_by_height(m, users), _expensive_cones(m))
    groups, moves = _assign(m, users, walk)
    if moves:
        again, _ = _assign(m, users, walk, move=moves)
        if _acyclic(again):
            return again
    if _acyclic(groups):
        return groups
    apart, _ = _assign(m, users, walk, homes_join=False)  # each stored value a group
    return apart if _acyclic(apart) else _assign(m, users, None)[0]


def _acyclic(groups: list[Group]) -> bool:
    """Do no groups read each other, directly or through others? (Kahn's order: every
    group is taken once the groups it reads are.)"""
    waiting = [len(g.deps) for g in groups]
    readers: list[list[int]] = [[] for _ in groups]
    for k, g in enumerate(groups):
        for d in g.deps:
            readers[d].append(k)
    ready = [k for k, w in enumerate(waiting) if not w]
    taken = 0
    while ready:
        k = ready.pop()
        taken += 1
        for r in readers[k]:
            waiting[r] -= 1
            if not waiting[r]:
                ready.append(r)
    return taken == len(groups)


def _assign(m: Module, users, walk, move: set[int] | None = None,
            homes_join: bool = True) -> tuple[list[Group], set[int]]:
    """Groups by the greedy walk; with `walk` (the order, the expensive cones: see
    `assign_groups`) the rules for long chains too (`spill`), else from the last
    instruction, each value a cut crosses a group of its own. Also the members to move in
    a second walk (`_moves`)."""
    spill = walk is not None
    outputs = set(m.outputs)
    groups: list[Group] = []
    member_of: list[set[int]] = [set() for _ in m.instrs]
    order, exps = walk if spill else (range(len(m.instrs) - 1, -1, -1), None)
    # shape -> the latest group begun at a MAX_FUSION cut or storing a cheap value with an
    # expensive cone: the next such value of that shape joins it while it has room
    home: dict[tuple, int] = {}
    homes: set[int] = set()  # every group that was one
    move = move or set()

    def new_group(kind: str, i: int, reason: str) -> None:
        groups.append(Group(kind, [i], {i}, reason=reason))
        member_of[i].add(len(groups) - 1)

    def add_root(k: int, i: int) -> None:  # i computed (and stored) by group k
        groups[k].roots.append(i)
        groups[k].members.add(i)
        member_of[i].add(k)

    for i in order:
        ins = m.instrs[i]
        if ins.opcode in SOURCES or ins.opcode in MOVEMENT:
            continue
        if ins.opcode in REDUCE_LIKE:
            new_group("input", i, "output" if i in outputs else "reduction")
            continue
        if ins.opcode == "update" and _fusable_write(m, i):  # its value's loop joins it
            new_group("update", i, _root_reason(m, users, outputs, i))
            continue
        if not ins.is_elementwise and ins.opcode != "gather":
            new_group("library", i, "library")  # a library call: the executor runs it
            continue
        # read through a view or a gather, by a library call or as the base of a write: the
        # value needs a buffer of its own (a write's value is computed inside its kernel)
        viewed = any(_needs_buffer(m, u, i) for u in users[i])
        ugroups = {g for u in users[i] for g in member_of[u] if groups[g].kind != "library"}
        full = any(len(groups[g].members) >= MAX_FUSION for g in ugroups) and not (
            spill and _reads_leaves(m, ins))  # (a cheap op of leaves joins a full kernel)
        if i in outputs or viewed or not ugroups or full:
            if i in outputs and not viewed and len(ugroups) == 1:
                g = groups[next(iter(ugroups))]
                if g.kind == "loop":  # multi-output: producer joins its consumer as a root
                    add_root(next(iter(ugroups)), i)
                    continue
            reason = ("output" if i in outputs else
                      "view" if any(m.instrs[u].opcode in MOVEMENT for u in users[i]) else
                      "gather" if any(m.instrs[u].opcode == "gather"
                                      and m.instrs[u].operands[0] == i for u in users[i]) else
                      "library" if viewed or not ugroups else "max_size")
            if reason == "max_size" and spill:
                k = home.get(ins.shape) if homes_join else None
                if k is not None and len(groups[k].members) < MAX_FUSION and all(
                        g == k or len(groups[g].members) >= MAX_FUSION for g in ugroups):
                    # another value crossing the cut of a long chain: a root of the group
                    # that began there (the chain's carried values, stored once each: a
                    # time loop's `s = s * exp(...)` and `acc += s`), not a group of its own
                    # (which recomputed the chain's prefix in both and stored every
                    # expensive value in it)
                    add_root(k, i)
                    continue
                home[ins.shape] = len(groups)
                homes.add(len(groups))
            new_group("loop", i, reason)
        elif spill and is_cheap(ins) and exps[i] and (
                len(ugroups) > 1 or (i in move and home.get(ins.shape) not in ugroups)):
            # computed once and stored: several kernels read it and its cone holds an
            # expensive op (each would recompute the op, or the op would be stored: every
            # one of a time loop's exps), or it was moved here (`_moves`)
            k = home.get(ins.shape) if homes_join else None
            if k is None or len(groups[k].members) >= MAX_FUSION:
                home[ins.shape] = len(groups)
                homes.add(len(groups))
                new_group("loop", i, "shared")
            else:
                add_root(k, i)
        elif len(ugroups) == 1 or is_cheap(ins):
            for g in ugroups:
                groups[g].members.add(i)
            member_of[i] |= ugroups
        else:
            new_group("loop", i, "shared")

    for g in groups:  # a write with nothing to compute (a copy, a fill): NumPy's setitem runs it
        if g.kind == "update" and len(g.members) == 1:
            g.kind, g.reason = "library", "library"
    root_of = {r: k for k, g in enumerate(groups) for r in g.roots}
    for k, g in enumerate(groups):
        for i in g.members:
            for o in m.instrs[i].operands:
                if o not in g.members:
                    b = _base(m, o)
                    g.bases.add(b)
                    if b in root_of and root_of[b] != k:
                        g.deps.add(root_of[b])
    return groups, (_moves(m, groups, homes, exps) if spill else set())


def _moves(m: Module, groups: list[Group], homes: set[int], exps) -> set[int]:
    """The members of each reduction's kernel that reads two values or more a home group
    stores (`_assign`'s "shared" groups of cheap values) and whose cones overlap it: in a
    second assignment they join the home. A time loop's running sum (`acc += s` beside `s =
    s * exp(...)`) then runs in the same kernel as the chain it sums, which stores only
    the values read after it, where the reduction read every step's `s`."""
    moved: set[int] = set()
    for h in homes:
        home = groups[h]
        shape = m.instrs[home.roots[0]].shape
        over = set().union(*(exps[r] for r in home.roots)) | {
            i for i in home.members if not is_cheap(m.instrs[i])}
        for g in groups:
            if g.kind != "input" or len(set(home.roots) & g.bases) < 2:
                continue
            moved |= {i for i in g.members if m.instrs[i].shape == shape
                      and m.instrs[i].is_elementwise and is_cheap(m.instrs[i])
                      and not exps[i].isdisjoint(over)}
    return moved


def _reads_leaves(m: Module, ins: Instr) -> bool:
    """A cheap op of parameters, constants and views of them (`0.2 * z[t]`): a kernel past
    MAX_FUSION still takes it, rather than a kernel storing it for the next to read."""
    return is_cheap(ins) and all(
        m.instrs[_base(m, o)].opcode in SOURCES for o in ins.operands)


def _in_loop(ins: Instr) -> bool:
    """Is `ins` computed element by element inside a loop fusion? (Elementwise ops, and a
    gather: its table is a buffer, its indices are read at the element.)"""
    return ins.is_elementwise or ins.opcode == "gather"


def _reads_at_element(m: Module, u: int, i: int) -> bool:
    """Does instruction u read i at the element it computes (an elementwise operand, or a
    gather's index; not a gather's table)?"""
    user = m.instrs[u]
    return user.is_elementwise or user.opcode == "gather" and user.operands[0] != i


def _by_height(m: Module, users) -> list[int]:
    """The instructions, every user before what it reads, lowest first by height: the
    longest path to a value nobody reads through elementwise users only (a reduction or a
    library call ends a kernel: what follows it does not count). A chain then fills its
    kernels about level by level, so that where MAX_FUSION cuts it, the values of one or
    two levels cross (a time loop's `s` and `acc`), not one per step of whichever chain
    came first in the module or had the longer tail. (By depth from the sources instead, a
    step's exp of its input, shallow, came last and crossed at every cut.)"""
    n = len(m.instrs)
    height = [0] * n
    for i in range(n - 1, -1, -1):
        up = [height[u] for u in users[i] if _reads_at_element(m, u, i)]
        height[i] = 1 + max(up) if up else 0
    waiting = [len(set(users[i])) for i in range(n)]
    ready = [(height[i], -i) for i in range(n) if not waiting[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(-i)
        for o in set(m.instrs[-i].operands):
            waiting[o] -= 1
            if not waiting[o]:
                heapq.heappush(ready, (height[o], -o))
    return order


CONE_CAP = 256  # expensive ops recorded per cone (`_expensive_cones`): past it, "many"


def _expensive_cones(m: Module) -> list[frozenset[int]]:
    """Per instruction, the expensive elementwise ops its value is computed from within a
    loop fusion (through elementwise ops only: a reduction, a library call, a source or a
    view ends a cone, their values have buffers). Past CONE_CAP ops a cone is the set of
    its first CONE_CAP (an overlap test then may miss: the fusion only stores less)."""
    cones: list[frozenset[int]] = []
    empty: frozenset[int] = frozenset()
    for ins in m.instrs:
        if not _in_loop(ins) or ins.opcode in SOURCES or ins.opcode in MOVEMENT:
            cones.append(empty)
            continue
        read = ins.operands[1:] if ins.opcode == "gather" else ins.operands  # (not a table)
        inner = [o for o in read if _in_loop(m.instrs[o])
                 and m.instrs[o].opcode not in SOURCES and m.instrs[o].opcode not in MOVEMENT]
        full = next((cones[o] for o in inner if len(cones[o]) >= CONE_CAP), None)
        if full is not None:  # (shared, not copied: a long chain holds one set past the cap)
            cones.append(full)
            continue
        acc = {o for o in inner if not is_cheap(m.instrs[o])}
        for o in inner:
            acc |= cones[o]
        cones.append(frozenset(acc) if acc else empty)
    return cones


def _root_reason(m: Module, users, outputs, i: int) -> str:
    """Why a write's kernel ends at the write: its new version is a result, is read through
    views, or is the base of a later write (or a library call's operand)."""
    if i in outputs:
        return "output"
    return "view" if any(m.instrs[u].opcode in MOVEMENT for u in users[i]) else "library"


def _reaches(groups: list[Group], a: int, b: int) -> bool:
    """Does group a (transitively) read group b?"""
    stack, seen = [a], set()
    while stack:
        g = stack.pop()
        if g == b:
            return True
        if g not in seen:
            seen.add(g)
            stack.extend(groups[g].deps)
    return False


def merge_siblings(m: Module, groups: list[Group]) -> list[Group]:
    """Independent fusions over one iteration space that share an input become one."""
    alive = [g is not None for g in groups]
    for a in range(len(groups)):
        if (not alive[a] or groups[a].kind == "update"
                or m.instrs[groups[a].roots[0]].opcode in ("argreduce", "scan")):
            continue
        for b in range(a + 1, len(groups)):
            if not alive[b]:
                continue
            ga, gb = groups[a], groups[b]
            shared = {x for x in ga.bases & gb.bases if m.instrs[x].opcode != "constant"}
            if (ga.kind != gb.kind or ga.space(m) != gb.space(m)
                    or not shared or _reaches(groups, a, b)
                    or _reaches(groups, b, a)):
                continue
            ga.roots += gb.roots
            ga.reason = join_reasons(ga.reason, gb.reason)
            ga.members |= gb.members
            ga.bases |= gb.bases
            ga.deps |= gb.deps
            alive[b] = False
            for g in groups:  # whoever read b now reads a
                if g is not None and b in g.deps:
                    g.deps.discard(b)
                    g.deps.add(a)
            ga.deps.discard(a)
    return [g if alive[k] else None for k, g in enumerate(groups)]


def absorb_shared(m: Module, groups: list[Group | None]) -> list[Group | None]:
    """A group stored because several kernels read it ("shared") whose readers are one
    kernel now (siblings merged: a particle push's x and y updates, which each read the
    wrapped cell indices) is computed inside that kernel instead of stored: each value is
    still computed once, and its buffer is neither written nor read back. Only between
    loops over one iteration space, each value read element by element (an index of a
    gather counts: it is read at the element), within MAX_FUSION."""
    users, outputs = None, set(m.outputs)
    changed = True
    while changed:
        changed = False
        for k, s in enumerate(groups):
            if s is None or s.kind != "loop" or s.reason != "shared":
                continue
            roots = set(s.roots)
            readers = {j for j, g in enumerate(groups)
                       if g is not None and j != k and roots & g.bases}
            if len(readers) != 1:
                continue
            j = readers.pop()
            g = groups[j]
            if g.kind != "loop" or g.space(m) != s.space(m) or roots & outputs \
                    or len(g.members | s.members) > MAX_FUSION:
                continue
            users = users or m.users()
            if not all((u in g.members or u in s.members) and _reads_at_element(m, u, r)
                       for r in roots for u in users[r]):
                continue
            g.members |= s.members
            g.bases = (g.bases - roots) | s.bases
            g.deps = (g.deps | s.deps) - {k}
            groups[k] = None
            changed = True
    return groups


def _epilogue_of(m: Module, groups: list[Group | None], k: int) -> int | None:
    """The reduction group a loop group can finish (its epilogue), if any.

    sqrt(sum(x)): a loop group that reads only one reduction group's roots (through
    order-preserving reshapes such as keepdims) and scalar constants, over as many elements.
    """
    g = groups[k]
    if g is None or g.kind != "loop" or any(m.instrs[i].opcode == "gather" for i in g.members):
        return None
    shape_size = m.instrs[g.roots[0]].shape
    owner = None
    for i in g.members:
        for o in m.instrs[i].operands:
            if o in g.members:
                continue
            while m.instrs[o].opcode == "reshape" or (
                    m.instrs[o].opcode == "broadcast" and m.instrs[m.instrs[o].operands[0]].shape == ()
                    and m.instrs[m.instrs[o].operands[0]].opcode == "constant"):
                o = m.instrs[o].operands[0]
            ins = m.instrs[o]
            if ins.opcode == "constant":
                continue
            cands = [j for j, h in enumerate(groups) if h is not None and o in h.roots]
            if (len(cands) != 1 or groups[cands[0]].kind != "input" or ins.opcode != "reduce"
                    or (owner is not None and owner != cands[0])):
                return None
            owner = cands[0]
            if math.prod(ins.shape) != math.prod(shape_size):
                return None
    return owner


def merge_epilogues(m: Module, groups: list[Group | None]) -> list[Group | None]:
    """A loop group that only finishes one reduction joins it: one kernel, no round trip."""
    users = m.users()
    for k in range(len(groups)):
        owner = _epilogue_of(m, groups, k)
        if owner is None:
            continue
        g, r = groups[k], groups[owner]
        inside = g.members | r.members
        keep = [x for x in r.roots if x in m.outputs or any(
            u not in inside and not _only_feeds(m, users, u, g.members) for u in users[x])]
        r.roots = g.roots + keep
        # an epilogue read back through a broadcast/view still ends at its reduction
        ends = "reduction" if g.reason == "view" else g.reason
        r.reason = join_reasons(ends, r.reason) if keep else ends
        r.members |= g.members
        r.bases = (r.bases | g.bases) - set(r.members) - set(r.roots)
        groups[k] = None
        for h in groups:
            if h is not None and k in h.deps:
                h.deps.discard(k)
                h.deps.add(owner)
        r.deps.discard(owner)
        r.deps.discard(k)
    return groups


def join_reasons(a: str, b: str) -> str:
    """Reasons of merged fusions, each once: "output+view"."""
    parts = a.split("+")
    return "+".join(parts + [x for x in b.split("+") if x not in parts])


def _only_feeds(m: Module, users, u: int, members: set[int]) -> bool:
    """Is `u` a reshape chain whose every use is inside `members` (and no output)?"""
    if m.instrs[u].opcode != "reshape" or u in m.outputs:
        return False
    return all(x in members or _only_feeds(m, users, x, members) for x in users[u])


def _topo_groups(groups: list[Group | None]) -> list[int]:
    order, state = [], {}
    for start in range(len(groups)):
        if groups[start] is None or start in state:
            continue
        stack = [(start, False)]
        while stack:
            g, done = stack.pop()
            if done:
                order.append(g)
                continue
            if g in state:
                continue
            state[g] = 1
            stack.append((g, True))
            stack.extend((d, False) for d in groups[g].deps if d not in state)
    return order


def _fused_computation(m: Module, g: Group) -> tuple[Module, list[int]]:
    """The group as a Module over its own parameters; returns it and the outside ids it reads."""
    b = Builder()
    local: dict[int, int] = {}
    params: list[int] = []

    def read(o: int) -> int:
        if o in local:
            return local[o]
        ins = m.instrs[o]
        if o in g.members:
            raise AssertionError("member read before it was built")
        if ins.opcode in MOVEMENT:
            new = Instr(ins.opcode, (read(ins.operands[0]),), ins.shape, ins.dtype, ins.attrs)
        elif ins.opcode == "constant":
            new = ins
        else:
            new = Instr("parameter", (), ins.shape, ins.dtype, (("index", len(params)),))
            params.append(o)
        local[o] = b.add(new)
        return local[o]

    for i in sorted(g.members):
        ins = m.instrs[i]
        ops = tuple(local[o] if o in g.members else read(o) for o in ins.operands)
        local[i] = b.add(Instr(ins.opcode, ops, ins.shape, ins.dtype, ins.attrs, ins.value))
    name = f"fused_{g.kind}"
    return b.build([local[r] for r in g.roots], name), params


def fuse(m: Module) -> Module:
    """Module of parameters, constants, fusions (+ get-tuple-element) and output views."""
    groups = assign_groups(m)
    while True:
        n = sum(g is not None for g in groups)
        groups = absorb_shared(m, merge_siblings(m, groups))
        if sum(g is not None for g in groups) == n:
            break
    groups = merge_epilogues(m, groups)
    b = Builder()
    new: dict[int, int] = {}

    def outer(o: int) -> int:  # an outside value (source, root, or a view of one) in the new module
        if o in new:
            return new[o]
        ins = m.instrs[o]
        ops = tuple(outer(x) for x in ins.operands)
        new[o] = b.add(Instr(ins.opcode, ops, ins.shape, ins.dtype, ins.attrs, ins.value))
        return new[o]

    for k in _topo_groups(groups):
        g = groups[k]
        if g.kind == "library":
            outer(g.roots[0])
            continue
        comp, params = _fused_computation(m, g)
        ops = tuple(outer(p) for p in params)
        first = comp.instrs[comp.outputs[0]]
        f = b.add(Instr("fusion", ops, first.shape, first.dtype,
                        (("kind", g.kind), ("reason", g.reason)), comp))
        if len(g.roots) == 1:
            new[g.roots[0]] = f
        else:
            for j, r in enumerate(g.roots):
                ri = m.instrs[r]
                new[r] = b.add(Instr("get-tuple-element", (f,), ri.shape, ri.dtype,
                                     (("index", j),)))
    return b.build([outer(o) for o in m.outputs], m.name)

