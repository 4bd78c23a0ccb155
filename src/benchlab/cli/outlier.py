"""`bench mark-outlier RUN_ID [--reason TEXT] [--clear]`: flag a run as an outlier.

The mark is a record in the tracked catalog head (`marks`: ARCHITECTURE.md, The catalog:
marks and verdicts), so any run of the catalog can be marked, an imported run and another
clone's run included, and the mark reaches every clone with the next pull, merged like a
retraction (the newest record of a run wins; `--clear` is a newer record). Where this clone
has the run's record.json, its tag `outlier` (and the reason, as a warning) is written there
too, as before. The run itself stays: an outlier is a judgement about a number, written
down, never a deletion.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from benchlab.layout import Store


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "mark-outlier",
        help="mark a run of the catalog as an outlier (kept, flagged, left out of answers)",
        description="Add an outlier mark for RUN_ID (any run in the catalog) to catalog.json, "
        "and the tag `outlier` to its record.json where this clone has one. Every answer "
        "that ranks, averages or detects then leaves the run out; charts draw it as marked.",
        epilog="example: bench mark-outlier local-tiny-f32-batch-0badc0de-20261201T000000Z "
        '--reason "thermal throttling"',
    )
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument(
        "--reason", default=None, help="why (public: at most 160 characters, no host names)"
    )
    parser.add_argument("--clear", action="store_true", help="remove the outlier mark")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.marking import check_reason, find_entry, write_mark
    from benchlab.ids import check_id
    from benchlab.layout import RECORD, Store, find_store

    store = Store(find_store())
    check_id(args.run_id, "run id")
    reason = check_reason(args.reason)  # before anything is written
    records = sorted(store.by_machine.glob(f"*/{args.run_id}/{RECORD}"))
    find_entry(store, args.run_id, local=bool(records))  # unknown anywhere: refused
    done = []
    if store.catalog_path.is_file():
        mark = write_mark(store, args.run_id, clear=args.clear, reason=reason)
        done.append(f"{store.relative(store.catalog_path)} at {mark['at']}")
        done += [f"a mark set aside, dated {text}, removed" for text in mark["replaced"]]
    if records:
        done.append(_mark_record(store, records[0], clear=args.clear, reason=reason))
    verb = "no longer marked" if args.clear else "marked"
    print(f"{args.run_id} {verb} as an outlier ({', '.join(done)})")
    return 0


def _mark_record(store: Store, path: Path, *, clear: bool, reason: str | None) -> str:
    """The record's tag and warning, where this clone has the run's record.json (the
    store-relative path written)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.detect.stats import OUTLIER_TAG
    from benchlab.layout import read_model, write_model
    from benchlab.models import RunRecord

    record = read_model(path, RunRecord)
    tags = [tag for tag in record.tags if tag != OUTLIER_TAG]
    warnings = [w for w in record.warnings if not w.startswith("marked as an outlier")]
    if not clear:
        tags.append(OUTLIER_TAG)
        warnings.append(f"marked as an outlier by hand: {reason or 'no reason given'}")
    update = {"tags": tags, "warnings": warnings}
    write_model(path, record.model_copy(update=update), root=store.root)
    return str(store.relative(path))
