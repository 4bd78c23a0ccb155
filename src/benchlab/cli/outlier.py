"""`bench mark-outlier RUN_ID [--reason TEXT] [--clear]`: flag a run as an outlier.

The flag is the tag `outlier` in the run's private record.json (with the reason as a warning),
so it survives every rebuild: `bench catalog build` copies record tags into the catalog
entry, and the next build publishes it. The run itself stays: an outlier is a judgement
about a number, written down, never a deletion.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mark-outlier",
        help="tag a run as an outlier (kept, flagged; published by the next catalog build)",
        description="Add the tag `outlier` (and the reason, as a warning) to RUN_ID's "
        "record.json. `bench catalog build` then publishes the tag in its catalog entry.",
        epilog="example: bench mark-outlier local-tiny-f32-batch-0badc0de-20261201T000000Z "
        '--reason "thermal throttling"',
    )
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--reason", default=None, help="why (kept in the record's warnings)")
    parser.add_argument("--clear", action="store_true", help="remove the outlier tag")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from benchlab.errors import StoreError
    from benchlab.ids import check_id
    from benchlab.layout import RECORD, Store, find_store, read_model, write_model
    from benchlab.models import RunRecord
    from benchlab.stats import OUTLIER_TAG

    store = Store(find_store())
    check_id(args.run_id, "run id")
    found = sorted(store.by_machine.glob(f"*/{args.run_id}/{RECORD}"))
    if not found:
        raise StoreError(
            f"{store.by_machine}: no run dir with a record.json for {args.run_id!r} on this "
            "clone (only runs measured here can be marked; imported runs have no record)"
        )
    path = found[0]
    record = read_model(path, RunRecord)
    tags = [tag for tag in record.tags if tag != OUTLIER_TAG]
    warnings = [w for w in record.warnings if not w.startswith("marked as an outlier")]
    if not args.clear:
        tags.append(OUTLIER_TAG)
        warnings.append(f"marked as an outlier by hand: {args.reason or 'no reason given'}")
    write_model(path, record.model_copy(update={"tags": tags, "warnings": warnings}))
    verb = "no longer marked" if args.clear else "marked"
    print(
        f"{args.run_id} {verb} as an outlier ({store.relative(path)}); "
        "`bench catalog build` publishes it"
    )
    return 0
