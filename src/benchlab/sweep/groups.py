"""Resource groups: several device ids that are one machine, and the round-robin turn gate.

A host and the pods scheduled onto it are three device ids and one CPU; running them at once
measures contention, not the devices. So the members of a group hold `limit` jobs between
them, where the tightest limit any member declares wins (ARCHITECTURE.md, The scheduler):

    limit = min(group_max_concurrency (default 1),
                max_concurrency of every member that declares one explicitly)

Each member's own max_concurrency still caps that member. Membership is declared on the device
(`resource_group: laptop-cpu`); a device is one machine, so it names one group (a list is
refused when the config loads, in one line naming the file and the key).

Members take turns round robin: the next slot goes to the first member after the one that
started last that is *ready* (has pending work, an idle worker, a breaker that lets it start),
whether or not its worker thread has reached the gate yet. First come, first served would mean
"whoever re-acquires the lock first", reliably the member that just finished.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from benchlab.models import SweepConfig


@dataclass
class Group:
    """The turn gate of one group. Pure and not thread-safe: the scheduler calls it locked."""

    name: str
    members: tuple[str, ...]
    limit: int
    active: int = 0
    _next: int = 0
    order: list[str] = field(default_factory=list)

    def turn(self, ready: Callable[[str], bool]) -> str | None:
        """The member whose turn it is to start, or None when no slot is free or none is ready."""
        if self.active >= self.limit:
            return None
        count = len(self.members)
        for step in range(count):
            member = self.members[(self._next + step) % count]
            if ready(member):
                return member
        return None

    def start(self, member: str) -> None:
        self.active += 1
        self._next = (self.members.index(member) + 1) % len(self.members)
        self.order.append(member)

    def finish(self) -> None:
        self.active = max(self.active - 1, 0)


def membership(config: SweepConfig) -> dict[str, str]:
    """device -> group. A device names its one group; a list is refused when the config loads
    (models.DeviceConfig), so "a device in two groups" cannot reach the scheduler."""
    return {
        device_id: device.resource_group
        for device_id, device in sorted(config.devices.items())
        if device.resource_group is not None
    }


def resolve(config: SweepConfig) -> dict[str, Group]:
    """Every group that has members, with its effective limit."""
    members: dict[str, list[str]] = {}
    for device_id, group_name in membership(config).items():
        members.setdefault(group_name, []).append(device_id)
    out: dict[str, Group] = {}
    for group_name, devices in sorted(members.items()):
        declared = config.resource_groups.get(group_name)
        limits = [declared.group_max_concurrency or 1] if declared else [1]
        for device_id in devices:
            device = config.devices[device_id]
            if "max_concurrency" in device.model_fields_set:
                limits.append(device.max_concurrency)
        out[group_name] = Group(group_name, tuple(sorted(devices)), min(limits))
    return out
