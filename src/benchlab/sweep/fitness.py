"""Choosing a failover target by fitness, never by "whoever is free" (ARCHITECTURE.md, The
scheduler).

Fitness of a device = (points in flight + ok outcomes) / (points in flight + all outcomes),
over a forgetting window of its most recent outcomes, so that a device that misbehaved an
hour ago is judged on what it does now. A device with no outcomes yet has fitness 1
("discovery"). Among several targets one is drawn with probability proportional to
fitness from a seeded RNG; with probability `exploration` the draw ignores fitness and is
uniform (a "generic grid slot"), so a device at fitness 0 can rehabilitate itself
instead of waiting to be forgotten. Every draw is recorded with the fitness it saw.

Fitness lasts: a session seeds each device's window from its own lines of
`runs/devices/<machine>/history.jsonl` (history.py; a device is machine and device id), which
every session appends to, so a failover choice at the next session already knows which spare
misbehaved last time. A point the device holds past its expected duration plus
`pending_after_s` counts once against it ("pending jobs" as negative feedback: a device that
cannot keep up should not be handed more work); waiting in benchlab's own queue does not,
or a healthy 1-slot device with a long queue would look unfit.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchlab.models import FitnessPolicy


@dataclass
class _Track:
    outcomes: deque[bool]
    in_flight: int = 0


@dataclass
class FitnessBook:
    """Outcomes per device and the seeded chooser. Not thread-safe: call under a lock."""

    policy: FitnessPolicy
    _tracks: dict[str, _Track] = field(default_factory=dict)
    choices: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.policy.seed)

    def _track(self, device: str) -> _Track:
        if device not in self._tracks:
            self._tracks[device] = _Track(deque(maxlen=self.policy.window))
        return self._tracks[device]

    def started(self, device: str) -> None:
        self._track(device).in_flight += 1

    def finished(self, device: str, ok: bool) -> None:
        track = self._track(device)
        track.in_flight = max(track.in_flight - 1, 0)
        track.outcomes.append(ok)

    def seed(self, device: str, outcomes: Sequence[bool]) -> None:
        """Start `device`'s window from outcomes of earlier sessions (oldest first)."""
        self._track(device).outcomes.extend(outcomes)

    def outcome(self, device: str, ok: bool) -> None:
        """An outcome that was never counted as started (a hole, a refused attempt)."""
        self._track(device).outcomes.append(ok)

    def fitness(self, device: str) -> float:
        track = self._track(device)
        total = track.in_flight + len(track.outcomes)
        if total == 0:
            return 1.0
        return (track.in_flight + sum(track.outcomes)) / total

    def choose(self, candidates: Sequence[str], *, point: str, source: str) -> str | None:
        """Draw one target for `point` (moving away from `source`); None when none is left."""
        if not candidates:
            return None
        seen = {device: round(self.fitness(device), 6) for device in candidates}
        explored = self._rng.random() < self.policy.exploration
        total = sum(seen.values())
        if explored or total <= 0:
            chosen = candidates[self._rng.randrange(len(candidates))]
        else:
            mark = self._rng.random() * total
            chosen = candidates[-1]
            for device in candidates:
                mark -= seen[device]
                if mark < 0:
                    chosen = device
                    break
        self.choices.append(
            {
                "point": point,
                "from": source,
                "fitness": seen,
                "explored": explored or total <= 0,
                "chosen": chosen,
            }
        )
        return chosen
