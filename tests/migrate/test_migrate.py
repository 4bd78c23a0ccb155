"""`bench migrate`: llama-bench outputs of every format and asv results become run dirs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.kit.backend import envelope
from tests.kit.catalog import catalog_doc

from benchlab.benchmarks.llama_rows import model_of, precision_of, read_rows
from benchlab.cli import main
from benchlab.layout import read_model
from benchlab.models import BatchResults, KernelResults, RunManifest, RunRecord

DATA = Path(__file__).resolve().parents[1] / "data" / "migrate"


def _runs(store: Path, machine: str) -> list[Path]:
    return sorted(p for p in (store / "runs" / "by-machine" / machine).iterdir() if p.is_dir())


@pytest.mark.parametrize(
    ("name", "prefill", "decode"),
    [
        ("llama-bench.json", 7100.002165, 118.881588),
        ("llama-bench.jsonl", 7100.002165, 118.881588),
        ("llama-bench.csv", 7285.676949, 119.915244),
        ("llama-bench-new.md", 7340.20, 120.60),
    ],
)
def test_each_format_becomes_one_run_with_prefill_and_decode(
    store: Path, name: str, prefill: float, decode: float
) -> None:
    assert main(["--store", str(store), "migrate", str(DATA / name), "--machine-id", "rig"]) == 0
    [run_dir] = _runs(store, "rig")
    kernel = read_model(run_dir / "kernel.json", KernelResults)
    assert kernel.benchmark.prefill[0].tok_per_sec == pytest.approx(prefill)
    assert kernel.benchmark.decode.tok_per_sec == pytest.approx(decode)
    batch = read_model(run_dir / "batch.json", BatchResults)
    assert batch.peak is None  # one sequence measured: no peak aggregate, not the tg rate
    assert [(p.batch, p.agg_tok_per_sec) for p in batch.points] == [(1, pytest.approx(decode))]
    assert "peak_tok_per_sec" not in read_model(run_dir / "record.json", RunRecord).metrics
    manifest = read_model(run_dir / "manifest.json", RunManifest)
    assert manifest.provenance["file"] == name  # a name, never an absolute path
    assert manifest.provenance["source"] == "llama-bench"
    assert manifest.model.precision == "q4_k_m"
    record = read_model(run_dir / "record.json", RunRecord)  # as a live sweep records it
    assert record.status == "ok"
    assert record.metrics["prefill_tok_per_sec"] == pytest.approx(prefill)
    assert record.metrics["decode_tok_per_sec"] == pytest.approx(decode)
    assert record.identity is not None and record.identity["precision"] == "q4_k_m"
    assert record.identity["backend"] == "llama-bench" and record.identity["mode"] is None
    assert record.tests == ["pp512", "tg128"]


def test_depth_rows_do_not_replace_the_depth_zero_figures(store: Path) -> None:
    main(["--store", str(store), "migrate", str(DATA / "llama-bench-new.md"), "--machine-id", "r"])
    [run_dir] = _runs(store, "r")
    kernel = read_model(run_dir / "kernel.json", KernelResults)
    assert [p.tokens for p in kernel.benchmark.prefill] == [512]
    assert kernel.benchmark.decode.tok_per_sec == pytest.approx(120.60)


def test_old_markdown_splits_into_one_run_per_thread_count(store: Path) -> None:
    main(["--store", str(store), "migrate", str(DATA / "llama-bench-old.md"), "--machine-id", "r"])
    decodes = sorted(
        read_model(d / "kernel.json", KernelResults).benchmark.decode.tok_per_sec
        for d in _runs(store, "r")
    )
    assert decodes == [12.22, 16.71]
    manifest = read_model(_runs(store, "r")[0] / "manifest.json", RunManifest)
    assert manifest.model.name == "llama 7B"
    assert manifest.model.precision == "q4_0"


def test_reimporting_the_same_file_changes_nothing(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--store", str(store), "migrate", str(DATA / "llama-bench.json"), "--machine-id", "r"]
    main(args)
    before = {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(args) == 0
    assert "0 run(s) imported, 1 already present" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file()} == before


def test_asv_results_directory(store: Path) -> None:
    assert main(["--store", str(store), "migrate", str(DATA / "asv" / "results")]) == 0
    runs = _runs(store, "lab-pi5")
    assert len(runs) == 3  # the throughput, and time_prefill at tokens=128 and tokens=256
    manifests = {
        m.model.name: m for m in (read_model(r / "manifest.json", RunManifest) for r in runs)
    }
    track = manifests["bench_decode.track_decode_tok_per_sec"]
    assert track.provenance["source"] == "asv"
    assert track.git.rev == "01234567"
    assert track.timestamp == "2026-01-01T00:00:00Z"
    run_dir = store / "runs" / "by-machine" / "lab-pi5" / track.run_id
    assert read_model(run_dir / "batch.json", BatchResults).peak.agg_tok_per_sec == 15.5
    raw = json.loads((run_dir / "raw" / "imported.json").read_text())
    assert raw["unit"] == "tok/s"
    assert main(["--store", str(store), "migrate", str(DATA / "asv" / "results")]) == 0
    assert len(_runs(store, "lab-pi5")) == 3


def test_imported_runs_reach_the_catalog(store: Path) -> None:
    main(["--store", str(store), "migrate", str(DATA / "llama-bench.json"), "--machine-id", "r"])
    if main(["--store", str(store), "catalog", "build"]) != 0:
        pytest.fail("catalog build failed on imported runs")
    catalog = catalog_doc(store / "catalog.json")
    [entry] = catalog["runs"]
    assert entry["decode_tok_per_sec"] == pytest.approx(118.881588)
    assert entry["precision"] == "q4_k_m"
    # llama-bench's averages as latencies too: time per token and to the first token.
    assert entry["decode_ms_per_token"] == pytest.approx(1000 / 118.881588, rel=0.05)
    prefill = entry["prefill_tok_per_sec"]
    assert entry["ttft_ms"] == pytest.approx(entry["prompt_tokens"] / prefill * 1000, rel=1e-6)


def test_garbage_is_one_line_naming_the_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("nothing to see here\n")
    assert main(["--store", str(store), "migrate", str(bad), "--machine-id", "r"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "notes.txt" in err
    assert not (store / "runs").exists()


def test_a_machine_id_that_escapes_the_store_is_refused(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["--store", str(store), "migrate", str(DATA / "llama-bench.json"), "--machine-id", "../x"]
    )
    assert code == 2 and "unsafe machine id" in capsys.readouterr().err


def test_an_asv_dir_without_machines_is_refused(store: Path, tmp_path: Path) -> None:
    empty = tmp_path / "results"
    shutil.copytree(DATA / "asv" / "results", empty)
    for machine in empty.glob("*/machine.json"):
        machine.unlink()
    assert main(["--store", str(store), "migrate", str(empty)]) == 2


@pytest.mark.parametrize(
    ("row", "precision", "model"),
    [
        ({"model_type": "llama 7B mostly Q4_0"}, "q4_0", "llama 7B"),
        ({"model_type": "qwen2 7B Q4_K - Medium"}, "q4_k_m", "qwen2 7B"),
        ({"model_filename": "/m/SmolLM2-135M-Instruct-Q8_0.gguf"}, "q8_0", "SmolLM2-135M-Instruct"),
        ({"model_type": "bitnet-25 2B IQ2_BN - 2.00 bpw Bitnet"}, "iq2_bn", "bitnet-25 2B"),
        ({"model_type": "llama 1B BF16"}, "bf16", "llama 1B"),
    ],
)
def test_model_and_precision_from_names(row: dict, precision: str, model: str) -> None:
    assert precision_of(row) == precision
    assert model_of(row).startswith(model)


def test_rows_keep_the_standard_deviation_of_markdown() -> None:
    rows = read_rows((DATA / "llama-bench-old.md").read_text())
    assert rows[0]["stddev_ts"] == 0.06 and rows[0]["n_prompt"] == 64 and rows[0]["n_threads"] == 4


def test_an_import_and_a_live_run_of_the_same_rows_are_one_measurement(store: Path) -> None:
    """The same llama-bench rows, arriving by `bench migrate` and by a live sweep point,
    land in one series with one version (benchlab.identity), with the same numbers."""
    from benchlab.benchmarks import get_backend
    from benchlab.catalog.build import build
    from benchlab.identity import identity_key
    from benchlab.layout import Store
    from benchlab.models import AgentEnvelope, RunSpec

    source = DATA / "llama-bench.json"
    assert main(["--store", str(store), "migrate", str(source), "--machine-id", "rig"]) == 0
    [run_dir] = _runs(store, "rig")
    imported = read_model(run_dir / "record.json", RunRecord)
    spec = RunSpec(
        spec_id="rig-qwen2-7b-q4_k_m-batch-0",
        experiment="live",
        device="rig",
        machine_id="rig",
        backend="llama-bench",
        model="Qwen2.5-7B-Instruct",
        precision="q4_k_m",
        mode="batch",
        threads=8,
        prompt_tokens=512,
        gen_tokens=128,
        params={"model_path": "m.gguf", "batch": 2048, "ubatch": 512, "n_gpu_layers": -1},
    )
    answer = AgentEnvelope.model_validate(envelope(source.read_text()))
    from benchlab.sweep.attempt import derive_metrics, run_identity

    parsed = get_backend("llama-bench").parse(answer, spec, "live-run")
    metrics, tests = derive_metrics(parsed, spec)
    live = run_identity(spec, parsed)
    assert imported.identity is not None
    assert identity_key(live) == identity_key(imported.identity)
    assert metrics == imported.metrics and tests == imported.tests
    build(Store(store))
    [entry] = catalog_doc(store / "catalog.json")["runs"]
    assert entry["threads"] == 8 and entry["backend_build"] == 5163
    assert entry["backend_version"] == "b5163 (8cf427ff)" and entry["tests"] == tests


def test_markdown_keeps_the_build_line_under_each_table() -> None:
    """`build: <commit> (<number>)` under a table is the rows' llama.cpp version, so an
    imported table lands on the version axis as a JSON import does; two builds' tables
    appended in one file keep their own."""
    table = (
        "| model | size | params | backend | threads | test | t/s |\n"
        "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n"
        "| llama ?B all F32 | 14.01 MiB | 3.67 M | CPU | 1 | pp64 | 1189.21 ± 0.00 |\n"
        "| llama ?B all F32 | 14.01 MiB | 3.67 M | CPU | 1 | tg16 | 306.69 ± 0.00 |\n\n"
    )
    rows = read_rows(table + "build: 0c1e570 (20261001)\n" + table + "build: 4227c9b (20250814)\n")
    assert [(r["build_commit"], r["build_number"]) for r in rows] == [
        ("0c1e570", 20261001),
        ("0c1e570", 20261001),
        ("4227c9b", 20250814),
        ("4227c9b", 20250814),
    ]


def test_markdown_imports_reach_the_catalog_without_rounded_sizes(store: Path) -> None:
    """Markdown prints the model's size and parameters rounded ("4.36 GiB"): they stay in
    the raw rows, not in the integer identity fields the catalog validates."""
    main(["--store", str(store), "migrate", str(DATA / "llama-bench-new.md"), "--machine-id", "r"])
    assert main(["--store", str(store), "catalog", "build"]) == 0
    [entry] = catalog_doc(store / "catalog.json")["runs"]
    assert entry.get("model_size") is None and entry.get("model_params") is None
    assert entry["decode_tok_per_sec"] == pytest.approx(120.60)
