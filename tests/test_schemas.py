"""The checked-in schemas are exactly what the models generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.catalog.schemas import stale_schemas, validate
from benchlab.errors import SchemaError

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


def test_checked_in_schemas_match_the_models() -> None:
    assert stale_schemas(SCHEMAS) == [], "run `bench schemas --write`"


def test_validation_error_names_file_and_json_path() -> None:
    bad = {
        "$schema": "benchmark/kernel-results.v1",
        "run_id": "r",
        "engine": "e",
        "precision": "q8",
        "model": "m",
        "benchmark": {"prefill": [{"tokens": "many"}]},
    }
    with pytest.raises(SchemaError, match=r"^kernel\.json: \$\.benchmark\.prefill\[0\]"):
        validate("kernel.json", bad, "benchmark/kernel-results.v1")


def test_catalog_v3_schemas_come_from_the_gate_and_are_checked_in() -> None:
    """The v3 head and shard line schemas are generated from the catalog gate's field table
    (the one rule pulled shards pass), and a line as a build writes it passes the file."""
    import json

    import jsonschema
    from tests.kit.entries import make_entry

    from benchlab.catalog.gate import HEAD_SCHEMA_ID, LINE_FIELDS, head_schema, line_schema
    from benchlab.catalog.schemas import generated
    from benchlab.catalog.shards import encode_line

    made = generated()
    for name, schema in (
        ("catalog.v3.json", head_schema()),
        ("catalog-line.v3.json", line_schema()),
    ):
        on_disk = json.loads((SCHEMAS / name).read_text())
        assert on_disk == made[name] and on_disk["$id"] == schema["$id"]
    line = json.loads(json.dumps(made["catalog-line.v3.json"]))
    assert set(line["$defs"]["entry"]["properties"]) == set(LINE_FIELDS)
    entry = make_entry("m1-x-q8-batch-0123abcd-20250106T000000Z", "m1", "2025-01-06T00:00:00Z")
    entry["batch_curve"] = [{"batch": 1, "agg_tok_per_sec": 5.0}]
    jsonschema.validate(json.loads(encode_line(entry)), line)
    head = {"$schema": HEAD_SCHEMA_ID, "machines": {"m1": {"os": "linux"}}, "retracted": ["r"]}
    jsonschema.validate(head, made["catalog.v3.json"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**head, "retracted": [[1]]}, made["catalog.v3.json"])
