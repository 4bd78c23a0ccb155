"""`bench list | show | compare | table | best | summary`: ask the public catalog.json.

Each handler maps its flags onto a function of benchlab.query and prints the rows with
benchlab.query.render. Only argparse is imported at module level: `bench best` on a 100,000-run
catalog has one second, interpreter start included.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

FORMATS = ("table", "json", "csv", "markdown")
"""As query.render.FORMATS (a test keeps them equal; importing render here costs start-up)."""

METRIC_HELP = (
    "peak_tok_per_sec (default), baseline_tok_per_sec, speedup, prefill_tok_per_sec, "
    "decode_tok_per_sec"
)

EXIT_ROWS = (
    "exit status: 0 when rows are printed; 1 when no run matches (a message on stderr; "
    "--format json still prints []); 2 on an error: missing or malformed catalog, bad flag value."
)
EXIT_LIST = (
    "exit status: 0, also when no run matches (a message on stderr; --format json prints []); "
    "2 on an error: missing or malformed catalog, bad flag value."
)
FORMAT_NOTE = (
    "formats: table (rich on a terminal, aligned text when piped), json (full entries, "
    "sorted keys: stable for scripts), csv (same columns as the table, unrounded), markdown."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_list(subparsers)
    _register_show(subparsers)
    _register_compare(subparsers)
    _register_table(subparsers)
    _register_best(subparsers)
    _register_summary(subparsers)


# --- arguments ----------------------------------------------------------------------------


def _parser(
    subparsers: argparse._SubParsersAction, name: str, help_text: str, epilog: str
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        help=help_text,
        description=help_text[0].upper() + help_text[1:] + ".",
        epilog=f"{FORMAT_NOTE} {epilog}",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="table", help="output format (default: table)"
    )
    return parser


def _add_filters(parser: argparse.ArgumentParser, *, status_default: str) -> None:
    parser.add_argument(
        "--model", help="model slug or name, e.g. smollm2-135m (matches case-insensitively)"
    )
    parser.add_argument("--machine", help="machine id, e.g. anthony-laptop")
    parser.add_argument("--precision", help="precision, e.g. q8")
    parser.add_argument("--since", metavar="YYYY-MM-DD", help="runs on or after this date")
    parser.add_argument("--until", metavar="YYYY-MM-DD", help="runs on or before this date")
    parser.add_argument(
        "--tag", action="append", default=[], help="runs carrying this tag (repeat: all of them)"
    )
    parser.add_argument(
        "--status",
        choices=("ok", "failed", "any"),
        help=f"run status to include (default: {status_default})",
    )
    parser.set_defaults(status_default=status_default)


def _filters(args: argparse.Namespace) -> Any:
    from benchlab.query.filters import Filters, parse_date

    status = args.status or args.status_default
    return Filters(
        model=args.model,
        machine=args.machine,
        precision=args.precision,
        since=parse_date(args.since, "--since") if args.since else None,
        until=parse_date(args.until, "--until") if args.until else None,
        tags=tuple(args.tag),
        status=None if status == "any" else status,
    )


def _store_root() -> Any:
    from benchlab.layout import Store, find_store

    return Store(find_store()).require()


def _catalog() -> Any:
    from benchlab.catalog.read import load_catalog

    store = _store_root()
    return load_catalog(store.catalog_path, cache=store.query_cache)


def _no_match(filters: Any) -> str:
    described = filters.describe()
    return f"bench: no runs match {described}" if described else "bench: the catalog has no runs"


def _emit(sections: list[Any], fmt: str, data: Any) -> None:
    from benchlab.query.render import emit

    emit(sections, fmt, data)


def _columns(*specs: tuple[str, str, str]) -> list[Any]:
    from benchlab.query.render import Column

    return [Column(key, header, kind) for key, header, kind in specs]


def _entries_out(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from benchlab.catalog.read import full_entry

    return [full_entry(row) for row in rows]


# --- list ---------------------------------------------------------------------------------


def _register_list(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers, "list", "list catalog runs, sorted by timestamp then run id", EXIT_LIST
    )
    _add_filters(parser, status_default="any")
    parser.add_argument("--limit", type=int, metavar="N", help="print the first N runs only")
    parser.set_defaults(handler=run_list)


def run_list(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import list_runs

    filters = _filters(args)
    rows = list_runs(_catalog(), filters, args.limit)
    columns = _columns(
        ("timestamp", "timestamp", "text"),
        ("run_id", "run id", "text"),
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        ("status", "status", "text"),
        ("peak_tok_per_sec", "peak tok/s", "num"),
    )
    if rows or args.format in ("json", "csv"):
        _emit([Section(columns, rows)], args.format, _entries_out(rows))
    if not rows:
        print(_no_match(filters), file=sys.stderr)
    return 0


# --- show ---------------------------------------------------------------------------------


def _register_show(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "show",
        "show one run: manifest, record, batch curve and prefill from its run dir",
        "When the run dir is absent on this clone (runs/ is private and gitignored), show "
        "prints the catalog entry and says so on stderr. exit status: 0 when shown; "
        "2 when the run id is unknown or unsafe, or a file is malformed.",
    )
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.set_defaults(handler=run_show)


def run_show(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.show import batch_curve, prefill_points, run_facts, show_run

    details = show_run(_store_root().root, args.run_id)
    sections = [
        Section(
            _columns(("field", "field", "text"), ("value", "value", "text")), run_facts(details)
        )
    ]
    curve = batch_curve(details)
    if curve:
        sections.append(
            Section(
                _columns(
                    ("batch", "batch", "int"),
                    ("per_user_ms_per_tok", "per-user ms/tok", "num"),
                    ("agg_tok_per_sec", "agg tok/s", "num"),
                    ("speedup_vs_baseline", "speedup", "ratio"),
                ),
                curve,
                title="batch curve",
            )
        )
    prefill = prefill_points(details)
    if prefill:
        sections.append(
            Section(
                _columns(
                    ("tokens", "tokens", "int"),
                    ("median_ms", "median ms", "num"),
                    ("tok_per_sec", "tok/s", "num"),
                ),
                prefill,
                title="prefill",
            )
        )
    if details.note:
        print(f"bench: note: {details.note}", file=sys.stderr)
    _emit(sections, args.format, details.as_json())
    return 0


# --- compare ------------------------------------------------------------------------------


def _register_compare(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "compare",
        "compare runs: metrics side by side, with ratios to the first run",
        "Runs are labelled A, B, C ... in the order given; B/A is B's value over A's. "
        "exit status: 0; 2 when a run id is not in the catalog.",
    )
    parser.add_argument(
        "--run-id",
        action="append",
        required=True,
        dest="run_ids",
        metavar="RUN_ID",
        help="a run to compare (give two or more; the first is the reference)",
    )
    parser.set_defaults(handler=run_compare)


def _label(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"R{i + 1}"


def run_compare(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import compare_runs

    result = compare_runs(_catalog(), args.run_ids)
    labels = [_label(i) for i in range(len(result.runs))]
    legend = [{"label": label, **run} for label, run in zip(labels, result.runs, strict=False)]
    legend_columns = _columns(
        ("label", "run", "text"),
        ("run_id", "run id", "text"),
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        ("status", "status", "text"),
        ("timestamp", "timestamp", "text"),
    )
    specs = [("metric", "metric", "text"), (labels[0], labels[0], "num")]
    for label in labels[1:]:
        specs += [(label, label, "num"), (f"{label}/{labels[0]}", f"{label}/{labels[0]}", "ratio")]
    metric_rows = []
    for metric in result.metrics:
        row: dict[str, Any] = {"metric": metric["metric"]}
        for i, label in enumerate(labels):
            row[label] = metric["values"][i]
            if i:
                row[f"{label}/{labels[0]}"] = metric["ratios"][i]
        metric_rows.append(row)
    sections = [
        Section(legend_columns, legend, title="runs"),
        Section(_columns(*specs), metric_rows, title="metrics"),
    ]
    data = {"runs": _entries_out(result.runs), "metrics": result.metrics}
    _emit(sections, args.format, data)
    return 0


# --- table --------------------------------------------------------------------------------


def _register_table(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "table",
        "comparison table for a model: one row per machine, its best run by peak tok/s",
        f"Only ok runs count unless --status says otherwise. {EXIT_ROWS}",
    )
    _add_filters(parser, status_default="ok")
    parser.set_defaults(handler=run_table)


def run_table(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import machine_table

    filters = _filters(args)
    rows = machine_table(_catalog(), filters)
    columns = _columns(
        ("machine_id", "machine", "text"),
        ("precision", "precision", "text"),
        ("peak_tok_per_sec", "peak tok/s", "num"),
        ("baseline_tok_per_sec", "baseline tok/s", "num"),
        ("speedup", "speedup", "ratio"),
        ("prefill_tok_per_sec", "prefill tok/s", "num"),
        ("decode_tok_per_sec", "decode tok/s", "num"),
        ("run_id", "run id", "text"),
    )
    if rows or args.format == "json":
        _emit([Section(columns, rows)], args.format, _entries_out(rows))
    if not rows:
        print(_no_match(filters), file=sys.stderr)
        return 1
    return 0


# --- best ---------------------------------------------------------------------------------


def _register_best(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "best",
        "the best run for a model by a metric (higher is better)",
        f"Only ok runs count unless --status says otherwise. {EXIT_ROWS}",
    )
    _add_filters(parser, status_default="ok")
    parser.add_argument("--metric", default="peak_tok_per_sec", help=f"one of: {METRIC_HELP}")
    parser.add_argument(
        "--by", choices=("machine",), help="one row per machine instead of one overall"
    )
    parser.set_defaults(handler=run_best)


def run_best(args: argparse.Namespace) -> int:
    from benchlab.query.filters import check_metric
    from benchlab.query.render import Section
    from benchlab.query.verbs import best_runs

    metric = check_metric(args.metric)
    filters = _filters(args)
    rows = best_runs(_catalog(), filters, metric, by=args.by)
    columns = _columns(
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        (metric, metric, "num"),
        ("timestamp", "timestamp", "text"),
        ("run_id", "run id", "text"),
    )
    if rows or args.format == "json":
        _emit([Section(columns, rows)], args.format, _entries_out(rows))
    if not rows:
        print(f"{_no_match(filters)} (with a {metric})", file=sys.stderr)
        return 1
    return 0


# --- summary ------------------------------------------------------------------------------


def _register_summary(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "summary",
        "summary statistics per machine, model, precision or date",
        "count, ok, failed, then the median and max peak tok/s over ok runs and the newest "
        f"run's timestamp. {EXIT_LIST}",
    )
    parser.add_argument(
        "--group-by", choices=("machine", "model", "precision", "date"), default="machine"
    )
    _add_filters(parser, status_default="any")
    parser.set_defaults(handler=run_summary)


def run_summary(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import summarize

    filters = _filters(args)
    rows = summarize(_catalog(), filters, args.group_by)
    columns = _columns(
        (args.group_by, args.group_by, "text"),
        ("count", "runs", "int"),
        ("ok", "ok", "int"),
        ("failed", "failed", "int"),
        ("median_peak_tok_per_sec", "median peak tok/s", "num"),
        ("max_peak_tok_per_sec", "max peak tok/s", "num"),
        ("last_run", "last run", "text"),
    )
    if rows or args.format in ("json", "csv"):
        _emit([Section(columns, rows)], args.format, rows)
    if not rows:
        print(_no_match(filters), file=sys.stderr)
    return 0
