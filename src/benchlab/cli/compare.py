"""`bench compare`: runs side by side (--run-id), or two builds, revisions or machines test
by test (--by). Moved out of `cli.query`; it shares that module's flag and output helpers.
Only argparse is imported at module level (see `benchlab.cli`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchlab.cli.query import (
    EXIT_ROWS,
    _add_filters,
    _catalog,
    _columns,
    _display,
    _emit,
    _entries_out,
    _filters,
    _parser,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_compare(subparsers)


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
    from benchlab.query.compare import compare_axis
    from benchlab.query.render import Section

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
