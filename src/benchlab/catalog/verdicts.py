"""Gate verdicts in the catalog stage: `bench catalog build` evaluates the gates of every
run dir of this clone it reads and writes the verdict into the run's entry (ARCHITECTURE.md,
The catalog: marks and verdicts).

Why in the build: `dvc repro` runs the build, not `bench run --publish`, and a clone without
the run dirs (every clone but the one that measured) has only the catalog. So the verdict
travels in the entry: `gate` (passed, failed, unknown) and, where it did not pass,
`gate_detail` (the check and what it found), public text checked like any other.

What is judged: the gates the run's sweep declares, else `detect.gates.DEFAULT_GATE` (the
onboarding checklist's rule), by `detect.gates.GateBook` on the records of the run's machine
(the baseline `previous` is the newest earlier ok run of its series). A machine's records are
read once per build, and only for a machine with run dirs to read. A promoted or imported
run dir (no record here) keeps the verdict its manifest carries (`extract`); another
clone's entry keeps the verdict that clone published.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from benchlab.catalog.format import GATE_STATUSES, decode_entry, encode_line
from benchlab.detect.gates import DEFAULT_GATE, PASSED, GateBook, shown
from benchlab.redact import default_policy
from benchlab.redact.shapes import value_shape_ok

if TYPE_CHECKING:
    from benchlab.layout import Store
    from benchlab.models import GateInfo
    from benchlab.redact import Policy

log = logging.getLogger("benchlab.catalog")

DETAIL_MAX = 160
"""`gate_detail` is public free text (`redact.shapes.MAX_TEXT`)."""


def detail_of(info: GateInfo) -> str | None:
    """The one line that explains a verdict that did not pass: the check shown (the first
    that did not pass) and what it found, at most DETAIL_MAX characters. None for a pass:
    at a million runs every byte of an entry counts, and a pass needs no explaining."""
    check = shown(info)
    if info.status == PASSED or not check.detail:
        return None
    text = f"{check.name}: {check.detail}" if check.name else check.detail
    return text[:DETAIL_MAX]


def verdict_fields(
    info: GateInfo | None, policy: Policy | None = None, memo: dict[str, bool] | None = None
) -> dict[str, Any]:
    """`gate` and `gate_detail` of an entry for a verdict (nothing for none, or a status
    the format does not know); a detail the redaction policy would not publish is left out.
    `memo`: the policy's answers by detail text (a build meets the same detail many times)."""
    if info is None or info.status not in GATE_STATUSES:
        return {}
    out: dict[str, Any] = {"gate": info.status}
    detail = detail_of(info)
    if detail is not None:
        if policy is None:
            policy = default_policy()
        safe = memo.get(detail) if memo is not None else None
        if safe is None:
            safe = value_shape_ok("gate_detail", detail, policy)
            if memo is not None:
                memo[detail] = safe
        if safe:
            out["gate_detail"] = detail
    return out


class Judge:
    """The build's gate evaluator: one `GateBook` per machine, made on first use."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.books: dict[str, GateBook] = {}
        self._policy: Policy | None = None
        self._shapes: dict[str, bool] = {}
        self.judged = 0

    def _book(self, machine: str) -> GateBook:
        book = self.books.get(machine)
        if book is None:
            # The build reads one machine's run dirs after another: one book at a time
            # bounds the records held to one machine's (ARCHITECTURE.md, The catalog).
            self.books.clear()
            book = GateBook(self.store, machine_id=machine, default=DEFAULT_GATE)
            for warning in book.warnings:
                log.debug("gates: %s", warning)
            self.books[machine] = book
        return book

    def line(self, machine: str | None, line: bytes, held: dict[str, Any] | None) -> bytes:
        """The shard line of a run dir read by this build, with its verdict.

        An ok run keeps the verdict its manifest carries (`--publish`, `regression --gates`
        judged it), else the one the catalog already held for it (a run is judged once, so
        an incremental build and a full one agree, and a run dir that vanished does not
        change its neighbours' verdicts), else it is judged now: `machine` names the
        by-machine group whose records `GateBook` reads (None: a promoted dir, no records).
        A failed run has no gate."""
        entry = decode_entry(orjson.loads(line))
        fields: dict[str, Any] = {}
        if entry.get("status", "ok") != "ok":
            pass
        elif entry.get("gate") is not None:
            return line
        elif held is not None and held.get("gate") is not None:
            fields = {k: held[k] for k in ("gate", "gate_detail") if held.get(k) is not None}
        elif machine is not None:
            fields = self._judge(machine, str(entry["run_id"]))
        if all(entry.get(k) == fields.get(k) for k in ("gate", "gate_detail")):
            return line
        entry.pop("gate", None)
        entry.pop("gate_detail", None)
        entry.update(fields)
        return encode_line(entry)

    def _judge(self, machine: str, run_id: str) -> dict[str, Any]:
        book = self._book(machine)
        if run_id not in book.records:
            return {}
        verdict = book.verdict(run_id)
        if self._policy is None:
            self._policy = default_policy()
        self.judged += 1
        gate = verdict.gate if verdict is not None else None
        return verdict_fields(gate, self._policy, self._shapes)
