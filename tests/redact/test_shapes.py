"""The structural defence: public id fields hold safe shapes, model paths lose their dirs."""

from __future__ import annotations

import pytest

from benchlab.benchmarks.llama_rows import precision_of
from benchlab.errors import ConfigError, SchemaError
from benchlab.ids import slug
from benchlab.redact.policy import Policy
from benchlab.redact.shapes import (
    MAX_LENGTH,
    PUBLIC_ID_FIELDS,
    check_public_field,
    model_slug,
    public_model_type,
    refuse_hostname_as_id,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("/home/alice/m.gguf", "m"),
        ("C:\\models\\x.gguf", "x"),
        ("C:/models/x.gguf", "x"),
        ("D:\\\\LLM\\\\acme\\\\qwen.gguf", "qwen"),
        ("~/models/llama-7b.Q4_K_M.gguf", "llama-7b.q4-k-m"),
        ("~alice/models/phi-3-mini.safetensors", "phi-3-mini"),
        ("/mnt/nvme0/jdoe/llama-3.1-8b/", "llama-3.1-8b"),
        ("./models/tiny.gguf", "tiny"),
        ("$HOME/models/tiny.bin", "tiny"),
        ("models/smollm2-135m-q8_0.gguf", "smollm2-135m-q8-0"),
        ("TheBloke/Llama-2-7B-GGUF/llama-2-7b.Q4_0.gguf", "llama-2-7b.q4-0"),
        ("/data/team/model-00001-of-00002.gguf", "model-00001-of-00002"),
        ("/data/team/.gguf", "gguf"),
    ],
)
def test_a_model_path_becomes_its_stem(name: str, expected: str) -> None:
    assert model_slug(name) == expected


@pytest.mark.parametrize(
    "name",
    ["SmolLM2-135M-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "qwen3-0.6b", "tiny", ""],
)
def test_a_model_name_slugs_as_ids_slug_does(name: str) -> None:
    assert model_slug(name) == slug(name)


def test_no_directory_of_a_path_survives() -> None:
    for path in ("/home/qzhang/work/acme/m.gguf", "C:\\Users\\qzhang\\acme\\m.gguf"):
        assert "qzhang" not in model_slug(path) and "acme" not in model_slug(path)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("machine_id", "anthony-laptop"),
        ("machine_id", "a100-box"),
        ("machine_id", "pi5"),
        ("model_id", "smollm2-135m"),
        ("model_id", "qwen2.5-7b-instruct"),
        ("model_id", "llama-7b.q4-k-m"),
        ("precision", "Q4_K_M"),
        ("precision", "bf16"),
        ("backend", "llama-bench"),
        ("mode", "batch"),
        ("tags", "gpu"),
        ("tags", "failover-from:pi5"),
        ("machine_id", "x" * MAX_LENGTH),
    ],
)
def test_safe_values_pass(field: str, value: str) -> None:
    check_public_field(field, value)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("model_id", "/home/alice/m.gguf", "path separator"),
        ("model_id", "C:\\models\\x.gguf", "path separator"),
        ("model_id", "models%2Fx", "path separator"),
        ("machine_id", "bench@gpu-box", "'@'"),
        ("machine_id", "10.0.0.5", "IP address"),
        ("machine_id", "ip-10-0-0-5", "IP address"),
        ("machine_id", "192-168-1-20", "IP address"),
        ("machine_id", "fe80::1", "characters outside"),
        ("machine_id", "gpu box", "characters outside"),
        ("machine_id", "-leading-dash", "characters outside"),
        ("machine_id", "a..b", "characters outside"),
        ("machine_id", "", "empty"),
        ("machine_id", "x" * (MAX_LENGTH + 1), "characters (at most"),
        ("machine_id", "gke-ml-bench-gpu-pool-1a2b3c4d-x9z8", "tell (k8s)"),
        ("machine_id", "gpu-7.corp.acme.com", "tell (host)"),
        ("machine_id", "p4d.24xlarge", "tell (machine-type)"),
        ("machine_id", "i-0123456789abcdef0", "tell (instance)"),
        ("machine_id", "us-east-1a", "tell (zone)"),
        ("tags", "nas.lan", "tell (host)"),
        ("tags", "00-1A-2B-3C-4D-5E", "tell (hardware-id)"),
        ("backend", "cuda;rm", "characters outside"),
        ("precision", "q8\n", "characters outside"),
    ],
)
def test_unsafe_values_are_refused_with_the_field_named(field: str, value: str, says: str) -> None:
    with pytest.raises(SchemaError) as info:
        check_public_field(field, value)
    assert str(info.value).startswith(f"{field}: ")
    assert says in str(info.value)


def test_a_tell_is_never_repeated_in_the_message() -> None:
    with pytest.raises(SchemaError) as info:
        check_public_field("machine_id", "gpu-7.corp.acme.com")
    assert "acme" not in str(info.value)


def test_the_store_policy_refuses_its_known_hosts(policy: Policy) -> None:
    check_public_field("machine_id", "rpi-kitchen")  # unknown to the built-in classes
    with pytest.raises(SchemaError):
        check_public_field("machine_id", "rpi-kitchen", policy)


def test_unknown_field_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="not a public id field"):
        check_public_field("hostname", "x")
    assert set(PUBLIC_ID_FIELDS) == {
        "machine_id",
        "model_id",
        "precision",
        "backend",
        "mode",
        "tags",
    }


@pytest.mark.parametrize(
    ("machine_id", "hosts"),
    [
        ("gpu-box-7", ["gpu-box-7"]),
        ("GPU-Box-7", ["gpu-box-7.lab.lan"]),
        ("pi5.lan", ["pi5"]),
        ("pi5", ["other", "PI5.home.arpa"]),
    ],
)
def test_a_host_name_is_refused_as_a_machine_id(machine_id: str, hosts: list[str]) -> None:
    with pytest.raises(ConfigError, match="host name"):
        refuse_hostname_as_id(machine_id, hosts, allow_public=False)


def test_a_host_name_is_allowed_when_the_user_says_it_is_public() -> None:
    refuse_hostname_as_id("gpu-box-7", ["gpu-box-7"], allow_public=True)


@pytest.mark.parametrize(
    ("machine_id", "hosts"),
    [
        ("a100-box", ["gpu-box-7", "gpu-box-7.lan"]),
        ("pi5", ["pi5b", "pi"]),
        ("local", ["localhost", "127.0.0.1", "", "  "]),
        ("ten", ["10.0.0.5"]),
        ("localhost", ["localhost"]),
    ],
)
def test_other_names_pass(machine_id: str, hosts: list[str]) -> None:
    refuse_hostname_as_id(machine_id, hosts, allow_public=False)


@pytest.mark.parametrize(
    ("model_type", "precision"),
    [
        ("llama ?B all F32", "f32"),
        ("llama 7B Q4_0", "q4_0"),
        ("qwen3 8B Q4_K - Medium", "q4_k_m"),
    ],
)
def test_llama_model_types_keep_their_precision(model_type: str, precision: str) -> None:
    """A markdown table names no model file, so the model type is the only source of the
    precision: llama.cpp writes `?B` for a size it cannot tell, and that is still a type."""
    assert public_model_type(model_type) == model_type
    assert precision_of({"model_type": model_type}) == precision


@pytest.mark.parametrize("model_type", ["/home/alice/m.gguf", "llama 7B; rm -rf", "x" * 65])
def test_a_model_type_of_another_shape_is_withheld(model_type: str) -> None:
    assert public_model_type(model_type) is None
