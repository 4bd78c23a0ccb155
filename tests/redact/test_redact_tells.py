"""Each tell class: what it must match and, as important, what it must leave alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchlab.redact import tells
from benchlab.redact.engine import find
from benchlab.redact.policy import Policy

from .conftest import CORPUS

CORPUS_DATA = json.loads(CORPUS.read_text(encoding="utf-8"))

MUST_NOT = {
    tells.HOST: [
        "from benchlab.devices.local import X",
        "threading.local()",
        "pi5.example",
        "gpu-node-07.internal.example",
        "anthony-laptop",
        "localhost",
    ],
    tells.IP: [
        "3.11.8",
        "12.6",
        "1.2.3",
        "10.0.26200",
        "560.94",
        "10.0.26200.1",
        "127.0.0.1",
        "0.0.0.0",
        "::1",
        "a[::2]",
        "std::vector",
        "12:00:00",
        "00:1a:2b:3c:4d:5e",
        "192.0.2.10",
        "255.255.255.0",
        "version 1.2.3.4",
        "Driver Version : 1.2.3.4",
        "build: 10.0.0.1",
        "cuDNN 9.1.0.70",
    ],
    tells.INSTANCE: [
        "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z",
        "9a0135c",
        "mini-a1b2c3d4",
        "instance",
        "phi-3-mini-4k",
    ],
    tells.ZONE: ["us-east", "east", "eu", "europe", "v5", "eastern", "mistral-7b"],
    tells.MACHINE_TYPE: [
        "RTX 4070",
        "A100",
        "H100 80GB",
        "M3 Pro",
        "NVIDIA A100-SXM4-80GB",
        "Tesla T4",
        "NVIDIA L4",
        "gpt2-large",
        "t5-small",
        "nvidia-smi",
        "Standard deviation",
        "Q4_K_M",
        "v0.3",
    ],
    tells.CREDENTIAL_PATH: [
        "~/.ssh/known_hosts",
        "~/.ssh/config",
        "kubeconfig",
        "~/.cache/huggingface",
        "/etc/ssl/certs",
    ],
    tells.TOPOLOGY: [
        "GPU0 utilisation 97%",
        "GPU 0: NVIDIA A100-SXM4-80GB",
        "Legend: X = Self",
        "00:01:23.5",
        "2025-01-06T12:00:00Z",
    ],
    tells.HOME_PATH: [
        "/root/.cache",
        "/tmp/home/x",
        "~/models",
        "/opt/llama.cpp",
        "/home/<user>",
        "C:\\Program Files",
    ],
    tells.USER: [
        "user@host:port",
        "root@10.0.0.1",
        "@pytest.fixture",
        "git@github.com:o/r",
        "tg64@pp128",
        "pp512@d128",
        "pp512+tg128",
    ],
    tells.EMAIL: ["test@benchlab.invalid", "ops@example.com", "git@github.com"],
    tells.HARDWARE_ID: [
        "Serial Number: Not Specified",
        "    Serial Number                         : N/A",
        "GPU 0: NVIDIA A100-SXM4-80GB",
        "00:00:00:00:00:00",
        "12:34:56",
        "1000.1000.1000",
        "123e4567-e89b-12d3-a456-426614174000",
        "GPU-Util 97%",
    ],
    tells.SSH_KEY: [
        "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
        "SHA256 checksum OK",
        "ssh-keygen -t ed25519",
        "ssh-rsa",
    ],
    tells.K8S: [
        "kubectl get pods -n bench",
        "pod/bench-0 condition met",
        "llama-3.1-8b-instruct",
        "gke-gcloud-auth-plugin",
        "aks-preview",
        "node: laptop",
    ],
    tells.CLOUD_ACCOUNT: [
        "resource_group: laptop-cpu",
        "a cluster: 4 nodes",
        "cluster of four Raspberry Pis",
        "project_id = args.project",
        "--project",
        "current-context: minikube",
        "https://github.com/ggml-org/llama.cpp",
    ],
    tells.SITE_PATH: [
        "/usr/share/ollama/models",
        "/opt/llama.cpp/build/bin/llama-bench",
        "/tmp/bench/model.gguf",
        "~/.cache/llama.cpp",
        "C:\\Program Files\\NVIDIA Corporation",
        "a:\\n  runs-on: ubuntu-latest",
        "https://example.com/data/x",
        "/workspace/llama.cpp",
    ],
    tells.SECRET: [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
        "ghp",
        "hf_transfer",
        "BEGIN",
        "password",
    ],
}


@pytest.mark.parametrize("tell_class", tells.CLASSES)
def test_every_class_has_cases_both_ways(tell_class: str) -> None:
    assert len(CORPUS_DATA["tells"][tell_class]) >= 20
    assert MUST_NOT[tell_class]


@pytest.mark.parametrize("tell_class", tells.CLASSES)
def test_class_matches_its_corpus_tells(policy: Policy, tell_class: str) -> None:
    samples = CORPUS_DATA["tells"][tell_class]
    hits = find(policy, [s["text"] for s in samples])
    for index, sample in enumerate(samples):
        start = sample["text"].index(sample["tell"])
        end = start + len(sample["tell"])
        covering = [h for h in hits if h.index == index and h.start < end and h.end > start]
        assert covering, f"{tell_class} missed {sample['text']!r}"


@pytest.mark.parametrize("tell_class", tells.CLASSES)
def test_class_leaves_clean_text_alone(policy: Policy, tell_class: str) -> None:
    hits = [h for h in find(policy, MUST_NOT[tell_class]) if h.tell_class == tell_class]
    assert [(h.detector.name, MUST_NOT[tell_class][h.index]) for h in hits] == []


def test_gpu_marketing_names_are_science_not_skus(policy: Policy) -> None:
    text = "NVIDIA GeForce RTX 4070 vs A100 vs H100 80GB vs Apple M3 Pro on p4d.24xlarge"
    hits = find(policy, [text])
    assert [(h.tell_class, h.value) for h in hits] == [(tells.MACHINE_TYPE, "p4d.24xlarge")]


def test_overlapping_tells_resolve_to_the_longest_at_a_position(policy: Policy) -> None:
    hits = find(policy, ["key at /home/anthony/.ssh/id_rsa"])
    assert [(h.tell_class, h.value) for h in hits] == [
        (tells.CREDENTIAL_PATH, "/home/anthony/.ssh/id_rsa")
    ]


def test_user_from_a_home_path_is_hunted_in_the_same_batch(policy: Policy) -> None:
    hits = find(policy, ["/home/qzhang/models/x.gguf", "owner qzhang"])
    assert {(h.index, h.tell_class) for h in hits} == {(0, tells.HOME_PATH), (1, tells.USER)}


def test_private_key_block_is_one_tell(policy: Policy) -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----"
    hits = find(policy, [f"key:\n{block}\nafter"])
    assert [(h.tell_class, h.value) for h in hits] == [(tells.SECRET, block)]


def test_hit_never_spans_two_strings(policy: Policy) -> None:
    assert find(policy, ["GPU0 X", "NV12 NV12"]) == []


versions = st.lists(st.integers(0, 99999), min_size=2, max_size=3).map(
    lambda parts: ".".join(map(str, parts))
)


@given(versions)
def test_versions_with_up_to_three_parts_are_never_ips(version: str) -> None:
    from benchlab.redact.policy import RedactionConfig, build_policy

    assert find(build_policy(RedactionConfig()), [f"version {version}", version]) == []


@given(
    st.ip_addresses(network="10.0.0.0/8")
    | st.ip_addresses(network="172.16.0.0/12")
    | st.ip_addresses(network="192.168.0.0/16")
    | st.ip_addresses(network="100.64.0.0/10")
)
def test_every_private_ipv4_is_found(address: object) -> None:
    from benchlab.redact.policy import RedactionConfig, build_policy

    hits = find(build_policy(RedactionConfig()), [f"ssh to {address}:22"])
    assert [(h.tell_class, h.value) for h in hits] == [(tells.IP, str(address))]


def test_an_address_after_a_version_elsewhere_on_the_line_is_still_found(policy: Policy) -> None:
    hits = find(policy, ["driver 1.2.3.4 on 10.1.2.3", "version: 1.2.3.4\nhost 10.9.8.7"])
    assert [(h.index, h.value) for h in hits] == [(0, "10.1.2.3"), (1, "10.9.8.7")]


def test_cloud_cli_flags_need_the_cli_on_the_line(policy: Policy) -> None:
    hits = find(policy, ["az aks show -g ml-rg -n aks-1", "npm install -g left-pad", "head -n 5"])
    assert [(h.index, h.value) for h in hits] == [(0, "ml-rg"), (0, "aks-1")]


def test_svg_path_data_is_not_an_address(policy: Policy) -> None:
    """An icon in a built page: `2.41.44.82` inside path data is drawing, not an IP."""
    icon = '<path d="M12 22l-2.41-3.44c.74.27 1.55.44 2.41.44.82 0 1.63-.17 2.37-.44z"/>'
    assert [h for h in find(policy, [icon]) if h.tell_class == tells.IP] == []
    for line in ("at 10.0.0.5", "host h1 10.0.0.5", 'retried on "orca-7" 10.0.0.5'):
        assert [h.value for h in find(policy, [line]) if h.tell_class == tells.IP] == ["10.0.0.5"]


# --- detect-secrets' patterns, kept in the user's cache ----------------------------------

_DETECTORS_IN_A_FRESH_PROCESS = """
import json, sys
from benchlab.redact import tells
found = [[d.name, d.regex.pattern, d.regex.flags, d.group] for d in tells.secret_detectors()]
print(json.dumps({"found": found, "imported": "detect_secrets" in sys.modules}))
"""


def _fresh_detectors(cache: Path) -> dict:
    """`secret_detectors()` in a new interpreter with `cache` as XDG_CACHE_HOME: what it
    found, and whether it imported detect-secrets to find it."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", _DETECTORS_IN_A_FRESH_PROCESS],
        env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return json.loads(out.stdout)


