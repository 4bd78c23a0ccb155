"""`bench migrate`: import llama-bench outputs and asv result directories into the store."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="import existing llama-bench outputs or asv results as run dirs",
        description="Turns results you already have into ordinary benchlab runs (private, "
        "under runs/by-machine/), with their provenance in each manifest. llama-bench "
        "outputs in json, jsonl, csv or markdown (any version) are recognised from their "
        "content; a directory holding <machine>/machine.json is read as asv results. "
        "Re-importing the same file changes nothing.",
        epilog="examples:\n"
        "  bench migrate results/pp-tg.md --machine-id pi5\n"
        "  bench migrate bench.json --machine-id laptop --model SmolLM2-135M\n"
        "  bench migrate ~/project/.asv/results\n"
        "then: bench catalog build",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.add_argument("--machine-id", help="the machine the results came from (llama-bench)")
    parser.add_argument("--model", help="model name to record (default: from the results)")
    parser.add_argument(
        "--timestamp",
        help="ISO 8601 UTC time of results that carry none (default: the file's mtime)",
    )
    parser.add_argument("--tag", action="append", default=[], help="extra tag (repeatable)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from datetime import datetime, timezone

    from benchlab.errors import ConfigError
    from benchlab.importers import ImportReport, import_asv, import_llama_bench
    from benchlab.layout import Store, find_store

    store = Store(find_store()).require()
    moment = None
    if args.timestamp:
        try:
            moment = datetime.fromisoformat(args.timestamp.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"--timestamp {args.timestamp!r}: expected ISO 8601") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
    total = ImportReport()
    for path in args.paths:
        if path.is_dir():
            report = import_asv(store, path, machine_id=args.machine_id)
        else:
            if not args.machine_id:
                raise ConfigError(f"{path}: --machine-id is required for llama-bench results")
            report = import_llama_bench(
                store, path, args.machine_id, timestamp=moment, model=args.model, tags=args.tag
            )
        total.created += report.created
        total.unchanged += report.unchanged
        total.withheld += report.withheld
    if args.format == "json":
        done = {"created": total.created, "unchanged": total.unchanged, "withheld": total.withheld}
        # lazy: start-up time, only the verb that runs loads its library
        import sys

        from benchlab.query.render import to_json

        sys.stdout.write(to_json(done))
    else:
        for run_id in total.created:
            print(f"imported  {run_id}")
        print(f"{len(total.created)} run(s) imported, {len(total.unchanged)} already present")
        if total.withheld:
            print(
                f"{len(total.withheld)} build_commit value(s) withheld (not a hex commit; "
                "kept only in each run's raw/imported.json)"
            )
        if total.created:
            print("next: bench catalog build")
    return 0
