"""The house never gets worse: the structure figures of `lazyarray.tools.house` (import
cycles, function-level and private cross-module imports, files over 800 lines, benchmark
workload names in core code) stay at or below their ceilings."""

from __future__ import annotations

import pytest

from lazyarray.tools import house


@pytest.fixture(scope="module")
def figures():
    return house.figures()


@pytest.mark.parametrize("name", list(house.CEILINGS))
def test_figure_within_its_ceiling(figures, name):
    assert figures[name] <= house.CEILINGS[name], (
        f"{name}: {figures[name]} > {house.CEILINGS[name]} (python -m lazyarray.tools.house)")


def test_cycles_are_found():
    """The cycle finder sees a loop of three and ignores a chain."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert house._cycles(graph) == [["a", "b", "c"]]


def test_layers_place_modules_by_their_longest_prefix():
    """The layer contract reads prefixes: the longest one wins, the rest is the namespace."""
    name = {m: house.LAYERS[house.layer_of(m)][0] for m in (
        "lazyarray.ops.table", "lazyarray.graph.node", "lazyarray.graph.build",
        "lazyarray.runtime.pool", "lazyarray.runtime.executor", "lazyarray.backends.numba_cpu",
        "lazyarray.backends.dask_backend", "lazyarray.array", "lazyarray._funcs", "lazyarray",
        "lazyarray.tools.house")}
    assert name == {
        "lazyarray.ops.table": "facts", "lazyarray.graph.node": "memory",
        "lazyarray.graph.build": "graph and IR", "lazyarray.runtime.pool": "memory",
        "lazyarray.runtime.executor": "runtime", "lazyarray.backends.numba_cpu": "kernels",
        "lazyarray.backends.dask_backend": "backends", "lazyarray.array": "array",
        "lazyarray._funcs": "namespace", "lazyarray": "namespace",
        "lazyarray.tools.house": "tools"}
