"""`bench run CONFIG`: run (or resume) a sweep; `--dry-run` lists its points.

A sweep resumes by default: points with an ok record are skipped and the others run.
`--fresh` starts a new sweep (a new stamp, so new run ids). `--for 3h` runs the matrix in
rounds until the deadline (sweep/budget.py).

Exit codes: 0 when the sweep ran to its end, failed points included: a failure is a result,
recorded loudly in its record and in the closing lines, and a pipeline (`dvc repro`) must
not stop at it unless asked: `--fail-on-error` makes failed points exit 1. A stop request
or a spent time budget is a clean end (0). Errors of the sweep itself (bad config, a lock
held by another sweep, a store that cannot be written) are 2 or the error's own code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from benchlab.cli.args import point_cap, port


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run or resume a sweep (experiments/sweeps/<name>.yaml)",
        description="Expand a sweep config into points (one device each) and run the ones "
        "not yet done. Results land in runs/by-machine/<machine>/<run-id>/ (private); "
        "`bench catalog build` publishes them.",
    )
    parser.add_argument(
        "config", metavar="CONFIG", type=Path, nargs="?", help="the sweep config (YAML)"
    )
    single = parser.add_argument_group(
        "one point without a config (the first-run template)",
        "bench run --machine-id ID --model smollm2-135m --precision q8 --config batch "
        "runs the reference benchmark once on this machine as experiment first-run-ID.",
    )
    single.add_argument(
        "--machine-id", help="this machine's id (default: .bench-machine-id, `bench onboard`)"
    )
    single.add_argument("--model", help="reference model: tiny, smollm2-135m, smollm2-360m")
    single.add_argument("--precision", default="q8", help="f32 or q8 (default: q8)")
    single.add_argument(
        "--config", dest="mode", default="batch", metavar="MODE", help="run mode (default: batch)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list the points and which are done; write nothing"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start a new sweep (new stamp) instead of resuming"
    )
    parser.add_argument(
        "--max-points",
        type=point_cap,
        metavar="N",
        help="refuse a config that expands to more than N points, counted before expanding "
        "(default: 10000; 0 lifts the cap)",
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="after the sweep, record its gates' verdicts and run `bench catalog build`",
    )
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="run devices at once (per-device workers, breaker, failover)",
    )
    parser.add_argument(
        "--for",
        dest="budget",
        metavar="DURATION",
        help="a time budget (3h, 90m, 45s, 1h30m): run the matrix in rounds (round k is "
        "repeat k) until then; no point starts after it; with --dry-run, the estimate",
    )
    parser.add_argument(
        "--grace",
        metavar="DURATION",
        default="60s",
        help="with --for: a point whose past duration would end later than the deadline "
        "plus this is not started (default: 60s)",
    )
    parser.add_argument(
        "--fail-on-error",
        action="store_true",
        help="exit 1 when some point failed (default: 0; failures are recorded and listed)",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no per-point lines, only the closing line"
    )
    parser.add_argument(
        "--prometheus-port",
        type=port,
        metavar="N",
        help="serve Prometheus metrics of this sweep on 127.0.0.1:N/metrics while it runs "
        "(read from disk at every scrape; see grafana/benchlab-sweep.json)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table (default) or json; with json, progress goes to stderr",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """`bench run`; a store that cannot be written (a full disk, a read-only mount) is the
    one line naming the file, not a traceback (each file is still written whole)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import write_error

    try:
        return _run(args)
    except BrokenPipeError:
        raise  # a reader such as `head` went away: the CLI says nothing
    except OSError as exc:
        raise write_error(exc) from None


