"""The checked-in schemas are exactly what the models generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.errors import SchemaError
from benchlab.schemas import stale_schemas, validate

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
