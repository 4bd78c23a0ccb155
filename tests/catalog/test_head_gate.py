"""What another clone's head may hold (ARCHITECTURE.md, The catalog: the trust boundary,
marks): `rejected` items of one shape, `marks` and `rejected` bounded before anything expands
them, marks dated by a real clock from 1970 to 2099 (one from the future is set aside, never
in force, and the next mark of its run replaces it), entry timestamps in that range too,
invisible fillers refused like control characters; `retract` of a typo writes nothing.
Real stores from the synthetic fleet, the real CLI."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.catalog.test_marks import fleet  # noqa: F401 (a fixture)

from benchlab.catalog import gate
from benchlab.catalog.read import load_catalog
from benchlab.detect.stats import is_outlier
from benchlab.errors import SchemaError
from benchlab.query.api import open_catalog

Bench = Callable[..., tuple[int, str, str]]


def edit_head(store: Path, **fields: object) -> None:
    path = store / "catalog.json"
    head = json.loads(path.read_text())
    head.update(fields)
    path.write_text(json.dumps(head))


def one_line_error(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("bench: error: "), err
    return lines[0]


def runs(store: Path) -> dict[str, dict]:
    return {e["run_id"]: e for e in load_catalog(store / "catalog.json").runs}


@pytest.mark.parametrize("rejected", [[[1]], [1], ["no-digest"], ["a@0123456789abcdef@x"]])
def test_a_malformed_rejected_list_is_one_line_everywhere(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
    bench: Bench,
    rejected: list,
) -> None:
    edit_head(store, rejected=rejected)
    s = ("--store", str(store))
    for verb in (
        ["list"],
        ["catalog", "validate"],
        ["catalog", "resolve", fleet["local"], "--keep", "1"],
        ["mark-outlier", fleet["local"]],
    ):
        assert "$.rejected[0]" in one_line_error(*bench(*s, *verb)[:3:2]), verb
    with pytest.raises(SchemaError, match=r"catalog\.json: \$\.rejected\[0\]"):
        open_catalog(store)


def test_huge_marks_and_rejected_lists_are_refused_before_they_are_expanded(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
    bench: Bench,
) -> None:
    mark = {"run_id": fleet["local"], "state": "marked", "at": "2025-01-01T00:00:00Z"}
    edit_head(store, marks=[mark] * 300_000)
    start = time.perf_counter()
    code, _, err = bench("--store", str(store), "mark-outlier", fleet["local"])
    assert "$.marks: 300000 items (at most 20000)" in one_line_error(code, err)
    assert time.perf_counter() - start < 5  # it merged every mark first: 9 to 49 s
    edit_head(store, marks=[], rejected=[f"{fleet['local']}@0123456789abcdef"] * 20_001)
    assert gate.head_problem(json.loads((store / "catalog.json").read_text())) == (
        "$.rejected: 20001 items (at most 20000)"
    )


@pytest.mark.parametrize(
    ("at", "why"),
    [
        ("2099-13-45T00:00:00Z", "is not a real UTC time"),
        ("9999-01-01T00:00:00Z", "before 1970 or after 2099"),
        ("1969-07-20T20:17:00Z", "before 1970 or after 2099"),
        ("2099-01-01T00:00:00Z", "is in the future"),
    ],
)
def test_a_pulled_mark_dated_where_no_clock_is_set_aside_and_the_next_mark_replaces_it(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
    bench: Bench,
    at: str,
    why: str,
) -> None:
    run_id = fleet["foreign"]
    edit_head(store, marks=[{"run_id": run_id, "state": "marked", "at": at}])
    s = ("--store", str(store))
    assert not is_outlier(runs(store)[run_id])  # never in force
    assert any(why in p for p in load_catalog(store / "catalog.json").problems)
    code, _, err = bench(*s, "catalog", "validate")
    assert why in one_line_error(code, err) and "bench mark-outlier" in err
    # --clear used to report success and change nothing (the 9999 mark outranked it).
    code, out, err = bench(*s, "mark-outlier", run_id, "--clear")
    assert code == 0 and "Traceback" not in err, err
    marks = json.loads((store / "catalog.json").read_text())["marks"]
    assert [m["state"] for m in marks if m["run_id"] == run_id] == ["cleared"]
    assert at[:4] in out and "set aside" in out
    assert bench(*s, "mark-outlier", run_id)[0] == 0
    assert is_outlier(runs(store)[run_id])
    assert bench(*s, "catalog", "validate")[0] == 0


def test_a_mark_naming_no_run_is_refused_by_validate_and_dropped_by_the_build(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
    bench: Bench,
) -> None:
    ghost = fleet["local"][:-1] + "0"
    assert ghost not in runs(store)
    edit_head(store, marks=[{"run_id": ghost, "state": "marked", "at": "2025-01-01T00:00:00Z"}])
    s = ("--store", str(store))
    code, _, err = bench(*s, "catalog", "validate")
    assert f"a mark names {ghost!r}, no run of the catalog" in one_line_error(code, err)
    assert bench(*s, "catalog", "build")[0] == 0
    assert "marks" not in json.loads((store / "catalog.json").read_text())
    assert bench(*s, "catalog", "validate")[0] == 0


def test_retract_of_an_id_not_in_the_catalog_exits_1_and_writes_nothing(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
    bench: Bench,
) -> None:
    typo = fleet["local"][:-1] + "0"
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and "runs" not in p.parts}
    code, _, err = bench("--store", str(store), "catalog", "retract", fleet["foreign"], typo)
    assert code == 1 and "Traceback" not in err
    assert f"no run {typo!r} in the catalog; nothing retracted" in err
    after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and "runs" not in p.parts}
    assert after == before
    assert bench("--store", str(store), "catalog", "retract", fleet["foreign"])[0] == 0
    assert bench("--store", str(store), "catalog", "retract", fleet["foreign"])[0] == 0  # again


@pytest.mark.parametrize(
    "stamp", ["2200-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2025-13-01T00:00:00Z"]
)
def test_a_pulled_line_stamped_outside_1970_to_2099_is_set_aside(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
    stamp: str,
) -> None:
    shard = next(
        p for p in (store / "catalog").rglob("*.jsonl") if fleet["foreign"] in p.read_text()
    )
    lines = shard.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if fleet["foreign"] in line)
    entry = json.loads(lines[at])
    entry["timestamp"] = stamp
    lines[at] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    shard.write_text("\n".join(lines) + "\n")
    loaded = load_catalog(store / "catalog.json")
    assert fleet["foreign"] not in {e["run_id"] for e in loaded.runs}
    assert any(
        f"timestamp: {stamp!r} is not a date-time from 1970 to 2099" in p for p in loaded.problems
    )


def test_to_pandas_reads_an_undated_run_as_nat(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
) -> None:
    pytest.importorskip("pandas")
    shard = next(
        p for p in (store / "catalog").rglob("*.jsonl") if fleet["foreign"] in p.read_text()
    )
    shard.write_text(shard.read_text().replace(
        next(json.loads(line)["timestamp"] for line in shard.read_text().splitlines()
             if fleet["foreign"] in line),
        "garbage",
    ))  # fmt: skip
    frame = open_catalog(store).to_pandas()
    row = frame[frame["run_id"] == fleet["foreign"]]
    assert len(row) == 1 and row["timestamp"].isna().all()
    assert frame["timestamp"].notna().sum() == len(frame) - 1


@pytest.mark.parametrize("filler", ["\u3164", "\u115f", "\u2800", "\uffa0", "\u034f", "\ufe0f"])
def test_invisible_fillers_in_a_pulled_model_name_are_refused(filler: str) -> None:
    entry = {"run_id": "r", "machine_id": "m", "timestamp": "t", "model": f"llama{filler}"}
    entry["precision"] = "q8"
    assert (
        gate.line_problem(entry)
        == f"model: holds the control or bidi character U+{ord(filler):04X}"
    )


def test_resolve_on_a_read_only_store_is_one_line(
    store: Path,
    fleet: dict[str, str],  # noqa: F811
    bench: Bench,
) -> None:
    from tests.catalog.test_faults import mounted, tracked

    before = tracked(store)
    bind = ["mount", "--bind", str(store), str(store)]
    ro = ["mount", "-o", "remount,bind,ro", str(store)]
    with mounted(store, bind, ro):
        code, _, err = bench(
            "--store", str(store), "catalog", "resolve", fleet["local"], "--keep", "1"
        )
        assert "Read-only file system" in one_line_error(code, err)
    assert tracked(store) == before
