"""Onboarding a machine: its specs, a smoke benchmark, and seed 002's validation checklist.

The specs come from the device's own agent (`sysinfo`), locally or over the device's
transport, so a board reached over ssh is described by what it reports. The full specs stay
private (they carry the hostname); the public copy goes through the redaction policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchlab.errors import BenchlabError
from benchlab.ids import check_id
from benchlab.layout import read_json, read_model, write_model
from benchlab.models import DeviceConfig, MachineSpecs, RunRecord, SweepConfig

if TYPE_CHECKING:
    from benchlab.layout import Store

SMOKE_TAG = "smoke"
CHECKLIST = (
    ("specs", "Specs file exists and is valid JSON"),
    ("fields", "All required fields populated (CPU, GPU, RAM, OS)"),
    ("smoke", "Smoke benchmark completes without error"),
    ("full_run", "At least one full benchmark run with gate pass"),
    ("catalog", "Catalog includes the machine"),
    ("comparison", "At least one comparison exists (vs another machine or baseline)"),
)
"""Seed 002's checklist, in its order: a machine is production-ready when all pass."""


@dataclass(frozen=True)
class Check:
    key: str
    text: str
    passed: bool
    detail: str = ""


@dataclass
class OnboardResult:
    specs: MachineSpecs
    checks: list[Check]
    smoke: RunRecord | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return all(check.passed for check in self.checks)


def smoke_config(machine_id: str, device_id: str, device: DeviceConfig) -> SweepConfig:
    """One tiny reference point: proves the agent, the backend and the store work end to end."""
    return SweepConfig(
        experiment=check_id(f"onboard-{machine_id}", "experiment"),
        devices={device_id: device},
        matrix={
            "backend": "reference",
            "model": "tiny",
            "precision": "f32",
            "mode": SMOKE_TAG,
            "batch_sizes": [1, 2],
        },
        tags=[SMOKE_TAG],
    )


def onboard(
    store: Store,
    machine_id: str,
    *,
    device_id: str | None = None,
    device: DeviceConfig | None = None,
    tags: list[str] | None = None,
    cost_per_hour: float | None = None,
    smoke: bool = True,
    progress: Any = None,
) -> OnboardResult:
    """Detect, record, smoke-test and check one machine.

    The catalog build at the end publishes the redacted specs and updates the inventory.
    """
    from benchlab.catalog.build import build
    from benchlab.machines.remote_specs import onboard_remote

    check_id(machine_id, "machine id")
    device_id = device_id or machine_id
    device = (device or DeviceConfig()).model_copy(update={"machine_id": machine_id})
    specs = onboard_remote(store, device_id, device)
    updates: dict[str, Any] = {}
    if tags:
        updates["tags"] = sorted(set(tags))
    if cost_per_hour is not None:
        updates["cost_per_hour"] = cost_per_hour
    if updates:
        specs = specs.model_copy(update=updates)
        write_model(store.private_specs(machine_id), specs)
    result = OnboardResult(specs=specs, checks=[])
    if smoke:
        from benchlab.sweep.sequential import run_sweep

        sweep = run_sweep(
            store, smoke_config(machine_id, device_id, device), None, fresh=True, progress=progress
        )
        result.smoke = sweep.records[0] if sweep.records else None
    build(store)
    result.checks = checklist(store, machine_id)
    return result


def _specs_checks(store: Store, machine_id: str) -> list[Check]:
    path = store.private_specs(machine_id)
    if not path.is_file():
        path = store.public_specs(machine_id)
    try:
        specs = read_model(path, MachineSpecs)
    except BenchlabError as exc:
        return [
            Check("specs", CHECKLIST[0][1], False, str(exc)),
            Check("fields", CHECKLIST[1][1], False, "no specs"),
        ]
    hardware = specs.hardware
    missing = [
        name
        for name, present in (
            ("CPU", specs.hardware.cpu.model not in ("", "unknown")),
            (
                "GPU",
                not getattr(hardware, "gpu_error", None),
            ),  # none is an answer; a failed probe is not
            ("RAM", bool(hardware.ram_gb)),
            ("OS", specs.os.name not in ("", "unknown")),
        )
        if not present
    ]
    gpus = ", ".join(g.model for g in hardware.gpu) or "no GPU"
    return [
        Check("specs", CHECKLIST[0][1], True, str(path.name)),
        Check(
            "fields",
            CHECKLIST[1][1],
            not missing,
            f"missing {', '.join(missing)}" if missing else gpus,
        ),
    ]


def checklist(store: Store, machine_id: str) -> list[Check]:
    """Seed 002's checklist for one machine, from its specs and the public catalog."""
    checks = _specs_checks(store, machine_id)
    try:
        catalog = read_json(store.catalog_path)
    except BenchlabError:
        catalog = {"runs": [], "machines": {}}
    mine = [e for e in catalog.get("runs", []) if e.get("machine_id") == machine_id]
    ok = [e for e in mine if e.get("status", "ok") == "ok"]
    smoke_ok = [e for e in ok if SMOKE_TAG in (e.get("tags") or [])]
    full = [e for e in ok if SMOKE_TAG not in (e.get("tags") or [])]
    gated = [e for e in full if _gate_passed(store, e)]
    checks.append(
        Check("smoke", CHECKLIST[2][1], bool(smoke_ok), f"{len(smoke_ok)} ok smoke run(s)")
    )
    checks.append(
        Check(
            "full_run",
            CHECKLIST[3][1],
            bool(gated),
            f"{len(gated)} of {len(full)} full run(s) pass their gate",
        )
    )
    checks.append(
        Check(
            "catalog",
            CHECKLIST[4][1],
            machine_id in (catalog.get("machines") or {}) or bool(mine),
            f"{len(mine)} run(s) in catalog.json",
        )
    )
    series = {(e.get("model_id") or e.get("model"), e.get("precision")) for e in full}
    others = {
        (e.get("model_id") or e.get("model"), e.get("precision"))
        for e in catalog.get("runs", [])
        if e.get("machine_id") != machine_id and e.get("status", "ok") == "ok"
    }
    repeated = len(full) > len(series)  # the same point twice: a baseline to compare with
    shared = series & others
    detail = (
        f"shares {len(shared)} point(s) with other machines"
        if shared
        else "has a baseline run"
        if repeated
        else "no other machine or baseline yet"
    )
    checks.append(Check("comparison", CHECKLIST[5][1], bool(shared) or repeated, detail))
    return checks


def _gate_passed(store: Store, entry: dict[str, Any]) -> bool:
    """A run without a gate passes; one with a gate passes only if its manifest says so."""
    path = entry.get("path")
    manifest = store.root / str(path) / "manifest.json" if path else None
    if manifest is None or not manifest.is_file():
        return True  # the catalog keeps no gate: absent run dirs count as ungated
    try:
        gate = read_json(manifest).get("gate")
    except BenchlabError:
        return False
    return not gate or not gate.get("required") or gate.get("status") == "passed"
