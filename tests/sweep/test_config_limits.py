"""Config limits, each injected for real through `bench run`: a matrix too large to list is
refused before it is expanded (and `--max-points` lifts the cap); a number no run file can
carry into the catalog is refused with the file and the key."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep

from benchlab.cli import main
from benchlab.errors import ConfigError
from benchlab.sweep.config import load_sweep_config
from benchlab.sweep.expand import MAX_POINTS, count_points, expand


@pytest.fixture
def env(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("bench: error: ")
    return lines[0]


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_a_million_point_matrix_is_refused_before_it_is_expanded(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Listing it took 63 s and 1.9 GB; counting it takes no time."""
    axis = list(range(1, 101))
    path = write_sweep(
        tmp_path / "huge.yaml",
        matrix={"threads": axis, "prompt_tokens": axis, "gen_tokens": axis},
    )
    started = time.perf_counter()
    code = main(["run", str(path), "--dry-run"])
    elapsed = time.perf_counter() - started
    line = one_error(capsys.readouterr().err)
    assert code == 2 and elapsed < 10, elapsed
    assert f"{path}: matrix: expands to 1,000,000 points" in line
    assert f"over the limit of {MAX_POINTS:,}" in line and "--max-points 1000000" in line
    assert files(env) == []


def test_max_points_lifts_the_cap_and_repeats_count(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_sweep(tmp_path / "some.yaml", matrix={"threads": [1, 2, 3, 4], "repeats": 3})
    config = load_sweep_config(path)
    assert count_points(config) == 12 == len(expand(config))
    assert main(["run", str(path), "--dry-run", "--max-points", "11"]) == 2
    assert "expands to 12 points, over the limit of 11" in one_error(capsys.readouterr().err)
    for cap in ("12", "0"):
        assert main(["run", str(path), "--dry-run", "--max-points", cap]) == 0
        assert "12 point(s)" in capsys.readouterr().out
    assert main(["run", str(path), "--dry-run", "--max-points", "-1"]) == 2
    assert "--max-points" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="expands to 12 points"):
        load_sweep_config(path, max_points=10)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (10**29, "integer 10000000000000000000...(30 digits) is outside the 64-bit range"),
        (-(2**63) - 1, "integer -9223372036854775809 is outside the 64-bit range"),
        (float("inf"), "inf is not a finite number"),
    ],
    ids=["30-digits", "just-below-int64", "inf"],
)
def test_a_number_no_run_file_can_carry_is_refused_naming_the_key(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str], value: float, shown: str
) -> None:
    """A 30-digit param ran, then failed every catalog build after it (orjson)."""
    path = write_sweep(
        tmp_path / "big.yaml",
        matrix={"params": {"seed_offset": value}},
    )
    assert main(["run", str(path), "--dry-run"]) == 2
    line = one_error(capsys.readouterr().err)
    assert f"{path}: matrix.params.seed_offset: {shown}" in line
    assert files(env) == []


def test_the_largest_integers_a_catalog_reader_accepts_still_load(tmp_path: Path) -> None:
    """A matrix value reaches the run's catalog line, whose readers hold every number
    within +-2**53 (the writer contract): the edges load, one past them is refused."""
    for value in (2**53, -(2**53)):
        path = write_sweep(tmp_path / "edge.yaml", matrix={"params": {"n": value}})
        assert expand(load_sweep_config(path))[0].params == {"n": value}
    for value in (2**53 + 1, -(2**53) - 1, 2**63 - 1):
        path = write_sweep(tmp_path / "edge.yaml", matrix={"params": {"n": value}})
        with pytest.raises(ConfigError, match=r"matrix\.params\.n: .* outside \+-2\*\*53"):
            load_sweep_config(path)


@pytest.mark.slow
def test_the_cap_is_bench_runs_and_a_lifted_config_still_loads_elsewhere(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench run --max-points N --publish` reads the config again for its gates: that
    read must not refuse what the run was allowed to do."""
    path = write_sweep(tmp_path / "wide.yaml", matrix={"threads": list(range(1, MAX_POINTS + 2))})
    assert main(["run", str(path), "--dry-run"]) == 2
    assert f"expands to {MAX_POINTS + 1:,} points" in one_error(capsys.readouterr().err)
    assert main(["run", str(path), "--dry-run", "--max-points", str(MAX_POINTS + 1)]) == 0
    assert f"{MAX_POINTS + 1} point(s)" in capsys.readouterr().out
    assert count_points(load_sweep_config(path)) == MAX_POINTS + 1  # as gates load it