def _run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import Store, find_store
    from benchlab.sweep.budget import parse_duration

    config = _config(args)
    budget_s = parse_duration(args.budget) if args.budget else None
    grace_s = parse_duration(args.grace, "--grace", allow_zero=True) if args.budget else 0.0
    store = Store(find_store())
    if args.dry_run:
        return _dry_run(store, config, args, budget_s)

    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.sweep.preflight import preflight
    from benchlab.sweep.progress import make_progress, summary_line

    runner = _runner(args.concurrent)
    out = sys.stdout
    chatter = sys.stderr if args.format == "json" else sys.stdout
    notes = preflight(config, str(args.config))
    progress = make_progress(chatter, quiet=args.quiet)
    for note in notes:
        progress.event(f"WARNING {note}")
    server = _metrics_server(store, config, args.prometheus_port, progress)
    extra: dict[str, Any] = {}
    if budget_s is not None:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.sweep.budget import Budget

        extra["budget"] = Budget(budget_s, grace_s)
    try:
        result = runner(store, config, args.config, fresh=args.fresh, progress=progress, **extra)
    finally:
        progress.close()
        if server is not None:
            server.shutdown()
            server.server_close()

    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.machines.remote_specs import record_missing_specs

    for note in record_missing_specs(
        store, config
    ):  # after the sweep: a refused one writes nothing
        print(f"WARNING {note}", file=chatter)
    failed = len(result.failed)
    if args.format == "json":
        out.write(_result_json(result))
    else:
        print(summary_line(len(result.records), result.elapsed_s, failed), file=out)
    if result.stopped:
        left = result.left_pending or result.total - result.skipped - len(result.records)
        print(f"stopped: {left} point(s) left pending; re-run to resume", file=chatter)
    if budget_s is not None:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.sweep.budget import words

        print(
            f"time budget {words(budget_s)}: reached round {max(result.rounds - 1, 0)}, "
            f"{result.left_pending} point(s) left pending"
            + ("; deadline reached" if result.deadline_reached else "")
            + f"; `bench run {args.config} --for DURATION` continues",
            file=chatter,
        )
    if result.injected_waiting:
        print(
            f"{result.injected_waiting} injected point(s) not due yet stay in pending.jsonl "
            "for a later run",
            file=chatter,
        )
    if failed:
        print(
            f"FAILED {failed} point(s) (see each record's error; `bench devices report "
            f"{config.experiment}`); re-run `bench run {args.config}"
            f"{' --concurrent' if args.concurrent else ''}` to retry them; "
            "points already ok are kept",
            file=chatter,
        )
    # Inside `dvc repro` (DVC sets DVC_STAGE in each stage's environment) the catalog stage
    # comes next by itself, so the hint would only tell the user what is about to happen.
    if not os.environ.get("DVC_STAGE"):
        print(
            "next: `bench catalog build` publishes these runs into catalog.json "
            "(`dvc repro` runs it as the catalog stage)",
            file=chatter,
        )
    if (
        args.publish
    ):  # the catalog without DVC; gate verdicts first (benchlab.detect.gates says why)
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.cli.sweep_publish import publish_sweep

        print("\n".join(publish_sweep(store, config)), file=chatter)
    return 1 if failed and args.fail_on_error else 0


def _config(args: argparse.Namespace) -> Any:
    """The sweep config named on the command line, or the one point the flags describe."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.errors import ConfigError
    from benchlab.layout import find_store
    from benchlab.models import SweepConfig
    from benchlab.sweep.config import load_sweep_config, parse_sweep_config
    from benchlab.sweep.expand import MAX_POINTS

    if args.config is not None:
        if args.model or args.machine_id:
            raise ConfigError("give either CONFIG or --machine-id/--model, not both")
        cap = MAX_POINTS if args.max_points is None else args.max_points or None
        return load_sweep_config(args.config, max_points=cap)
    if args.model and not args.machine_id:  # the id `bench onboard` left in .bench-machine-id
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.machines.onboard import read_machine_id

        args.machine_id = read_machine_id(find_store())
    if not (args.model and args.machine_id):
        raise ConfigError("give a sweep CONFIG, or --machine-id and --model for one point")
    machine = args.machine_id
    config: SweepConfig = parse_sweep_config(
        {
            "experiment": f"first-run-{machine}",
            "devices": {machine: {"transport": "local"}},
            "matrix": {
                "backend": "reference",
                "model": args.model,
                "precision": args.precision,
                "mode": args.mode,
            },
        },
        "command line",
    )
    args.config = Path(f"<{config.experiment}>")
    return config


def _metrics_server(store: Any, config: Any, port: int | None, progress: Any) -> Any:
    if port is None:
        return None
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.errors import ConfigError
    from benchlab.observe.exporter import serve_in_background

    try:
        server = serve_in_background(store.sweep_dir(config.experiment), port, live=True)
    except OSError as exc:
        raise ConfigError(f"--prometheus-port {port}: cannot listen: {exc.strerror}") from None
    host, bound = server.server_address[:2]
    assert isinstance(host, str)  # an AF_INET or AF_INET6 server's address
    progress.event(f"metrics at http://{host}:{bound}/metrics")
    return server


def _runner(concurrent: bool) -> Any:
    """The one sweep engine (sweep/scheduler.py), sequential unless --concurrent."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.sweep.scheduler import run_sweep, run_sweep_concurrent

    return run_sweep_concurrent if concurrent else run_sweep


