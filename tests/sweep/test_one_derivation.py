"""Every number is derived once: one real point, read back by every reader.

The point is the one that used to disagree: `prompt_tokens: 16` while the reference backend
measures prefill at 64 and 128 tokens (the prompt size is added to the sizes it measures).
The progress line, record.json, catalog.json, `bench best`, the Prometheus exporter and the
site must all show the same prefill figure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT

from benchlab.cli import main
from benchlab.observe.exporter import scrape


@pytest.mark.slow
def test_progress_record_catalog_best_exporter_agree(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    config = write_sweep(
        tmp_path / "onederiv.yaml",
        experiment="onederiv",
        policies=ONE_ATTEMPT,
        matrix={
            "threads": 1,
            "prompt_tokens": 16,
            "gen_tokens": 4,
            "batch_sizes": [1, 2],
            "params": {"prefill_sizes": [64, 128], "reps": 1, "batch_steps": 2},
        },
    )
    assert main(["run", str(config)]) == 0
    progress = capsys.readouterr().out
    shown = float(re.search(r"prefill ([\d.]+) t/s", progress).group(1))  # type: ignore[union-attr]

    [record_path] = store.glob("runs/by-machine/*/*/record.json")
    record = json.loads(record_path.read_text())
    prefill = record["metrics"]["prefill_tok_per_sec"]
    assert record["tests"][0] == "pp16"  # measured at the spec's prompt size, and says so
    assert shown == pytest.approx(prefill, abs=0.05)

    assert main(["catalog", "build"]) == 0
    capsys.readouterr()
    [entry] = catalog_doc(store / "catalog.json")["runs"]
    assert entry["prefill_tok_per_sec"] == prefill
    assert entry["threads"] == 1 and entry["prompt_tokens"] == 16 and entry["tests"][0] == "pp16"

    assert main(["best", "--metric", "prefill_tok_per_sec", "--format", "json"]) == 0
    [best] = json.loads(capsys.readouterr().out)
    assert best["prefill_tok_per_sec"] == prefill

    text = scrape(store / "runs" / "sweeps" / "onederiv")
    [line] = [ln for ln in text.splitlines() if ln.startswith("benchlab_point_prefill")]
    assert float(line.rsplit(" ", 1)[1]) == pytest.approx(prefill)
    assert f'series="{entry["series"]}"' in line  # the exporter names the catalog's series
