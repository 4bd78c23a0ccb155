"""The columnar query cache (query.colcache) answers `best` and `table` exactly as the Python
verbs over the loaded catalog do, is rebuilt when a shard changes (re-reading only that
shard), and `bench best`/`bench table` print the same through it."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.kit.catalog import write_v3_catalog
from tests.kit.cli import run_cli
from tests.kit.entries import make_entry

import benchlab.runtime.pool
from benchlab.catalog.read import METRICS, load_catalog
from benchlab.catalog.shards import LAYOUT, render_shard, shard_name
from benchlab.catalog.upgrade import CATALOG_V3
from benchlab.identity import THREADS_NOT_RECORDED
from benchlab.layout import Store
from benchlab.query.colcache import CACHE_NAME, MODE_ENV, SEGMENT_DIR, open_columns, refresh
from benchlab.query.colcache import arrays as columnar
from benchlab.query.filters import Filters
from benchlab.query.verbs import (
    best_runs,
    machine_table,
    unknown_filter_hint,
)

from .conftest import builds_entries, golden_entries

# --- writing catalogs ----------------------------------------------------------------------


def write_v3(
    root: Path,
    entries: list[dict[str, Any]],
    *,
    pending: Sequence[dict[str, Any]] = (),
    retracted: Sequence[str] = (),
) -> Path:
    """A v3 catalog: shards as a build writes them, `pending` entries inline in the head."""
    by_shard: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        by_shard[shard_name(entry)].append(entry)
    for name, shard in by_shard.items():
        write_shard(root / name, shard)
    head = {
        "$schema": CATALOG_V3,
        "machines": {},
        "retracted": list(retracted),
        "runs": list(pending),
        "shards": LAYOUT,
        "version": "3.0",
    }
    path = Store(root).catalog_path
    path.write_bytes(orjson.dumps(head))
    return path


def write_shard(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace a shard whole, as builds and git do (a new inode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(render_shard(entries))
    os.replace(tmp, path)


def write_v2(root: Path, entries: list[dict[str, Any]]) -> Path:
    """An old single-file catalog after `bench catalog upgrade`: readers take only v3."""
    return write_v3_catalog(root, entries)


# --- random catalogs -----------------------------------------------------------------------

MACHINES = ("pi5", "mac-m3pro", "Anthony-Laptop")
MODELS = (("SmolLM2-135M", "smollm2-135m"), ("Qwen3-1.7B", "qwen3-1.7b"), ("Llama 3.2 1B", None))
PRECISIONS = ("q4_k_m", "q4_0", "q8_0", "f16", "Q8")
TAGS = ("kernel", "batch", "nightly", "outlier")
STAMPS = (
    "2025-01-06T12:00:00Z",
    "2025-01-06T12:00:00Z",  # ties on purpose
    "2025-01-07T09:00:00Z",
    "2025-01-13T23:59:59Z",
    "2025-01-14T00:00:00+02:00",
    "2025-02-01T08:00:00Z",
)
VALUES = (None, 1.0, 1, 2.5, 2.5, 10.0, 0.0, 862.2)
VERSIONS = (
    {"backend_version": "b4567 (1a2b3c4)", "backend_build": 4567, "backend_commit": "1a2b3c4"},
    {"backend_version": "benchlab 0.1.0", "backend_build": None, "backend_commit": None},
    {"backend_version": None, "backend_build": 4600, "backend_commit": "5e6f7a8b"},
)


_METRIC_VALUES = st.integers(0, len(VALUES) ** len(METRICS) - 1)
"""Every metric's value in one draw (digits base len(VALUES); shrinks to all None): a draw
per metric made the examples' generation most of this test's time."""
_THREADS = {choices: st.sampled_from(choices) for choices in ((1, 4), (None, 1, 4))}
_ENTRY = st.tuples(
    st.sampled_from(MODELS),
    st.sampled_from(MACHINES),
    st.sampled_from(PRECISIONS),
    st.lists(st.sampled_from(TAGS), unique=True, max_size=3),
    st.sampled_from(("reference", "llama-bench", None)),
    st.sampled_from(("batch", "kernel", None)),
    st.sampled_from(VERSIONS),
    _METRIC_VALUES,
    st.integers(0, 3),  # 0: a failed run
    st.sampled_from(STAMPS),
)


@st.composite
def entries(draw: st.DrawFn, threads: tuple[int | None, ...]) -> dict[str, Any]:
    (model, model_id), machine, precision, tags, backend, mode, version, values, ok, stamp = draw(
        _ENTRY
    )
    fields: dict[str, Any] = {
        "model": model,
        "model_id": model_id,
        "precision": precision,
        "tags": tags,
        "threads": draw(_THREADS[threads]),
        "backend": backend,
        "mode": mode,
        **version,
    }
    for metric in METRICS:
        values, digit = divmod(values, len(VALUES))
        fields[metric] = VALUES[digit]
    if not ok:
        fields.update(status="failed", failure_kind="transport")
    return make_entry("placeholder", machine, stamp, **fields)


@st.composite
def catalogs(draw: st.DrawFn) -> dict[str, Any]:
    """Entries with unique run ids in shards; for v3 also some only in the head's `runs`,
    some in the head and a shard, some in two shards (a merge: `order.settle` keeps one
    copy, or none where they measure differently), some retracted."""
    # Half the catalogs record every run's threads: the columns must answer all of those.
    threads = draw(st.sampled_from(((1, 4), (None, 1, 4))))
    made = draw(st.lists(entries(threads), max_size=30))
    for i, entry in enumerate(made):
        entry["run_id"] = f"{entry['machine_id'].lower()}-run-{draw(st.integers(0, 99)):02d}-{i}"
    if draw(st.integers(0, 3)) == 0:
        return {"format": "v2", "shards": made, "pending": [], "retracted": []}
    shards: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for entry in made:
        place = draw(st.sampled_from(("shard", "shard", "head", "both", "two shards")))
        if place in ("shard", "both", "two shards"):
            shards.append(entry)
        if place in ("head", "both"):
            pending.append(entry if place == "head" else _other_copy(draw, entry))
        if place == "two shards":
            copy = _other_copy(draw, entry)
            if shard_name(copy) != shard_name(entry):
                shards.append(copy)
    retracted = (
        [e["run_id"] for e in draw(st.lists(st.sampled_from(made), max_size=2))] if made else []
    )
    return {"format": "v3", "shards": shards, "pending": pending, "retracted": retracted}


def _other_copy(draw: st.DrawFn, entry: dict[str, Any]) -> dict[str, Any]:
    """The same run as another clone may hold it: other marks only (one run, settled by
    `order.settle`), or another time, value or status (a conflict: no copy answers)."""
    if draw(st.booleans()):
        return dict(entry, tags=draw(st.lists(st.sampled_from(TAGS), unique=True, max_size=3)))
    copy = dict(entry, timestamp=draw(st.sampled_from(STAMPS)))
    copy["peak_tok_per_sec"] = draw(st.sampled_from(VALUES))
    if draw(st.booleans()):
        copy["status"] = "failed"
    return copy


_ASKED: dict[str, tuple[Any, ...]] = {
    # What each filter may ask; each is left unset (None) three times in four, so an ask
    # has a few filters and often matches some runs (half the time, most asks matched none).
    "model": ("smollm2-135m", "SmolLM2-135M", "QWEN3-1.7B", "llama-3-2-1b", "nope"),
    "machine": ("pi5", "anthony-laptop", "MAC-M3PRO"),
    "precision": ("q4", "q4_k_m", "q8", "Q8", "f16", "bf16"),
    "since": ("2025-01-07", "2025-01-14"),
    "until": ("2025-01-07", "2025-01-13"),
    "status": ("ok", "failed"),
    "run_type": ("batch", "kernel", "nightly"),
    "threads": (1, 4),
    "backend": ("reference", "LLAMA-BENCH"),
    "build": ("b4567", "4567", "1a2b", "5E6F", "benchlab 0.1.0", "4600"),
    "series": ("s", "s0", "s1", "s8", "sa"),
}
_ASKS = st.tuples(
    # All of _ASKED in one draw (digits base 4 * len(values), below 3 * len(values) unset;
    # shrinks to no filter): a draw per filter made generation most of this test's time.
    st.integers(0, math.prod(4 * len(values) for values in _ASKED.values()) - 1),
    st.lists(st.sampled_from(TAGS), unique=True, max_size=2),
    st.lists(st.sampled_from(("pi5", "MAC-M3PRO", "x")), max_size=2),
)


@st.composite
def filters(draw: st.DrawFn) -> Filters:
    number, tags, machines = draw(_ASKS)
    asked: dict[str, Any] = {}
    for name, values in _ASKED.items():
        number, digit = divmod(number, 4 * len(values))
        asked[name] = values[digit - 3 * len(values)] if digit >= 3 * len(values) else None
    return Filters(tags=tuple(tags), machines=tuple(machines), **asked)


def write_catalog(root: Path, catalog: dict[str, Any]) -> Path:
    if catalog["format"] == "v2":
        return write_v2(root, catalog["shards"])
    return write_v3(
        root, catalog["shards"], pending=catalog["pending"], retracted=catalog["retracted"]
    )


def _agree(verb: Any, columns: Any, loaded: Any, *args: Any, **kwargs: Any) -> None:
    """The columns answer as the loaded catalog does, runs without a recorded thread count
    joined to their series included: they never decline here, so this cannot pass by the
    columns declining."""
    assert verb(columns, *args, **kwargs) == verb(loaded, *args, **kwargs), (verb.__name__, args)


_SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
"""Where each example writes its catalog: memory where the system has it (Linux), since the
catalog writer and the cache fsync every file they write, which on a busy shared disk took
most of this test's wall time; nothing here depends on the files outliving a crash."""


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalog=catalogs(), asks=st.lists(filters(), min_size=1, max_size=4))
def test_columns_answer_as_the_python_verbs(catalog: dict[str, Any], asks: list[Filters]) -> None:
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as tmp:
        path = write_catalog(Path(tmp), catalog)
        loaded = load_catalog(path)
        columns = open_columns(path, min_bytes=0)
        if columns is None:  # copies that measure differently: the Python path answers
            assert any("copies measure differently" in p for p in loaded.problems)
            return
        assert columns.n == len(loaded.runs)
        for ask in asks:
            for ever in (False, True):  # the current level, and the best run ever
                _agree(machine_table, columns, loaded, ask, ever=ever)
                for metric in ("peak_tok_per_sec", "decode_tok_per_sec", "speedup"):
                    for by in (None, "machine", "series"):
                        _agree(best_runs, columns, loaded, ask, metric, by, ever=ever)
            _agree(unknown_filter_hint, columns, loaded, ask)


