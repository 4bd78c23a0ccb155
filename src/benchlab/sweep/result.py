"""What a sweep returns: every record it produced, holes included (partial failure is a value)."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchlab.models import RunRecord


@dataclass
class SweepResult:
    """The outcome of one `bench run`: the records written this time, and what was skipped.

    `records` holds the final record of each point executed (or drained as a hole) in this
    invocation; points already done before it started are counted in `skipped`.
    """

    records: list[RunRecord] = field(default_factory=list)
    elapsed_s: float = 0.0
    experiment: str = ""
    stamp: str = ""
    total: int = 0
    skipped: int = 0
    stopped: bool = False
    warnings: list[str] = field(default_factory=list)
    deadline_reached: bool = False
    """A time budget (`--for`) ran out: what is left is pending, not failed."""
    rounds: int = 0
    """Under a time budget, the rounds (repeats) this invocation reached."""
    left_pending: int = 0
    """Points known to this invocation that it did not start (stop request or deadline)."""
    injected_waiting: int = 0
    """Injected points whose not-before time had not come when the sweep ended."""

    @property
    def failed(self) -> list[RunRecord]:
        return [record for record in self.records if record.status != "ok"]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.stopped
