"""The public artifacts are built through the redaction policy: a fleet whose raw runs are
full of tells yields a catalog, machine inventory, charts, pages and built site that scan
clean. A new public artifact (a verb that writes something published) belongs in
`test_catalog_inventory_charts_and_site_scan_clean`'s list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.fleet import load_make_fleet

from benchlab.cli import main

from .conftest import REPO

TELLS = {
    "notes": "ip-10-0-0-7.ec2.internal in us-east-1a on p4d.24xlarge i-0abc1234def567890",
    "source": "/home/qzhang/models/model.gguf",
    "workload": "C:\\Users\\qzhang\\work\\workload.json",
    "topology": "GPU0\t X \tNV12\tNV12\nGPU1\tNV12\t X \tNV12\n00000000:3B:00.0",
    "secret": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz12345678",
    "gpu": "GPU 0: A100 (UUID: GPU-5e3c1f2a-9b8d-4c7e-a6f5-1d2e3f4a5b6c) Serial 1324021012345",
    "mac": "link/ether 3c:ec:ef:12:34:56 brd ff:ff:ff:ff:ff:ff",
    "ssh": "ED25519 key fingerprint is SHA256:Zq3vT7xLm2Pw9Rk4Jh6Fd8Sa1Gn5Bc0Ye2Ui4Oo6Wwx",
    "k8s": "node gke-inference-gpu-pool-3f9a1c2b-x7kq pod vllm-7c4d9b8f6-tq2zp",
    "aks": "aks-gpunodes-12345678-vmss000003",
    "cloud": "arn:aws:iam::123456789012:role/bench-runner in /resourceGroups/rg-alice-lab",
    "credentials": "GOOGLE_APPLICATION_CREDENTIALS=/srv/keys/alice-sa.json",
    "site_path": "/mnt/team-alice/models/llama.gguf",
    "domain": "cache01.corp.acme-labs.com and nas.lan",
}


def _inject(store: Path) -> None:
    for specs in store.glob("runs/by-machine/*/specs.json"):
        doc = json.loads(specs.read_text())
        doc["notes"] = TELLS["notes"]
        doc["user"] = "qzhang"
        doc["runtime"]["home"] = TELLS["source"]
        for gpu in doc["hardware"].get("gpu", []):
            gpu["pci_bus_id"] = "00000000:3B:00.0"
            gpu["model"] = f"{gpu['model']} ({TELLS['notes']})"
        doc["tags"].append(doc["hostname"])
        specs.write_text(json.dumps(doc))
    for manifest in store.glob("runs/by-machine/*/*/manifest.json"):
        doc = json.loads(manifest.read_text())
        doc["model"]["source"] = TELLS["source"]
        doc["model"]["name"] = f"{doc['model']['name']} ({TELLS['source']})"
        doc["config"]["workload_file"] = TELLS["workload"]
        doc["config"]["host"] = "orca-7"
        doc["tags"] = [*doc.get("tags", []), "ip-10-0-0-7.ec2.internal", "us-east-1a"]
        doc["notes"] = "\n".join(TELLS.values())
        manifest.write_text(json.dumps(doc))
    for record in store.glob("runs/by-machine/*/*/record.json"):
        doc = json.loads(record.read_text())
        doc["warnings"] = [f"retried on orca-7 (10.0.0.5): {TELLS['notes']}"]
        if doc.get("error"):
            doc["error"] = f"{doc['error']} at {TELLS['source']}"
        record.write_text(json.dumps(doc))


@pytest.mark.integration
def test_catalog_inventory_charts_and_site_scan_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "lab" / "experiments" / "benchmark"
    store.mkdir(parents=True)
    load_make_fleet().make_fleet(store, 40)
    _inject(store)
    # A clone carries the repo's policy (its allow list skips vendored plotly.min.js).
    policy = REPO / "experiments" / "benchmark" / "redaction.yaml"
    (store / "redaction.yaml").write_text(policy.read_text())
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.chdir(REPO)

    # The raw store really is full of tells, of every class (so a clean result below means
    # something).
    assert main(["scan", "--format", "json", str(store / "runs")]) == 1
    raw = {f["tell_class"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert raw >= {
        "host",
        "ip",
        "home-path",
        "secret",
        "hardware-id",
        "ssh-key",
        "k8s",
        "cloud-account",
        "credential-path",
        "site-path",
    }, raw

    assert main(["catalog", "build"]) == 0
    charts = tmp_path / "charts"
    assert main(["chart", "--output", str(charts)]) == 0
    docs = tmp_path / "docs"
    assert main(["site", "build", "--no-mkdocs", "--docs", str(docs)]) == 0
    site = tmp_path / "site"
    assert main(["site", "build", "--output", str(site)]) == 0
    capsys.readouterr()

    public = [store / "catalog.json", store / "machines", charts, docs, site]
    for path in public:
        assert path.exists(), path
    code = main(["scan", "--format", "json", *map(str, public)])
    report = json.loads(capsys.readouterr().out)
    assert report["findings"] == [] and code == 0
    assert report["files_scanned"] >= 5
    # Redacted, not dropped: the placeholders are in the public record.
    catalog = (store / "catalog.json").read_text()
    assert "<path:home>" in catalog or "<host:" in catalog
