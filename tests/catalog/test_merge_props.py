"""Property tests: the catalog merge (heads and shards) is commutative, associative
and idempotent, never loses a run that is not retracted, keeps copies that measure
differently as a conflict (the same from either side) instead of letting a rule pick one,
and the fast serialiser writes exactly `layout.canonical_json`."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.catalog.merge import head_document, merge_heads, merge_inventories
from benchlab.catalog.order import CONFLICT, REJECTED, copies, differences, measurement, settle
from benchlab.catalog.shards import merge_shard_bytes, parse_lines, render_shard
from benchlab.catalog.text import render
from benchlab.layout import canonical_json

RUN_IDS = [f"m{m}-model-q8-batch-abcdef01-2025010{d}T120000Z" for m in range(3) for d in range(3)]
STAMPS = [
    "2025-01-06T12:00:00Z",
    "2025-01-06T12:00:01Z",
    "2025-01-06T13:00:00+01:00",
    "2025-02-01T00:00:00.500000Z",
    "not a time",
]

entries = st.builds(
    lambda run_id, stamp, status, peak, tags, model: {
        "run_id": run_id,
        "machine_id": run_id.split("-")[0],
        "timestamp": stamp,
        "model": model,
        "model_id": model.lower(),
        "precision": "q8",
        "status": status,
        "tags": tags,
        **({"peak_tok_per_sec": peak} if peak is not None else {}),
    },
    st.sampled_from(RUN_IDS),
    st.sampled_from(STAMPS),
    st.sampled_from(["ok", "failed"]),
    st.one_of(st.none(), st.floats(0, 1e4, allow_nan=False)),
    st.lists(st.sampled_from(["kernel", "batch", "nightly"]), unique=True).map(sorted),
    st.sampled_from(["SmolLM2-135M", "Qwen2.5-0.5B"]),
)
summaries = st.fixed_dictionaries(
    {},
    optional={
        "os": st.sampled_from(["macOS", "Ubuntu 22.04"]),
        "arch": st.sampled_from(["arm64", "x86_64"]),
        "cpu_cores": st.integers(1, 128),
        "gpu": st.sampled_from(["NVIDIA L4", "Apple M3 Pro"]),
    },
)


@st.composite
def catalogs(draw: st.DrawFn) -> dict[str, Any]:
    """A head as some clone holds it: its own pending entries, its own view of the machines."""
    by_id: dict[str, dict] = {}
    for entry in draw(st.lists(entries, max_size=8)):
        by_id[entry["run_id"]] = entry
    static = draw(st.dictionaries(st.sampled_from(["m0", "m1", "m2"]), summaries))
    return head_document(static, (), by_id.values())


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return canonical_json(a) == canonical_json(b)


@settings(max_examples=150, deadline=None)
@given(catalogs(), catalogs())
def test_merge_is_commutative(a: dict, b: dict) -> None:
    assert same(merge_heads(a, b), merge_heads(b, a))


@settings(max_examples=150, deadline=None)
@given(catalogs(), catalogs(), catalogs())
def test_merge_is_associative(a: dict, b: dict, c: dict) -> None:
    assert same(merge_heads(merge_heads(a, b), c), merge_heads(a, merge_heads(b, c)))


@settings(max_examples=150, deadline=None)
@given(catalogs(), catalogs())
def test_merge_is_idempotent(a: dict, b: dict) -> None:
    assert same(merge_heads(a, a), a)
    ab = merge_heads(a, b)
    assert same(merge_heads(ab, b), ab)
    assert same(merge_heads(ab, a), ab)


@settings(max_examples=100, deadline=None)
@given(catalogs(), catalogs())
def test_merge_keeps_every_run_id(a: dict, b: dict) -> None:
    """Every id is kept: in `runs` where the copies agree, in `conflicts` where they do not."""
    ids = {e["run_id"] for e in a.get("runs", [])} | {e["run_id"] for e in b.get("runs", [])}
    merged = merge_heads(a, b)
    kept = [e["run_id"] for e in merged.get("runs", [])]
    held = [line["run_id"] for line in merged.get("conflicts", [])]
    assert sorted(kept + held) == sorted(ids) and not set(kept) & set(held)


inventory_items = st.fixed_dictionaries(
    {"id": st.sampled_from(["m0"])},
    optional={
        "os": st.sampled_from(["macOS", "Linux"]),
        "ram_gb": st.sampled_from([8.0, 16.0]),
        "tags": st.lists(st.sampled_from(["a", "b", "c"]), unique=True),
        "checklist": st.dictionaries(st.sampled_from(["ok_run", "in_catalog"]), st.booleans()),
    },
)
inventories = st.dictionaries(st.sampled_from(["m0", "m1"]), inventory_items).map(
    lambda machines: {"$schema": "benchmark/machine-inventory.v1", "machines": machines}
)


@settings(max_examples=150, deadline=None)
@given(inventories, inventories, inventories)
def test_inventory_merge_laws(a: dict, b: dict, c: dict) -> None:
    assert same(merge_inventories(a, b), merge_inventories(b, a))
    left = merge_inventories(merge_inventories(a, b), c)
    assert same(left, merge_inventories(a, merge_inventories(b, c)))
    ab = merge_inventories(a, b)
    assert same(merge_inventories(ab, ab), ab)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_render_is_canonical_json(value: Any) -> None:
    """The one writer is byte for byte the standard library's indented, sorted JSON."""
    reference = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert render(value) == canonical_json(value) == reference


# --- shard merges: conflicts kept, never decided by a rule ----------------------------------

SHARD_IDS = [f"m0-model-q8-batch-abcdef01-2025010{d}T120000Z" for d in (6, 7, 8)]

