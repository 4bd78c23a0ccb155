"""Property tests: the catalog merge is commutative, associative and idempotent, and the
fast serialiser writes exactly `layout.canonical_json`."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.catalog.merge import finalize, merge_catalogs, merge_inventories
from benchlab.catalog.text import render, render_catalog
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
    """A catalog as some clone built it: its own entries, its own view of the machines."""
    by_id: dict[str, dict] = {}
    for entry in draw(st.lists(entries, max_size=8)):
        by_id[entry["run_id"]] = entry
    static = draw(st.dictionaries(st.sampled_from(["m0", "m1", "m2"]), summaries))
    return finalize(by_id, static)


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return canonical_json(a) == canonical_json(b)


@settings(max_examples=150, deadline=None)
@given(catalogs(), catalogs())
def test_merge_is_commutative(a: dict, b: dict) -> None:
    assert same(merge_catalogs(a, b), merge_catalogs(b, a))


@settings(max_examples=150, deadline=None)
@given(catalogs(), catalogs(), catalogs())
def test_merge_is_associative(a: dict, b: dict, c: dict) -> None:
    assert same(merge_catalogs(merge_catalogs(a, b), c), merge_catalogs(a, merge_catalogs(b, c)))


@settings(max_examples=150, deadline=None)
@given(catalogs(), catalogs())
def test_merge_is_idempotent(a: dict, b: dict) -> None:
    assert same(merge_catalogs(a, a), a)
    ab = merge_catalogs(a, b)
    assert same(merge_catalogs(ab, b), ab)
    assert same(merge_catalogs(ab, a), ab)


@settings(max_examples=100, deadline=None)
@given(catalogs(), catalogs())
def test_merge_keeps_every_run_id(a: dict, b: dict) -> None:
    ids = {e["run_id"] for e in a["runs"]} | {e["run_id"] for e in b["runs"]}
    merged = merge_catalogs(a, b)
    assert [e["run_id"] for e in merged["runs"]] == sorted(ids)


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
    assert render(value) == canonical_json(value)


@settings(max_examples=100, deadline=None)
@given(catalogs())
def test_render_catalog_is_canonical_json(doc: dict) -> None:
    text = render_catalog(doc)
    assert text == canonical_json(doc)
    assert json.loads(text) == json.loads(canonical_json(doc))
