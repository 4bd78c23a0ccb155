"""`benchlab.open_catalog(path).to_pandas()`: the catalog as one row per run, for notebooks,
read by the same reader (and checks) as every `bench` verb."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.kit.runs import write_run

import benchlab
from benchlab.cli import main
from benchlab.errors import SchemaError, StoreError
from benchlab.identity import IDENTITY_FIELDS
from benchlab.query.api import MissingExtra

pd = pytest.importorskip("pandas", reason="pip install -e '.[notebook]' (tools/ci-setup.sh)")

RUNS = (
    ("pi5-smollm2-q8-a-20250106T120000Z", "pi5", 2, 14.2, "ok"),
    ("pi5-smollm2-q8-b-20250107T120000Z", "pi5", 4, 21.5, "ok"),
    ("gpu-box-smollm2-q8-c-20250108T120000Z", "gpu-box", 4, 300.0, "ok"),
    ("gpu-box-smollm2-q8-d-20250109T120000Z", "gpu-box", 8, None, "failed"),
)


@pytest.fixture
def built(store: Path) -> Path:
    """A store whose catalog `bench catalog build` made from four run dirs."""
    for run_id, machine, threads, decode, status in RUNS:
        day = run_id.rsplit("-", 1)[1]
        write_run(
            store,
            run_id,
            machine_id=machine,
            threads=threads,
            decode=decode,
            status=status,  # type: ignore[arg-type]
            timestamp=f"{day[:4]}-{day[4:6]}-{day[6:8]}T12:00:00Z",
        )
    assert main(["--store", str(store), "catalog", "build"]) == 0
    return store


def test_to_pandas_is_one_row_per_run_with_identity_and_metrics(built: Path) -> None:
    catalog = benchlab.open_catalog(built)
    frame = catalog.to_pandas()
    assert len(catalog) == len(frame) == len(RUNS)
    assert sorted(frame["run_id"]) == sorted(run[0] for run in RUNS)
    missing = [f for f in (*IDENTITY_FIELDS, "series", "status", "decode_tok_per_sec")
               if f not in frame.columns]  # fmt: skip
    assert not missing
    assert "batch_curve" not in frame.columns
    rows = frame.set_index("run_id")
    for run_id, machine, threads, decode, status in RUNS:
        row = rows.loc[run_id]
        assert (row.machine_id, row.threads, row.status) == (machine, threads, status)
        if decode is None:
            assert pd.isna(row.decode_tok_per_sec)
        else:
            assert row.decode_tok_per_sec == pytest.approx(decode)
    assert isinstance(frame["timestamp"].dtype, pd.DatetimeTZDtype)
    assert str(frame["timestamp"].dt.tz) == "UTC"
    best = frame[frame.status == "ok"].groupby("machine_id").decode_tok_per_sec.max()
    assert best.to_dict() == pytest.approx({"gpu-box": 300.0, "pi5": 21.5})


def test_the_store_dir_and_its_catalog_json_are_the_same_catalog(built: Path) -> None:
    by_dir = benchlab.open_catalog(str(built)).to_pandas()
    by_file = benchlab.open_catalog(built / "catalog.json").to_pandas()
    pd.testing.assert_frame_equal(by_dir, by_file)


def test_without_pandas_the_error_names_the_extra(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = benchlab.open_catalog(built)
    monkeypatch.setitem(sys.modules, "pandas", None)  # what `import pandas` meets uninstalled
    with pytest.raises(MissingExtra) as caught:
        catalog.to_pandas()
    assert str(caught.value) == "to_pandas() needs pandas: pip install 'benchlab[notebook]'"
    assert isinstance(caught.value, ImportError)
    assert len(catalog) == len(RUNS)  # the rest works without it


def test_a_missing_or_damaged_catalog_is_one_line(store: Path) -> None:
    with pytest.raises(StoreError, match=r"catalog\.json: file not found; run `bench catalog"):
        benchlab.open_catalog(store)
    (store / "catalog.json").write_text('{"$schema": "benchmark/catalog.v3", "machines": 3}')
    with pytest.raises(SchemaError) as caught:
        benchlab.open_catalog(store)
    assert "catalog.json" in str(caught.value) and "\n" not in str(caught.value)


def test_the_readme_one_liner_prints_the_run_count(built: Path) -> None:
    """From the repository root, as docs/python-api.md shows it."""
    repo = built.parents[1]
    code = "import benchlab; print(len(benchlab.open_catalog('experiments/benchmark').to_pandas()))"
    env = {k: v for k, v in os.environ.items() if k != "BENCHLAB_STORE"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{len(RUNS)}\n"