def test_columns_answer_the_golden_stores(tmp_path: Path) -> None:
    for i, made in enumerate((golden_entries(), builds_entries())):
        runs = [e.model_dump(mode="json", exclude_none=True) for e in made]
        path = write_v3(tmp_path / str(i), runs)
        loaded = load_catalog(path)
        columns = open_columns(path, min_bytes=0)
        assert columns is not None
        for ask in (Filters(status="ok"), Filters(), Filters(model="llama-3.2-1b", status="ok")):
            assert machine_table(columns, ask) == machine_table(loaded, ask)
            for by in (None, "machine", "series"):
                assert best_runs(columns, ask, "decode_tok_per_sec", by) == best_runs(
                    loaded, ask, "decode_tok_per_sec", by
                )


def test_runs_without_threads_join_their_series_in_the_columns_as_where_it_loads(
    tmp_path: Path,
) -> None:
    """What the property test found (a v2 catalog): a run without a thread count beside a t1
    run it matches on every other field joins that series where the catalog loads; the
    columns join it too and answer as the loaded catalog does (`--series`' hint without its
    own series, `best --ever` won by it with the tag and the note, the table's one row).
    Also where its model's name differs but the id is the same (the join compares ids), and
    where a t4 series matches too (it stands apart, tagged, its note naming both)."""
    kw: dict[str, Any] = {"precision": "q4_k_m"}
    known = make_entry("pi5-run-00-1", "pi5", STAMPS[0], threads=1, **kw)
    known.update(peak_tok_per_sec=9.0, decode_tok_per_sec=1.0)
    other = make_entry("pi5-run-00-2", "pi5", STAMPS[2], threads=4, **kw)
    other.update(peak_tok_per_sec=8.0, decode_tok_per_sec=2.0)
    cases = (
        ("SmolLM2-135M", [known], True),
        ("SmolLM2 135M", [known], True),
        ("SmolLM2-135M", [known, other], False),
    )
    for i, (model, beside, joins) in enumerate(cases):
        alone = make_entry("pi5-run-00-0", "pi5", STAMPS[0], threads=None, model=model, **kw)
        alone.update(peak_tok_per_sec=1.0, decode_tok_per_sec=9.0)
        path = write_v2(tmp_path / str(i), [alone, *beside])
        loaded = load_catalog(path)
        joined = next(e for e in loaded.runs if e["run_id"] == alone["run_id"])
        assert (joined["series"] == known["series"]) is joins
        assert THREADS_NOT_RECORDED in joined["tags"]
        columns = open_columns(path, min_bytes=0)
        assert columns is not None
        asks = [
            (unknown_filter_hint, (Filters(series="s0"),), {}),
            (unknown_filter_hint, (Filters(model="nope"),), {}),
            (best_runs, (Filters(), "decode_tok_per_sec"), {"ever": True}),  # it wins
            (best_runs, (Filters(), "decode_tok_per_sec", "machine"), {"ever": True}),
            (best_runs, (Filters(), "peak_tok_per_sec", "series"), {"ever": True}),
            (best_runs, (Filters(), "decode_tok_per_sec", "series"), {}),
            (best_runs, (Filters(tags=("batch",)), "peak_tok_per_sec"), {"ever": True}),
            (best_runs, (Filters(tags=(THREADS_NOT_RECORDED,)), "peak_tok_per_sec"), {}),
            (best_runs, (Filters(series=known["series"]), "decode_tok_per_sec"), {}),
            (best_runs, (Filters(series=alone["series"]), "decode_tok_per_sec"), {}),
            (best_runs, (Filters(), "peak_tok_per_sec"), {}),
            (machine_table, (Filters(),), {"ever": True}),
            (machine_table, (Filters(),), {}),
            (machine_table, (Filters(series=known["series"]),), {}),
        ]
        for verb, args, kwargs in asks:
            assert verb(columns, *args, **kwargs) == verb(loaded, *args, **kwargs), (i, args)
        won = best_runs(columns, Filters(), "decode_tok_per_sec", ever=True)
        assert won[0]["run_id"] == alone["run_id"]
        assert won[0]["series_note"].startswith("threads not recorded;")


