"""Matrix expansion: product, order, one device per spec, stable ids, axes of lists."""

from __future__ import annotations

import pytest
from tests.sweep.lab import lab_config, lab_dict

from benchlab.errors import ConfigError
from benchlab.ids import slug
from benchlab.models import Policies
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.expand import expand, failover_spec, order_specs
from benchlab.sweep.placeholders import resolve_device, substitute


def test_product_in_fixed_order_one_device_each() -> None:
    specs = expand(lab_config())
    assert [(s.device, s.precision) for s in specs] == [
        ("laptop", "f32"),
        ("laptop", "q8"),
        ("pi5", "f32"),
        ("pi5", "q8"),
    ]
    assert all(s.threads == 4 and s.prompt_tokens == 128 and s.gen_tokens == 64 for s in specs)
    assert [s.spec_id for s in specs] == [s.spec_id for s in expand(lab_config())]
    assert len({s.spec_id for s in specs}) == 4
    first = specs[0]
    assert first.spec_id.startswith("laptop-smollm2-135m-f32-batch-")
    assert first.machine_id == "laptop" and first.experiment == "lab"


def test_spec_id_ignores_experiment_but_not_measurement() -> None:
    a = expand(lab_config())
    b = expand(lab_config(experiment="other"))
    assert [s.spec_id for s in a] == [s.spec_id for s in b]
    c = expand(lab_config(matrix={"threads": 2}))
    assert {s.spec_id for s in a}.isdisjoint(s.spec_id for s in c)


def test_batch_sizes_list_is_fixed_list_of_lists_is_axis() -> None:
    fixed = expand(lab_config(matrix={"device": "laptop", "batch_sizes": [1, 4, 8]}))
    assert [s.batch_sizes for s in fixed] == [[1, 4, 8], [1, 4, 8]]
    axis = expand(lab_config(matrix={"device": "laptop", "batch_sizes": [[1, 2], [1, 8]]}))
    assert [s.batch_sizes for s in axis] == [[1, 2], [1, 8], [1, 2], [1, 8]]


def test_params_mapping_fixed_list_is_axis_and_devices_alias() -> None:
    data = lab_dict()
    data["matrix"].pop("device")
    data["matrix"].update(devices=["pi5"], precision="q8", params=[{"reps": 1}, {"reps": 2}])
    specs = expand(parse_sweep_config(data, "lab.yaml"))
    assert [(s.device, s.params) for s in specs] == [("pi5", {"reps": 1}), ("pi5", {"reps": 2})]
    data["matrix"]["params"] = {"reps": 3}
    assert [s.params for s in expand(parse_sweep_config(data, "lab.yaml"))] == [{"reps": 3}]


def test_same_measurement_twice_is_an_error() -> None:
    with pytest.raises(ConfigError, match="duplicate value"):
        expand(lab_config(matrix={"threads": [2, 2]}))


def test_failover_spec_gets_own_id_and_tag() -> None:
    config = lab_config(
        devices={
            "laptop": {"transport": "local"},
            "pi5": {"transport": "local", "failover_to": ["pi5-spare"]},
            "pi5-spare": {"transport": "local"},
        }
    )
    spec = next(s for s in expand(config) if s.device == "pi5")
    moved = failover_spec(config, spec, "pi5-spare")
    assert moved.device == "pi5-spare" and moved.machine_id == "pi5-spare"
    assert moved.failover_from == "pi5"
    assert "failover-from:pi5" in moved.tags
    assert moved.spec_id != spec.spec_id
    with pytest.raises(ConfigError, match="never moved"):
        failover_spec(config, spec, "laptop")


def test_order_policies_are_deterministic() -> None:
    specs = expand(lab_config(matrix={"threads": [1, 2, 4]}))
    assert order_specs(specs, Policies()) == specs
    inter = order_specs(specs, Policies(order="interleave"))
    assert [(s.device, s.precision, s.threads) for s in inter[:4]] == [
        ("laptop", "f32", 1),
        ("laptop", "q8", 1),
        ("laptop", "f32", 2),
        ("laptop", "q8", 2),
    ]
    shuffled = order_specs(specs, Policies(order="shuffle", order_seed=7))
    assert shuffled == order_specs(specs, Policies(order="shuffle", order_seed=7))
    assert sorted(s.spec_id for s in shuffled) == sorted(s.spec_id for s in specs)
    assert shuffled != specs
    assert [s.device for s in shuffled] == [s.device for s in specs]  # devices stay in order


def test_placeholders_per_worker() -> None:
    config = lab_config(
        devices={
            "laptop": {
                "transport": "exec",
                "command": ["docker", "exec", "bench-${worker_instance_id}"],
                "workdir": "/scratch/${experiment}/${device}",
                "env": {"X": "${worker_instance_id}"},
            },
            "pi5": {"transport": "local"},
        }
    )
    a = resolve_device(config.devices["laptop"], device="laptop", experiment="lab", worker="w-1")
    b = resolve_device(config.devices["laptop"], device="laptop", experiment="lab", worker="w-2")
    assert a.command == ["docker", "exec", "bench-w-1"] and b.command[-1] == "bench-w-2"
    assert a.workdir == "/scratch/lab/laptop" and a.env == {"X": "w-1"}
    # Unknown placeholders in params are a shell's business, not ours.
    assert substitute({"cmd": "echo ${HOME} ${device}"}, {"device": "pi5"}) == {
        "cmd": "echo ${HOME} pi5"
    }


def test_model_slug_is_the_id_component() -> None:
    spec = expand(lab_config(matrix={"model": "SmolLM2-135M"}))[0]
    assert spec.spec_id.split("-batch-")[0] == f"laptop-{slug('SmolLM2-135M')}-f32"
