"""A catalog.json head the gate refuses in part (a collaborator's mistake, pulled) does not
stop the lab (ARCHITECTURE.md, Errors and exit codes): readers and validate say so in one
line naming the build that fixes it; the build leaves the refused part out of the head it
writes, names it, exits 0 and keeps everything else (retractions included). A file that is
no v3 head at all is still refused by the build: its tombstones cannot be salvaged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

Bench = Callable[..., tuple[int, str, str]]


def test_a_refused_head_field_is_named_by_readers_and_left_out_by_the_build(
    store: Path, make_fleet: Callable[..., list[str]], bench: Bench
) -> None:
    make_fleet(store, 6, seed=3, step_s=3600)
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    _, out, _ = bench("--store", str(store), "list", "--format", "json")
    gone = json.loads(out)[0]["run_id"]
    assert bench("--store", str(store), "catalog", "retract", gone)[0] == 0
    path = store / "catalog.json"
    head = json.loads(path.read_text())
    head["retracted"] = ["../x", *head["retracted"]]
    head["rejected"] = [[1]]
    path.write_text(json.dumps(head))

    for verb in (("list",), ("catalog", "validate")):
        code, _, err = bench("--store", str(store), *verb)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "$.retracted[0]" in err and "bench catalog build" in err and "Traceback" not in err

    code, out, err = bench("--store", str(store), "catalog", "build")

    assert code == 0, err
    assert "$.retracted[0]" in err and "$.rejected[0]" in err
    assert "2 refused part(s) of catalog.json" in out
    head = json.loads(path.read_text())
    assert head["retracted"] == [gone] and "rejected" not in head
    assert bench("--store", str(store), "catalog", "validate")[0] == 0
    code, out, _ = bench("--store", str(store), "list", "--format", "json")
    assert code == 0 and gone not in {row["run_id"] for row in json.loads(out)}


def test_a_file_that_is_no_v3_head_is_still_refused_by_the_build_in_one_line(
    store: Path, make_fleet: Callable[..., list[str]], bench: Bench
) -> None:
    make_fleet(store, 3, seed=3, step_s=3600)
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    path = store / "catalog.json"
    path.write_text(json.dumps({"$schema": "somebody/else", "retracted": ["../x"]}))

    code, _, err = bench("--store", str(store), "catalog", "build")

    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
