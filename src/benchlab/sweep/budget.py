"""Time budgets ("run for N hours", ARCHITECTURE.md, The scheduler): rounds of the matrix until a
deadline.

`bench run CONFIG --for 3h` keeps the devices busy by running the matrix again and again:
round k is every point once as repeat k (repeats are an axis, expand.py), so each round adds
one more sample to every series and nothing is ever overwritten. The rules at the end:

- no point starts after the deadline;
- a point whose past durations say it cannot finish before the deadline plus the grace
  (`--grace`, default 60 s) is not started either: it stays pending, and a later `--for`
  run picks it up. Points already running finish; nothing is cut off half-written;
- a round that is already done (a resumed budget run) is skipped at once, so a second
  `bench run --for 1h` continues at the first round with work left.

Durations come from the records this experiment already wrote (`timings.duration_s` of ok
runs, per point with the repeat left out) and from each point as it finishes.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from benchlab.errors import ConfigError
from benchlab.layout import RECORD, Store, read_json
from benchlab.models import RunSpec, SweepConfig
from benchlab.sweep.expand import MAX_REPEATS, expand, hashed_fields, order_specs

MAX_ROUNDS = MAX_REPEATS
"""No budget runs more rounds than this, however short its points."""
MAX_BUDGET_S = 30 * 24 * 3600.0
"""A month: longer than any sweep anyone means; a typo should not mean forever."""
DEFAULT_GRACE_S = 60.0
MAX_RECORDS_READ = 100_000
"""Durations are read from at most this many run dirs (a store has thousands, not millions)."""
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str, flag: str = "--for", *, allow_zero: bool = False) -> float:
    """`3h`, `90m`, `45s`, `1h30m`, `2d` as seconds; ConfigError naming `flag` otherwise."""
    cleaned = text.strip().lower()
    parts = _PART.findall(cleaned)
    if not cleaned or "".join(f"{n}{u}" for n, u in parts) != cleaned:
        raise ConfigError(f"{flag} {text!r}: expected a duration such as 3h, 90m, 45s or 1h30m")
    seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    if not (0 <= seconds if allow_zero else 0 < seconds) or seconds > MAX_BUDGET_S:
        least = "at least" if allow_zero else "more than"
        raise ConfigError(f"{flag} {text!r}: must be {least} 0 s and at most 30 days")
    return seconds


def words(seconds: float) -> str:
    """`2h 05m`, `4m 10s`, `12.5 s`: how a person reads a duration."""
    if seconds >= 3600:
        return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"
    if seconds >= 60:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    return f"{seconds:.1f} s"


@dataclass
class Budget:
    """The deadline of one `bench run --for`, on a monotonic clock."""

    seconds: float
    grace_s: float = DEFAULT_GRACE_S
    clock: Callable[[], float] = time.monotonic
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = self.clock() + self.seconds

    def expired(self) -> bool:
        return self.clock() >= self.deadline

    def left(self) -> float:
        return max(self.deadline - self.clock(), 0.0)

    def fits(self, estimate: float | None) -> bool:
        """May a point expected to take `estimate` seconds (None: unknown) start now?"""
        now = self.clock()
        if now >= self.deadline:
            return False
        return estimate is None or now + estimate <= self.deadline + self.grace_s


def base_key(spec: RunSpec) -> str:
    """The point with its repeat left out: every repeat of a point shares its durations."""
    fields = hashed_fields(spec)
    fields.pop("repeat", None)
    return json.dumps(fields, sort_keys=True, default=str)


class Durations:
    """Past durations per point (the repeat left out), newest kept; thread-safe enough for
    the scheduler, which calls it under its own lock."""

    KEEP = 20

    def __init__(self) -> None:
        self._seen: dict[str, deque[float]] = {}

    def add(self, spec: RunSpec, seconds: float | None) -> None:
        if seconds is None or seconds < 0:
            return
        self._seen.setdefault(base_key(spec), deque(maxlen=self.KEEP)).append(float(seconds))

    def estimate(self, spec: RunSpec) -> float | None:
        """The median of the point's past durations; None when it never ran."""
        seen = self._seen.get(base_key(spec))
        return statistics.median(seen) if seen else None

    def round_seconds(
        self, config: SweepConfig, specs: Iterable[RunSpec], *, concurrent: bool
    ) -> tuple[float | None, int]:
        """(Estimated wall time of one round, points without a past duration).

        Sequential: the sum. Concurrent: the slowest device's sum over its max_concurrency.
        None when no point of the round has ever run.
        """
        per_device: dict[str, float] = {}
        unknown = 0
        known = 0
        for spec in specs:
            estimate = self.estimate(spec)
            if estimate is None:
                unknown += 1
                continue
            known += 1
            per_device[spec.device] = per_device.get(spec.device, 0.0) + estimate
        if not known:
            return None, unknown
        if not concurrent:
            return sum(per_device.values()), unknown
        return (
            max(
                total / config.devices[device].max_concurrency
                for device, total in per_device.items()
            ),
            unknown,
        )

    @classmethod
    def from_store(cls, store: Store, config: SweepConfig) -> Durations:
        """Durations of this experiment's ok runs on the config's machines."""
        found = cls()
        machines = sorted({d.machine_id or name for name, d in config.devices.items()})
        read = 0
        for machine in machines:
            machine_dir = store.by_machine / machine
            if not machine_dir.is_dir():
                continue
            for run_dir in sorted(machine_dir.iterdir()):
                if read >= MAX_RECORDS_READ:
                    return found
                path = run_dir / RECORD
                if not path.is_file():
                    continue
                read += 1
                try:
                    data = read_json(path)
                    if (
                        not isinstance(data, dict)
                        or data.get("experiment") != config.experiment
                        or data.get("status") != "ok"
                        or not isinstance(data.get("spec"), dict)
                    ):
                        continue
                    spec = RunSpec.model_validate(data["spec"])
                except Exception:  # an unreadable record costs an estimate, nothing more
                    continue
                found.add(spec, (data.get("timings") or {}).get("duration_s"))
        return found


class Rounds:
    """Round k's points, in policy order: expanded on demand, the last few kept."""

    KEEP = 4

    def __init__(self, config: SweepConfig, where: str = "sweep config") -> None:
        self.config = config
        self.where = where
        self._cache: dict[int, list[RunSpec]] = {}
        self.devices = {spec.device for spec in self.points(0)}

    def points(self, k: int) -> list[RunSpec]:
        if k not in self._cache:
            if len(self._cache) >= self.KEEP:
                self._cache.pop(min(self._cache))
            self._cache[k] = order_specs(
                expand(self.config, where=self.where, repeat=k), self.config.policies
            )
        return self._cache[k]

    def for_device(self, k: int, device: str) -> list[RunSpec]:
        return [spec for spec in self.points(k) if spec.device == device]
