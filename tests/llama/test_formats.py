"""`bench migrate` of real llama-bench output, in every format, against a live `bench run`.

One live sweep point per text format, each run with `-oe FORMAT` among its extra_args: the
backend reads llama-bench's JSON on stdout, and the run dir keeps stderr, the very same
measurement printed in FORMAT. Importing that stderr (and the stdout, for json) must give an
entry with the live point's identity (benchlab.identity.identity_key) and its numbers, to
the rounding the format prints.

What a format cannot carry is named, not glossed over: markdown prints only the columns
that differ from llama-bench's defaults, the model's size and parameters rounded
("14.01 MiB", "3.67 M") and no model file (so the import is given `--model`); no format but
json has the per-repetition samples, so the median-based ms per token and the sample count
of a live run are not there to compare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from llama_tools import CACHE, build_tool
from tests.kit.catalog import catalog_doc

from benchlab.cli import main
from benchlab.identity import IDENTITY_FIELDS, identity_key

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FORMATS = ("jsonl", "csv", "md", "sql")
RATES = ("prefill_tok_per_sec", "decode_tok_per_sec", "baseline_tok_per_sec")
NOT_MEASURED = ("peak_tok_per_sec", "speedup")
"""llama-bench measures one sequence: no batched peak aggregate, so no peak and no speedup
(ARCHITECTURE.md, Metrics), live or imported, in any format."""
SPREADS = ("prefill_stddev", "decode_stddev")
MD_LOST = {"model_size", "model_params", "gpu_layers", "n_batch", "n_ubatch", "type_k", "type_v"}
"""Identity fields markdown leaves out: default-valued columns, and sizes only rounded."""


def sweep_config(dest: Path) -> Path:
    point = {
        "binary": f"../{build_tool.DEFAULT_VERSION}/bin/llama-bench",
        "model_path": "tiny-f32.gguf",
        "reps": 2,
        "n_gpu_layers": 0,
        "flash_attn": 0,
        "timeout_s": 120,
    }
    config = {
        "experiment": "llama-formats",
        "devices": {"local": {"transport": "local", "workdir": str(CACHE / "models")}},
        "matrix": {
            "device": ["local"],
            "backend": "llama-bench",
            "model": "tiny",
            "precision": "f32",
            "threads": [1],
            "prompt_tokens": 64,
            "gen_tokens": 16,
            "params": [{**point, "extra_args": ["-oe", fmt]} for fmt in FORMATS],
        },
    }
    dest.write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def _run_dirs(store: Path) -> set[Path]:
    root = store / "runs" / "by-machine" / "local"
    return {p for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


def _entries(store: Path) -> dict[str, dict[str, Any]]:
    code = main(["--store", str(store), "catalog", "build"])
    assert code == 0, f"catalog build: exit {code}"
    return {e["run_id"]: e for e in catalog_doc(store / "catalog.json")["runs"]}


def test_every_format_imports_to_the_live_measurement(
    llama_build: Any, tiny_model: Path, store: Path, tmp_path: Path, capsys
) -> None:
    assert main(["--store", str(store), "run", str(sweep_config(tmp_path / "sweep.yaml"))]) == 0
    live_dirs = _run_dirs(store)
    assert len(live_dirs) == len(FORMATS)
    imports: list[tuple[str, str, dict[str, Any]]] = []  # (format, live run id, entry)
    for run_dir in sorted(live_dirs):
        task = json.loads((run_dir / "raw" / "task.json").read_text())
        fmt = task["argv"][task["argv"].index("-oe") + 1]
        for kind, text in (
            ("json", (run_dir / "raw" / "stdout.txt").read_text()),
            (fmt, (run_dir / "raw" / "stderr.txt").read_text()),
        ):
            path = tmp_path / f"{run_dir.name}.{kind}"
            path.write_text(text)
            # A store of its own: json, jsonl, csv and sql of one measurement are the same
            # rows, and a second import of the same rows finds them already there.
            target = tmp_path / f"import-{len(imports)}" / "experiments" / "benchmark"
            target.mkdir(parents=True)
            extra = ["--model", "tiny"] if kind == "md" else []  # md names no model file
            args = ["migrate", str(path), "--machine-id", "local", *extra]
            assert main(["--store", str(target), *args]) == 0, capsys.readouterr().err
            [entry] = _entries(target).values()
            imports.append((kind, run_dir.name, entry))
    entries = _entries(store)
    report = []
    for kind, live_id, imported in imports:
        live, name = entries[live_id], f"{live_id}.{kind}"
        assert imported["status"] == "ok" and imported["tests"] == live["tests"] == ["pp64", "tg16"]
        # The live sweep sets a device workdir, so its identity carries a settings digest; a
        # file imported from elsewhere cannot know the device's settings and carries none.
        assert live["settings"] and imported.get("settings") is None, name
        imported = {**imported, "settings": live["settings"]}
        differs = {f for f in IDENTITY_FIELDS if imported.get(f) != live.get(f)}
        if kind == "md":
            assert differs <= MD_LOST, f"{name}: {differs - MD_LOST} differ"
            kept = [f for f in IDENTITY_FIELDS if f not in MD_LOST]
            assert [imported.get(f) for f in kept] == [live.get(f) for f in kept]
        else:
            assert identity_key(imported) == identity_key(live), f"{name}: {differs}"
        tolerance = 0.0051 if kind == "md" else 1e-6  # md prints 2 decimals; others 6
        worst = 0.0
        for metric in RATES + SPREADS:
            assert isinstance(live.get(metric), (int, float)), (name, metric, "not measured live")
            assert imported[metric] == pytest.approx(live[metric], abs=tolerance), (name, metric)
            worst = max(worst, abs(imported[metric] - live[metric]))
        for metric in NOT_MEASURED:
            assert live.get(metric) is None and imported.get(metric) is None, (name, metric)
        report.append(
            f"{kind:5} identity {'=' if not differs else '~'} (differs: "
            f"{sorted(differs) or '-'}), max |delta| {worst:.2g} t/s"
        )
    assert sorted({kind for kind, _, _ in imports}) == sorted({"json", *FORMATS}), report
