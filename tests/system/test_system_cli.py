"""`bench system` on a fake machine (a sysfs/proc tree under --root or BENCHLAB_SYSFS_ROOT)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.fakes import fake_machine


def test_powersave_and_a_busy_machine_get_advice(tmp_path: Path, bench) -> None:
    root = fake_machine(
        tmp_path / "root",
        governor="powersave",
        cores=2,
        load="1.90 1.20 0.80 3/300 999",
        swap_used_kb=200 * 1024,
        boost="1",
    )
    code, out, err = bench("system", "--root", str(root))
    assert code == 0 and err == ""
    assert "CPU governor                 powersave" in out
    assert "load average (1, 5, 15 min)  1.9, 1.2, 0.8" in out
    assert "Pi get_throttled             unknown" in out  # no vcgencmd: unknown, not 0
    assert (
        "WARNING: governor is powersave: set performance for stable numbers "
        "(`cpupower frequency-set -g performance`)" in out
    )
    assert "WARNING: load 1.9 on 2 cores: the machine is busy" in out
    assert "WARNING: 200 MB of swap in use" in out
    assert "advice: turbo/boost is on" in out


def test_json_format_and_the_environment_root(tmp_path: Path, bench, monkeypatch) -> None:
    root = fake_machine(tmp_path / "root", governor="powersave")
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(root))
    code, out, _ = bench("system", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["state"]["governors"] == ["powersave"]
    assert data["state"]["cores"] == 2
    assert data["state"]["boost"] is None and data["state"]["pi_throttled"] is None
    assert [item["key"] for item in data["advice"]] == ["governor"]
    assert data["advice"][0]["level"] == "warn"


def test_a_quiet_machine_needs_no_advice(tmp_path: Path, bench) -> None:
    root = fake_machine(tmp_path / "root", governor="performance", boost="0")
    code, out, _ = bench("system", "--root", str(root))
    assert code == 0
    assert "advice: none: the machine looks quiet" in out
    assert "WARNING" not in out
    assert "turbo/boost                  off" in out


def test_a_root_that_is_not_a_directory_is_one_line(tmp_path: Path, bench) -> None:
    code, out, err = bench("system", "--root", str(tmp_path / "nowhere"))
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"bench: error: --root {tmp_path / 'nowhere'}: not a directory"
    ]


def test_a_device_of_a_config_is_asked_through_its_agent(
    tmp_path: Path, bench, monkeypatch
) -> None:
    from tests.kit.configs import write_sweep

    root = fake_machine(tmp_path / "root", governor="powersave", load="3.00 2.00 1.00 1/1 1")
    config = write_sweep(
        tmp_path / "box.yaml",
        experiment="box",
        devices={"box": {"transport": "local", "env": {"BENCHLAB_SYSFS_ROOT": str(root)}}},
    )
    code, out, err = bench("system", "--config", str(config), "--device", "box")
    assert code == 0, err
    assert "CPU governor                 powersave" in out
    assert "WARNING: load 3 on 2 cores: the machine is busy" in out
    code, _, err = bench("system", "--config", str(config), "--device", "nope")
    assert code == 2 and err.strip() == (
        f"bench: error: {config}: devices: no device 'nope' (known: box)"
    )
    code, _, err = bench("system", "--device", "box")
    assert code == 2 and "--device and --config go together" in err
