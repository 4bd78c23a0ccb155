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
    parser.add_argument(
        "--precision",
        help="precision: a family (q4 matches q4_0, q4_k_m ...) or an exact type (q4_k_m)",
    )
    parser.add_argument("--threads", type=int, metavar="N", help="runs made with N threads")
    parser.add_argument("--backend", help="backend name, e.g. llama-bench, reference")
    parser.add_argument(
        "--build",
        help="backend build: its version (b4567), build number (4567) or a commit prefix",
    )
    parser.add_argument(
        "--series", metavar="ID", help="one series (a measurement over time): its id or a prefix"
    )
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
        threads=args.threads,
        backend=args.backend,
        build=args.build,
        series=args.series,
    )


def _store_root() -> Any:
    from benchlab.layout import Store, find_store

    return Store(find_store()).require()


def _catalog() -> Any:
    from benchlab.catalog.read import load_catalog

    store = _store_root()
    return load_catalog(store.catalog_path, cache=store.query_cache)


def _answer(verb: Any, *args: Any) -> tuple[Any, list[dict[str, Any]]]:
    """(catalog, rows) of `verb(catalog, *args)`, asked of the columnar query cache where it
    answers (a big catalog, see query.colcache), else of the loaded catalog: the same rows."""
    from benchlab.query.colcache import Unanswerable, open_columns

    columns = open_columns(_store_root())
    if columns is not None:
        try:
            return columns, verb(columns, *args)
        except Unanswerable:
            pass
    catalog = _catalog()
    return catalog, verb(catalog, *args)


def _no_match(filters: Any, catalog: Any) -> str:
    """'no runs match ...', and where --model names no model at all, the nearest ones."""
    from benchlab.query.verbs import unknown_model_hint

    described = filters.describe()
    message = f"bench: no runs match {described}" if described else "bench: the catalog has no runs"
    hint = unknown_model_hint(catalog, filters)
    return f"{message} ({hint})" if hint else message


def _emit(sections: list[Any], fmt: str, data: Any) -> None:
    from benchlab.query.render import emit

    emit(sections, fmt, data)


def _columns(*specs: tuple[str, str, str]) -> list[Any]:
    from benchlab.query.render import Column

    return [Column(key, header, kind) for key, header, kind in specs]


