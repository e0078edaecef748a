"""The showcase runner's --plot writes the chart in the format its extension names."""

import pytest

from lazyarray.tools.showcase_report import CaseResult, ImplResult, plot as _plot

pytest.importorskip("matplotlib")  # optional: the bench extra, not the test extra


def _results():
    impls = {"lazyarray": ImplResult(status="ok", ratio=0.4),
             "numexpr": ImplResult(status="ok", ratio=1.1)}
    return [CaseResult("W1", 10**7, "1e7", impls=impls),
            CaseResult("W2", 10**7, "1e7", impls=dict(impls))]


def test_plot_svg_without_date(tmp_path):
    path = tmp_path / "ratios.svg"
    assert _plot(_results(), str(path)) is None
    text = path.read_text()
    assert "<svg" in text and "<dc:date>" not in text


def test_plot_png(tmp_path):
    path = tmp_path / "ratios.png"
    assert _plot(_results(), str(path)) is None
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
