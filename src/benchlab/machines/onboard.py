"""Onboarding a machine: its specs, a smoke benchmark, and its validation checklist.

The specs come from the device's own agent (`sysinfo`), locally or over the device's
transport, so a board reached over ssh is described by what it reports. The full specs stay
private (they carry the hostname); the public copy goes through the redaction policy.

The machine files (ARCHITECTURE.md, Machines), written here:

- `.bench-machine-id` at the repository root (the store's grandparent, `experiments/benchmark`
  being the store): this clone's machine, so `bench run --model M` and a re-onboarding need no
  `--machine-id`. Only a local onboarding writes it; a remote device is not this clone.
  It is per clone, hence gitignored.
- `machines/<id>/history/<stamp>.json`: a copy of the public specs each time they change
  (a new GPU, a new OS), so the inventory's past is kept next to its present.
- `README.md` in the smoke run's dir: what the run is, for a person browsing run dirs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlab.catalog.build import build
from benchlab.catalog.read import load_catalog
from benchlab.detect.gates import DEFAULT_GATE, PASSED, GateBook
from benchlab.errors import BenchlabError, ConfigError
from benchlab.files import read_config_text
from benchlab.ids import check_id, sweep_stamp
from benchlab.layout import (
    atomic_write_json,
    atomic_write_text,
    canonical_json,
    read_json,
    read_model,
    write_model,
)
from benchlab.machines.remote_specs import onboard_remote
from benchlab.models import DeviceConfig, MachineSpecs, RunRecord, SweepConfig
from benchlab.sweep.scheduler import run_sweep

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
"""The checklist (ARCHITECTURE.md, Machines), in its order: a machine is production-ready when all
pass."""

MACHINE_ID_FILE = ".bench-machine-id"
HISTORY_DIR = "history"


def repo_root(store_root: Path) -> Path:
    """The repository a store belongs to: two levels up from `experiments/benchmark`, else
    the store's parent (a store placed elsewhere with --store or $BENCHLAB_STORE)."""
    store_root = Path(store_root)
    if store_root.name == "benchmark" and store_root.parent.name == "experiments":
        return store_root.parent.parent
    return store_root.parent


def machine_id_path(store_root: Path) -> Path:
    return repo_root(store_root) / MACHINE_ID_FILE


def read_machine_id(store_root: Path) -> str | None:
    """This clone's machine id from `.bench-machine-id`, or None when there is none.

    A file whose content is not a safe id is an error naming the file, not a silent None:
    a run under the wrong machine id would put its numbers in another machine's history.
    """
    path = machine_id_path(store_root)
    found = read_config_text(path)
    if found is None:
        return None
    text = found.strip()
    try:
        return check_id(text, "machine id")
    except BenchlabError as exc:
        raise ConfigError(f"{path}: {exc}; fix it or re-run `bench onboard`") from None


def write_machine_id(store_root: Path, machine_id: str) -> str | None:
    """Write `.bench-machine-id`; return a warning when it named another machine before."""
    path = machine_id_path(store_root)
    try:
        before = read_machine_id(store_root)
    except ConfigError:
        before = None
    atomic_write_text(path, check_id(machine_id, "machine id") + "\n", root=path.parent)
    if before and before != machine_id:
        return f"{path.name}: this clone was {before!r}, now {machine_id!r}"
    return None


def record_specs_history(store: Store, machine_id: str, *, stamp: str | None = None) -> Path | None:
    """Copy the public specs into `machines/<id>/history/<stamp>.json` when they changed.

    Compared with the newest copy, so re-onboarding an unchanged machine adds nothing.
    Returns the new file, or None.
    """
    public = store.public_specs(machine_id)
    if not public.is_file():
        return None
    specs = read_json(public)
    history = public.parent / HISTORY_DIR
    copies = sorted(history.glob("*.json")) if history.is_dir() else []
    if copies:
        try:
            if canonical_json(read_json(copies[-1])) == canonical_json(specs):
                return None
        except BenchlabError:
            pass  # a damaged copy: the new one supersedes it
    target = history / f"{stamp or sweep_stamp()}.json"
    atomic_write_json(target, specs, root=store.root)  # no link under machines/ followed
    return target


