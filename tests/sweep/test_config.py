"""Sweep config: valid configs load; every kind of bad input is one line naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchlab.cli import main
from benchlab.errors import ConfigError
from benchlab.sweep.config import load_sweep_config

GOOD = """
experiment: lab
devices:
  laptop: {transport: local, max_concurrency: 2, resource_group: laptop-cpu}
  k8s-cpu4:
    transport: exec
    command: [kubectl, exec, -i, "bench-${worker_instance_id}", --]
    resource_group: laptop-cpu
    env: {SCRATCH: "/tmp/${experiment}/${worker_instance_id}"}
  pi5: {transport: ssh, host: pi5.lan, failover_to: [pi5-spare]}
  pi5-spare: {transport: ssh, host: pi5b.lan}
matrix:
  device: [laptop, pi5]
  backend: reference
  model: [tiny, smollm2-135m]
  precision: [f32, q8]
  threads: [1, 2]
"""


def write(tmp_path: Path, text: str, name: str = "lab.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def edit(mutate) -> str:
    data = yaml.safe_load(GOOD)
    mutate(data)
    return yaml.safe_dump(data)


def test_good_config_loads_and_declares_groups_implicitly(tmp_path: Path) -> None:
    config = load_sweep_config(write(tmp_path, GOOD))
    assert config.experiment == "lab"
    assert config.devices["laptop"].max_concurrency == 2
    assert config.devices["pi5"].max_concurrency == 1  # the default
    assert "laptop-cpu" in config.resource_groups  # named by devices, declared implicitly


def set_path(data: dict, dotted: str, value: object) -> None:
    keys = dotted.split(".")
    for key in keys[:-1]:
        data = data[key]
    data[keys[-1]] = value


BAD = [
    (
        "unknown device in matrix",
        lambda d: set_path(d, "matrix.device", ["laptop", "pi6"]),
        "matrix.device[1]: unknown device 'pi6'",
    ),
    (
        "failover to nothing",
        lambda d: set_path(d, "devices.pi5.failover_to", ["nowhere"]),
        "devices.pi5.failover_to[0]: unknown device 'nowhere'",
    ),
    (
        "failover cycle",
        lambda d: set_path(d, "devices.pi5-spare.failover_to", ["pi5"]),
        "failover cycle pi5 -> pi5-spare -> pi5",
    ),
    (
        "failover to itself",
        lambda d: set_path(d, "devices.pi5.failover_to", ["pi5"]),
        "devices.pi5.failover_to[0]: device 'pi5' cannot fail over to itself",
    ),
    (
        "unknown top-level key",
        lambda d: set_path(d, "experimnet", "x"),
        "experimnet: unknown key",
    ),
    (
        "unknown nested key",
        lambda d: set_path(d, "devices.pi5.max_concurency", 2),
        "devices.pi5.max_concurency: unknown key",
    ),
    (
        "missing backend",
        lambda d: d["matrix"].pop("backend"),
        "matrix.backend: required key is missing",
    ),
    (
        "unknown backend",
        lambda d: set_path(d, "matrix.backend", "llama-bnech"),
        "matrix.backend: backend 'llama-bnech': unknown",
    ),
    (
        "unknown axis",
        lambda d: set_path(d, "matrix.thread", 4),
        "matrix.thread: unknown axis",
    ),
    (
        "bad threads",
        lambda d: set_path(d, "matrix.threads", [1, "two"]),
        "matrix.threads: expected a positive integer",
    ),
    (
        "duplicate axis value",
        lambda d: set_path(d, "matrix.precision", ["q8", "q8"]),
        "matrix.precision: duplicate value 'q8'",
    ),
    (
        "ssh without host",
        lambda d: d["devices"]["pi5"].pop("host"),
        "devices.pi5.host: required for transport ssh",
    ),
    (
        "exec without prefix",
        lambda d: d["devices"]["k8s-cpu4"].pop("command"),
        "devices.k8s-cpu4.command: required for transport exec",
    ),
    (
        "unknown placeholder in a device",
        lambda d: set_path(d, "devices.laptop.workdir", "/tmp/${worker_id}"),
        "devices.laptop.workdir: unknown placeholder ${worker_id}",
    ),
    (
        "declared group no device names",
        lambda d: set_path(d, "resource_groups", {"laptop-cpuu": {}}),
        "resource_groups.laptop-cpuu: no device names this group",
    ),
    (
        "bad concurrency",
        lambda d: set_path(d, "devices.laptop.max_concurrency", 0),
        "devices.laptop.max_concurrency: Input should be greater than or equal to 1",
    ),
    (
        "unsafe experiment",
        lambda d: set_path(d, "experiment", "../escape"),
        "experiment: unsafe experiment",
    ),
    (
        "device missing with several devices",
        lambda d: d["matrix"].pop("device"),
        "matrix.device: required when more than one device is declared",
    ),
]


@pytest.mark.parametrize(("name", "mutate", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_one_line_naming_file_and_key(
    tmp_path: Path, name: str, mutate, expected: str
) -> None:
    path = write(tmp_path, edit(mutate))
    with pytest.raises(ConfigError) as info:
        load_sweep_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


def test_malformed_yaml_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "experiment: lab\ndevices: {laptop: [\n")
    with pytest.raises(ConfigError, match=r"lab\.yaml: line \d+ column \d+: malformed YAML"):
        load_sweep_config(path)


def test_not_a_mapping_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_sweep_config(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ConfigError, match="file not found"):
        load_sweep_config(tmp_path / "nope.yaml")


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    path = write(tmp_path, "experiment: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_sweep_config(path)


@pytest.mark.parametrize("flag", [[], ["--dry-run"]])
def test_cli_bad_config_exit_2_one_line_nothing_written(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys, flag: list[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    path = write(tmp_path, edit(lambda d: set_path(d, "matrix.device", ["laptop", "pi6"])))
    assert main(["run", str(path), *flag]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("bench: error: ") and "matrix.device[1]: unknown device 'pi6'" in err
    assert list(store.iterdir()) == []
