"""Public values have shapes: a fleet seeded with tells nobody had a detector for (in sweep
params, revisions, backend commits, an imported build_commit, raw logs and specs) publishes
none of them, in the catalog, its shards, machines/, the built site or a promoted run."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from tests.kit.fleet import load_make_fleet

from benchlab.cli import main
from benchlab.models import CatalogEntry
from benchlab.redact import Redactor
from benchlab.redact.engine import find
from benchlab.redact.policy import RedactionConfig, StoreNames, build_policy
from benchlab.redact.shapes import (
    PUBLIC_VALUE_SHAPES,
    public_commit,
    refuse_hostname_as_id,
    withheld_summary,
    withhold_unsafe,
)

from .conftest import REPO, git

# Every tell class of the issue, as a value a sweep, a build or a log could carry. The key
# is what must never appear in a public file (the distinctive part of the tell).
TELLS: dict[str, str] = {
    "alice": "/usr/home/alice/src/llama.cpp",
    "gpu7.lab": "gpu7.lab:50052",
    "gitbox": "https://erin@gitbox/org/repo.git",
    "6f2c1a3e-9b4d": "gpu-6f2c1a3e-9b4d-4e7f-8a1c-2d3e4f5a6b7c",
    "sk-proj-": "sk-proj-Qm3vT8xZp2Lw9Rk4Jh6Fd8Sa1Gn5Bc0Ye2Ui4Oo6WwXx7Kk",
    "sk-ant-": "sk-ant-api03-Zx9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed9Cb8Aa7-Yz6Xw5Vu4Ts3",
    "dop_v1_": "dop_v1_4f9c2e7a1b8d3f6e0c5a9b2d7e4f1a8c3b6d9e2f5a0c7b4e1d8f3a6c9b2e5d7f",
    "npm_Ab3": "npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Y",
    "ATATT": "ATATT3xFfGF0aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aB4cD5eF6gH7iJ8kL9=A1B2C3D4",
    "9f3a7c1e5b2d": "DD_API_KEY=9f3a7c1e5b2d8f4a6c0e9b3d7f1a5c2e",
    "SflKxwRJSMeKKF2QT4fwpMeJf36": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJsYWItcnVubmVyIn0."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ),
    "labresults2024": "AccountName=labresults2024;EndpointSuffix=core.windows.net",
    "rkumar": "/export/home/rkumar/models",
    "mlopez": "/var/home/mlopez/bench",
    "dchen": "\\\\wsl$\\Ubuntu\\home\\dchen\\models",
    "fileserver01": "\\\\fileserver01\\benchmarks\\2024",
    "nas.home": "nas.home",
    "db01.private": "db01.private:5432",
    "vllm.inference.svc": "vllm.inference.svc",
    "smb://nas02": "smb://nas02/models",
    "benchblobs": "https://benchblobs.blob.core.windows.net/runs",
    "acme-results": "https://acme-results.s3.amazonaws.com/run.json",
    "inference-team": "AWS_PROFILE=inference-team",
    "lab_ed25519": "~/.ssh/lab_ed25519",
    "deploy_key": "/root/.ssh/deploy_key",
    "3623811015": "S-1-5-21-3623811015-3361044348-30300820-1013",
    "tq2zp": "vllm-7c4d9b8f6-tq2zp",
    "3c:ec:ef:12:34:56": "3c:ec:ef:12:34:56",
    "PHLJ912300AB1P0FGN": "PHLJ912300AB1P0FGN",
    "884213907731": "884213907731",
}
STDERR = (
    "ssh: connect to host gpubox9 port 22: Connection timed out via jump.acme-lab.io as erin; "
    f"key ~/.ssh/lab_ed25519; token {TELLS['sk-proj-']}\n" + "\n".join(TELLS.values()) + "\n"
)
NEVER = [*TELLS, "gpubox9", "jump.acme-lab.io", "erin", "vm-a100"]
# As words: plotly.min.js has `aliceblue`, which is a colour, not alice.
LEAK = {
    tell: re.compile(rf"(?<!\w){re.escape(tell)}" + (r"(?![a-z])" if tell[-1].isalpha() else ""))
    for tell in NEVER
}


def _seed(store: Path) -> list[str]:
    """Every tell into params, revision and backend_commit of the fleet's runs."""
    values = list(TELLS.values())
    run_ids = []
    for index, manifest in enumerate(sorted(store.glob("runs/by-machine/*/*/manifest.json"))):
        tell = values[index % len(values)]
        doc = json.loads(manifest.read_text())
        doc["config"] = {
            **doc.get("config", {}),
            "revision": tell,
            "identity": {"backend_commit": values[(index + 1) % len(values)]},
        }
        manifest.write_text(json.dumps(doc))
        record_path = manifest.with_name("record.json")
        if record_path.is_file():
            record = json.loads(record_path.read_text())
            params = {f"p{n}": value for n, value in enumerate(values)}
            record["spec"]["params"] = {**record["spec"].get("params", {}), **params}
            record["identity"] = None
            record_path.write_text(json.dumps(record))
        run_ids.append(doc["run_id"])
    for specs in store.glob("runs/by-machine/*/specs.json"):
        doc = json.loads(specs.read_text())
        doc["notes"] = " ".join(values)
        doc["tags"] = [*doc.get("tags", []), *values[:6]]
        specs.write_text(json.dumps(doc))
    return run_ids


