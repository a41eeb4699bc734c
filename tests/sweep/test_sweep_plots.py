"""The sweep's plots show their data: the legend below the panels, never on them; series that
differ by orders of magnitude on a log axis; units on the axes."""
from __future__ import annotations

from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
plt = pytest.importorskip("matplotlib.pyplot")

from emukern.sweep import results  # noqa: E402


def _df(scale_b: float) -> "pd.DataFrame":
    rows = []
    for prog, k in (("a.S", 1.0), ("b.S", scale_b)):
        for vlen in (128, 256, 512):
            rows.append({"ok": True, "program": prog, "vlen": vlen, "cycles": k * 1000 * vlen / 128,
                         "kernel_cycles": k * 300, "user_insns": 2000})
    return pd.DataFrame(rows)


def _figure(monkeypatch, df, axis, axes, tmp_path: Path):
    seen = []
    monkeypatch.setattr(plt, "close", lambda fig: seen.append(fig))
    assert results.plot_axis(df, axis, axes, tmp_path) is not None
    return seen[0]


def test_series_100x_apart_get_a_log_axis_and_the_legend_sits_below(monkeypatch, tmp_path):
    fig = _figure(monkeypatch, _df(100.0), "vlen", ["vlen", "program"], tmp_path)
    cycles, kernel, insns = fig.axes
    assert cycles.get_yscale() == "log" and kernel.get_yscale() == "log"
    assert insns.get_yscale() == "linear"                   # equal series stay linear
    assert "log scale" in cycles.get_ylabel() and "simulated cycles" in cycles.get_ylabel()
    assert cycles.get_xlabel() == "vlen (bits)"
    assert all(ax.get_legend() is None for ax in fig.axes)  # no legend on a panel
    (legend,) = fig.legends
    fig.canvas.draw()
    box = legend.get_window_extent()
    assert all(box.y1 <= ax.get_window_extent().y0 for ax in fig.axes)   # below every panel
    assert {t.get_text() for t in legend.get_texts()} == {"program=a.S", "program=b.S"}


def test_close_series_stay_linear(monkeypatch, tmp_path):
    fig = _figure(monkeypatch, _df(1.5), "vlen", ["vlen", "program"], tmp_path)
    assert [ax.get_yscale() for ax in fig.axes] == ["linear"] * 3


def test_y_scale_rule():
    assert results._y_scale([1, 2, 3]) == "linear"
    assert results._y_scale([1, 50]) == "log"
    assert results._y_scale([0, 1, 50]) == "symlog"
    assert results._y_scale([0, 0]) == "linear"


def test_the_same_data_is_not_drawn_twice(monkeypatch, tmp_path):
    """A sweep answered from its cache keeps the PNG drawn from the same data (drawing was most of
    a cached sweep's time); other data, or a PNG removed, draws again."""
    drawn = []
    real_savefig = plt.Figure.savefig
    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, *a, **k: (drawn.append(a[0]), real_savefig(fig, *a, **k)))
    df = _df(100.0)
    first = results.plot_axis(df, "vlen", ["vlen", "program"], tmp_path)
    again = results.plot_axis(df, "vlen", ["vlen", "program"], tmp_path)
    assert first == again and first.exists() and len(drawn) == 1
    results.plot_axis(_df(3.0), "vlen", ["vlen", "program"], tmp_path)     # other data
    assert len(drawn) == 2
    first.unlink()
    results.plot_axis(_df(3.0), "vlen", ["vlen", "program"], tmp_path)     # the PNG is gone
    assert len(drawn) == 3 and first.exists()