def test_ties_go_to_the_newer_run_then_the_smaller_id(tmp_path: Path) -> None:
    def run(run_id: str, stamp: str, peak: float = 5.0) -> dict[str, Any]:
        return make_entry(run_id, "pi5", stamp, peak_tok_per_sec=peak)

    older = run("pi5-a-older", "2025-01-06T10:00:00Z")
    newer_b = run("pi5-b-newer", "2025-01-14T10:00:00Z")
    newer_c = run("pi5-c-newer", "2025-01-14T10:00:00Z")
    lower = run("pi5-0-lower", "2025-01-20T10:00:00Z", 4.0)
    # in three segments: two shards (weeks 2 and 3) and the head's inline runs
    path = write_v3(tmp_path, [older, newer_c, lower], pending=[newer_b])
    columns = open_columns(path, min_bytes=0)
    assert columns is not None
    for by in (None, "machine", "series"):
        assert best_runs(columns, Filters(), "peak_tok_per_sec", by, ever=True) == [newer_b]
    assert machine_table(columns, Filters(), ever=True) == [newer_b]
    assert best_runs(columns, Filters(until="2025-01-13"), "peak_tok_per_sec", ever=True) == [older]


# --- the cache on disk ---------------------------------------------------------------------


def _fleet(weeks: int = 3) -> list[dict[str, Any]]:
    runs = []
    for week in range(weeks):
        for i, machine in enumerate(("pi5", "mac-m3pro")):
            day = 6 + 7 * week
            stamp = f"2025-01-{day:02d}T1{i}:00:00Z"
            runs.append(
                make_entry(
                    f"{machine}-smollm2-135m-q8-batch-a1b2c3d4-202501{day:02d}T1{i}0000Z",
                    machine,
                    stamp,
                    peak_tok_per_sec=100.0 + week + i,
                )
            )
    return runs


