"""`bench chart --format png|svg` where kaleido finds no browser: skipped with one line that
says how to get one, exit 0, nothing written (the pipeline's own charts are html)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.cli import main
from benchlab.cli.chart import NO_BROWSER


@pytest.fixture
def no_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kaleido's browser is where BROWSER_PATH says, and nothing is there."""
    chromium = pytest.importorskip("choreographer.browsers.chromium")
    missing = tmp_path / "no-chrome"
    monkeypatch.setenv("BROWSER_PATH", str(missing))
    if chromium.Chromium.find_browser(skip_local=False) != str(missing):
        pytest.skip("kaleido has a Chrome of its own download (kaleido_get_chrome)")


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_static_export_without_a_browser_is_skipped_in_one_line(
    public_store: Path, tmp_path: Path, no_browser: None, capsys, fmt: str
) -> None:
    target = tmp_path / f"chart.{fmt}"
    argv = ["--store", str(public_store), "chart", "--format", fmt, "--output", str(target)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == f"bench: note: {fmt} export skipped: {NO_BROWSER}\n"
    assert "plotly_get_chrome" in captured.err and captured.out == ""
    assert not target.exists()


def test_html_charts_need_no_browser(public_store: Path, tmp_path: Path, no_browser: None) -> None:
    out = tmp_path / "charts"
    assert main(["--store", str(public_store), "chart", "--output", str(out)]) == 0
    assert (out / "throughput.html").is_file()


def test_a_format_clash_is_still_an_error_without_a_browser(
    public_store: Path, tmp_path: Path, no_browser: None, capsys
) -> None:
    argv = ["--store", str(public_store), "chart", "--format", "png"]
    assert main([*argv, "--output", str(tmp_path / "x.csv")]) == 2
    assert "ends in .csv but --format is png" in capsys.readouterr().err
