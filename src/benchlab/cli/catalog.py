"""`bench catalog build|validate|upgrade|retract|resolve|merge-driver|...`: the public catalog."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from benchlab.cli.args import count
from benchlab.metrics import DECODE, PREFILL

if TYPE_CHECKING:
    from benchlab.layout import Store

WARNINGS_SHOWN = 20
"""Absent run dirs are normal on a public clone: show a few, count the rest."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "catalog",
        help="build, validate and git-merge the public catalog",
        description="catalog.json is the public, redacted record of every run. `build` "
        "union-merges this clone's run dirs into it; entries whose run dir is absent here "
        "are kept.",
    )
    verbs = parser.add_subparsers(dest="catalog_verb", metavar="ACTION", required=True)

    build = verbs.add_parser(
        "build",
        help="scan runs/ and union-merge into catalog.json",
        description="Scan runs/by-machine and runs/public, union-merge into catalog.json, "
        "rewrite machines/catalog.json and the by-model/by-date views. Unchanged run dirs "
        "already in the catalog are not read again.",
    )
    build.add_argument(
        "--full", action="store_true", help="re-read every run dir and rewrite every view"
    )
    build.add_argument("--format", choices=("table", "json"), default="table")
    build.set_defaults(handler=run_build)

    validate = verbs.add_parser(
        "validate",
        help="check catalog.json (schema, duplicate ids, index, machines)",
        description="Errors exit 2. Runs whose copies measure differently (a conflict "
        "two clones' builds made) exit 1, each named with the fields that differ and the "
        "command that settles it. Run dirs absent on this clone are warnings (exit 0): "
        "raw runs are private and other clones built them. A run whose decode beats its "
        "machine's memory bandwidth, or whose prefill beats its peak compute, is impossible "
        "(exit 1).",
    )
    validate.add_argument("--format", choices=("table", "json"), default="table")
    validate.set_defaults(handler=run_validate)

    retract = verbs.add_parser(
        "retract",
        help="withdraw runs from the public record, for good",
        description="Removes the runs' entries and lists their ids under `retracted`, so no "
        "later build, clone or git merge brings them back. The private run dirs are left "
        "as they are. Commit catalog.json afterwards.",
    )
    retract.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    retract.set_defaults(handler=run_retract)

    upgrade = verbs.add_parser(
        "upgrade",
        help="rewrite a v1 or v2 catalog.json as the sharded v3 catalog, once",
        description="Every reader refuses an old single-file catalog; this rewrites it as "
        "v3 shards and head, every run kept (copies that measure differently stay a "
        "conflict). A v3 catalog is left as it is. Commit catalog.json and catalog/ after.",
    )
    upgrade.set_defaults(handler=run_upgrade)

    resolve = verbs.add_parser(
        "resolve",
        help="settle a conflict: keep one copy of a run, set the others aside for good",
        description="Copies of one run that measure differently (two clones' builds of it) "
        "are a conflict: kept, reported by `validate`, used by no query. Keep copy N (in the "
        "order `validate` lists them); the others are listed under `rejected`, so no merge "
        "brings them back. Commit catalog.json and the shards afterwards.",
    )
    resolve.add_argument("run_id", metavar="RUN_ID")
    resolve.add_argument(
        "--keep", type=count, required=True, metavar="N", help="copy to keep (1 or more)"
    )
    resolve.set_defaults(handler=run_resolve)

    driver = verbs.add_parser(
        "merge-driver",
        help="git merge driver: union-merge %%A and %%B into %%A",
        description="Called by git as `... catalog merge-driver %%O %%A %%B %%P`. Writes the "
        "union into OURS; a malformed side exits non-zero so git reports a conflict.",
    )
    driver.add_argument("base", type=Path, help="%%O: the common ancestor (not needed)")
    driver.add_argument("ours", type=Path, help="%%A: our version; receives the result")
    driver.add_argument("theirs", type=Path, help="%%B: their version")
    driver.add_argument("path", nargs="?", help="%%P: the file's name, for messages")
    driver.set_defaults(handler=run_merge_driver)

    install = verbs.add_parser(
        "install-merge-driver",
        help="wire the merge driver into .gitattributes and .git/config",
        description="Every clone needs this once: .gitattributes alone falls back to an "
        "ordinary, conflicting merge.",
    )
    install.add_argument(
        "--command",
        help="how git should run benchlab (default: this Python with -m benchlab)",
    )
    install.set_defaults(handler=run_install)


def _store() -> Store:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import Store, find_store

    return Store(find_store())


