"""The writer contract's property for the verbs that write the catalog's head (ARCHITECTURE.md,
The catalog: marks and verdicts): hostile run ids, `--keep` indices and `--reason` texts fed
through `bench catalog resolve`, `bench mark-outlier` and `bench catalog retract` are either
refused in one line with every file of the store left byte for byte as it was, or written
as a head, shard lines and records that every reader's gate accepts.

Bounded: one real store (the synthetic fleet, built, with one conflict line) made once per
module and copied per example; few examples per verb; no network.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tests.kit.fleet import load_make_fleet
from tests.test_writer_contract_props import every_line_accepted

from benchlab.catalog.gate import head_problem
from benchlab.catalog.order import settle
from benchlab.catalog.shards import iter_shards, parse_lines, render_shard
from benchlab.cli import main
from benchlab.layout import RECORD, Store, read_model
from benchlab.models import RunRecord

FAST = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

ONE_LINE = re.compile(r"bench( [a-z-]+)*: error: [^\n]*\n\Z")
"""A refusal: one line on stderr, from the verb (`bench: error:`) or its flags (argparse's
`bench VERB: error:`)."""

KNOWN = ("local", "conflicted", "retractable")
"""Run ids the template store holds, named by role (the test maps them to the real ids)."""

HOSTILE_IDS = st.one_of(
    st.sampled_from(KNOWN),
    st.sampled_from(
        [
            "no-such-run-20250101T000000Z",
            "../x",
            "../../etc/passwd",
            "runs/by-machine/x",
            "a" * 5000,
            "nul\x00id",
            "esc\x1b[31m",
            "line\nbreak",
            "\u3164",
            "x\u115fy",
            "\u2800",
            "r\u202eid",
            "",
            " ",
            "\udcff",
        ]
    ),
    st.tuples(st.sampled_from(KNOWN), st.sampled_from(["\u3164", "/../x", "\x00", " ", "\n"])),
    st.text(max_size=30),
)
KEEPS = st.one_of(
    st.sampled_from([1, 2]),
    st.integers(min_value=-3, max_value=4),
    st.sampled_from([2**31, 2**63, 10**30, -(2**63)]),
    st.sampled_from(["1e3", "0x1", " 1", "\u0662", "1_0", "", "nan", "2\x00"]),
)
REASONS = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.sampled_from(
        [
            "thermal throttling",
            "esc\x1b]0;title\x07",
            "bidi \u202e reversed",
            "x" * 10240,
            "ran on gpu-node-7.cluster.internal",
            "see /home/alice/models/llama.gguf",
            "C:\\Users\\bob\\bench",
            "token ghp_" + "a1B2" * 9,
            "\u3164",
            "\u2800 filler",
            "nul\x00",
            "line\nbreak",
            "\udcff",
            "",
            "   ",
        ]
    ),
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A built store of 6 synthetic runs, one of them in conflict (its line holds two copies
    that measure differently, as a merge of two clones' shards leaves it); the ids by role."""
    repo = tmp_path_factory.mktemp("head") / "repo"
    store = repo / "experiments" / "benchmark"
    store.mkdir(parents=True)
    ids = load_make_fleet().make_fleet(store, 6, seed=3, step_s=3600)
    assert main(["--store", str(store), "catalog", "build"]) == 0
    dirs = {p.name: p for p in Store(store).by_machine.glob("*/*") if p.is_dir()}
    with_record = [i for i in ids if (dirs[i] / RECORD).is_file()]
    local, conflicted, retractable = with_record[:3]
    done = False
    for _name, path in iter_shards(store / "catalog.json"):
        lines = parse_lines(path.read_bytes(), path.name)
        for i, line in enumerate(lines):
            if line["run_id"] == conflicted:
                other = {**line, "peak_tok_per_sec": line["peak_tok_per_sec"] + 1.0}
                lines[i] = settle([line, other])
                path.write_bytes(render_shard(lines))
                done = True
    assert done
    return store, {"local": local, "conflicted": conflicted, "retractable": retractable}


