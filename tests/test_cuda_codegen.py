"""The CUDA code generator on its own (no compile, no GPU): what it emits and declines, and
the pass fix it depends on (operand dtypes are right after movement push-down)."""

import numpy as np
import pytest

import lazyarray as la
from lazyarray.codegen import cuda as cg
from lazyarray.graph.node import toposort
from lazyarray.ir.lower import lower
from lazyarray.passes import run_pipeline
from lazyarray.codegen.layout import plan


def fusions(*arrays):
    """(fused computation, launch Spec) of each fusion evaluating `arrays`."""
    nodes = [a._node for a in arrays]
    module, args = lower(nodes, toposort(nodes))
    m = run_pipeline(module)
    out, vals = [], {}
    for i, ins in enumerate(m.instrs):
        if ins.opcode == "parameter":
            vals[i] = args[ins.attr("index")]
        elif ins.opcode == "fusion":
            comp = ins.value
            ops = [vals.get(o) for o in ins.operands]
            if all(isinstance(v, np.ndarray) for v in ops):
                out.append((comp, plan(comp, ops).spec))
    return out


def test_pushed_broadcast_keeps_its_operand_dtype():
    """broadcast(compare(a, 0)) pushed below the compare broadcasts `a` as f64, not pred (the
    CUDA templates choose by operand dtype)."""
    with la.options(eager_threshold=0):
        v0 = la.asarray(np.array(1.0))
        r = la.where(v0 > 0, v0 + v0, la.asarray(np.array([0.0])))
        text = str(la.explain(r))
    assert "pred[1] broadcast(%0)" not in text
    assert "f64[1] broadcast(%0)" in text


def test_loop_kernel_is_grid_stride_over_strided_loads():
    with la.options(eager_threshold=0):
        x = la.asarray(np.ones((4, 6)))
        ((comp, spec),) = fusions(x.T[1:] * 2 + 1)
    src = cg.render(comp, spec, 256)
    assert "for g in range(cuda.grid(1), n0 * n1, cuda.gridsize(1)):" in src
    assert "a0[o0 + i0 * t0_0 + i1 * t0_1]" in src
    assert "out0[g] = " in src


def test_reduce_kernel_has_a_shared_tree_and_a_combine_pass():
    with la.options(eager_threshold=0):
        x = la.asarray(np.ones((4, 6), np.float32))
        ((comp, spec),) = fusions(la.sqrt((x * x).sum(axis=0)))
    src = cg.render(comp, spec, 128)
    assert "sh0 = cuda.shared.array(128, numba.float64)" in src  # float32 sums in float64
    assert "w = 64" in src and "def kernel_combine(" in src
    assert "_m.sqrt(" in src.split("def kernel_combine(")[1]  # the epilogue runs once


def test_argreduce_keeps_value_and_index_per_thread():
    with la.options(eager_threshold=0):
        x = la.asarray(np.ones((4, 6)))
        ((comp, spec),) = fusions(la.argmax(x, axis=1))
    src = cg.render(comp, spec, 64)
    assert "shi = cuda.shared.array(64, numba.int64)" in src and "out0[row] = shi[0]" in src


@pytest.mark.parametrize("make", [lambda x: la.logaddexp(x, x), lambda x: la.cbrt(x),
                                  lambda x: la.gcd(x.astype(np.int64), 3),
                                  lambda x: (x + 1j) * la.exp(x + 1j)])
def test_ops_without_a_cuda_template_are_declined(make):
    with la.options(eager_threshold=0):
        x = la.asarray(np.ones(5))
        comps = fusions(make(x))
    with pytest.raises(cg.Unsupported):
        for comp, spec in comps:
            cg.render(comp, spec, 64)


def test_supported_names_are_elementwise_ops():
    from lazyarray.ops.table import OPS

    names = set(cg.TEMPLATED)
    assert names <= set(OPS)
    assert all(cg.supported(n) for n in names)


def test_gather_is_declined_for_the_gpu():
    """The CUDA generator does not render gathers yet: the fusion runs on the host interpreter
    (a counted fallback), never a kernel reading an undefined value."""
    with la.options(eager_threshold=0):
        x = la.asarray(np.arange(10.0))
        comps = fusions(x[la.asarray(np.array([3, 1, -1])) * 1] * 2)
    assert any(any(i.opcode == "gather" for i in comp.instrs) for comp, _ in comps)
    with pytest.raises(cg.Unsupported, match="gather"):
        for comp, spec in comps:
            cg.render(comp, spec, 64)
