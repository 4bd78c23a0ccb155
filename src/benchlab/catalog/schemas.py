"""JSON Schemas generated from the models, and jsonschema validation that names the JSON path.

pydantic validates when benchlab loads a file; the generated schemas let other tools (and
pre-commit's check-jsonschema) validate the same files without importing benchlab.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchlab.catalog.gate import head_schema, line_schema
from benchlab.errors import SchemaError
from benchlab.files import check_output, read_optional
from benchlab.layout import atomic_write_json, canonical_json
from benchlab.models import DOCUMENTS


def schema_name(schema_id: str) -> str:
    """`benchmark/catalog.v1` -> `catalog.v1.json`."""
    return schema_id.split("/", 1)[1] + ".json"


DRAFT = "https://json-schema.org/draft/2020-12/schema"


def generated() -> dict[str, dict[str, Any]]:
    """Every schema by file name: the models' documents, and the v3 catalog's head and shard
    line from the catalog gate's field table (`catalog.gate`), the one checker that pulled
    shards pass and that a test keeps in agreement with these two schemas."""
    out = {}
    for cls in DOCUMENTS:
        schema = cls.model_json_schema(by_alias=True, mode="validation")
        schema["$id"] = cls.SCHEMA_ID
        schema["$schema"] = DRAFT
        out[schema_name(cls.SCHEMA_ID)] = schema
    for schema in (head_schema(), line_schema()):
        out[schema_name(schema["$id"])] = {**schema, "$schema": DRAFT}
    return out


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema into `directory`; a link between the repository root and it (a
    committed `schemas` link) is one UnsafePathError, nothing written (ARCHITECTURE.md, One
    reader and one writer path)."""
    root = check_output(directory)
    written = []
    for name, schema in sorted(generated().items()):
        path = directory / name
        atomic_write_json(path, schema, root=root)
        written.append(path)
    return written


def stale_schemas(directory: Path) -> list[Path]:
    stale = []
    for name, schema in sorted(generated().items()):
        path = directory / name
        if read_optional(path) != canonical_json(schema).encode("utf-8"):
            stale.append(path)
    return stale


def validate(path: Path | str, data: Any, schema_id: str) -> None:
    """Validate with jsonschema (a dev dependency: the tests' check that a file the code
    accepts also passes its published schema); the error names the file and the JSON path."""
    import jsonschema

    schema = generated()[schema_name(schema_id)]
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise SchemaError(f"{path}: {error.json_path}: {error.message}")
