"""Ids carry no text: run, spec and model ids are made of scrubbed slugs of bounded shape,
whether the run comes from a sweep, a llama-bench file or an asv results dir."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc

from benchlab.cli import main
from benchlab.errors import SchemaError
from benchlab.redact.engine import find
from benchlab.redact.policy import RedactionConfig, build_policy
from benchlab.redact.public_ids import PART_LENGTH, public_id_part, public_machine_id
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.expand import expand

DATA = Path(__file__).resolve().parents[1] / "data" / "migrate"
POLICY = build_policy(RedactionConfig())


def _run_ids(store: Path, machine: str) -> list[str]:
    return sorted(p.name for p in (store / "runs" / "by-machine" / machine).iterdir() if p.is_dir())


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("/mnt/vol7/models/Qwen3-8B-Q4_K_M.gguf", "qwen3-8b-q4-k-m"),
        ("Darwin studio-7.local", "darwin"),
        ("bench.time_load(path=/home/qzhang/data)", "bench.time-load-path-data"),
        ("SmolLM2-135M-Instruct", "smollm2-135m-instruct"),
        ("meta-llama/Llama-3.1-8B", "meta-llama-llama-3.1-8b"),
    ],
)
def test_a_part_keeps_the_name_and_drops_paths_and_hosts(text: str, part: str) -> None:
    assert public_id_part(text) == part
    assert not find(POLICY, [part])


def test_a_part_is_bounded() -> None:
    assert len(public_id_part("x" * 500)) == PART_LENGTH


def test_a_sweep_model_named_by_its_path_gives_ids_of_its_stem() -> None:
    config = parse_sweep_config(
        {
            "experiment": "e",
            "devices": {"box": {"transport": "local"}},
            "matrix": {
                "backend": "reference",
                "model": "/mnt/vol7/models/Tiny-1B.gguf",
                "precision": "f32",
            },
        },
        "e.yaml",
    )
    [spec] = expand(config)
    assert spec.spec_id.startswith("box-tiny-1b-f32-")
    assert "mnt" not in spec.spec_id and "vol7" not in spec.spec_id


def test_a_model_named_with_a_host_never_reaches_the_run_id(store: Path) -> None:
    args = ["--store", str(store), "migrate", str(DATA / "llama-bench.json")]
    assert main([*args, "--machine-id", "rig", "--model", "Darwin studio-7.local"]) == 0
    [run_id] = _run_ids(store, "rig")
    assert "studio" not in run_id and "local" not in run_id
    assert main(["--store", str(store), "catalog", "build"]) == 0
    [entry] = catalog_doc(store / "catalog.json")["runs"]
    for field in ("run_id", "spec_id", "path", "model", "model_id"):
        assert "studio" not in json.dumps(entry.get(field)), field


def _asv_copy(tmp_path: Path, machine: str | None = None, param: str | None = None) -> Path:
    results = tmp_path / "results"
    shutil.copytree(DATA / "asv" / "results", results)
    box = results / "lab-pi5"
    if machine is not None:
        info = json.loads((box / "machine.json").read_text())
        info["machine"] = machine
        (box / "machine.json").write_text(json.dumps(info))
    if param is not None:
        [result_file] = [p for p in box.glob("*.json") if p.name != "machine.json"]
        data = json.loads(result_file.read_text())
        data["results"]["bench_decode.time_prefill"][1] = [[f"'{param}'", "'b'"]]
        result_file.write_text(json.dumps(data))
    return results


def test_an_asv_parameter_holding_a_home_path_stays_out_of_the_run_id(
    store: Path, tmp_path: Path
) -> None:
    results = _asv_copy(tmp_path, param="/home/qzhang/corpus")
    assert main(["--store", str(store), "migrate", str(results)]) == 0
    run_ids = _run_ids(store, "lab-pi5")
    assert len(run_ids) == 3
    assert not [r for r in run_ids if "qzhang" in r or "home" in r]


def test_an_asv_machine_named_after_a_cluster_node_is_refused_in_one_line(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _asv_copy(tmp_path, machine="gke-prod-pool-1-abc123-xyz9")
    assert main(["--store", str(store), "migrate", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "machine.json: machine" in err and "--machine-id" in err
    assert not (store / "runs" / "by-machine").exists() or not any(
        (store / "runs" / "by-machine").iterdir()
    )
    assert main(["--store", str(store), "migrate", str(results), "--machine-id", "pool-a"]) == 0
    assert len(_run_ids(store, "pool-a")) == 3


def test_a_machine_with_a_host_in_it_is_refused() -> None:
    with pytest.raises(SchemaError, match="--machine-id"):
        public_machine_id("Darwin studio-7.local", "machine.json: machine")
    assert public_machine_id("lab-pi5", "x") == "lab-pi5"


def test_llama_bench_model_type_and_kv_types_publish_only_their_shapes(
    store: Path, tmp_path: Path
) -> None:
    rows = json.loads((DATA / "llama-bench.json").read_text())
    for row in rows:
        row["model_type"] = "/home/qzhang/notes on the box"
        row["type_k"] = "q4_0 see /home/qzhang"
        row["type_v"] = "bench.corp.example"
    hostile = tmp_path / "llama-bench.json"
    hostile.write_text(json.dumps(rows))
    assert main(["--store", str(store), "migrate", str(hostile), "--machine-id", "rig"]) == 0
    [run_dir] = [p for p in (store / "runs" / "by-machine" / "rig").iterdir() if p.is_dir()]
    for path in run_dir.glob("*.json"):
        text = path.read_text()
        assert "qzhang" not in text and "corp" not in text, path.name
    assert main(["--store", str(store), "catalog", "build"]) == 0
    [entry] = catalog_doc(store / "catalog.json")["runs"]
    assert entry.get("type_k") is None and entry.get("type_v") is None


@pytest.mark.parametrize("kind", ["q4_0", "f16", "IQ4_NL", "bf16", "q8_0"])
def test_kv_types_of_the_known_shape_are_kept(kind: str) -> None:
    from benchlab.redact.shapes import public_kv_type, value_shape_ok

    assert public_kv_type(kind) == kind
    assert value_shape_ok("type_k", kind, POLICY)
    assert not value_shape_ok("type_k", "turbo-cache", POLICY)


@pytest.mark.parametrize("unit", ["/home/qzhang", "a@b", "x" * 40, "s//", "ms\x1b[2J"])
def test_a_declared_unit_is_a_bounded_shape(unit: str) -> None:
    from benchlab.errors import ConfigError
    from benchlab.metrics import declare
    from benchlab.redact.shapes import value_shape_ok

    with pytest.raises(ConfigError, match=r"metrics\.lat_ms\.unit"):
        declare("s.yaml", {"lat_ms": {"unit": unit, "better": "lower"}})
    extra = {"lat_ms": {"value": 1.0, "unit": unit, "better": "lower"}}
    assert not value_shape_ok("extra_metrics", extra, POLICY)


def test_a_unit_of_the_shape_that_holds_a_tell_is_withheld_at_the_build() -> None:
    from benchlab.redact.shapes import value_shape_ok

    extra = {"lat_ms": {"value": 1.0, "unit": "ms gpu03.intra", "better": "lower"}}
    assert not value_shape_ok("extra_metrics", extra, POLICY)


def test_scan_tracked_names_a_published_line_the_policy_now_withholds(
    git_repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A line built under an older policy (here: a KV type that was any slug) stays in the
    tracked catalog; `bench scan --tracked` names it by shard and run."""
    from tests.redact.conftest import git

    store = git_repo / "experiments" / "benchmark"
    monkeypatch.chdir(git_repo)
    args = ["--store", str(store), "migrate", str(DATA / "llama-bench.json")]
    assert main([*args, "--machine-id", "rig"]) == 0
    assert main(["--store", str(store), "catalog", "build"]) == 0
    [shard] = [p for p in (store / "catalog").rglob("*") if p.is_file()]
    lines = shard.read_text().splitlines()
    entry = json.loads(lines[0])
    entry["type_k"] = "turbo-cache"  # a slug: what the shape of type_k allowed before
    shard.write_text(json.dumps(entry, sort_keys=True) + "\n")
    git(git_repo, "add", ".")
    git(git_repo, "commit", "-q", "-m", "catalog")
    capsys.readouterr()
    assert main(["--store", str(store), "scan", "--tracked", "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    withheld = [f for f in findings if f["tell_class"] == "withheld"]
    assert len(withheld) == 1
    assert withheld[0]["path"].endswith(shard.name) and "type_k" in withheld[0]["excerpt"]
