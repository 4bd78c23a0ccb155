"""The catalog format, v3, in one place: what a head and a shard line may hold, where shards
live, and the one encoding of a line.

Why one module: the loader (`read`), the trust boundary (`gate`, and the JSON Schemas it
generates), the build, the merge driver and the upgrade all read and write this format; a
field table or a layout name stated twice drifts. The metrics come from `benchlab.metrics`,
which declares each once with its unit and direction; nothing here restates them. This
module imports nothing of the catalog package, so every part of it can import it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from benchlab.errors import SchemaError
from benchlab.metrics import CATALOG_METRICS, DEFAULT_METRIC, REGISTRY

__all__ = [
    "CATALOG_V1",
    "CATALOG_V2",
    "CATALOG_V3",
    "CLEARED",
    "DEFAULT_METRIC",
    "ENTRY_FIELDS",
    "FAILURE_KINDS",
    "GATE_STATUSES",
    "HEAD_SCHEMA_ID",
    "KNOWN",
    "LAYOUT",
    "LINE_SCHEMA_ID",
    "MACHINE_FIELDS",
    "MARKED",
    "MARKS",
    "MARK_FIELDS",
    "MARK_REASON_MAX",
    "MARK_STATES",
    "METRICS",
    "OLD",
    "REQUIRED_FIELDS",
    "SHARD_DIR",
    "SHARD_SUFFIX",
    "STATUSES",
    "UNDATED",
    "UPGRADE_COMMAND",
    "Entry",
    "decode_entry",
    "encode_line",
    "old_format",
    "refuse_old",
]

Entry = dict[str, Any]
"""One catalog entry (or conflict line) as every reader and writer holds it: a JSON object."""

CATALOG_V3 = "benchmark/catalog.v3"
HEAD_SCHEMA_ID = CATALOG_V3
LINE_SCHEMA_ID = "benchmark/catalog-line.v3"

SHARD_DIR = "catalog"
SHARD_SUFFIX = ".jsonl"
LAYOUT = "catalog/<machine_id>/<YYYY-Www>.<machine_id>.jsonl"
"""Written into catalog.json (`shards`) so a reader of the tracked files knows the rule."""
UNDATED = "undated"

STATUSES = ("ok", "failed")
FAILURE_KINDS = ("transport", "measurement", "config", "parse")
GATE_STATUSES = ("passed", "failed", "unknown")
"""An entry's `gate`: `detect.gates` PASSED, FAILED, UNKNOWN (the gate could not be checked)."""

ENTRY_FIELDS: dict[str, str] = {
    "run_id": "str",
    "machine_id": "str",
    "timestamp": "str",
    "model": "str",
    "model_id": "str?",
    "precision": "str",
    "precision_family": "str?",
    "tags": "strs",
    "status": "status",
    "failure_kind": "failure_kind",
    "gate": "verdict",
    "gate_detail": "str?",
    "backend": "str?",
    "mode": "str?",
    "series": "str?",
    "spec_id": "str?",
    "model_digest": "str?",
    "model_size": "int?",
    "model_params": "int?",
    "backend_version": "str?",
    "backend_build": "int?",
    "backend_commit": "str?",
    "revision": "str?",
    "threads": "int?",
    "prompt_tokens": "int?",
    "gen_tokens": "int?",
    "depth": "int?",
    "batch_sizes": "ints?",
    "n_batch": "int?",
    "n_ubatch": "int?",
    "gpu_layers": "int?",
    "flash_attn": "bool?",
    "type_k": "str?",
    "type_v": "str?",
    "axes": "obj?",
    "tests": "strs",
    "attempt": "int?",
    "attempts": "int?",
    "warnings": "int?",
    "samples": "int?",
    "metric_samples": "samples",
    **{m.name: m.kind for m in REGISTRY.values() if m.kind in ("num", "spread")},
    "extra_metrics": "extras",
    "path": "str?",
    "batch_curve": "curve",
}
"""`models.CatalogEntry` as kinds: str (required), str? (optional string), int?, bool?,
ints? (null or a list of integers), obj? (null or an object), num (an optional metric,
declared with its direction in `benchlab.metrics.REGISTRY`), spread (an optional
standard deviation), extras (null or a run's declared metrics, {name: {value, unit,
better}}: `benchlab.metrics.EXTRA_FIELD`), samples (null or a run's repeats per metric,
{name: {n, mean, sd}}: `models.MetricSamples`), strs (a list of strings), status, failure_kind,
curve (null or a list
of {batch: int, agg_tok_per_sec: number}), verdict (null or one of GATE_STATUSES).
tests/query keeps it equal to the model."""

