"""The journal: the stamp is fixed once, --fresh renews it, done means an ok record."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.kit.runs import write_run
from tests.sweep.lab import lab_config

from benchlab.layout import RECORD, Store, atomic_write_json, write_model
from benchlab.models import RunRecord, RunSpec, SweepState
from benchlab.sweep.expand import expand
from benchlab.sweep.journal import SweepJournal

T0 = datetime(2025, 1, 6, 12, 0, 0, tzinfo=timezone.utc)


def record(journal: SweepJournal, spec, status: str) -> RunRecord:
    rid = journal.run_id(spec)
    rec = RunRecord(
        run_id=rid,
        spec_id=spec.spec_id,
        machine_id=spec.machine_id,
        device=spec.device,
        status=status,
        failure_kind=None if status == "ok" else "transport",
        spec=spec,
    )
    write_model(journal.store.run_dir(spec.machine_id, rid) / RECORD, rec)
    return rec


def imported_run(journal: SweepJournal, spec: RunSpec) -> None:
    """A whole run without a record.json, where this point's run dir is: what `bench
    migrate` leaves, which counts as done."""
    write_run(journal.store.root, journal.run_id(spec), machine_id=spec.machine_id, record=False)


def test_begin_fixes_stamp_resume_reuses_fresh_renews(store: Path) -> None:
    journal = SweepJournal(Store(store), "lab")
    assert journal.read_state() is None
    stamp = journal.begin(False, "experiments/sweeps/lab.yaml", now=T0)
    assert stamp == "20250106T120000Z"
    state_path = store / "runs" / "sweeps" / "lab" / "state.json"
    state = SweepState.model_validate_json(state_path.read_text())
    assert state.stamp == stamp and state.config_path == "experiments/sweeps/lab.yaml"
    before = state_path.stat().st_mtime_ns
    again = SweepJournal(Store(store), "lab")
    assert again.begin(False, "x.yaml", now=datetime(2030, 1, 1, tzinfo=timezone.utc)) == stamp
    assert state_path.stat().st_mtime_ns == before  # resuming writes nothing
    fresh = again.begin(True, "x.yaml", now=T0)  # same second: still a new, later stamp
    assert fresh == "20250106T120001Z"
    spec = expand(lab_config())[0]
    assert again.run_id(spec) == f"{spec.spec_id}-{fresh}"


def test_is_done_only_for_ok_record_or_complete_import(store: Path) -> None:
    journal = SweepJournal(Store(store), "lab")
    journal.begin(False, None, now=T0)
    ok, failed, imported, partial, corrupt, *_ = expand(lab_config(matrix={"threads": [1, 2, 4]}))
    record(journal, ok, "ok")
    record(journal, failed, "failed")
    imported_run(journal, imported)
    atomic_write_json(journal.run_dir(partial) / "manifest.json", {})
    journal.run_dir(corrupt).mkdir(parents=True)
    (journal.run_dir(corrupt) / RECORD).write_text('{"status": "ok"')  # not JSON
    assert journal.is_done(ok)
    assert not journal.is_done(failed)
    assert journal.is_done(imported)
    assert not journal.is_done(partial)
    assert not journal.is_done(corrupt)


SPECS = expand(lab_config(matrix={"threads": [1, 2, 4, 8], "gen_tokens": [16, 64]}))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    states=st.lists(
        st.sampled_from(["none", "ok", "failed", "import"]),
        min_size=len(SPECS),
        max_size=len(SPECS),
    )
)
def test_pending_is_exactly_the_not_ok_points(tmp_path_factory, states: list[str]) -> None:
    root = tmp_path_factory.mktemp("store")
    journal = SweepJournal(Store(root), "lab")
    journal.begin(False, None, now=T0)
    for spec, state in zip(SPECS, states, strict=True):
        if state in ("ok", "failed"):
            record(journal, spec, state)
        elif state == "import":
            imported_run(journal, spec)
    expected = [s for s, state in zip(SPECS, states, strict=True) if state in ("none", "failed")]
    assert journal.pending(SPECS) == expected
