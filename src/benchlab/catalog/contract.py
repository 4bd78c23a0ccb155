"""The writer's half of the gate: what a verb writes is held, when it writes it, to the gate
every reader applies (ARCHITECTURE.md, invariant 11, and The catalog: one writer contract).

Why: a reader sets aside a line the gate refuses, and `validate` and `build --full` then
fail until someone deletes the line by hand. A value a reader would refuse must therefore be
refused where it enters (the sweep config, the import, the command line), in one line
naming the file or flag and the field, or never be written. Every check here ends in the
readers' own function (`gate.parse_line` of the encoded line, `gate.extras_problem`),
never in a copy of their rules.

Writers that use it: the sweep config (each point's would-be line, `spec_problem`, and its
declared metrics and gates), the run record (`contract_runs.run_problem`, before record.json is
written), the importers (`check_run`), and the catalog build (`written_problem` on each
line it is about to place).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchlab import models
from benchlab.catalog.format import encode_line
from benchlab.catalog.gate import extras_problem, parse_line, value_problem
from benchlab.errors import SchemaError
from benchlab.identity import series_id, spec_identity
from benchlab.metrics import REGISTRY, Metric

PROBE_STAMP = "2026-01-01T00:00:00Z"
"""The timestamp a point's would-be line carries before it runs (any valid UTC time)."""
_PROBE_RUN = "-20260101T000000Z"


def written_problem(entry: Any) -> str | None:
    """What every reader's gate says of the line `entry` would be written as (`field:
    reason`); None when the readers accept it."""
    try:
        line = encode_line(entry)
    except (TypeError, ValueError) as exc:
        return f"$: cannot be written as a line: {exc}"
    return parse_line(line)[1]


def check_written(where: str, entry: Any) -> None:
    """Refuse to write `entry` with one SchemaError naming `where` and the field."""
    problem = written_problem(entry)
    if problem is not None:
        raise SchemaError(f"{where}: {problem}; refused, nothing written")


def params_problem(params: Any) -> str | None:
    """What the gate says of a point's params as the line's `axes` will hold them: numbers
    within +-2**53, strings bounded and visible, lists of at most 1,024 items."""
    return value_problem(params)


def declared_problem(declared: Mapping[str, Metric]) -> str | None:
    """What the gate says of a config's declared metrics as a line's `extra_metrics` will
    hold them (a name an entry field or the registry has is refused by every reader; a
    registry name that agrees is never an extra: `metrics.extra_entry`)."""
    shaped = {
        name: {"value": 0.0, "unit": metric.unit, "better": metric.better}
        for name, metric in declared.items()
        if name not in REGISTRY
    }
    problem = extras_problem(shaped) if shaped else None
    if problem is None:
        return None
    name = problem.split(":", 1)[0].strip("'")
    if name in shaped:
        return f"metrics.{name}: a name the catalog reserves (an entry field's); use another"
    return f"metrics: {problem}"


def gate_metric_problem(metric: str, declared: Iterable[str]) -> str | None:
    """A gate names a metric a record can hold: a registry one or one the config declares."""
    known = sorted({*REGISTRY, *declared})
    if metric in known:
        return None
    return f"unknown metric {metric!r}; known: {', '.join(known)}"


def spec_problem(spec: models.RunSpec, revision: str | None, settings: str | None) -> str | None:
    """What every reader would say of the line of this point once run: its identity (params
    as `axes`, threads, shapes ...), names and tags through the line gate."""
    identity = spec_identity(spec, revision=revision, settings=settings)
    entry: dict[str, Any] = {
        "run_id": spec.spec_id + _PROBE_RUN,
        "timestamp": PROBE_STAMP,
        "model": spec.model,
        "status": "ok",
        "spec_id": spec.spec_id,
        "tags": list(spec.tags),
        "tests": [],
        **{k: v for k, v in identity.items() if k != "settings"},
    }
    entry["series"] = series_id(entry)
    return written_problem({k: v for k, v in entry.items() if v is not None})


COUNTS = ("threads", "prompt_tokens", "gen_tokens", "depth", "n_batch", "n_ubatch")
"""Identity fields that count something: a reader accepts any integer within +-2**53, but a
count below zero is no measurement (an import's `n_threads: -4` read as a thread count)."""


def counts_problem(entry: Mapping[str, Any]) -> str | None:
    """A count of the line below zero, as `field: reason`; None when there is none."""
    for name in COUNTS:
        value = entry.get(name)
        if type(value) is int and value < 0:
            return f"{name}: {value} is below zero, not a count"
    return None
