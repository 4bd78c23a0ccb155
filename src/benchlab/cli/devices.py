"""`bench devices report [EXPERIMENT]`: per-device error analysis of a sweep, or of every
sweep of the store with fitness from the machines' lasting history."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "devices",
        help="per-device error analysis of a sweep (bench devices report EXPERIMENT)",
        description="Device-level views of what a sweep wrote down.",
    )
    verbs = parser.add_subparsers(dest="devices_verb", metavar="VERB", required=True)
    report = verbs.add_parser(
        "report",
        help="fitness, uptime, transport failures, holes and failed attempts per device",
        description="For each device of the latest sweep of EXPERIMENT, over every session "
        "of it (a resume keeps the earlier ones): fitness (ok and in-flight attempts over the "
        "recent ones), uptime share (the sweep's span less the time its breaker was open), "
        "transport failures and the mean time between them, "
        "holes, and then every failed attempt with its error and the tail of its saved "
        "stdout and stderr.",
        epilog="example: bench devices report lab --logs",
    )
    report.add_argument(
        "experiment",
        metavar="EXPERIMENT",
        nargs="?",
        help="one sweep; without it, every (machine, device) of every sweep of the store, "
        "with fitness from the device's own history (runs/devices/<machine>/history.jsonl)",
    )
    report.add_argument("--logs", action="store_true", help="print stdout/stderr tails too")
    report.add_argument("--format", choices=("table", "json", "csv", "markdown"), default="table")
    report.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from dataclasses import asdict

    from benchlab.layout import Store, find_store
    from benchlab.observe.health import report
    from benchlab.query.render import Column, Section, emit

    if args.experiment is None:
        return _fleet(args)
    health = report(Store(find_store()).require(), args.experiment)
    devices = [asdict(d) for d in health.devices]
    attempts = [asdict(a) for a in health.failed_attempts]
    sections = [
        Section(
            [
                Column("device", "device"),
                Column("fitness", "fitness", "num"),
                Column("uptime_share", "uptime", "num"),
                Column("transport_failures", "transport failures", "int"),
                Column("mtbf_s", "MTBF s", "num"),
                Column("ok", "ok", "int"),
                Column("failed", "failed", "int"),
                Column("holes", "holes", "int"),
                Column("breaker", "breaker"),
                Column("trips", "trips", "int"),
            ],
            devices,
            title=f"{health.experiment} ({health.stamp})",
        ),
        Section(
            [
                Column("device", "device"),
                Column("run_id", "run"),
                Column("kind", "kind"),
                Column("error", "error"),
            ],
            attempts,
            title="failed attempts",
        ),
    ]
    if args.logs and args.format != "json":
        logs = [
            {"run_id": a.run_id, "stream": stream, "path": path, "tail": tail}
            for a in health.failed_attempts
            for stream, path, tail in (
                ("stdout", a.stdout_path, a.stdout_tail),
                ("stderr", a.stderr_path, a.stderr_tail),
            )
            if tail
        ]
        sections.append(
            Section(
                [
                    Column("run_id", "run"),
                    Column("stream", "stream"),
                    Column("path", "path"),
                    Column("tail", "tail"),
                ],
                logs,
                title="saved logs",
            )
        )
    data = {
        "experiment": health.experiment,
        "stamp": health.stamp,
        "span_s": health.span_s,
        "devices": devices,
        "failed_attempts": attempts,
    }
    emit(sections, args.format, data)
    return 0


def _fleet(args: argparse.Namespace) -> int:
    """Every (machine, device) over every sweep: what `report` says per sweep, summed; one
    device name on two machines is two rows."""
    # lazy: start-up time, only the verb that runs loads its library
    from dataclasses import asdict

    from benchlab.layout import Store, find_store
    from benchlab.observe.fleet import fleet_report
    from benchlab.query.render import Column, Section, emit

    devices = [asdict(d) for d in fleet_report(Store(find_store()).require())]
    section = Section(
        [
            Column("machine_id", "machine"),
            Column("device", "device"),
            Column("fitness", "fitness", "num"),
            Column("history", "history", "int"),
            Column("experiments", "sweeps", "int"),
            Column("transport_failures", "transport failures", "int"),
            Column("ok", "ok", "int"),
            Column("failed", "failed", "int"),
            Column("holes", "holes", "int"),
            Column("pending_too_long", "pending too long", "int"),
            Column("trips", "trips", "int"),
        ],
        devices,
        title="every sweep of this store",
    )
    emit([section], args.format, {"devices": devices})
    return 0
