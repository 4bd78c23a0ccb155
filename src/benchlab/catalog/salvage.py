"""A catalog.json head the gate refuses in part, salvaged by the build (ARCHITECTURE.md,
Errors and exit codes): each refused part named and left out, the rest kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchlab.catalog.format import HEAD_SCHEMA_ID, MARKS
from benchlab.catalog.gate import (
    CHECKERS,
    NULL,
    head_field,
    line_problem,
    mark_problem,
    shown_value,
)
from benchlab.catalog.order import MAX_REJECTED, REJECTED, rejected_problem

_ITEM_CHECKS: dict[str, tuple[Callable[[Any], str | None], int | None]] = {
    "retracted": (CHECKERS["id"], None),
    "runs": (line_problem, None),
    MARKS: (mark_problem, MAX_REJECTED),
    REJECTED: (rejected_problem, MAX_REJECTED),
}


def salvage_head(doc: Any) -> tuple[dict[str, Any], list[str]]:
    """(the head less what the gate refuses in it, each refused part as `$.field: reason`):
    a bad item of `retracted`, `runs`, `marks` or `rejected` goes alone, a bad machine
    alone, any other bad field whole (ARCHITECTURE.md, invariant 11). A head that is
    not a v3 head at all (not an object, another `$schema`) has nothing to salvage: it
    comes back as it is, with no problems named, for `check_head` to refuse."""
    if type(doc) is not dict or doc.get("$schema", NULL) != HEAD_SCHEMA_ID:
        return doc, []
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in doc.items():
        problem = head_field(name, value)
        if problem is None:
            out[name] = value
            continue
        items = _ITEM_CHECKS.get(name) if type(name) is str else None
        if (
            items is not None
            and type(value) is list
            and (items[1] is None or len(value) <= items[1])
        ):
            kept = []
            for index, item in enumerate(value):
                bad = items[0](item)
                if bad is None:
                    kept.append(item)
                else:
                    problems.append(f"$.{name}[{index}]: {bad}")
            out[name] = kept
        elif name == "machines" and type(value) is dict:
            out[name] = {}
            for machine, summary in value.items():
                bad = head_field(name, {machine: summary})
                if bad is None:
                    out[name][machine] = summary
                else:
                    problems.append(f"$.{name}{bad}")
        else:
            sep = "" if problem.startswith(("[", ".")) else ": "
            shown = name if type(name) is str else shown_value(name)
            problems.append(f"$.{shown}{sep}{problem}")
    return out, problems
