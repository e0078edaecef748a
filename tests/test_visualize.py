"""lazyarray.visualize: DOT structure (clusters = kernels, every instruction a node), files."""

import os
import re
import stat
import sys

import numpy as np
import pytest

import lazyarray as la
from lazyarray.ir.text import parse_module, type_str


def _parse_dot(text):
    """{cluster number: set of node ids declared inside}, {node id: label}, [(a, b) edges]."""
    assert text.startswith("digraph lazyarray {") and text.rstrip().endswith("}")
    clusters, labels, edges, current = {}, {}, [], None
    for line in text.splitlines()[1:-1]:
        if m := re.match(r"\s*subgraph cluster_(\d+) \{$", line):
            assert current is None, "clusters do not nest"
            current = int(m.group(1))
            clusters[current] = set()
        elif line.strip() == "}":
            current = None
        elif m := re.match(r'\s*(\w+) \[label="((?:[^"\\]|\\.)*)"', line):
            labels[m.group(1)] = m.group(2).replace("\\n", "\n")
            if current is not None:
                clusters[current].add(m.group(1))
        elif m := re.match(r"\s*(\w+) -> (\w+)", line):
            edges.append((m.group(1), m.group(2)))
    assert current is None
    return clusters, labels, edges


def _loop_and_reduce():
    a = la.asarray(np.linspace(0, 1, 12).reshape(3, 4))
    b = la.arange(4.0)
    return la.sin(a) * 2 + b, la.sqrt(((a - b) ** 2).sum(axis=-1)), a.T[1:] + 1


def _multi_output():
    y = la.exp(la.asarray(np.linspace(0, 1, 50)))
    return y, y + 1


def _write_and_library():
    a = la.asarray(np.arange(36.0).reshape(6, 6))
    t = a * 2
    t[1:3] = -1.0
    return t @ a, la.argmax(a, axis=1), (t > 3).sum(), a.astype(np.float16) + 1


@pytest.mark.parametrize("make", [_loop_and_reduce, _multi_output, _write_and_library])
def test_clusters_are_kernels_and_every_instruction_is_a_node(make):
    with la.options(eager_threshold=0):
        arrays = make()
        text = la.visualize(*arrays)
        report = la.explain(*arrays)
    clusters, labels, edges = _parse_dot(text)
    assert len(clusters) == len(report.kernels)
    interpreted = sum(k.status == "interpreted" for k in report.kernels)
    assert len(clusters) - interpreted == report.num_kernels
    assert sorted(clusters) == list(range(len(clusters)))
    m = parse_module(report.hlo_after)
    fusions = [ins for ins in m.instrs if ins.opcode == "fusion"]
    assert len(fusions) == len(clusters)
    for k, f in enumerate(fusions):
        sub = f.value
        assert clusters[k] == {f"f{k}_{j}" for j in range(len(sub.instrs))}
        for j, ins in enumerate(sub.instrs):
            label = labels[f"f{k}_{j}"]
            assert label.startswith(f"%{j} ")
            assert label.endswith(type_str(ins.shape, ins.dtype))
    for i, ins in enumerate(m.instrs):
        if ins.opcode != "fusion":
            label = labels[f"n{i}"]
            assert label.startswith(f"%{i} ") and label.endswith(type_str(ins.shape, ins.dtype))
            op = ins.opcode if ins.opcode != "parameter" else "parameter("
            assert op in label.split("\n")[0]
    declared = set(labels)
    assert all(a in declared and b in declared for a, b in edges)
    assert sum(b.startswith("out") for _, b in edges) == len(m.outputs)
    for a in arrays:  # nothing was computed
        assert not a._node.realized


def test_labels_show_op_shape_dtype_and_cache_status():
    with la.options(eager_threshold=0):
        x = la.asarray(np.arange(10, dtype=np.int32))
        text = la.visualize((x * 3 > 4).sum())
    assert "multiply\\ns32[10]" in text
    assert re.search(r"%\d+ compare GT\\npred\[10\]", text)
    assert "to_apply=add" in text and "dimensions={0}" in text
    assert re.search(r"kind=input, cache=(hit|miss)\\nsignature [0-9a-f]{24}", text)


def test_interpreted_fusion_is_dashed():
    with la.options(eager_threshold=0):
        text = la.visualize(la.asarray(np.arange(12, dtype=np.float16)) * 2)  # codegen declines
    assert "cache=interpreted" in text and 'style="rounded,dashed"' in text


def test_computed_array_draws_empty_graph():
    x = la.arange(5.0)
    x.sum().item()
    assert _parse_dot(la.visualize(x)) == ({}, {}, [])


def test_filename_dot_gets_text(tmp_path):
    path = tmp_path / "g.dot"
    text = la.visualize(la.arange(40000.0) + 1, filename=str(path))
    assert path.read_text() == text


@pytest.mark.parametrize("ext", [".svg", ".png"])
def test_rendering_without_graphviz_is_a_clear_error(tmp_path, monkeypatch, ext):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(RuntimeError, match=f"writing \\{ext} needs Graphviz's `dot` program"):
        la.visualize(la.arange(40000.0) + 1, filename=str(tmp_path / f"g{ext}"))
    assert not os.path.exists(tmp_path / f"g{ext}")


def test_rendering_calls_dot(tmp_path, monkeypatch):
    """A stand-in `dot` records its arguments and input: visualize pipes the DOT text to
    `dot -Tsvg -o FILE`."""
    fake = tmp_path / "dot"
    fake.write_text(f"#!{sys.executable}\nimport sys\n"
                    "out = sys.argv[sys.argv.index('-o') + 1]\n"
                    "open(out, 'w').write(' '.join(sys.argv[1:]) + '\\n' + sys.stdin.read())\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr("shutil.which", lambda name: str(fake) if name == "dot" else None)
    target = tmp_path / "g.svg"
    text = la.visualize(la.arange(40000.0) + 1, filename=str(target))
    first, rest = target.read_text().split("\n", 1)
    assert first == f"-Tsvg -o {target}"
    assert rest == text
