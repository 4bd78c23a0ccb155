"""Redaction: stable placeholders per class, JSON structure kept, private keys masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.errors import ConfigError
from benchlab.redact import Redactor, scrub_public
from benchlab.redact.corpus import evaluate
from benchlab.redact.engine import find
from benchlab.redact.policy import Policy, collect_store_names, load_policy, read_config

from .conftest import CORPUS


def test_same_value_same_placeholder_within_a_run(policy: Policy) -> None:
    redactor = Redactor(policy)
    first = redactor.text("ssh 10.0.0.5 then 10.0.0.6 then 10.0.0.5 on gpu-box-7")
    second = redactor.text("GPU-BOX-7 again at 10.0.0.6")
    assert first == "ssh <ip:1> then <ip:2> then <ip:1> on <host:1>"
    assert second == "<host:1> again at <ip:2>"


def test_each_class_has_its_placeholder(policy: Policy) -> None:
    text = (
        "/home/anthony/x us-east-1a p4d.24xlarge i-0abc1234def567890 ~/.aws/credentials "
        "ops@bigco.com 00000000:3B:00.0 ghp_" + "A" * 36
    )
    assert Redactor(policy).text(text) == (
        "<path:home>/x <zone:1> <machine-type:1> <instance:1> <path:credentials> "
        "<email:1> <pci:1> <secret>"
    )


def test_redacted_corpus_scans_clean(policy: Policy) -> None:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    for samples in corpus["tells"].values():
        redacted = Redactor(policy).strings([s["text"] for s in samples])
        for sample, out in zip(samples, redacted, strict=True):
            assert sample["tell"] not in out
        assert find(policy, redacted) == []


def test_json_keeps_structure_and_masks_private_keys(policy: Policy) -> None:
    doc = {
        "hostname": "ANTHONY-WIN",
        "notes": ["built on anthony-win", 3, None, True],
        "ip-10-0-0-1.ec2.internal": {"zone": "whatever-text", "tok_per_sec": 128.2},
        "gpu": {"model": "NVIDIA RTX 4070"},
    }
    out = Redactor(policy).json(doc)
    assert out == {
        "hostname": "<host:1>",
        "notes": ["built on <host:1>", 3, None, True],
        "<host:2>": {"zone": "<zone:1>", "tok_per_sec": 128.2},
        "gpu": {"model": "NVIDIA RTX 4070"},
    }


def test_scrub_public_drops_private_keys_and_is_deterministic(policy: Policy) -> None:
    entry = {"run_id": "pi5-x", "host": "10.0.0.9", "path": "/Users/jdoe/run", "gpu": "A100"}
    assert scrub_public(entry, policy) == {
        "run_id": "pi5-x",
        "path": "<path:home>/run",
        "gpu": "A100",
    }
    assert scrub_public(entry, policy) == scrub_public(dict(reversed(entry.items())), policy)


def test_scrub_public_uses_the_store_policy(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (store / "runs" / "by-machine" / "box").mkdir(parents=True)
    specs = {"machine_id": "box", "hostname": "zebra-node"}
    (store / "runs" / "by-machine" / "box" / "specs.json").write_text(json.dumps(specs))
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert scrub_public({"note": "ran on zebra-node"}) == {"note": "ran on <host:1>"}


def test_corpus_recall_and_false_positives() -> None:
    score = evaluate(CORPUS)
    assert score.tells >= 220 and score.clean >= 200
    assert score.recall >= 0.99, score.missed
    assert score.false_positives == []


def test_store_names_come_from_specs_and_sweeps(store: Path) -> None:
    machine = store / "runs" / "by-machine" / "pi5"
    machine.mkdir(parents=True)
    (machine / "specs.json").write_text(json.dumps({"hostname": "kitchen-pi", "user": "zoe"}))
    sweeps = store.parent / "sweeps"
    sweeps.mkdir()
    (sweeps / "lab.yaml").write_text(
        "experiment: lab\ndevices:\n  gpu1: {transport: ssh, host: tower-9, user: qzhang}\n"
        "  pi5-b: {transport: ssh, host: pi5-b}\nmatrix: {}\n"
    )
    names = collect_store_names(store)
    assert names.hosts == {"kitchen-pi", "tower-9", "pi5-b"}
    assert names.users == {"zoe", "qzhang"}
    assert {"pi5", "gpu1", "pi5-b"} <= names.machine_ids
    policy = load_policy(store)
    found = {h.value for h in find(policy, ["kitchen-pi tower-9 qzhang pi5-b pi5 zoe ab"])}
    # pi5-b is a machine id (public, so not hunted even though it is also a host).
    assert found == {"kitchen-pi", "tower-9", "qzhang", "zoe"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("patterns: [{name: x, class: planet, regex: 'a'}]", "$.patterns[0].class"),
        ("patterns: [{name: x, class: host, regex: '('}]", "$.patterns[0].regex"),
        ("allow: {valuez: []}", "$.allow.valuez"),
        ("known: [unclosed", "not valid YAML"),
    ],
)
def test_bad_redaction_yaml_is_one_line_naming_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "redaction.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_custom_pattern_and_allow_list(tmp_path: Path) -> None:
    (tmp_path / "redaction.yaml").write_text(
        "known: {hosts: [orca]}\n"
        "patterns: [{name: rack, class: host, regex: 'rack-\\d+'}]\n"
        "allow: {values: [10.9.9.9], patterns: ['10\\.8\\..*']}\n"
    )
    policy = load_policy(tmp_path)
    out = Redactor(policy).text("orca rack-12 10.9.9.9 10.8.1.1 10.7.1.1")
    assert out == "<host:1> <host:2> 10.9.9.9 10.8.1.1 <ip:1>"