def _host_named_machine(store: Path) -> None:
    """A machine `vm-a100` on the host `vm`, with one run, and a stale public copy of its
    specs left by an earlier build."""
    source = next(store.glob("runs/by-machine/*/specs.json")).parent
    target = store / "runs" / "by-machine" / "vm-a100"
    target.mkdir()
    specs = json.loads((source / "specs.json").read_text())
    specs.update(machine_id="vm-a100", hostname="vm")
    (target / "specs.json").write_text(json.dumps(specs))
    run = next(p for p in source.iterdir() if p.is_dir())
    run_id = run.name.replace(source.name, "vm-a100", 1)
    shutil.copytree(run, target / run_id)
    for name in ("manifest.json", "record.json", "kernel.json", "batch.json"):
        path = target / run_id / name
        if path.is_file():
            path.write_text(
                path.read_text().replace(run.name, run_id).replace(source.name, "vm-a100")
            )
    stale = store / "machines" / "vm-a100"
    stale.mkdir(parents=True)
    (stale / "specs.json").write_text(json.dumps({"machine_id": "vm-a100"}))


def _import_with_a_url_commit(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {**json.loads(line), "build_commit": TELLS["gitbox"]}
        for line in (REPO / "tests/data/llama_bench/b1275-cuda-2023-09.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    source = tmp_path / "imported.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    machine = next(store.glob("runs/by-machine/*/specs.json")).parent.name
    assert main(["migrate", str(source), "--machine-id", machine]) == 0
    assert "1 build_commit value(s) withheld" in capsys.readouterr().out


def _public_files(paths: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        out.extend([path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()))
    return out


@pytest.mark.integration
def test_a_fleet_seeded_with_every_new_tell_publishes_none(
    git_repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = git_repo / "experiments" / "benchmark"
    load_make_fleet().make_fleet(store, 30)
    run_ids = _seed(store)
    _host_named_machine(store)
    (store / "redaction.yaml").write_text(
        (REPO / "experiments" / "benchmark" / "redaction.yaml").read_text()
    )
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.chdir(REPO)  # the site's sources; the store is $BENCHLAB_STORE
    _import_with_a_url_commit(store, tmp_path, capsys)
    promoted = run_ids[0]
    raw = next(store.glob(f"runs/by-machine/*/{promoted}")) / "raw"
    raw.mkdir(exist_ok=True)
    (raw / "stderr.txt").write_text(STDERR)

    assert main(["catalog", "build"]) == 2  # the host-named machine's run is refused
    said = capsys.readouterr()
    assert "'vm-a100' contains the host name 'vm'" in said.err
    assert "values withheld (" in said.out  # the build says what it held back
    assert main(["chart", "--output", str(tmp_path / "charts")]) == 0
    assert main(["site", "build", "--output", str(tmp_path / "site")]) == 0
    assert main(["promote", promoted]) == 0
    capsys.readouterr()

    public = [
        store / "catalog.json",
        store / "catalog",
        store / "machines",
        tmp_path / "charts",
        tmp_path / "site",
        store / "runs" / "public",
    ]
    files = _public_files(public)
    stderr = next(p for p in files if p.name == "stderr.txt")  # published, redacted
    first = stderr.read_text().splitlines()[0]
    assert first.startswith("ssh: connect to host <host:") and "<secret>" in first, first
    assert any("catalog" in p.parts and p.suffix == ".jsonl" for p in files)  # shards
    assert any(p.parent.name == "runs" and p.suffix == ".js" for p in files)  # bl/runs/*.js
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        leaked = [tell for tell in NEVER if LEAK[tell].search(text)]
        assert not leaked, f"{path}: {leaked}"
    assert not (store / "machines" / "vm-a100").exists()
    assert main(["scan", "--format", "json", *map(str, public)]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []

    # The host-named machine's run dir goes (its private specs stay); a public copy of its
    # specs left from before is removed by the next build, and nothing brings it back.
    for run in (store / "runs" / "by-machine" / "vm-a100").iterdir():
        if run.is_dir():
            shutil.rmtree(run)
    (store / "machines" / "vm-a100").mkdir()
    (store / "machines" / "vm-a100" / "specs.json").write_text('{"machine_id": "vm-a100"}')
    assert main(["catalog", "build"]) == 0
    assert not (store / "machines" / "vm-a100").exists()
    assert "vm-a100" not in (store / "machines" / "catalog.json").read_text()
    assert "vm-a100" not in (store / "catalog.json").read_text()
    assert "stderr.txt" in git(git_repo, "diff", "--cached", "--name-only")


# --- the shapes, one by one -------------------------------------------------------------------

POLICY = build_policy(RedactionConfig(), StoreNames(hosts={"gpubox9"}))


def test_every_catalog_field_has_a_declared_shape() -> None:
    from benchlab.identity import IDENTITY_FIELDS

    missing = (set(CatalogEntry.model_fields) | set(IDENTITY_FIELDS)) - set(PUBLIC_VALUE_SHAPES)
    assert not missing, f"declare a shape for {sorted(missing)} in PUBLIC_VALUE_SHAPES"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("revision", "b4567"),
        ("revision", "1a2b3c4"),
        ("revision", "v2"),
        ("revision", "main"),
        ("backend_commit", "8cf427ff"),
        ("backend_commit", "4d2b1e9c7a5f3e1d9b7c5a3e1f9d7b5c3a1e9f7d"),
        ("backend_version", "b4567 (1a2b3c4)"),
        ("model", "Llama-3.1-8B-Instruct-Q4_K_M"),
        ("type_k", "q8_0"),
        ("tests", ["pp512", "tg128@d64", "pp512+tg128"]),
        ("flash_attn", True),
        ("threads", 8),
        ("settings", "0123456789abcdef"),
    ],
)
def test_benign_values_are_published(field: str, value: object) -> None:
    entry = {field: value}
    assert withhold_unsafe(entry, POLICY) == []
    assert entry[field] == value


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("revision", TELLS["alice"]),
        ("revision", TELLS["gpu7.lab"]),
        ("revision", TELLS["gitbox"]),
        ("revision", TELLS["6f2c1a3e-9b4d"]),
        ("revision", "nas.home"),
        ("revision", "gpubox9"),  # a host the store knows
        ("backend_commit", TELLS["gitbox"]),
        ("backend_commit", "unknown-build"),
        ("backend_version", "built on gpubox9 by erin in /var/home/erin/llama.cpp"),
        ("model", "x" * 200),
        ("tests", ["pp512", "tg128 on gpubox9"]),
        ("threads", "8"),
        ("flash_attn", "yes"),
        ("hostname", "anything"),  # not a public field at all
    ],
)
def test_values_not_of_their_shape_are_withheld(field: str, value: object) -> None:
    entry = {"gen_tokens": 4, "model_id": "m-7b", field: value}
    assert withhold_unsafe(entry, POLICY) == [field]
    assert entry.get(field) == {"model": "m-7b", "tests": []}.get(field)
    assert entry["gen_tokens"] == 4


def test_params_are_numbers_booleans_or_short_slugs_unless_declared_text() -> None:
    axes = {
        "ctx": 4096,
        "mmap": False,
        "split": "layer",
        "sizes": [512, 1024],
        "path": TELLS["alice"],
        "rpc": TELLS["gpu7.lab"],
        "pod": TELLS["tq2zp"],
        "serial": TELLS["PHLJ912300AB1P0FGN"],
        "prompt": "Write a haiku about GPUs.",
        "note": "ran on gpubox9",
    }
    entry = {"axes": dict(axes)}
    withheld = withhold_unsafe(entry, POLICY, frozenset({"prompt", "note"}))
    assert sorted(withheld) == ["axes.note", "axes.path", "axes.pod", "axes.rpc", "axes.serial"]
    assert entry["axes"] == {
        "ctx": 4096,
        "mmap": False,
        "split": "layer",
        "sizes": [512, 1024],
        "prompt": "Write a haiku about GPUs.",
    }
    # Undeclared, the same sentence is not a slug.
    assert withhold_unsafe({"axes": {"prompt": axes["prompt"]}}, POLICY) == ["axes.prompt"]


def test_the_build_summary_counts_withheld_values_by_field() -> None:
    warnings = [
        "runs/a/: withheld revision, axes.path: not of their public shape",
        "runs/b/: withheld revision: not of their public shape",
        "runs/c/: tag dropped: tags: ...",
    ]
    assert withheld_summary(warnings) == "; 3 values withheld (revision 2, axes.path 1)"
    assert withheld_summary(warnings[2:]) == ""


@pytest.mark.parametrize(
    ("machine_id", "host"),
    [("vm-a100", "vm"), ("gpu-box-7-a", "box-7"), ("lab_vm", "vm.lab.lan"), ("a.rig2", "rig2")],
)
def test_a_machine_id_holding_the_host_name_is_refused(machine_id: str, host: str) -> None:
    from benchlab.errors import ConfigError

    with pytest.raises(ConfigError, match="contains the host name"):
        refuse_hostname_as_id(machine_id, [host], allow_public=False)


@pytest.mark.parametrize(("machine_id", "host"), [("pi5", "pi"), ("vmware-1", "vm"), ("x-1", "x")])
def test_a_host_name_inside_a_word_is_not_a_part(machine_id: str, host: str) -> None:
    refuse_hostname_as_id(machine_id, [host], allow_public=False)


def test_an_imported_build_commit_is_kept_only_as_a_hex_commit(tmp_path: Path) -> None:
    from benchlab.importers import import_llama_bench
    from benchlab.layout import Store

    assert public_commit("8cf427ff") == "8cf427ff"
    assert public_commit(TELLS["gitbox"]) is None
    assert public_commit("/usr/home/alice/src/llama.cpp") is None
    source = REPO / "tests/data/llama_bench/b1275-cuda-2023-09.jsonl"
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps({**r, "build_commit": TELLS["gitbox"]}) + "\n" for r in rows))
    store = Store(tmp_path / "store")
    report = import_llama_bench(store, bad, "rig")
    assert report.created and report.withheld == [f"{report.created[0]}: build_commit"]
    run_dir = store.run_dir("rig", report.created[0])
    for name in ("manifest.json", "kernel.json", "record.json"):
        assert "gitbox" not in (run_dir / name).read_text(), name
    assert "gitbox" in (run_dir / "raw" / "imported.json").read_text()  # private provenance


