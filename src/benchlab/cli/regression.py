"""`bench regression`: latest run against a baseline, or step detection over history."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlab.cli.args import alpha, days, threshold

if TYPE_CHECKING:
    from benchlab.detect.steps import Step


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "regression",
        help="find regressions: latest vs baseline per series, or steps in history (--detect)",
        description="A series is one measurement repeated over time: everything that shapes "
        "the number (machine, model, quant, backend, mode, threads, prompt/gen tokens, batch, "
        "GPU layers ...) except the backend's version and the revision, so a new build shows "
        "as a step inside its series, reported with the version before and after. A t1 run "
        "and a t2 run are two series and never compared. Without --detect, the latest ok run "
        "of each series on "
        "--machine is compared with --baseline (a run id) or with the median of the last stable "
        "segment before the newest runs (a step long ago still counts). With --detect, every "
        "series' whole history is segmented (optimal partitioning scaled to the series' own "
        "noise, a test per step, the false discovery rate kept at --alpha across all the "
        "series): each step, a regression, its fix or a later one, is reported with its size, "
        "its first bad run, a confidence and whether it is still open at the newest run. "
        "Exit 1 when a regression is found (for CI gates), else 0.",
        epilog="examples:\n"
        "  bench regression --machine anthony-laptop --baseline run-id-12345\n"
        "  bench regression --machine pi5 --threshold 3%\n"
        "  bench regression --detect --model smollm2-135m --format json\n"
        "  bench regression --gates --machine pi5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--machine", help="the machine to check (required without --detect)")
    parser.add_argument("--baseline", metavar="RUN_ID", help="compare against this run")
    parser.add_argument(
        "--threshold",
        type=threshold,
        default="5%",
        help="a change for the worse beyond this is a regression (a throughput dropping, a "
        "latency, memory or energy figure rising: metrics.REGISTRY says which): 5%% or 0.05 "
        "(a bare 5 is refused as ambiguous; default 5%%)",
    )
    parser.add_argument("--detect", action="store_true", help="find steps in every series")
    parser.add_argument("--model", help="only series of this model (with --detect)")
    parser.add_argument(
        "--metric",
        help="the metric to judge (default: every metric each series carries, each its own "
        "history: peak, decode, prefill, latency, memory, energy, an import's time_s and "
        "the declared ones; a metric derived from another the series carries is left out)",
    )
    parser.add_argument(
        "--alpha", type=alpha, default=0.01, help="significance, in (0, 1) (default 0.01)"
    )
    parser.add_argument(
        "--min-change", type=threshold, default="1%", help="smallest step reported (default 1%%)"
    )
    parser.add_argument("--format", choices=("table", "json", "csv", "markdown"), default="table")
    parser.add_argument(
        "--wide",
        action="store_true",
        help="every column and build, however wide (a table otherwise fits $COLUMNS)",
    )
    ci = parser.add_argument_group(
        "CI gate (with --detect)",
        "bench regression --detect --window 14 --fail-over 10% "
        '--summary-md "$GITHUB_STEP_SUMMARY": '
        "only steps whose first bad run is within DAYS of the newest run (counted from the data, "
        "not the clock), a Markdown summary appended to FILE, and exit 1 only for a confirmed "
        "regression at least that large. Suspects (too few runs after the step to confirm) are "
        "listed but never fail the job.",
    )
    ci.add_argument("--window", type=days, metavar="DAYS", help="only steps in the last DAYS")
    ci.add_argument(
        "--fail-over",
        type=threshold,
        metavar="PCT",
        help="exit 1 only for a confirmed regression of at least PCT (e.g. 10%%; default: any)",
    )
    ci.add_argument(
        "--summary-md",
        type=Path,
        metavar="FILE",
        help="append a Markdown summary to FILE (for $GITHUB_STEP_SUMMARY or a PR comment)",
    )
    gates = parser.add_argument_group(
        "declared gates",
        "bench regression --gates [--machine X] [--config SWEEP.yaml ...]: check every ok run "
        "against the gates its sweep declares (`gates:`; the sweep's config is found through "
        "its state.json, or given with --config), write each verdict into the run's "
        "manifest.json and gate.json, and exit 1 when the newest run of a series fails a "
        "required gate (or it cannot be checked).",
    )
    gates.add_argument("--gates", action="store_true", help="check the sweeps' declared gates")
    gates.add_argument(
        "--config",
        type=Path,
        action="append",
        default=[],
        metavar="SWEEP",
        help="a sweep config whose gates apply to its experiment's runs (repeatable)",
    )
    parser.set_defaults(handler=run)


def run_gates(args: argparse.Namespace) -> int:
    """`--gates`: verdicts for every ok run, written to the run dirs; the newest per series
    decides the exit code."""
    # lazy: start-up time, only the verb that runs loads its library
    import sys

    from benchlab.detect.gates import PASSED, GateBook, latest_per_series, shown
    from benchlab.layout import Store, find_store
    from benchlab.query.render import Column, Section, emit
    from benchlab.sweep.config import load_sweep_config

    configs = {c.experiment: c for c in (load_sweep_config(path) for path in args.config)}
    book = GateBook(Store(find_store()), machine_id=args.machine, configs=configs)
    if args.model:
        book.records = {
            k: r
            for k, r in book.records.items()
            if (r.get("spec") or {}).get("model") == args.model
        }
    verdicts = [book.write(v) for v in book.verdicts()]
    for line in book.warnings:
        print(f"warning: {line}", file=sys.stderr)
    latest = latest_per_series(verdicts)
    rows = []
    for v in latest:
        check = shown(v.gate)  # several gates: the one that failed
        rows.append(
            {
                "run_id": v.run_id,
                "gate": check.name,
                "metric": check.metric,
                "value": check.value,
                "baseline": check.baseline_run or check.baseline,
                "speedup": check.actual_speedup,
                "required": v.gate.required,
                "status": v.gate.status,
                "detail": check.detail or "",
            }
        )
    columns = [
        Column("run_id", "run id"),
        Column("gate", "gate"),
        Column("metric", "metric"),
        Column("value", "value", "num"),
        Column("baseline", "baseline"),
        Column("speedup", "speedup", "num"),
        Column("required", "required"),
        Column("status", "status"),
        Column("detail", "detail"),
    ]
    failing = [v for v in latest if v.gate.required and v.gate.status != PASSED]
    title = (
        f"gates: newest run of {len(latest)} series, {len(failing)} failing "
        f"({len(verdicts)} run(s) checked, {sum(v.written for v in verdicts)} verdict(s) written)"
    )
    emit([Section(columns, rows, title=title)], args.format, rows)
    return 1 if failing else 0


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.read import load_catalog
    from benchlab.cli.query import no_match
    from benchlab.detect.baseline import compare_latest, parse_threshold
    from benchlab.detect.cuts import Thresholds
    from benchlab.detect.regress import detect, recent, window_start
    from benchlab.errors import NoMatchError, QueryError
    from benchlab.layout import Store, find_store
    from benchlab.query.filters import Filters, check_metric, select
    from benchlab.query.render import Column, Section, emit

    if args.gates:
        return run_gates(args)
    if not args.detect and not args.machine:
        raise QueryError("--machine is required (or use --detect)")
    threshold = parse_threshold(args.threshold, "--threshold")
    min_change = parse_threshold(args.min_change, "--min-change")
    catalog = load_catalog(Store(find_store()).catalog_path)
    # After the load: it knows the declared metrics. No --metric: every metric a series
    # carries is its own history (ARCHITECTURE.md, Regression detection).
    metric = check_metric(args.metric) if args.metric else None
    named = metric if metric is not None else "every metric"
    filters = Filters(model=args.model, machine=args.machine)
    entries = select(catalog.runs, filters)
    if not entries:  # a typo is no match (exit 1, with what it may have meant), never "0 found"
        raise NoMatchError(no_match(filters, catalog).removeprefix("bench: "))
    series = [Column("label", "series")]
    if metric is None:
        series.append(Column("metric", "metric", drop=4))  # which history each row judged
    if args.detect:
        steps = detect(entries, metric, Thresholds(alpha=args.alpha, min_change=min_change))
        since = None
        if args.window is not None:
            since = window_start(entries, args.window)
            steps = recent(steps, since)
        fail_over = parse_threshold(args.fail_over, "--fail-over") if args.fail_over else 0.0
        failing = [
            s
            for s in steps
            if s.kind == "regression" and s.status == "confirmed" and abs(s.change) >= fail_over
        ]
        if args.summary_md is not None:
            text = summary_markdown(steps, failing, named, fail_over, since, len(entries))
            with args.summary_md.open("a", encoding="utf-8") as handle:
                handle.write(text)
        rows = [step.as_row() for step in steps]
        columns = [
            *series,
            Column("status", "status"),
            Column("kind", "kind"),
            Column("change", "change %", "num"),
            Column("before", "before", "num", drop=7),
            Column("after", "after", "num", drop=6),
            Column("version_before", "version before", drop=2),
            Column("version_after", "version after", drop=2),
            Column("confidence", "confidence", "num", drop=9),
            Column("runs_after", "runs after", "num", drop=8),
            Column("open", "open"),
            Column("first_bad_run", "first bad run", drop=5),
        ]
        found = bool(failing)
        title = f"steps in {named} ({len(steps)} found"
        title += f" since {since})" if since else ")"
    else:
        results = compare_latest(
            entries, args.machine, baseline_run=args.baseline, threshold=threshold, metric=metric
        )
        rows = [result.as_row() for result in results]
        columns = [
            *series,
            Column("baseline", "baseline", drop=5),
            Column("baseline_value", "baseline value", "num", drop=3),
            Column("baseline_version", "baseline version", drop=2),
            Column("latest_run", "latest run", drop=6),
            Column("latest_value", "latest", "num"),
            Column("latest_version", "latest version", drop=1),
            Column("change", "change %", "num"),
            Column("regression", "regression"),
        ]
        found = any(result.regression for result in results)
        title = f"{named}: latest vs baseline on {args.machine}"
        if not results:
            title += " (no series has two runs yet: nothing to compare)"
    for row in rows:
        row["change"] = round(row["change"] * 100, 2)
    shown = rows if args.wide or args.format in ("json", "csv") else [_few_builds(r) for r in rows]
    emit([Section(columns, shown, title=title)], args.format, rows, wide=args.wide)
    return 1 if found else 0


def _few_builds(row: dict[str, Any]) -> dict[str, Any]:
    """The row with a baseline over many builds named by its first and last (`b4500 …
    b4520, 21 builds`): every build of a long baseline made a line of hundreds of characters.
    json, csv and --wide list them all."""
    versions = (row.get("baseline_version") or "").split(", ")
    if len(versions) <= 2:
        return row
    first, last = versions[0].split(" (")[0], versions[-1].split(" (")[0]
    return {**row, "baseline_version": f"{first} … {last}, {len(versions)} builds"}


def summary_markdown(
    steps: list[Step],
    failing: list[Step],
    metric: str,
    fail_over: float,
    since: str | None,
    runs: int,
) -> str:
    """The gate's verdict as Markdown, in the shape github-action-benchmark's alert has: a
    verdict line, then one row per step (newest first) with its size, series, first bad
    run, the build either side and a confidence. Pure text: the same steps, the same bytes."""
    over = f" of {100 * fail_over:g} % or more" if fail_over else ""
    lines = [f"### Benchmark regressions ({metric})", ""]
    if not runs:
        lines.append("No runs yet: nothing to check.")
        return "\n".join(lines) + "\n\n"
    scope = f"steps whose first bad run is at or after {since}" if since else "every step"
    if failing:
        lines.append(f"**FAIL**: {len(failing)} confirmed regression(s){over} ({scope}).")
    else:
        lines.append(f"**PASS**: no confirmed regression{over} ({scope}, {runs} runs checked).")
    if steps:
        lines += [
            "",
            "| status | change | series | first bad run | build before → after | confidence "
            "| runs after |",
            "|---|--:|---|---|---|--:|--:|",
        ]
        for s in steps:
            status = s.kind if s.status == "confirmed" else f"suspect {s.kind}"
            mark = " ❌" if s in failing else ""
            cells = [
                f"{status}{mark}",
                f"{100 * s.change:+.1f} %",
                _md_cell(s.label),
                f"`{s.first_bad_run}`",
                _md_cell(f"{s.version_before or '–'} → {s.version_after or '–'}"),
                f"{s.confidence:.3f}",
                str(s.runs_after),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
