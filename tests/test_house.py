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