def write_run_readme(store: Store, record: RunRecord, checks: list[Check]) -> Path:
    """The smoke run's README.md (an optional run file: ARCHITECTURE.md, The run files): what ran,
    how, and why."""
    run_dir = store.run_dir(record.machine_id, record.run_id)
    metrics = ", ".join(
        f"{name} {value:g}" for name, value in sorted(record.metrics.items()) if value is not None
    )
    lines = [
        f"# {record.run_id}",
        "",
        f"The onboarding smoke run of machine `{record.machine_id}`: one tiny reference point",
        "(`bench onboard`), proving that the agent, the backend and the store work end to end.",
        "",
        f"- status: {record.status}" + (f" ({record.error})" if record.error else ""),
        f"- started: {record.timings.started_at}, {record.timings.duration_s} s",
        f"- metrics: {metrics or 'none'}",
        "",
        "Checklist at onboarding:",
        "",
        *[f"- [{'x' if c.passed else ' '}] {c.text}" for c in checks],
        "",
    ]
    path = run_dir / "README.md"
    atomic_write_text(path, "\n".join(lines), root=store.root)
    return path


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
        write_model(store.private_specs(machine_id), specs, root=store.root)
    result = OnboardResult(specs=specs, checks=[])
    if smoke:
        sweep = run_sweep(
            store, smoke_config(machine_id, device_id, device), None, fresh=True, progress=progress
        )
        result.smoke = sweep.records[0] if sweep.records else None
    build(store)
    if record_specs_history(store, machine_id) is not None:
        result.warnings.append(f"specs changed: a copy is kept under machines/{machine_id}/history")
    result.checks = checklist(store, machine_id)
    if result.smoke is not None and (store.by_machine / machine_id / result.smoke.run_id).is_dir():
        write_run_readme(store, result.smoke, result.checks)
    if device.transport == "local":
        note = write_machine_id(store.root, machine_id)
        if note:
            result.warnings.append(note)
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
    """The checklist (ARCHITECTURE.md, Machines) for one machine, from its specs and the public
    catalog."""
    checks = _specs_checks(store, machine_id)
    try:  # the one reader: whatever the catalog's format (single file or shards)
        loaded = load_catalog(store.catalog_path)
        runs, machines = loaded.runs, loaded.machines
    except BenchlabError:
        runs, machines = [], {}
    mine = [e for e in runs if e.get("machine_id") == machine_id]
    ok = [e for e in mine if e.get("status", "ok") == "ok"]
    smoke_ok = [e for e in ok if SMOKE_TAG in (e.get("tags") or [])]
    full = [e for e in ok if SMOKE_TAG not in (e.get("tags") or [])]
    gated, gate_note = _gated_runs(store, machine_id, full)
    checks.append(
        Check("smoke", CHECKLIST[2][1], bool(smoke_ok), f"{len(smoke_ok)} ok smoke run(s)")
    )
    checks.append(
        Check(
            "full_run",
            CHECKLIST[3][1],
            bool(gated),
            f"{len(gated)} of {len(full)} full run(s) pass their gate" + gate_note,
        )
    )
    checks.append(
        Check(
            "catalog",
            CHECKLIST[4][1],
            machine_id in (machines or {}) or bool(mine),
            f"{len(mine)} run(s) in catalog.json",
        )
    )
    series = {(e.get("model_id") or e.get("model"), e.get("precision")) for e in full}
    others = {
        (e.get("model_id") or e.get("model"), e.get("precision"))
        for e in runs
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


def _gated_runs(
    store: Store, machine_id: str, full: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str]:
    """The full runs whose gates pass, checked now from the run dirs (benchlab.detect.gates).

    A run is judged by the gates its sweep declares, or, when it declares none, by
    gates.DEFAULT_GATE (its headline metric is there and at least half of the previous run of
    its series). The verdict is recomputed rather than read from the manifest, so a gate
    declared after the run still counts. A catalog entry whose run dir is absent on this
    clone (every clone but the one that measured it) is judged by the verdict `bench catalog
    build` put in the entry (`gate`, `gate_detail`: ARCHITECTURE.md, The catalog), so the
    line works from the catalog alone.
    """
    book = GateBook(store, machine_id=machine_id, default=DEFAULT_GATE)
    passed, failing = [], []
    for entry in full:
        run_id = str(entry.get("run_id"))
        if run_id in book.records:
            verdict = book.verdict(run_id)
            status = verdict.gate.status if verdict is not None else None
            if status == PASSED:
                passed.append(entry)
            elif verdict is not None:
                failing.append(f"{run_id}: {verdict.gate.status} ({verdict.gate.detail})")
        elif entry.get("gate") == PASSED:
            passed.append(entry)
        elif entry.get("gate") is not None:
            failing.append(f"{run_id}: {entry['gate']} ({entry.get('gate_detail')})")
    note = f"; {failing[-1]}" if failing and not passed else ""
    return passed, note
