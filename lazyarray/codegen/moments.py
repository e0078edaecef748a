"""A moments fusion (passes/moments.py) -> the body of one Numba kernel.

X is read as n0 rows of n1 kept elements, in fixed blocks of `rb` rows, one block per
parallel iteration. A block is a contiguous run of X's elements, summed into `w` lanes (w a
multiple of n1, so lane u holds kept element u % n1): a loop of w independent additions
that LLVM vectorizes, where a loop over one row's n1 elements (the column standardization: 8) would
not pay for itself. Per block: its sums per kept element, then, over the block again while it is in
cache, the sums of squared deviations from the block's own means. Both go to partials, one
row per block. Then per kept element: the total of the block sums (the first reduction), the
epilogue up to the value M subtracted from X, and the second reduction from the partials,

    sum over blocks b of  q_b + n_b * (s_b / n_b - M)**2

then the rest of the epilogue. The blocks and the order of every addition are fixed by the
sizes alone, so results do not depend on the thread count.
"""

from __future__ import annotations

from lazyarray.codegen.body import (epilogue_instrs, expr_of, fp_line, indent, nonfinite_test,
                                    acc_dtype, np_type)
from lazyarray.ir.hlo import Module
from lazyarray.passes.moments import parts
from lazyarray.codegen.layout import MOMENT_LANES, Spec


def render_moments(comp: Module, spec: Spec) -> list[str]:
    """The kernel body after the signature and the scalar loads, indented one level."""
    p = parts(comp)
    acc = np_type(acc_dtype("add", comp.instrs[p.total].dtype))
    u, at = "np.uint64(u)", "np.uint64(t) + np.uint64(u)"  # (unsigned: no wraparound test,
    # which keeps LLVM from vectorizing the loads)

    def sweep(w: str, term: str, tail: str, into: str) -> list[str]:
        """`term` over the block's elements into the `w` lanes, then the lanes per kept
        element into `into`."""
        return [f"for u in range({w}):", f"    acc[u] = {acc}(0)",
                f"for t in range(bs, bf, {w}):", f"    for u in range({w}):",
                f"        acc[{u}] += {term}", "for t in range(bf, be):",
                f"    acc[np.uint64(t - bf)] += {tail}",
                "for j in range(n1):", "    v = acc[j]", f"    for r in range(1, {w} // n1):",
                "        v += acc[r * n1 + j]", f"    {into}[b, j] = v"]

    def passes(w: str) -> list[str]:
        """Both passes over the block, with `w` lanes (a name, or a number LLVM sees)."""
        dev = "({0} - mb[{1}]) * ({0} - mb[{1}])"
        return ([f"bf = bs + (be - bs) // {w} * {w}"]
                + sweep(w, f"{acc}(a0[{at}])", f"{acc}(a0[np.uint64(t)])", "part0")
                + [f"for u in range({w}):", "    mb[u] = part0[b, u % n1] / cnt"]
                + sweep(w, dev.format(f"{acc}(a0[{at}])", u),
                        dev.format(f"{acc}(a0[np.uint64(t)])", "np.uint64(t - bf)"), "part1"))

    # (names apart from the signature's s<k>, n<k>, x<k>: a kernel argument assigned in a
    # prange body would become a variable shared by its iterations)
    block = ["lo = b * rb", "hi = min(lo + rb, n0)", "cnt = hi - lo", "bs = lo * n1",
             "be = hi * n1", f"acc = np.empty(w, {acc})", f"mb = np.empty(w, {acc})",
             # the usual lane count as a constant: LLVM unrolls the lanes into registers'
             # worth of vectors (a kernel loaded from the disk cache ran 1.3-1.5x slower
             # with the count a run-time value)
             f"if w == {MOMENT_LANES}:", *indent(passes(str(MOMENT_LANES)), 1),
             "else:", *indent(passes("w"), 1)]

    epi = epilogue_instrs(comp)
    derived = {p.total, p.deviations}
    comb = ["acc0 = part0[0, j]", "for b in range(1, nblocks):", "    acc0 += part0[b, j]"]
    for i, ins in enumerate(comp.instrs):
        if i == p.total or i == p.deviations:
            if i == p.deviations:
                comb += [f"m = {acc}(x{p.mean})", f"acc1 = {acc}(0)", "for b in range(nblocks):",
                         "    c = min(rb, n0 - b * rb)", "    e = part0[b, j] / c - m",
                         "    acc1 += part1[b, j] + c * e * e"]
            comb += [f"x{i} = {np_type(ins.dtype)}(acc{int(i == p.deviations)})",
                     f"fpf |= {nonfinite_test(f'x{i}')}"]
        elif ins.opcode == "reshape" and ins.operands[0] in derived:
            derived.add(i)
            comb.append(f"x{i} = x{ins.operands[0]}")
        elif i in epi:
            derived.add(i)
            comb.append(f"x{i} = {expr_of(comp, i)}")
            comb += fp_line(comp, i, set())
    comb += [f"out{k}[j] = x{o}" for k, o in enumerate(comp.outputs)]
    return indent(["for b in prange(nblocks):", *indent(block, 1),
                    "for j in prange(n1):", *indent(comb, 1)], 1)