def run_build(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from dataclasses import asdict

    from benchlab.catalog.build import build

    store = _store()
    if not sys.stderr.isatty():
        result = build(store, full=args.full)
    else:
        # lazy: start-up time, only the verb that runs loads its library
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn

        from benchlab.textout import raw

        with Progress(
            SpinnerColumn(),
            TextColumn("scanning run dirs: {task.completed}"),
            transient=True,
            console=Console(file=raw(sys.stdout)),
        ) as bar:
            task = bar.add_task("scan", total=None)
            result = build(store, full=args.full, progress=lambda n: bar.update(task, completed=n))
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    if args.format == "json":
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.query.render import to_json

        sys.stdout.write(to_json(asdict(result)))
    else:
        print(result.summary())
    return 2 if result.skipped else 0


def run_validate(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.validate import validate

    report = validate(_store())
    for line in report.warnings[:WARNINGS_SHOWN]:
        print(f"warning: {line}", file=sys.stderr)
    hidden = len(report.warnings) - WARNINGS_SHOWN
    if hidden > 0:
        print(f"warning: ... and {hidden} more run dirs absent on this clone", file=sys.stderr)
    for line in report.conflicts:
        print(f"error: conflict: {line}", file=sys.stderr)
    impossible = _impossible_runs(_store())
    lines = [_impossible_line(found) for found in impossible]
    for line in lines[:WARNINGS_SHOWN]:
        print(f"error: impossible: {line}", file=sys.stderr)
    if len(lines) > WARNINGS_SHOWN:
        print(f"error: ... and {len(lines) - WARNINGS_SHOWN} more", file=sys.stderr)
    decodes = sum(1 for found in impossible if found["metric"] == DECODE.name)
    prefills = len(impossible) - decodes
    if report.conflicts:
        print(f"catalog: {len(report.conflicts)} runs in conflict", file=sys.stderr)
    if decodes:
        print(
            f"catalog: {decodes} runs decode faster than their machine's memory "
            "bandwidth allows: a mistake or a fake",
            file=sys.stderr,
        )
    if prefills:
        print(
            f"catalog: {prefills} runs prefill faster than their machine's peak compute "
            "allows: a mistake or a fake",
            file=sys.stderr,
        )
    if args.format == "json":
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.query.render import to_json

        sys.stdout.write(
            to_json(
                {
                    "runs": report.runs,
                    "absent": len(report.absent),
                    "conflicts": report.conflicts,
                    "impossible": impossible,
                }
            )
        )
    if report.conflicts or impossible:
        return 1
    if args.format != "json":
        print(f"catalog: {report.runs} runs valid, {len(report.absent)} run dirs absent here")
    return 0


def _impossible_line(found: dict[str, object]) -> str:
    """`RUN: decode 90.0 t/s, over 1.1 x its ceiling 25.0 t/s at 100 GB/s (declared ...)`."""
    return (
        f"{found['run_id']}: {str(found['metric']).split('_')[0]} {found['tok_per_sec']:,.1f} "
        f"t/s, over 1.1 x its ceiling {found['ceiling_tok_per_sec']:,.1f} t/s at "
        f"{found['figure']}"
    )


def _impossible_runs(store: Store) -> list[dict[str, object]]:
    """The physics check over the whole catalog (ARCHITECTURE.md, How close to the
    hardware): each run whose decode beats its machine's memory bandwidth, then each whose
    prefill beats its peak compute, with the rate, the ceiling and the figure it broke."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.read import load_catalog
    from benchlab.query.roofline import fleet_specs, impossible_prefill_runs, impossible_runs

    specs = fleet_specs(store)
    if not specs:
        return []
    runs = load_catalog(store.catalog_path).runs
    decodes: list[dict[str, object]] = [
        {
            "run_id": entry["run_id"],
            "metric": DECODE.name,
            "tok_per_sec": entry[DECODE.name],
            "ceiling_tok_per_sec": round(found.ceiling_tok_per_sec, 1),
            "figure": found.bandwidth_source,
        }
        for entry, found in impossible_runs(runs, specs)
    ]
    prefills: list[dict[str, object]] = [
        {
            "run_id": entry["run_id"],
            "metric": PREFILL.name,
            "tok_per_sec": entry[PREFILL.name],
            "ceiling_tok_per_sec": round(found.ceiling_tok_per_sec, 1),
            "figure": found.peak_source,
        }
        for entry, found in impossible_prefill_runs(runs, specs)
    ]
    return decodes + prefills


def run_upgrade(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.upgrade import upgrade_store

    print(upgrade_store(_store()).summary())
    return 0


def run_resolve(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.lock import catalog_lock
    from benchlab.catalog.order import copy_digest
    from benchlab.catalog.resolve import resolve_v3
    from benchlab.layout import write_error

    store = _store()
    store.require()
    try:
        with catalog_lock(store):
            kept = resolve_v3(store, args.run_id, args.keep)
    except OSError as exc:  # a read-only store, a full disk: one line, nothing changed
        raise write_error(exc) from None
    print(f"catalog: {args.run_id}: kept copy {args.keep} ({copy_digest(kept)}), others rejected")
    return 0


def run_retract(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.build import retract

    removed = retract(_store(), list(args.run_ids))
    print(f"catalog: {removed} entries removed, {len(args.run_ids)} run ids retracted")
    return 0


def run_merge_driver(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.merge_driver import merge_files

    merge_files(args.base, args.ours, args.theirs, args.path)
    return 0


def run_install(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.merge_driver import install_merge_driver

    for line in install_merge_driver(_store(), args.command):
        print(f".gitattributes: {line}")
    print("git config: merge.benchlab-catalog.driver set")
    return 0
