"""`bench list | show | compare | table | best | summary`: ask the public catalog.json.

Each handler maps its flags onto a function of benchlab.query and prints the rows with
benchlab.query.render. Only argparse and the metric registry are imported at module level:
`bench best` on a 100,000-run catalog has one second, interpreter start included.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchlab.cli.args import count, date_or_time, thread_count
from benchlab.metrics import BASELINE, DECODE, HEADLINE, PEAK, PREFILL, SPEEDUP, words

FORMATS = ("table", "json", "csv", "markdown")
"""As query.render.FORMATS (a test keeps them equal; importing render here costs start-up)."""

METRIC_HELP = ", ".join(f"{m} (default)" if m == PEAK.name else m for m in HEADLINE)

EXIT_ROWS = (
    "exit status (every query verb): 0 when rows are printed; 1 when no run matches (one line "
    "on stderr; --format json still prints []); 2 on an error: missing or malformed catalog, "
    "bad flag value."
)
EXIT_LIST = EXIT_ROWS
LEVEL_NOTE = (
    "best and table answer with each series' current level: the mean of its newest segment "
    "(the ok, unmarked runs since the last step the detector finds among its newest 64 runs), "
    "with its 95% interval and run count; a level whose runs vary more than 10% (coefficient "
    "of variation) is flagged unstable. --ever: the best single run ever instead. Runs marked "
    "outliers (bench mark-outlier) never count."
)
FORMAT_NOTE = (
    "formats: table (rich on a terminal, aligned text when piped), json (full entries, "
    "sorted keys: stable for scripts), csv (same columns as the table, unrounded), markdown."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_list(subparsers)
    _register_show(subparsers)
    _register_table(subparsers)
    _register_best(subparsers)
    _register_summary(subparsers)


# --- arguments ----------------------------------------------------------------------------


def verb_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help_text: str,
    epilog: str,
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
    parser.add_argument(
        "--wide",
        action="store_true",
        help="every column, however wide (a table otherwise fits $COLUMNS or the terminal)",
    )
    return parser


def add_filters(parser: argparse.ArgumentParser, *, status_default: str) -> None:
    parser.add_argument(
        "--model", help="model slug or name, e.g. smollm2-135m (matches case-insensitively)"
    )
    parser.add_argument("--machine", help="machine id, e.g. anthony-laptop")
    parser.add_argument(
        "--precision",
        help="precision: a family (q4 matches q4_0, q4_k_m ...) or an exact type (q4_k_m)",
    )
    parser.add_argument(
        "--threads", type=thread_count, metavar="N", help="runs made with N threads (N >= 1)"
    )
    parser.add_argument("--backend", help="backend name, e.g. llama-bench, reference")
    parser.add_argument(
        "--build",
        help="backend build: its version (b4567), build number (4567) or a commit prefix",
    )
    parser.add_argument(
        "--series", metavar="ID", help="one series (a measurement over time): its id or a prefix"
    )
    parser.add_argument(
        "--since",
        type=date_or_time,
        metavar="WHEN",
        help="runs on or after this date (YYYY-MM-DD) or UTC time (2025-07-04T12:00, Z or an "
        "offset allowed)",
    )
    parser.add_argument(
        "--until",
        type=date_or_time,
        metavar="WHEN",
        help="runs on or before this date (the whole day) or time, as --since",
    )
    parser.add_argument(
        "--tag", action="append", default=[], help="runs carrying this tag (repeat: all of them)"
    )
    parser.add_argument(
        "--status",
        choices=("ok", "failed", "any"),
        help=f"run status to include (default: {status_default})",
    )
    parser.set_defaults(status_default=status_default)


def filters_of(args: argparse.Namespace) -> Any:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.filters import Filters, check_range

    status = args.status or args.status_default
    check_range(args.since, args.until)
    return Filters(
        model=args.model,
        machine=args.machine,
        precision=args.precision,
        since=args.since,
        until=args.until,
        tags=tuple(args.tag),
        status=None if status == "any" else status,
        threads=args.threads,
        backend=args.backend,
        build=args.build,
        series=args.series,
    )


def store_root() -> Any:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import Store, find_store

    return Store(find_store()).require()


def open_catalog() -> Any:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.read import load_catalog

    store = store_root()
    return load_catalog(store.catalog_path, cache=store.query_cache)


def _answer(verb: Any, *args: Any) -> tuple[Any, list[dict[str, Any]]]:
    """(catalog, rows) of `verb(catalog, *args)`, asked of the columnar query cache where it
    answers (a big catalog, see query.colcache), else of the loaded catalog: the same rows."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.colcache import Unanswerable, open_columns

    columns = open_columns(store_root())
    if columns is not None:
        try:
            return columns, verb(columns, *args)
        except Unanswerable:
            pass
    catalog = open_catalog()
    return catalog, verb(catalog, *args)