def test_the_ssh_stderr_of_the_issue_is_redacted_whole() -> None:
    line = (
        "ssh: connect to host gpubox9 port 22: Connection timed out via jump.acme-lab.io as "
        f"erin; key ~/.ssh/lab_ed25519; token {TELLS['sk-proj-']}"
    )
    policy = build_policy(RedactionConfig())  # a store that knows none of these names
    out = Redactor(policy).text(line)
    for tell in ("gpubox9", "jump.acme-lab.io", "erin", "lab_ed25519", "sk-proj-"):
        assert tell not in out, out
    assert find(policy, [out]) == []


def test_promote_leaves_out_a_log_that_is_not_utf8(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.kit.runs import write_run

    store = git_repo / "experiments" / "benchmark"
    run = "rig-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z"
    write_run(
        store,
        run,
        machine_id="rig",
        raw={"stderr.txt": b"token sk-proj-Qm3vT8xZp2Lw\xff9Rk4Jh6Fd8Sa1Gn5Bc0Ye2Ui4Oo6Ww\n"},
    )
    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["promote", run]) == 0
    assert "left out (binary, cannot be checked): raw/stderr.txt" in capsys.readouterr().err
    assert not list(store.glob("runs/public/rig/*/raw/stderr.txt"))


def test_a_sweep_declares_public_text_params_by_name(tmp_path: Path) -> None:
    from benchlab.errors import ConfigError
    from benchlab.redact.policy import load_policy
    from benchlab.sweep.config import check_config, parse_sweep_config

    sweep = {
        "experiment": "lab",
        "devices": {"rig": {"transport": "local"}},
        "matrix": {"backend": "reference", "model": "smollm2-135m", "precision": "q8"},
    }
    check_config(parse_sweep_config({**sweep, "public_text": ["prompt"]}))
    with pytest.raises(ConfigError, match=r"public_text\[0\]"):
        check_config(parse_sweep_config({**sweep, "public_text": ["a b/c"]}))
    store = tmp_path / "experiments" / "benchmark"
    store.mkdir(parents=True)
    (tmp_path / "experiments" / "sweeps").mkdir()
    (tmp_path / "experiments" / "sweeps" / "lab.yaml").write_text(
        json.dumps({**sweep, "public_text": ["prompt"]})
    )
    assert load_policy(store).public_text == frozenset({"prompt"})


@pytest.mark.parametrize("key", sorted(TELLS))
def test_scan_finds_what_the_scrubber_replaces(key: str) -> None:
    """Each tell alone, with a policy that knows no store names: the scanner finds it, and
    the scrubbed text neither holds it nor scans dirty (the two share their detectors)."""
    policy = build_policy(RedactionConfig())
    value = TELLS[key]
    assert find(policy, [value]), value
    out = Redactor(policy).text(value)
    assert key not in out and find(policy, [out]) == [], out