REQUIRED_FIELDS = tuple(k for k, kind in ENTRY_FIELDS.items() if kind == "str")
METRICS = CATALOG_METRICS
"""The numeric entry fields `best --metric` and `compare` know: `benchlab.metrics.REGISTRY`
declares each once with its unit and direction."""

MACHINE_FIELDS = {"id": "id?", "os": "text?", "arch": "text?", "gpu": "text?", "cpu_cores": "int?"}
"""A machine of the head: `merge.SUMMARY_STATIC`, and the id an older head's summary carries."""

POLICY = "policy"
"""The head's redaction policy version (`catalog.published.policy_version`): the policy its
published lines were last checked under (ARCHITECTURE.md, Publishing and redaction)."""
POLICY_PATTERN = r"^[0-9a-f]{16}(?![\s\S])"

MARKS = "marks"
"""The head's outlier marks (ARCHITECTURE.md, The catalog: marks and verdicts)."""
MARKED, CLEARED = "marked", "cleared"
MARK_STATES = (MARKED, CLEARED)
MARK_REASON_MAX = 160
"""A mark's reason is public free text: at most this long (`redact.shapes.MAX_TEXT`)."""
MARK_FIELDS = {"run_id": "id", "state": "mark_state", "at": "stamp", "reason": "reason?"}
"""One mark of the head, as gate kinds: every field but `reason` required, no other key."""


def encode_line(entry: Entry) -> bytes:
    """One entry as its canonical line (no newline): sorted keys, compact. The batch curve is
    stored as `[[batch, agg_tok_per_sec], ...]` (a third of the bytes of the object form)."""
    curve = entry.get("batch_curve")
    if curve:
        entry = dict(entry)
        entry["batch_curve"] = [[p["batch"], p["agg_tok_per_sec"]] for p in curve]
    return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)


# --- old formats (upgraded once by `bench catalog upgrade`) ---------------------------------

CATALOG_V1 = "benchmark/catalog.v1"
CATALOG_V2 = "benchmark/catalog.v2"
KNOWN = (CATALOG_V1, CATALOG_V2, CATALOG_V3)
OLD = {CATALOG_V1: "v1", CATALOG_V2: "v2"}
UPGRADE_COMMAND = "bench catalog upgrade"


def old_format(doc: Any) -> str | None:
    """`v1` or `v2` for an old single-file catalog document, else None. A document without
    `$schema` is v1 (the first release wrote none)."""
    if type(doc) is not dict:
        return None
    return OLD.get(doc.get("$schema", CATALOG_V1))


def refuse_old(where: Path | str, doc: Any) -> None:
    """One line naming the file and the command, for every reader given an old catalog."""
    version = old_format(doc)
    if version is not None:
        raise SchemaError(f"{where} is catalog {version}: run `{UPGRADE_COMMAND}`")


def decode_entry(data: dict[str, Any]) -> dict[str, Any]:
    """A parsed line as the entry every reader sees (the curve in its object form)."""
    curve = data.get("batch_curve")
    if curve and type(curve[0]) is list:
        data["batch_curve"] = [
            {"agg_tok_per_sec": p[1], "batch": p[0]} if type(p) is list and len(p) == 2 else p
            for p in curve
        ]
    return data
