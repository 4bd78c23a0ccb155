"""Query output fits the terminal: on a fleet of 12 machines, `COLUMNS=120 bench table`,
`bench regression --detect`, `bench regression --machine` and `bench compare` print no line
over 120 characters, and `--wide` still shows every column."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.kit.cli import run_cli
from tests.site.site_factory import entry, write_entries

from benchlab.models import CatalogEntry

MACHINES = [f"lab-machine-{name}" for name in (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    "juliett", "kilo", "lima",
)]  # fmt: skip
BUILDS = 24


def fleet() -> list[CatalogEntry]:
    """12 machines, two models, a llama.cpp build a day for 24 days; on half the machines
    the q8 series loses 30 % from day 16 on (a confirmed step)."""
    out = []
    for m, machine in enumerate(MACHINES):
        for model in ("SmolLM2-135M", "Llama-3.2-1B"):
            for day in range(BUILDS):
                rate = (10.0 + m) * (1.0 + 0.02 * ((day * 7 + m) % 5))
                if m % 2 == 0 and day >= 16 and model == "Llama-3.2-1B":
                    rate *= 0.7
                build = 4500 + day
                out.append(entry(
                    machine, model, "q8", day, rate, backend="llama-bench",
                    backend_version=f"b{build} (abcdef{day:02d})", backend_build=build,
                    backend_commit=f"abcdef{day:02d}",
                ))  # fmt: skip
    return out


@pytest.fixture
def fleet_store(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_entries(store, fleet())
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.setenv("COLUMNS", "120")
    return store


def _longest(out: str) -> int:
    return max(len(line) for line in out.splitlines())


@pytest.mark.parametrize(
    "argv",
    [
        ("table",),
        ("best", "--by", "machine"),
        ("regression", "--detect"),
        ("regression", "--machine", "lab-machine-alpha"),
        ("compare", "--by", "machine", "--a", "lab-machine-alpha", "--b", "lab-machine-bravo"),
        ("compare", "--by", "build", "--a", "b4500", "--b", "b4523"),
    ],
)
def test_no_line_over_the_terminal_width(
    fleet_store: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code in (0, 1), err
    assert out.strip(), err
    assert _longest(out) <= 120, out


def test_wide_shows_every_column(fleet_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "table")
    assert code == 0 and "Left out to fit 120 columns: baseline tok/s" in out
    assert "baseline tok/s" not in out.splitlines()[0]
    code, wide, _ = run_cli(capsys, "table", "--wide")
    assert code == 0 and "baseline tok/s" in wide.splitlines()[0] and _longest(wide) > 120


def test_compare_suggests_match_best_when_exact_finds_nothing(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = [entry("odd-box", "Llama-3.2-1B", "q8", day, 5.0, threads=8) for day in range(3)]
    write_entries(store, [*fleet()[:BUILDS], *odd])
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    argv = ("compare", "--by", "machine", "--a", "lab-machine-alpha", "--b", "odd-box")
    code, _, err = run_cli(capsys, *argv)
    assert code == 1 and "no measurement was made under both" in err
    assert "`--match best`" in err
    code, _, err = run_cli(capsys, *argv, "--match", "best")
    assert code in (0, 1) and "`--match best`" not in err