def test_secret_patterns_come_from_the_cache_once_kept(tmp_path):
    first = _fresh_detectors(tmp_path)
    assert first["imported"] and len(first["found"]) > 20
    assert len(list((tmp_path / "benchlab").glob("secret-patterns-*.json"))) == 1
    second = _fresh_detectors(tmp_path)
    assert second == {"found": first["found"], "imported": False}


def test_a_damaged_or_stale_secret_cache_is_read_again_from_the_plugins(tmp_path):
    expected = _fresh_detectors(tmp_path)["found"]
    (kept,) = (tmp_path / "benchlab").glob("secret-patterns-*.json")
    cache = json.loads(kept.read_text())
    damaged = [{**cache, "patterns": [["ds-x", "(unclosed", 32, 0]]}, {**cache, "stamp": ["x"]}]
    for bad in [*damaged, "not json {"]:
        kept.write_text(bad if isinstance(bad, str) else json.dumps(bad))
        assert _fresh_detectors(tmp_path) == {"found": expected, "imported": True}
        assert json.loads(kept.read_text()) == cache  # kept again, whole


def test_a_secret_cache_that_cannot_be_written_costs_only_the_import(tmp_path):
    expected = _fresh_detectors(tmp_path / "writable")["found"]
    blocked = tmp_path / "a-file"  # XDG_CACHE_HOME names a file: no cache dir can be made
    blocked.write_text("")
    for _ in range(2):
        assert _fresh_detectors(blocked) == {"found": expected, "imported": True}
    assert blocked.read_text() == ""