shard_entries = st.builds(
    lambda run_id, minute, status, peak, extra, tags, gate, warnings: {
        "run_id": run_id,
        "machine_id": "m0",
        "timestamp": f"2025-01-0{run_id[-9]}T12:0{minute}:00Z",
        "model": "M",
        "model_id": "m",
        "precision": "q8",
        "status": status,
        "tags": tags,
        "warnings": warnings,
        **({"peak_tok_per_sec": peak} if peak is not None else {}),
        **({"n_batch": 2048} if extra else {}),
        **({"gate": gate} if gate else {}),
    },
    st.sampled_from(SHARD_IDS),
    st.sampled_from([0, 1]),  # a moved clock
    st.sampled_from(["ok", "failed"]),
    st.sampled_from([None, 10.0, 12.5]),  # other numbers
    st.booleans(),  # one extra measured key
    st.lists(st.sampled_from(["outlier", "nightly"]), unique=True).map(sorted),  # marks
    st.sampled_from(["", "passed", "failed"]),  # a gate verdict
    st.sampled_from([0, 1]),
)


@st.composite
def shard_versions(draw: st.DrawFn) -> bytes:
    """One clone's version of a shard: its own entries, possibly a past merge's conflicts."""
    sides = draw(st.lists(st.lists(shard_entries, max_size=4), min_size=1, max_size=3))
    return merge_shard_bytes(*(render_shard({e["run_id"]: e for e in s}.values()) for s in sides))


def measured(raw: bytes) -> set[tuple[str, bytes]]:
    """(run id, what it measured) of every copy a shard holds."""
    return {
        (copy["run_id"], measurement(copy))
        for line in parse_lines(raw, "s")
        for copy in copies(line)
    }


@settings(max_examples=200, deadline=None)
@given(shard_versions(), shard_versions(), shard_versions())
def test_shard_merge_laws_with_conflicts(a: bytes, b: bytes, c: bytes) -> None:
    assert merge_shard_bytes(a, b) == merge_shard_bytes(b, a)
    left = merge_shard_bytes(merge_shard_bytes(a, b), c)
    assert left == merge_shard_bytes(a, merge_shard_bytes(b, c))
    assert merge_shard_bytes(a, a) == a
    assert merge_shard_bytes(left, a) == left  # pulling again changes nothing


@settings(max_examples=200, deadline=None)
@given(shard_versions(), shard_versions())
def test_shard_merge_never_loses_a_run_or_a_measurement(a: bytes, b: bytes) -> None:
    merged = merge_shard_bytes(a, b)
    assert measured(merged) == measured(a) | measured(b)
    lines = parse_lines(merged, "s")
    assert len({line["run_id"] for line in lines}) == len(lines)  # one line per run id
    for line in lines:
        # A conflict exactly where the copies measure differently, the same from both sides.
        kinds = {key for run_id, key in measured(merged) if run_id == line["run_id"]}
        assert (CONFLICT in line) == (len(kinds) > 1)


@settings(max_examples=200, deadline=None)
@given(shard_entries, shard_entries)
def test_no_rule_decides_between_copies_that_measure_differently(a: dict, b: dict) -> None:
    b = {**b, "run_id": a["run_id"], "timestamp": a["timestamp"][:10] + b["timestamp"][10:]}
    ab, ba = settle((a, b)), settle((b, a))
    assert ab == ba  # symmetric
    if measurement(a) == measurement(b):
        assert CONFLICT not in ab and ab in (a, b)  # marks and verdicts merge deterministically
    else:
        assert ab[CONFLICT] == sorted([a, b], key=measurement)  # both kept, neither wins
        assert {name for name, _ in differences(ab)} <= set(a) | set(b)


def test_an_extra_key_or_a_newer_clock_cannot_win() -> None:
    base = {
        "run_id": SHARD_IDS[0],
        "machine_id": "m0",
        "timestamp": "2025-01-06T12:00:00Z",
        "model": "M",
        "precision": "q8",
        "peak_tok_per_sec": 10.0,
    }
    for other in (
        {**base, "peak_tok_per_sec": 11.0, "n_batch": 2048},
        {**base, "peak_tok_per_sec": 11.0, "timestamp": "2025-01-06T13:00:00Z"},
        {**base, "n_batch": 2048},  # an extra measured key alone
    ):
        line = settle((base, other))
        assert line[CONFLICT] == sorted([base, other], key=measurement)
    marked = {**base, "tags": ["outlier"], "warnings": 1, "gate": "passed"}
    assert settle((base, marked)) == settle((marked, base)) in (base, marked)


heads = st.builds(
    lambda runs, retracted, rejected: head_document({}, retracted, runs, rejected),
    st.lists(shard_entries, max_size=4).map(lambda es: list({e["run_id"]: e for e in es}.values())),
    st.lists(st.sampled_from(SHARD_IDS), max_size=1),
    st.lists(st.sampled_from([f"{SHARD_IDS[1]}@0123456789abcdef"]), max_size=1),
)


@settings(max_examples=150, deadline=None)
@given(heads, heads, heads)
def test_head_merge_laws_and_no_run_lost_but_the_retracted(a: dict, b: dict, c: dict) -> None:
    assert same(merge_heads(a, b), merge_heads(b, a))
    assert same(merge_heads(merge_heads(a, b), c), merge_heads(a, merge_heads(b, c)))
    assert same(merge_heads(a, a), merge_heads(a))
    merged = merge_heads(a, b)
    gone = set(merged.get("retracted", []))
    ids = {e["run_id"] for doc in (a, b) for e in [*doc.get("runs", []), *doc.get("conflicts", [])]}
    kept = {e["run_id"] for e in [*merged.get("runs", []), *merged.get("conflicts", [])]}
    assert kept == ids - gone
    assert set(merged.get(REJECTED, [])) == set(a.get(REJECTED, [])) | set(b.get(REJECTED, []))