@contextmanager
def copy_of(template: tuple[Path, dict[str, str]]) -> Iterator[tuple[Path, dict[str, str]]]:
    store, ids = template
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(store.parent.parent, repo, symlinks=True)
        yield repo / "experiments" / "benchmark", ids


def run_id_of(value: str | tuple[str, str], ids: dict[str, str]) -> str:
    """A generated id as argv: a role of KNOWN is the template's real id (a tuple: that id
    with a hostile suffix)."""
    if isinstance(value, tuple):
        return ids[value[0]] + value[1]
    return ids[value] if value in KNOWN else value


def files(store: Path) -> dict[str, bytes]:
    """Every file under the repository, by path, but the derived query cache (a reader may
    refresh it): what a refusal must leave as it was, run dirs and records included."""
    root, cache = store.parent.parent, Store(store).query_cache.parent
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and cache not in p.parents
    }


def written_passes_the_gate(store: Path) -> None:
    """The head as the verb left it passes the head gate (before any build rewrites it),
    every record.json still reads, and every shard line passes the line gate after a build
    (`every_line_accepted`: the readers' gate and `validate`)."""
    head = json.loads((store / "catalog.json").read_bytes())
    assert head_problem(head) is None
    for record in Store(store).by_machine.glob(f"*/*/{RECORD}"):
        read_model(record, RunRecord)
    every_line_accepted(store)


def call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> bool:
    """Run `bench ARGV`: True when the verb wrote (exit 0); a refusal is one line."""
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    event(f"{argv[3] if argv[2] == 'catalog' else argv[2]}: exit {code}")
    if code == 0:
        return True
    assert ONE_LINE.match(err) and "Traceback" not in err, err
    return False


@FAST
@given(run_id=HOSTILE_IDS, keep=KEEPS)
def test_resolve_refuses_in_one_line_or_writes_what_every_reader_accepts(
    template: tuple[Path, dict[str, str]],
    run_id: Any,
    keep: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with copy_of(template) as (store, ids):
        before = files(store)
        argv = ["--store", str(store), "catalog", "resolve", f"--keep={keep}", "--"]
        if call([*argv, run_id_of(run_id, ids)], capsys):
            assert run_id == "conflicted" and str(keep).strip() in ("1", "2", "\u0662")
            written_passes_the_gate(store)
        else:
            assert files(store) == before


@FAST
@given(run_id=HOSTILE_IDS, reason=REASONS, clear=st.booleans())
def test_mark_outlier_refuses_in_one_line_or_writes_what_every_reader_accepts(
    template: tuple[Path, dict[str, str]],
    run_id: Any,
    reason: str | None,
    clear: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with copy_of(template) as (store, ids):
        # The conflict settled first: `validate` (in the gate check) is 0 only without one.
        argv = ["--store", str(store), "catalog", "resolve", ids["conflicted"], "--keep", "1"]
        assert main(argv) == 0
        before = files(store)
        argv = ["--store", str(store), "mark-outlier"]
        argv += [f"--reason={reason}"] if reason is not None else []
        argv += ["--clear"] if clear else []
        if call([*argv, "--", run_id_of(run_id, ids)], capsys):
            written_passes_the_gate(store)
        else:
            assert files(store) == before


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(run_ids=st.lists(HOSTILE_IDS, min_size=1, max_size=3))
def test_retract_refuses_in_one_line_or_writes_what_every_reader_accepts(
    template: tuple[Path, dict[str, str]],
    run_ids: list[Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    with copy_of(template) as (store, ids):
        assert (
            main(["--store", str(store), "catalog", "resolve", ids["conflicted"], "--keep=2"]) == 0
        )
        before = files(store)
        argv = ["--store", str(store), "catalog", "retract", "--"]
        argv += [run_id_of(r, ids) for r in run_ids]
        if call(argv, capsys):
            written_passes_the_gate(store)
        else:
            assert files(store) == before