def no_match(filters: Any, catalog: Any) -> str:
    """'no runs match ...', and where an id filter names nothing at all, the nearest values."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.verbs import unknown_filter_hint

    described = filters.describe()
    message = f"bench: no runs match {described}" if described else "bench: the catalog has no runs"
    hint = unknown_filter_hint(catalog, filters)
    return f"{message} ({hint})" if hint else message


def emit_sections(sections: list[Any], fmt: str, data: Any, wide: bool = False) -> None:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.render import emit

    emit(sections, fmt, data, wide=wide)


def column_specs(*specs: tuple[str, str, str], drops: dict[str, int] | None = None) -> list[Any]:
    """Columns of (key, header, kind); `drops`: the keys left out first to fit the terminal
    (render.Column.drop)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.render import Column

    drops = drops or {}
    return [Column(key, header, kind, drops.get(key, 0)) for key, header, kind in specs]


def entries_out(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.read import full_entry

    return [full_entry(row) for row in rows]


def display_rows(rows: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """Rows with the identity columns people read: `shape` (or the tests), `attempt` as
    "2/3" (a run that needed retries shows it), `version`; json prints the entries
    themselves, so nothing is added for it."""
    if fmt == "json":
        return rows
    # lazy: start-up time, only the verb that runs loads its library
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
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.metrics import UNSTABLE_TAG

    if UNSTABLE_TAG in (row.get("tags") or ()) and row.get("status"):
        return {"status": f"{row['status']} {UNSTABLE_TAG}"}
    return {}


# --- list ---------------------------------------------------------------------------------


def _register_list(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = verb_parser(
        subparsers, "list", "list catalog runs, sorted by timestamp then run id", EXIT_LIST
    )
    add_filters(parser, status_default="any")
    parser.add_argument(
        "--limit",
        type=count,
        metavar="N",
        help="only the newest N runs (still printed oldest first); N >= 1",
    )
    parser.set_defaults(handler=run_list)


def _declared_columns(rows: list[dict[str, Any]]) -> list[Any]:
    """A column per declared metric the listed runs carry, headed with its unit
    (`p99_ms (ms)`; ARCHITECTURE.md, Metrics)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.metrics import declared_metrics, unit_of

    present = [m for m in declared_metrics() if any(r.get(m) is not None for r in rows)]
    return column_specs(*((m, f"{m} ({unit_of(m)})", "num") for m in present))


def run_list(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.render import Section
    from benchlab.query.verbs import list_runs

    filters = filters_of(args)
    catalog = open_catalog()
    rows = list_runs(catalog, filters, args.limit)
    columns = column_specs(
        ("timestamp", "timestamp", "text"),
        ("run_id", "run id", "id"),
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        ("threads", "threads", "int"),
        ("shape", "shape", "text"),
        ("attempt", "attempt", "text"),
        ("status", "status", "text"),
        (PEAK.name, PEAK.column, "num"),
    )
    columns += _declared_columns(rows)
    if rows or args.format in ("json", "csv"):
        emit_sections(
            [Section(columns, display_rows(rows, args.format))],
            args.format,
            entries_out(rows),
            args.wide,
        )
    if not rows:
        print(no_match(filters, catalog), file=sys.stderr)
        return 1
    return 0


# --- show ---------------------------------------------------------------------------------


def _register_show(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = verb_parser(
        subparsers,
        "show",
        "show one run: manifest, record, batch curve and prefill from its run dir",
        "When the run dir is absent on this clone (runs/ is private and gitignored), show "
        "prints the catalog entry and says so on stderr. exit status: 0 when shown; 1 when "
        "no run has that id (one line on stderr); 2 when the id is ambiguous or unsafe, or a "
        "file is malformed.",
    )
    parser.add_argument(
        "run_id", metavar="RUN_ID", help="a run id, or any prefix of it that names one run"
    )
    parser.set_defaults(handler=run_show)


def run_show(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.render import Section
    from benchlab.query.show import batch_curve, prefill_points, run_facts, show_run

    details = show_run(store_root().root, args.run_id)
    sections = [
        Section(
            column_specs(("field", "field", "text"), ("value", "value", "text")), run_facts(details)
        )
    ]
    curve = batch_curve(details)
    if curve:
        sections.append(
            Section(
                column_specs(
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
                column_specs(
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
    emit_sections(sections, args.format, details.as_json(), args.wide)
    return 0


# --- table --------------------------------------------------------------------------------

SHAPE_NOTE = (
    "shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch "
    "and micro-batch, fa = flash attention; threads: the CPU threads the run used."
)


def _register_table(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = verb_parser(
        subparsers,
        "table",
        "comparison table: one row per machine and series at its current level",
        "A series is one measurement followed over time: same machine, model, precision, "
        "backend, threads, shape ... (the version axis aside), so a machine run at two thread "
        "counts, or with two backends, has two rows. Each metric is the mean over the series' "
        "newest segment; the level, its ±95% and run count are of the first of peak, decode, "
        "prefill tok/s the series measured. Without --model a model column is added. Only ok "
        f"runs count. {LEVEL_NOTE} {EXIT_ROWS}",
    )
    add_filters(parser, status_default="ok")
    _add_ever(parser)
    parser.set_defaults(handler=run_table)


def _add_ever(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ever",
        action="store_true",
        help="the best single run ever instead of the current level (an outlier never wins)",
    )


def _levels_answer(verb: Any, *args: Any, ever: bool) -> tuple[Any, list[dict[str, Any]]]:
    """`_answer` with the step memo of the store's private cache (query.level): the
    segmentation of a history already seen is not searched again."""
    from functools import partial

    if ever:
        return _answer(partial(verb, ever=True), *args)
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.level import MEMO_NAME, load_memo, save_memo

    store = store_root()
    path = store.query_cache.parent / MEMO_NAME
    memo = load_memo(path, store.root)
    size = len(memo)
    answer = _answer(partial(verb, memo=memo), *args)
    save_memo(path, memo, size, store.root)
    return answer


def _level_display(rows: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """Rows for the table: each metric at its level (`levels`, else the level's own metric),
    the level's ±95%, run count and an `unstable` flag; json shows the entries with their
    `level` as they are."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.metrics import UNSTABLE_TAG

    out = display_rows(rows, fmt)
    if fmt == "json":
        return out
    for row in out:
        level = row.get("level")
        if not level:
            continue
        row.update(row.get("levels") or {level["metric"]: level["value"]})
        row["level_pm"] = level["pm95"]
        row["level_n"] = level["n"]
        # A level of one run has no spread of its own: the run's repeats speak for it.
        run_unstable = UNSTABLE_TAG in (row.get("tags") or ())
        flags = ["unstable" if level["unstable"] else "run unstable" if run_unstable else ""]
        if level.get("repeats"):  # the ± is of one run's repeats (query.level.with_repeats)
            flags.append(f"± of {level['repeats']} repeats in 1 run")
        row["level_flag"] = ", ".join(f for f in flags if f) or None
    return out


def run_table(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.render import Section
    from benchlab.query.verbs import machine_table

    filters = filters_of(args)
    catalog, rows = _levels_answer(machine_table, filters, ever=args.ever)
    specs = [] if args.model else [("model", "model", "text")]
    specs += [
        ("machine_id", "machine", "text"),
        ("precision", "precision", "text"),
        ("backend", "backend", "text"),
        ("threads", "threads", "int"),
        ("shape", "shape", "text"),
        ("version", "version", "text"),
        (PEAK.name, PEAK.column, "num"),
    ]
    if not args.ever:
        specs += [("level_pm", "±95%", "num"), ("level_n", "runs", "int")]
    specs += [
        (BASELINE.name, BASELINE.column, "num"),
        (SPEEDUP.name, SPEEDUP.column, "ratio"),
        (PREFILL.name, PREFILL.column, "num"),
        (DECODE.name, DECODE.column, "num"),
    ]
    _judge_table(rows, ever=args.ever)
    judged = any(row["mbu_pct"] is not None for row in rows)
    if judged:  # a run with a decode and a model size: MBU, or "not measured"
        specs.append(("mbu_pct", "MBU %", "num"))
    compute_judged = any(row["mfu_pct"] is not None for row in rows)
    if compute_judged:  # a run with a prefill and a parameter count: MFU, or "not measured"
        specs.append(("mfu_pct", "MFU %", "num"))
    if any(row.get("impossible") for row in rows):
        specs.append(("physics", "physics", "text"))
    if not args.ever:
        specs.append(("level_flag", "noise", "text"))
    specs.append(("run_id", "newest run" if not args.ever else "run id", "id"))
    note = SHAPE_NOTE if args.ever else f"{SHAPE_NOTE} {_LEVEL_LEGEND}"
    note = f"{note} {_MBU_LEGEND}" if judged else note
    note = f"{note} {_MFU_LEGEND}" if compute_judged else note
    if rows or args.format == "json":
        data = entries_out(rows) if args.ever else _level_entries(rows)
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.query.roofline import json_mbu

        for row in data:
            row["mbu_pct"] = json_mbu(row.get("mbu_pct"))
            row["mfu_pct"] = json_mbu(row.get("mfu_pct"))
        shown = _level_display(rows, args.format)
        for row in shown:
            row["physics"] = "impossible" if row.get("impossible") else None
        emit_sections(
            [Section(column_specs(*specs, drops=_DROPS), shown, note=note)],
            args.format,
            data,
            args.wide,
        )
    if not rows:
        print(no_match(filters, catalog), file=sys.stderr)
        return 1
    return 0


_MBU_LEGEND = (
    "MBU %: decode t/s x bytes per token over the machine's memory bandwidth (bench machines); "
    "not measured: the machine has no bandwidth figure; physics: impossible where decode "
    "beats that bandwidth by over 10%."
)

_MFU_LEGEND = (
    "MFU %: prefill t/s x 2 x parameters over the processor's peak FLOP/s (bench machines: "
    "a GPU's dense FP16 spec figure, a CPU's measured float32 GEMM rate); not measured: no "
    "peak figure for the processor it ran on; physics: "
    "also impossible where prefill beats that peak by over 10%."
)


def _judge_table(rows: list[dict[str, Any]], *, ever: bool) -> None:
    """Each row's MBU at its decode level and its physics check (ARCHITECTURE.md, How close
    to the hardware)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.roofline import fleet_specs, judge_levels

    judge_levels(rows, fleet_specs(store_root()), ever=ever)


def _level_entries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`table --format json`: each row's metrics at their levels, as the text and csv
    tables show them (`levels`: each metric's own current level), the newest run's own
    values under `newest` (ARCHITECTURE.md, The current level)."""
    out = []
    for row in entries_out(rows):
        levels = row.get("levels") or {}
        row["newest"] = {m: row.get(m) for m in levels}
        row.update(levels)
        out.append(row)
    return out


def _best_entries(rows: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """`best --format json`: the ranked metric at its level, as the text, csv and markdown
    tables and `table --format json` show it, the newest run's own value under `newest`
    (ARCHITECTURE.md, The current level)."""
    out = []
    for row in entries_out(rows):
        level = row.get("level")
        if level:
            ranked = level.get("metric", metric)
            row["newest"] = {ranked: row.get(ranked)}
            row[ranked] = level["value"]
        out.append(row)
    return out


_DROPS = {
    BASELINE.name: 9,
    SPEEDUP.name: 8,
    "backend": 7,
    "version": 6,
    "run_id": 5,
    "level_n": 4,
    "level_flag": 3,
    PREFILL.name: 2,
    "mbu_pct": 1,
    "mfu_pct": 1,
    "timestamp": 1,
}
"""`table` and `best` on a narrow terminal: the columns left out first (render.fit)."""

_LEVEL_LEGEND = (
    "tok/s: each metric's current level, the mean of its newest segment (runs since its "
    "own last step; the level `bench best --metric` gives); ±95% and runs "
    "are of the row's level (peak, else decode); noise: unstable where the runs vary over 10%, "
    'run unstable where the newest run\'s own repeats do; "± of N repeats in 1 run": a level '
    "of one run, its ± from that run's own repeats (the spread inside one run, which "
    "understates the noise between runs)."
)


# --- best ---------------------------------------------------------------------------------


def _register_best(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = verb_parser(
        subparsers,
        "best",
        "the series at the best current level by a metric (its direction: higher or lower)",
        "Without --model (or --by), the best series of each model, a row each: models are "
        "not ranked against each other. --by machine: the best series of each machine (its "
        "threads and shape say which measurement won); --by model: of each model; --by "
        "series: every series at its level. Only ok runs count. "
        f"{LEVEL_NOTE} {EXIT_ROWS}",
    )
    add_filters(parser, status_default="ok")
    parser.add_argument(
        "--metric",
        help=f"one of: {METRIC_HELP} (default: peak_tok_per_sec, else decode_tok_per_sec "
        "where no matching run measured a batched peak, as llama-bench runs do not)",
    )
    parser.add_argument(
        "--by",
        choices=("machine", "model", "series"),
        help="one row per machine, model or series (default: per model, unless --model)",
    )
    _add_ever(parser)
    parser.add_argument(
        "--predict",
        metavar="MACHINE",
        help="estimate --model's decode t/s on MACHINE (which has not run it) from its "
        "memory bandwidth and the median MBU of the machines that did",
    )
    parser.set_defaults(handler=run_best)


def run_best(args: argparse.Namespace) -> int:
    if args.predict:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.cli.predict import run_predict

        return run_predict(args)
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.filters import check_metric
    from benchlab.query.render import Section
    from benchlab.query.verbs import best_runs

    metric = check_metric(args.metric or PEAK.name)
    filters = filters_of(args)
    # A toy model's tokens per second say nothing against a real model's: without --model
    # the answer is a row per model (with one model, the same single row as one overall).
    by = args.by or (None if filters.model else "model")
    catalog, rows = _levels_answer(best_runs, filters, metric, by, ever=args.ever)
    if not rows and not args.metric:  # no batched peak measured: rank by decode, and say so
        catalog, rows = _levels_answer(best_runs, filters, DECODE.name, by, ever=args.ever)
        if rows:
            metric = DECODE.name
            print(
                "note: no matching run measured a batched peak (llama-bench and command runs "
                "do not): ranked by decode_tok_per_sec",
                file=sys.stderr,
            )
    if metric in (DECODE.name, PREFILL.name) and not args.ever:
        rows = _within_physics(rows, filters, by, metric)
    specs = [
        ("machine_id", "machine", "text"),
        ("model", "model", "text"),
        ("precision", "precision", "text"),
        ("backend", "backend", "text"),
        ("threads", "threads", "int"),
        ("shape", "shape", "text"),
        ("version", "version", "text"),
    ]
    if args.ever:
        specs += [(metric, metric, "num"), ("timestamp", "timestamp", "text")]
    else:
        specs += [
            (metric, f"{metric} (level)", "num"),
            ("level_pm", "±95%", "num"),
            ("level_n", "runs", "int"),
            ("level_flag", "noise", "text"),
            ("timestamp", "newest run at", "text"),
        ]
    for share, title in (("mbu_pct", "MBU %"), ("mfu_pct", "MFU %")):
        if any(share in row for row in rows):
            at = specs.index((metric, f"{metric} (level)", "num")) + 2
            specs.insert(at, (share, title, "num"))
    specs.append(("run_id", "run id" if args.ever else "newest run", "id"))
    if args.by == "series":
        specs.insert(0, ("series", "series", "id"))
    note = SHAPE_NOTE if args.ever else f"{SHAPE_NOTE} {_LEVEL_LEGEND}"
    if rows or args.format == "json":
        emit_sections(
            [
                Section(
                    column_specs(*specs, drops=_DROPS), _level_display(rows, args.format), note=note
                )
            ],
            args.format,
            entries_out(rows) if args.ever else _best_entries(rows, metric),
            args.wide,
        )
    if not rows:
        print(f"{no_match(filters, catalog)} (with a {metric})", file=sys.stderr)
        return 1
    return 0


def _within_physics(
    rows: list[dict[str, Any]], filters: Any, by: str | None, metric: str
) -> list[dict[str, Any]]:
    """Decode (prefill) rankings with MBU (MFU) beside each level, and never a series faster
    than its machine's memory bandwidth (peak compute) allows (ARCHITECTURE.md, How close to
    the hardware)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.roofline import annotate, fleet_specs, within_physics
    from benchlab.query.verbs import best_runs

    specs = fleet_specs(store_root())
    if not specs:
        return rows
    annotate(rows, specs, metric)
    if not any(row.get("impossible") for row in rows):
        return rows
    _, every = _levels_answer(best_runs, filters, metric, "series", ever=False)
    kept, dropped = within_physics(every, by, specs, metric)
    bound = "memory bandwidth" if metric == DECODE.name else "peak compute"
    print(
        f"note: {dropped} series set aside: their {words(metric)} beats their machine's "
        f"{bound} (bench catalog validate lists the runs)",
        file=sys.stderr,
    )
    return kept


# --- summary ------------------------------------------------------------------------------


def _register_summary(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = verb_parser(
        subparsers,
        "summary",
        "summary statistics per machine, model, precision or date",
        "count, ok, failed, then the median and max peak tok/s over ok runs and the newest "
        f"run's timestamp. {EXIT_LIST}",
    )
    parser.add_argument(
        "--group-by", choices=("machine", "model", "precision", "date"), default="machine"
    )
    add_filters(parser, status_default="any")
    parser.set_defaults(handler=run_summary)


def run_summary(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.render import Section
    from benchlab.query.verbs import summarize

    filters = filters_of(args)
    catalog = open_catalog()
    rows = summarize(catalog, filters, args.group_by)
    columns = column_specs(
        (args.group_by, args.group_by, "text"),
        ("count", "runs", "int"),
        ("ok", "ok", "int"),
        ("failed", "failed", "int"),
        ("median_peak_tok_per_sec", "median peak tok/s", "num"),
        ("max_peak_tok_per_sec", "max peak tok/s", "num"),
        ("last_run", "last run", "text"),
    )
    if rows or args.format in ("json", "csv"):
        emit_sections([Section(columns, rows)], args.format, rows, args.wide)
    if not rows:
        print(no_match(filters, catalog), file=sys.stderr)
        return 1
    return 0