def _entries_out(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from benchlab.catalog.read import full_entry

    return [full_entry(row) for row in rows]


def _display(rows: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """Rows with the identity columns people read: `shape` (or the tests), `attempt` as
    "2/3" (a run that needed retries shows it), `version`; json prints the entries
    themselves, so nothing is added for it."""
    if fmt == "json":
        return rows
    from benchlab.identity import build_label, shape

    out = []
    for row in rows:
        attempt, attempts = row.get("attempt"), row.get("attempts")
        out.append(
            {
                **row,
                "shape": shape(row) or ", ".join(row.get("tests") or ()) or None,
                "attempt": f"{attempt}/{attempts}" if attempt and attempts else attempt,
                "version": build_label(row),
                **_unstable_mark(row),
            }
        )
    return out


def _unstable_mark(row: dict[str, Any]) -> dict[str, Any]:
    """`status` reads "ok unstable" for a run whose repeats varied past policies.max_cv."""
    from benchlab.metrics import UNSTABLE_TAG

    if UNSTABLE_TAG in (row.get("tags") or ()) and row.get("status"):
        return {"status": f"{row['status']} {UNSTABLE_TAG}"}
    return {}


# --- list ---------------------------------------------------------------------------------


def _register_list(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers, "list", "list catalog runs, sorted by timestamp then run id", EXIT_LIST
    )
    _add_filters(parser, status_default="any")
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="only the newest N runs (still printed oldest first)",
    )
    parser.set_defaults(handler=run_list)


def run_list(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import list_runs

    filters = _filters(args)
    catalog = _catalog()
    rows = list_runs(catalog, filters, args.limit)
    columns = _columns(
        ("timestamp", "timestamp", "text"),
        ("run_id", "run id", "id"),
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        ("threads", "threads", "int"),
        ("shape", "shape", "text"),
        ("attempt", "attempt", "text"),
        ("status", "status", "text"),
        ("peak_tok_per_sec", "peak tok/s", "num"),
    )
    if rows or args.format in ("json", "csv"):
        _emit([Section(columns, _display(rows, args.format))], args.format, _entries_out(rows))
    if not rows:
        print(_no_match(filters, catalog), file=sys.stderr)
    return 0


# --- show ---------------------------------------------------------------------------------


def _register_show(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "show",
        "show one run: manifest, record, batch curve and prefill from its run dir",
        "When the run dir is absent on this clone (runs/ is private and gitignored), show "
        "prints the catalog entry and says so on stderr. exit status: 0 when shown; "
        "2 when the run id is unknown, ambiguous or unsafe, or a file is malformed.",
    )
    parser.add_argument(
        "run_id", metavar="RUN_ID", help="a run id, or any prefix of it that names one run"
    )
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
        "compare runs side by side, or two builds, revisions or machines test by test",
        "With --run-id: runs are labelled A, B, C ... in the order given; B/A is B's value "
        "over A's; a run id may be shortened to any prefix that names one run. "
        "With --by build|revision|machine (as llama.cpp's compare-llama-bench.py): two values "
        "A and B of the axis (--a, --b; default: the two newest builds or revisions present), "
        "and for every measurement present under both, one row per test (pp512, tg128 ..., "
        "and the batch peak) with tok/s under A, under B and the speedup B/A. A measurement is "
        "the full identity less the axis (for machines, less the build too); each side is its "
        "latest ok run (its run ids are in --format json). The filters apply to --by. "
        f"{EXIT_ROWS}",
    )
    parser.add_argument(
        "--run-id",
        action="append",
        default=[],
        dest="run_ids",
        metavar="RUN_ID",
        help="a run to compare (give two or more; the first is the reference)",
    )
    parser.add_argument(
        "--by", choices=("build", "revision", "machine"), help="compare two values of this axis"
    )
    parser.add_argument("--a", metavar="VALUE", help="the reference value of --by (A)")
    parser.add_argument("--b", metavar="VALUE", help="the value compared with A (B)")
    _add_filters(parser, status_default="ok")
    parser.set_defaults(handler=run_compare)


def _label(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"R{i + 1}"


def run_compare(args: argparse.Namespace) -> int:
    from benchlab.errors import QueryError

    if args.by is not None:
        if args.run_ids:
            raise QueryError("compare: give either --run-id or --by, not both")
        return _compare_axis(args)
    if args.a is not None or args.b is not None:
        raise QueryError("compare: --a and --b go with --by build|revision|machine")
    return _compare_run_ids(args)


def _compare_run_ids(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import compare_runs

    result = compare_runs(_catalog(), args.run_ids)
    labels = [_label(i) for i in range(len(result.runs))]
    legend = [{"label": label, **run} for label, run in zip(labels, result.runs, strict=False)]
    legend_columns = _columns(
        ("label", "run", "text"),
        ("run_id", "run id", "id"),
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        ("threads", "threads", "int"),
        ("shape", "shape", "text"),
        ("version", "version", "text"),
        ("status", "status", "text"),
        ("timestamp", "timestamp", "text"),
    )
    specs = [("metric", "metric", "text"), (labels[0], labels[0], "num")]
    for label in labels[1:]:
        specs += [(label, label, "num"), (f"{label}/{labels[0]}", f"{label}/{labels[0]}", "ratio")]
    metric_rows = []
    for metric in result.metrics:
        row: dict[str, Any] = {"metric": metric["metric"]}
        if metric.get("better") == "lower":  # say so where the smaller number wins
            row["metric"] += f" ({metric['unit']}, lower is better)"
        for i, label in enumerate(labels):
            row[label] = metric["values"][i]
            if i:
                row[f"{label}/{labels[0]}"] = metric["ratios"][i]
        metric_rows.append(row)
    sections = [
        Section(legend_columns, _display(legend, args.format), title="runs"),
        Section(_columns(*specs), metric_rows, title="metrics"),
    ]
    data = {"runs": _entries_out(result.runs), "metrics": result.metrics}
    _emit(sections, args.format, data)
    return 0


def _compare_axis(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import compare_axis

    filters = _filters(args)
    result = compare_axis(_catalog(), filters, args.by, args.a, args.b)
    specs = [("model", "model", "text")]
    if args.by != "machine":
        specs.append(("machine_id", "machine", "text"))
    specs.append(("precision", "precision", "text"))
    if len({row["backend"] for row in result.rows}) > 1:
        specs.append(("backend", "backend", "text"))
    specs += [("threads", "threads", "int"), ("shape", "shape", "text")]
    if any(row.get("revision") for row in result.rows):
        specs.append(("revision", "revision", "text"))
    repeated = any(row["pm_a"] is not None or row["pm_b"] is not None for row in result.rows)
    specs += [("test", "test", "text"), ("a", f"t/s {result.a}", "num")]
    if repeated:  # means of repeats: say how sure each side is
        specs.append(("pm_a", "±95%", "num"))
    specs.append(("b", f"t/s {result.b}", "num"))
    if repeated:
        specs.append(("pm_b", "±95%", "num"))
    specs.append(("speedup", "speedup", "ratio"))
    title = f"{args.by}: A = {result.a}, B = {result.b}"
    if result.rows or args.format == "json":
        _emit([Section(_columns(*specs), result.rows, title=title)], args.format, result.as_json())
    alone = [(n, value) for n, value in ((result.only_a, result.a), (result.only_b, result.b)) if n]
    if alone:
        told = "; ".join(f"{n} only under {value}" for n, value in alone)
        print(f"bench: note: measurements not compared: {told}", file=sys.stderr)
    if not result.rows:
        print(
            f"bench: no measurement was made under both {result.a} and {result.b}",
            file=sys.stderr,
        )
        return 1
    return 0


# --- table --------------------------------------------------------------------------------


def _register_table(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "table",
        "comparison table: one row per machine and series, its best run by peak tok/s",
        "A series is one measurement followed over time: same machine, model, precision, "
        "backend, threads, shape ... (the version axis aside), so a machine run at two thread "
        "counts has two rows. Without --model a model column is added. Only ok runs count "
        f"unless --status says otherwise. {EXIT_ROWS}",
    )
    _add_filters(parser, status_default="ok")
    parser.set_defaults(handler=run_table)


def run_table(args: argparse.Namespace) -> int:
    from benchlab.query.render import Section
    from benchlab.query.verbs import machine_table

    filters = _filters(args)
    catalog, rows = _answer(machine_table, filters)
    specs = [] if args.model else [("model", "model", "text")]
    specs += [
        ("machine_id", "machine", "text"),
        ("precision", "precision", "text"),
        ("threads", "threads", "int"),
        ("shape", "shape", "text"),
        ("version", "version", "text"),
        ("peak_tok_per_sec", "peak tok/s", "num"),
        ("baseline_tok_per_sec", "baseline tok/s", "num"),
        ("speedup", "speedup", "ratio"),
        ("prefill_tok_per_sec", "prefill tok/s", "num"),
        ("decode_tok_per_sec", "decode tok/s", "num"),
        ("run_id", "run id", "id"),
    ]
    if rows or args.format == "json":
        _emit(
            [Section(_columns(*specs), _display(rows, args.format))],
            args.format,
            _entries_out(rows),
        )
    if not rows:
        print(_no_match(filters, catalog), file=sys.stderr)
        return 1
    return 0


# --- best ---------------------------------------------------------------------------------


def _register_best(subparsers: argparse._SubParsersAction) -> None:
    parser = _parser(
        subparsers,
        "best",
        "the best run for a model by a metric (higher is better)",
        "--by machine: the best run of each machine (its threads and shape say which "
        "measurement won); --by series: the best run of each series. Only ok runs count unless "
        f"--status says otherwise. {EXIT_ROWS}",
    )
    _add_filters(parser, status_default="ok")
    parser.add_argument("--metric", default="peak_tok_per_sec", help=f"one of: {METRIC_HELP}")
    parser.add_argument(
        "--by",
        choices=("machine", "series"),
        help="one row per machine or per series instead of one overall",
    )
    parser.set_defaults(handler=run_best)


def run_best(args: argparse.Namespace) -> int:
    from benchlab.query.filters import check_metric
    from benchlab.query.render import Section
    from benchlab.query.verbs import best_runs

    metric = check_metric(args.metric)
    filters = _filters(args)
    catalog, rows = _answer(best_runs, filters, metric, args.by)
    specs = [
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        ("threads", "threads", "int"),
        ("shape", "shape", "text"),
        ("version", "version", "text"),
        (metric, metric, "num"),
        ("timestamp", "timestamp", "text"),
        ("run_id", "run id", "id"),
    ]
    if args.by == "series":
        specs.insert(0, ("series", "series", "id"))
    if rows or args.format == "json":
        _emit(
            [Section(_columns(*specs), _display(rows, args.format))],
            args.format,
            _entries_out(rows),
        )
    if not rows:
        print(f"{_no_match(filters, catalog)} (with a {metric})", file=sys.stderr)
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
    catalog = _catalog()
    rows = summarize(catalog, filters, args.group_by)
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
        print(_no_match(filters, catalog), file=sys.stderr)
    return 0
