"""The sweep's schedule.json: a snapshot of every device, its queue and its outcomes.

A function of the sweep's one `SweepState` (worker_state.py), taken under its lock so
readers never see a half-updated state.
"""

from __future__ import annotations

from typing import Any

from benchlab.sweep.worker_state import SweepState, utc_iso_at

__all__ = ["schedule", "write_schedule"]


def schedule(state: SweepState) -> dict[str, Any]:
    policies = state.config.policies
    with state.lock:
        devices = {
            device.id: {
                "machine_id": device.machine,
                "max_concurrency": 1 if state.serial else device.config.max_concurrency,
                "resource_group": device.config.resource_group,
                "outcomes": dict(sorted(device.outcomes.items())),
                "breaker": {
                    "state": device.breaker.state,
                    "down_since": (
                        utc_iso_at(state.wall_minus_mono + device.breaker.down_since)
                        if device.breaker.down_since is not None
                        else None
                    ),
                    "trips": list(device.trips),
                },
                "pending": len(device.queue),
            }
            for device in sorted(state.devices.values(), key=lambda d: d.id)
        }
        return {
            "experiment": state.config.experiment,
            "session": state.session_id,
            "stamp": state.journal.stamp,
            "started_at": state.started_at,
            "ended_at": state.ended_at,
            "policy": {
                "mode": "sequential" if state.serial else "concurrent",
                "order": policies.order,
                "order_seed": policies.order_seed,
                "retries": policies.retries.model_dump(),
                "breaker": None if state.serial else policies.breaker.model_dump(),
                "fitness": policies.fitness.model_dump(),
                "repeats": policies.repeats,
                "max_in_flight": state.max_in_flight,
                "budget_s": state.budget.seconds if state.budget else None,
            },
            "groups": {
                name: {"members": list(group.members), "limit": group.limit}
                for name, group in sorted(state.groups.items())
            },
            "devices": devices,
            "clocks": dict(sorted(state.clocks.items())),
            "failover": {
                "seed": policies.fitness.seed,
                "choices": list(state.fitness.choices),
            },
            "assignments": sorted(state.assignments, key=lambda a: (a["run_id"], a["attempt"])),
            "points": {"total": state.total, "finished": state.done},
            "stopped": state.stopped_by_request,
            "deadline_reached": state.deadline_reached,
            "rounds": {d.id: d.round for d in state.devices.values() if d.has_rounds},
        }


def write_schedule(state: SweepState) -> None:
    state.log.write_schedule(schedule(state))