def _dry_run(
    store: Any, config: Any, args: argparse.Namespace, budget_s: float | None = None
) -> int:
    """List the points; read the journal if there is one; write nothing at all."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import canonical_json
    from benchlab.sweep.expand import expand, order_specs
    from benchlab.sweep.journal import SweepJournal
    from benchlab.sweep.progress import spec_label

    if budget_s is not None:
        return _dry_run_budget(store, config, args, budget_s)
    specs = order_specs(expand(config, where=str(args.config)), config.policies)
    journal = SweepJournal(store, config.experiment)
    state = None if args.fresh else journal.read_state()
    rows = []
    for spec in specs:
        run_id = done = None
        if state is not None:
            journal.use_stamp(state.stamp)
            run_id, done = journal.run_id(spec), journal.is_done(spec)
        rows.append((spec, run_id, bool(done)))
    pending = sum(1 for _, _, done in rows if not done)
    if args.format == "json":
        sys.stdout.write(
            canonical_json(
                {
                    "experiment": config.experiment,
                    "stamp": state.stamp if state else None,
                    "total": len(rows),
                    "pending": pending,
                    "points": [
                        {
                            "spec": spec.model_dump(mode="json"),
                            "run_id": run_id,
                            "done": done,
                        }
                        for spec, run_id, done in rows
                    ],
                }
            )
        )
        return 0
    stamp = state.stamp if state else "new sweep"
    print(
        f"{config.experiment} ({stamp}): {len(rows)} point(s), "
        f"{len(rows) - pending} done, {pending} to run"
    )
    width = len(str(len(rows)))
    for index, (spec, run_id, done) in enumerate(rows, 1):
        print(
            f"[{index:>{width}}] {'done   ' if done else 'pending'} "
            f"{spec_label(spec)}  {run_id or spec.spec_id}"
        )
    return 0


def _dry_run_budget(store: Any, config: Any, args: argparse.Namespace, budget_s: float) -> int:
    """What `--for` would do: points per round, the first round with work, the rounds the
    past durations say fit (unknown until a point has run once); writes nothing."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import canonical_json
    from benchlab.sweep.budget import MAX_ROUNDS, Durations, Rounds, words
    from benchlab.sweep.journal import SweepJournal

    rounds = Rounds(config, str(args.config))
    journal = SweepJournal(store, config.experiment)
    state = None if args.fresh else journal.read_state()
    if state is not None:
        journal.use_stamp(state.stamp)
    per_round = len(rounds.points(0))
    first = 0
    pending = per_round
    if state is not None:
        for k in range(MAX_ROUNDS):
            pending = sum(1 for spec in rounds.points(k) if not journal.is_done(spec))
            first = k
            if pending:
                break
    durations = Durations.from_store(store, config)
    round_s, unknown = durations.round_seconds(
        config, rounds.points(first), concurrent=args.concurrent
    )
    estimate = int(budget_s // round_s) if round_s else None
    data = {
        "experiment": config.experiment,
        "stamp": state.stamp if state else None,
        "budget_s": budget_s,
        "points_per_round": per_round,
        "first_round": first,
        "pending_in_first_round": pending,
        "round_s": round(round_s, 3) if round_s else None,
        "points_without_duration": unknown,
        "estimated_rounds": estimate,
    }
    if args.format == "json":
        sys.stdout.write(canonical_json(data))
        return 0
    stamp = state.stamp if state else "new sweep"
    print(
        f"{config.experiment} ({stamp}): {per_round} point(s) per round; "
        f"round {first} has {pending} to run"
    )
    if round_s is None:
        print(
            f"estimated rounds in {words(budget_s)}: unknown (no point has run yet; "
            "a round's duration is learnt from the first)"
        )
    else:
        note = f", {unknown} point(s) with no past duration left out" if unknown else ""
        print(
            f"estimated rounds in {words(budget_s)}: {estimate} "
            f"(one round ~ {words(round_s)} from past durations{note})"
        )
    return 0


def _result_json(result: Any) -> str:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import canonical_json, dump_model

    return canonical_json(
        {
            "experiment": result.experiment,
            "stamp": result.stamp,
            "total": result.total,
            "skipped": result.skipped,
            "ran": len(result.records),
            "failed": len(result.failed),
            "stopped": result.stopped,
            "deadline_reached": result.deadline_reached,
            "rounds": result.rounds,
            "left_pending": result.left_pending,
            "injected_waiting": result.injected_waiting,
            "elapsed_s": round(result.elapsed_s, 3),
            "records": [dump_model(record) for record in result.records],
        }
    )