def _segments(root: Path) -> dict[str, tuple[int, int]]:
    folder = Store(root).query_cache.parent / SEGMENT_DIR
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}


def test_a_changed_shard_is_read_again_and_the_others_reused(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _fleet()
    path = write_v3(store, runs)
    first = open_columns(path, min_bytes=0)
    assert first is not None and first.n == 6
    assert (Store(store).query_cache.parent / CACHE_NAME).is_file()
    before = _segments(store)
    assert len(before) == 6  # two machines, three weeks

    read: list[str] = []
    real = columnar._read_shard_segment

    def counting(name: str, shard: Path) -> Any:
        read.append(name)
        return real(name, shard)

    monkeypatch.setattr(columnar, "_read_shard_segment", counting)
    again = open_columns(path, min_bytes=0)  # current: nothing is read
    assert again is not None and again.n == 6 and read == []

    newer = make_entry(
        "pi5-smollm2-135m-q8-batch-a1b2c3d4-20250107T100000Z",
        "pi5",
        "2025-01-07T10:00:00Z",
        peak_tok_per_sec=999.0,
    )
    touched = shard_name(newer)
    write_shard(store / touched, [*(r for r in runs if shard_name(r) == touched), newer])
    columns = open_columns(path, min_bytes=0)
    assert columns is not None and columns.n == 7
    assert read == [touched]
    after = _segments(store)
    changed = {name for name in before if after[name] != before[name]}
    assert changed == {columnar.segment_path(Store(store).query_cache.parent, touched).name}
    assert best_runs(columns, Filters(), "peak_tok_per_sec", ever=True) == [newer]


def test_worker_processes_read_a_cold_cache(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columnar, "PARALLEL_SHARDS", 1)
    monkeypatch.setattr(benchlab.runtime.pool, "cpus", lambda: 2)
    path = write_v3(store, _fleet())
    columns = open_columns(path, min_bytes=0)
    loaded = load_catalog(path)
    assert columns is not None and len(_segments(store)) == 6
    assert machine_table(columns, Filters()) == machine_table(loaded, Filters())


def test_retraction_and_removed_shards(store: Path) -> None:
    runs = _fleet()
    path = write_v3(store, runs)
    assert open_columns(path, min_bytes=0) is not None
    gone = runs[-1]
    (store / shard_name(runs[0])).unlink()
    head = json.loads(path.read_text())
    head["retracted"] = [gone["run_id"]]
    path.write_text(json.dumps(head))
    columns = open_columns(path, min_bytes=0)
    loaded = load_catalog(path)
    assert columns is not None and columns.n == len(loaded.runs) == 4
    assert len(_segments(store)) == 5  # the removed shard's segment went with it
    assert machine_table(columns, Filters()) == machine_table(loaded, Filters())


def test_a_damaged_cache_is_rebuilt_and_a_faulty_catalog_left_to_python(store: Path) -> None:
    path = write_v3(store, _fleet())
    assert open_columns(path, min_bytes=0) is not None
    cache = Store(store).query_cache.parent / CACHE_NAME
    cache.write_bytes(b"\x00garbage")
    columns = open_columns(path, min_bytes=0)
    assert columns is not None and columns.n == 6
    key = columnar.Container(cache).header["key"]
    columnar.write_container(cache, {"key": key}, {})  # current key, another layout
    columns = open_columns(path, min_bytes=0)
    assert columns is not None and columns.n == 6
    shard = store / shard_name(_fleet()[0])
    shard.write_bytes(shard.read_bytes() + b'{"run_id": "x", "speedup": "fast"}\n')
    assert open_columns(path, min_bytes=0) is None  # the Python path names the fault


def test_small_catalogs_and_never_take_the_python_path(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_v3(store, _fleet())
    assert open_columns(path) is None  # under MIN_BYTES
    assert refresh(Store(store)) is False
    assert not (Store(store).query_cache.parent / CACHE_NAME).exists()
    assert refresh(Store(store), force=True) is True  # what a build may call
    assert (Store(store).query_cache.parent / CACHE_NAME).is_file()
    monkeypatch.setenv(MODE_ENV, "always")
    assert open_columns(path) is not None
    monkeypatch.setenv(MODE_ENV, "never")
    assert open_columns(path) is None
    assert open_columns(store / "nowhere" / "catalog.json", min_bytes=0) is None


def test_a_metric_integer_beyond_float_precision_is_left_to_python(store: Path) -> None:
    runs = _fleet(1)
    runs[0]["peak_tok_per_sec"] = 2**53 + 1
    path = write_v3(store, runs)
    assert open_columns(path, min_bytes=0) is None


# --- the CLI -------------------------------------------------------------------------------

ASKS = (
    ("best",),
    ("best", "--model", "llama-3.2-1b", "--by", "machine"),
    ("best", "--by", "series", "--metric", "decode_tok_per_sec"),
    ("best", "--precision", "q4", "--threads", "4", "--format", "json"),
    ("best", "--model", "lama-3.2-1b"),  # no such model: the hint
    ("best", "--machine", "nowhere"),
    ("table",),
    ("table", "--model", "smollm2-135m", "--status", "any"),
    ("table", "--format", "json"),
    ("table", "--build", "b4600", "--format", "csv"),
)


@pytest.mark.parametrize("ask", ASKS, ids=" ".join)
def test_the_cli_prints_the_same_through_the_cache(
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ask: tuple[str, ...],
) -> None:
    runs = [e.model_dump(mode="json") for e in (*golden_entries(), *builds_entries())]
    write_v3(store, runs[1:], pending=runs[:1])
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    cache = Store(store).query_cache.parent / CACHE_NAME
    monkeypatch.setenv(MODE_ENV, "never")
    slow = run_cli(capsys, *ask)
    assert not cache.exists()
    monkeypatch.setenv(MODE_ENV, "always")
    fast = run_cli(capsys, *ask)
    assert cache.is_file()
    assert fast == slow
    assert run_cli(capsys, *ask) == slow  # and from the saved cache
