"""`bench regression`: latest run against a baseline, or step detection over history."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "regression",
        help="find regressions: latest vs baseline per series, or steps in history (--detect)",
        description="A series is one measurement repeated over time: the same machine, model, "
        "precision, backend and mode. Without --detect, the latest ok run of each series on "
        "--machine is compared with --baseline (a run id) or with the median of the runs "
        "before it. With --detect, every series' history is searched for step changes by a "
        "rank scan with a permutation test: each step is reported with its size, its first "
        "bad run and a confidence. Exit 1 when a regression is found (for CI gates), else 0.",
        epilog="examples:\n"
        "  bench regression --machine anthony-laptop --baseline run-id-12345\n"
        "  bench regression --machine pi5 --threshold 3%\n"
        "  bench regression --detect --model smollm2-135m --format json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--machine", help="the machine to check (required without --detect)")
    parser.add_argument("--baseline", metavar="RUN_ID", help="compare against this run")
    parser.add_argument("--threshold", default="5%", help="a drop beyond this is a regression")
    parser.add_argument("--detect", action="store_true", help="find steps in every series")
    parser.add_argument("--model", help="only series of this model (with --detect)")
    parser.add_argument("--metric", default="peak_tok_per_sec", help="default: peak_tok_per_sec")
    parser.add_argument("--alpha", type=float, default=0.01, help="significance (default 0.01)")
    parser.add_argument("--min-change", default="1%", help="smallest step reported (default 1%%)")
    parser.add_argument("--format", choices=("table", "json", "csv", "markdown"), default="table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from benchlab.catalog.read import load_catalog
    from benchlab.errors import QueryError
    from benchlab.ids import slug
    from benchlab.layout import Store, find_store
    from benchlab.models import CatalogEntry
    from benchlab.query.filters import check_metric
    from benchlab.query.render import Column, Section, emit
    from benchlab.regress import compare_latest, detect, parse_threshold

    metric = check_metric(args.metric)
    catalog = load_catalog(Store(find_store()).catalog_path)
    wanted = [
        e
        for e in catalog.runs
        if (not args.machine or e["machine_id"] == args.machine)
        and (not args.model or slug(e.get("model_id") or e["model"]) == slug(args.model))
    ]
    entries = [CatalogEntry.model_validate(e) for e in wanted]
    series = [Column(k, k) for k in ("machine_id", "model", "precision", "backend", "mode")]
    if args.detect:
        steps = detect(
            entries, metric, alpha=args.alpha, min_change=parse_threshold(args.min_change)
        )
        rows = [step.as_row() for step in steps]
        columns = [
            *series,
            Column("kind", "kind"),
            Column("change", "change %", "num"),
            Column("before", "before", "num"),
            Column("after", "after", "num"),
            Column("confidence", "confidence", "num"),
            Column("first_bad_run", "first bad run"),
        ]
        found = any(step.kind == "regression" for step in steps)
        title = f"steps in {metric} ({len(steps)} found)"
    else:
        if not args.machine:
            raise QueryError("--machine is required (or use --detect)")
        results = compare_latest(
            entries,
            args.machine,
            baseline_run=args.baseline,
            threshold=parse_threshold(args.threshold),
            metric=metric,
        )
        rows = [result.as_row() for result in results]
        columns = [
            *series,
            Column("baseline", "baseline"),
            Column("baseline_value", "baseline value", "num"),
            Column("latest_run", "latest run"),
            Column("latest_value", "latest", "num"),
            Column("change", "change %", "num"),
            Column("regression", "regression"),
        ]
        found = any(result.regression for result in results)
        title = f"{metric}: latest vs baseline on {args.machine}"
    for row in rows:
        row["change"] = round(row["change"] * 100, 2)
    emit([Section(columns, rows, title=title)], args.format, rows)
    return 1 if found else 0
