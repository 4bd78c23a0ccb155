"""The fast catalog loader: the same verdicts as the pydantic model, errors naming the field."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.kit.catalog import write_v3_catalog
from tests.kit.cli import run_cli

from benchlab import models
from benchlab.catalog.format import CATALOG_V3
from benchlab.catalog.read import (
    ENTRY_FIELDS,
    FAILURE_KINDS,
    STATUSES,
    check_entries,
    load_catalog,
    read_head,
)
from benchlab.catalog.shards import LAYOUT
from benchlab.catalog.upgrade import CATALOG_V2
from benchlab.errors import SchemaError, StoreError

from .conftest import LAPTOP_Q8

GOOD_ENTRY: dict[str, Any] = {
    "run_id": LAPTOP_Q8,
    "machine_id": "anthony-laptop",
    "timestamp": "2025-01-06T12:00:00Z",
    "model": "SmolLM2-135M",
    "model_id": "smollm2-135m",
    "precision": "q8",
    "tags": ["kernel"],
    "status": "ok",
    "peak_tok_per_sec": 862.2,
}


def _kind(name: str, annotation: Any, required: bool) -> str:
    """What ENTRY_FIELDS should say for one CatalogEntry annotation."""
    args = set(typing.get_args(annotation))
    if annotation is str:
        return "str" if required else "str-with-default"
    if args == {str, type(None)}:
        return "str?"
    if args == {float, type(None)}:
        return "spread" if name.endswith("_stddev") else "num"
    if args == {int, type(None)}:
        return "int?"
    if args == {bool, type(None)}:
        return "bool?"
    if args == {list[int], type(None)}:
        return "ints?"
    if args == {dict[str, Any], type(None)}:
        return "obj?"
    if annotation == list[str]:
        return "strs"
    if annotation == models.Status:
        return "status"
    if args == {models.FailureKind, type(None)}:
        return "failure_kind"
    if args == {models.GateStatus, type(None)}:
        return "verdict"
    if args == {list[models.BatchCurvePoint], type(None)}:
        return "curve"
    if args == {dict[str, models.ExtraMetric], type(None)}:
        return "extras"
    if args == {dict[str, models.MetricSamples], type(None)}:
        return "samples"
    return f"unknown: {annotation!r}"


def test_entry_fields_match_the_model() -> None:
    expected = {
        name: _kind(name, info.annotation, info.is_required())
        for name, info in models.CatalogEntry.model_fields.items()
    }
    assert ENTRY_FIELDS == expected
    assert STATUSES == typing.get_args(models.Status)
    assert FAILURE_KINDS == typing.get_args(models.FailureKind)


def _write(store: Path, doc: Any) -> Path:
    path = store / "catalog.json"
    path.write_text(json.dumps(doc))
    return path


def _catalog(*entries: dict[str, Any]) -> dict[str, Any]:
    """An old single-file document: what the pydantic model reads, and the reader refuses."""
    return {"$schema": CATALOG_V2, "runs": list(entries)}


def _head(**fields: Any) -> dict[str, Any]:
    return {"$schema": CATALOG_V3, "shards": LAYOUT, "machines": {}, "retracted": [], **fields}


def _fast_check(path: Path, doc: dict[str, Any]) -> None:
    """The loader's fast entry check (`read._check_entries`), on a document's runs: what a
    v3 head's pending runs and the columnar cache's inline segment pass through."""
    check_entries(path, doc["runs"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"peak_tok_per_sec": "fast"},
            "$.runs[1].peak_tok_per_sec: expected a number or null, got string",
        ),
        ({"run_id": None}, "$.runs[1].run_id: expected a string, got null"),
        ({"status": "maybe"}, "$.runs[1].status: expected 'ok' or 'failed', got 'maybe'"),
        (
            {"failure_kind": "boom"},
            "$.runs[1].failure_kind: expected one of transport, "
            "measurement, config, parse or null, got 'boom'",
        ),
        ({"tags": "kernel"}, "$.runs[1].tags: expected an array of strings, got string"),
        ({"tags": ["ok", 3]}, "$.runs[1].tags[1]: expected a string, got number"),
        ({"model_id": 7}, "$.runs[1].model_id: expected a string or null, got number"),
        ({"speedup": True}, "$.runs[1].speedup: expected a number or null, got boolean"),
        ({"batch_curve": {}}, "$.runs[1].batch_curve: expected an array or null, got object"),
        ({"batch_curve": [[]]}, "$.runs[1].batch_curve[0]: expected an object, got array"),
        (
            {"batch_curve": [{"batch": 1, "agg_tok_per_sec": 2.0}, {"batch": "8"}]},
            "$.runs[1].batch_curve[1].batch: expected an integer, got string",
        ),
        (
            {"batch_curve": [{"batch": 1}]},
            "$.runs[1].batch_curve[0].agg_tok_per_sec: expected a number, got null",
        ),
    ],
)
def test_bad_field_names_file_and_json_path(
    store: Path, change: dict[str, Any], message: str
) -> None:
    other = {**GOOD_ENTRY, "run_id": "other-run"}
    path = store / "catalog.json"
    with pytest.raises(SchemaError) as caught:
        _fast_check(path, _catalog(other, {**GOOD_ENTRY, **change}))
    assert str(caught.value) == f"{path}: {message}"


def test_missing_required_field(store: Path) -> None:
    entry = dict(GOOD_ENTRY)
    del entry["timestamp"]
    with pytest.raises(SchemaError, match=r"\$\.runs\[0\]\.timestamp: field required$"):
        _fast_check(store / "catalog.json", _catalog(entry))


REBUILD_HINT = "; `bench catalog build` writes the head again without it"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "$: expected an object, got array"),
        (
            {"$schema": "benchmark/catalog.v4"},
            "$.$schema: expected one of benchmark/catalog.v1, benchmark/catalog.v2, "
            "benchmark/catalog.v3, got 'benchmark/catalog.v4'; a newer benchlab wrote it: "
            "upgrade benchlab",
        ),
        (_head(runs={}), "$.runs: expected an array, got object"),
        (_head(runs=[3]), "$.runs[0]: $: expected an entry object, got number"),
        (_head(machines=[]), "$.machines: expected an object, got array"),
    ],
)
def test_bad_document_shape(store: Path, doc: Any, message: str) -> None:
    path = _write(store, doc)
    with pytest.raises(SchemaError) as caught:
        load_catalog(path)
    # A refused part of a head names the build that writes the head again without it.
    assert str(caught.value).removesuffix(REBUILD_HINT) == f"{path}: {message}"


def test_duplicate_run_ids(store: Path) -> None:
    path = store / "catalog.json"
    with pytest.raises(SchemaError) as caught:
        _fast_check(path, _catalog(GOOD_ENTRY, {**GOOD_ENTRY, "run_id": "x"}, GOOD_ENTRY))
    assert str(caught.value) == (
        f"{path}: $.runs[2].run_id: duplicate id {LAPTOP_Q8!r} (also at $.runs[0])"
    )


def test_malformed_json_names_line_and_column(store: Path) -> None:
    path = store / "catalog.json"
    path.write_text('{"runs": [\n  {"run_id": }\n]}')
    with pytest.raises(SchemaError, match=r"catalog\.json: line 2 column \d+: "):
        load_catalog(path)


def test_cli_errors_are_one_line_exit_2(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = store / "catalog.json"
    code, out, err = run_cli(capsys, "--store", str(store), "best", "--model", "x")
    assert (code, out) == (2, "")
    assert err == f"bench: error: {path}: file not found; run `bench catalog build` first\n"
    _write(store, _head(runs=[{**GOOD_ENTRY, "speedup": "x"}]))
    for verb in (["list"], ["best"], ["table", "--model", "x"], ["summary"], ["show", "y"]):
        code, out, err = run_cli(capsys, "--store", str(store), *verb)
        assert (code, out) == (2, ""), verb
        message = f"{path}: $.runs[0]: speedup: expected a number, got string{REBUILD_HINT}"
        assert err == f"bench: error: {message}\n"


@pytest.mark.parametrize(
    ("doc", "version"),
    [
        ({"runs": [GOOD_ENTRY]}, "v1"),  # the first release wrote no $schema
        ({"$schema": "benchmark/catalog.v1", "runs": [GOOD_ENTRY]}, "v1"),
        (_catalog(GOOD_ENTRY), "v2"),
    ],
)
def test_an_old_catalog_is_refused_in_one_line_until_upgraded(
    store: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any], version: str
) -> None:
    """Readers no longer upgrade a v1 or v2 catalog.json on every load: each says, in one
    line, which command rewrites it; after `bench catalog upgrade` the same verbs read it."""
    path = _write(store, doc)
    for reader in (load_catalog, read_head):
        with pytest.raises(SchemaError) as caught:
            reader(path)
        assert str(caught.value) == f"{path} is catalog {version}: run `bench catalog upgrade`"
    for verb in (["list"], ["best"], ["show", LAPTOP_Q8]):
        code, out, err = run_cli(capsys, "--store", str(store), *verb)
        assert (code, out) == (2, ""), verb
        assert err == f"bench: error: {path} is catalog {version}: run `bench catalog upgrade`\n"
    code, _, err = run_cli(capsys, "--store", str(store), "catalog", "upgrade")
    assert code == 0, err
    runs = load_catalog(path).runs
    assert [entry["run_id"] for entry in runs] == [e["run_id"] for e in doc.get("runs", [])]
    code, out, err = run_cli(capsys, "--store", str(store), "list", "--format", "json")
    assert (code, err) == (0, "")
    assert [row["run_id"] for row in json.loads(out)] == [e["run_id"] for e in runs]


def test_missing_store_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "--store", str(tmp_path / "nowhere"), "list")
    assert code == 2
    assert err.count("\n") == 1 and "no store here" in err


def test_empty_catalog_loads(store: Path) -> None:
    loaded = load_catalog(write_v3_catalog(store, []))
    assert loaded.runs == [] and loaded.machines == {}


def test_unreadable_catalog_is_a_store_error(store: Path) -> None:
    (store / "catalog.json").mkdir()
    with pytest.raises(StoreError, match=r"catalog\.json: cannot read"):
        load_catalog(store / "catalog.json")


# Values a field may hold in a hand-edited or corrupted catalog.
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["ok", "failed", "transport", "q8", ""]),
    st.lists(st.one_of(st.text(max_size=3), st.integers(0, 3)), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(0, 2), max_size=1),
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "batch": st.one_of(st.integers(1, 64), st.just("4"), st.none()),
                "agg_tok_per_sec": st.one_of(st.floats(0, 1e4), st.integers(0, 9), st.none()),
            },
        ),
        max_size=2,
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    changes=st.dictionaries(st.sampled_from(sorted(ENTRY_FIELDS)), _values, max_size=3),
    drop=st.sets(st.sampled_from(sorted(ENTRY_FIELDS)), max_size=2),
)
def test_fast_check_never_accepts_what_the_model_refuses(
    changes: dict[str, Any], drop: set[str]
) -> None:
    """Soundness: whatever the fast check lets through, `models.Catalog` accepts too.

    The fast check is stricter in one way, on purpose: it wants JSON numbers where pydantic
    would also coerce strings and booleans.
    """
    entry = {**GOOD_ENTRY, **changes}
    for key in drop:
        entry.pop(key, None)
    doc = _catalog(entry)
    try:
        _fast_check(Path("catalog.json"), doc)
    except SchemaError:
        return
    try:
        models.Catalog.model_validate(doc)
    except ValidationError as exc:  # pragma: no cover - this is the failure being looked for
        pytest.fail(f"fast check accepted {entry!r}, the model refused it: {exc}")


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(sorted(ENTRY_FIELDS)), value=_values)
def test_model_refusals_are_caught_by_the_fast_check(field: str, value: Any) -> None:
    """Completeness for single-field faults: what the model refuses, the fast check does."""
    doc = _catalog({**GOOD_ENTRY, field: value})
    try:
        models.Catalog.model_validate(doc)
    except ValidationError:
        with pytest.raises(SchemaError, match=rf"\$\.runs\[0\]\.{field}"):
            _fast_check(Path("catalog.json"), doc)
