"""The sweep's schedule.json: a snapshot of every device, its queue and its outcomes.

A mixin of the concurrent scheduler's `_Sweep` (split out of `scheduler.py` for size);
the snapshot is taken under the sweep's lock so readers never see a half-updated state.
"""

from __future__ import annotations

from typing import Any

from benchlab.sweep.worker_state import utc_iso_at


class _ScheduleView:
    """Part of `_Sweep`; see the module docstring."""

    # --- schedule.json -----------------------------------------------------------------

    def schedule(self) -> dict[str, Any]:
        policies = self.config.policies
        with self.lock:
            devices = {
                device.id: {
                    "machine_id": device.machine,
                    "max_concurrency": device.config.max_concurrency,
                    "resource_group": device.config.resource_group,
                    "outcomes": dict(sorted(device.outcomes.items())),
                    "breaker": {
                        "state": device.breaker.state,
                        "down_since": (
                            utc_iso_at(self._wall_minus_mono + device.breaker.down_since)
                            if device.breaker.down_since is not None
                            else None
                        ),
                        "trips": list(device.trips),
                    },
                    "pending": len(device.queue),
                }
                for device in sorted(self.devices.values(), key=lambda d: d.id)
            }
            return {
                "experiment": self.config.experiment,
                "session": self.session_id,
                "stamp": self.journal.stamp,
                "started_at": self.started_at,
                "ended_at": self.ended_at,
                "policy": {
                    "order": policies.order,
                    "order_seed": policies.order_seed,
                    "retries": policies.retries.model_dump(),
                    "breaker": policies.breaker.model_dump(),
                    "fitness": policies.fitness.model_dump(),
                    "repeats": policies.repeats,
                    "max_in_flight": policies.max_in_flight,
                    "budget_s": self.budget.seconds if self.budget else None,
                },
                "groups": {
                    name: {"members": list(group.members), "limit": group.limit}
                    for name, group in sorted(self.groups.items())
                },
                "devices": devices,
                "clocks": dict(sorted(self.clocks.items())),
                "failover": {
                    "seed": policies.fitness.seed,
                    "choices": list(self.fitness.choices),
                },
                "assignments": sorted(self.assignments, key=lambda a: (a["run_id"], a["attempt"])),
                "points": {"total": self.total, "finished": self.done},
                "stopped": self.stopped_by_request,
                "deadline_reached": self.deadline_reached,
                "rounds": {d.id: d.round for d in self.devices.values() if d.has_rounds},
            }

    def write_schedule(self) -> None:
        self.log.write_schedule(self.schedule())
