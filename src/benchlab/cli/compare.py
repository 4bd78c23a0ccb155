"""`bench compare`: runs side by side (--run-id), or two builds, revisions or machines test
by test (--by). Moved out of `cli.query`; it shares that module's flag and output helpers.
Only argparse is imported at module level (see `benchlab.cli`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchlab.cli.query import (
    EXIT_ROWS,
    add_filters,
    column_specs,
    display_rows,
    emit_sections,
    entries_out,
    filters_of,
    open_catalog,
    store_root,
    verb_parser,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_compare(subparsers)


# --- compare ------------------------------------------------------------------------------


def _register_compare(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = verb_parser(
        subparsers,
        "compare",
        "compare runs side by side, or two builds, revisions or machines test by test",
        "With --run-id: runs are labelled A, B, C ... in the order given; B/A is B's value "
        "over A's; a run id may be shortened to any prefix that names one run. "
        "With --by build|revision|machine (as llama.cpp's compare-llama-bench.py): two values "
        "A and B of the axis (--a, --b; default: the two newest builds or revisions present), "
        "and one row per test and metric (pp512, tg128 ..., the batch peak, latencies, memory) "
        "with the value under A, under B, the speedup of B over A (A/B for a lower-is-better "
        "metric) and a mark: + B better, - B worse (significant at 5%: Welch's t on each side's "
        "runs, or on a one-run side's own repeats, llama-bench's samples), ~ within noise, "
        "? one run a side and no repeats. A row's test is its metric's own (tg128 whatever "
        "the prompt size). --match exact (default) pairs one measurement, "
        "the full identity less the axis (for machines, less the build too); --match best pairs "
        "model, precision, backend and test, each side at its best settings (threads, batch, "
        "GPU layers ...), named in the row. Each side is the mean of its measurement's ok, "
        "unmarked runs at its newest version, newest segment only (the level `bench best` "
        "reports); the run ids are in --format json. The filters apply to --by. "
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
    parser.add_argument(
        "--match",
        choices=("exact", "best"),
        default="exact",
        help="with --by: exact (one measurement under both, the default) or best (model, "
        "precision and test, each side at its best settings)",
    )
    parser.add_argument(
        "--only-changed",
        action="store_true",
        help="with --by: only the rows marked + or - (a significant change)",
    )
    add_filters(parser, status_default="ok")
    parser.set_defaults(handler=run_compare)


def _label(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"R{i + 1}"


def run_compare(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.errors import QueryError

    if args.by is not None:
        if args.run_ids:
            raise QueryError("compare: give either --run-id or --by, not both")
        return _compare_axis(args)
    if args.a is not None or args.b is not None:
        raise QueryError("compare: --a and --b go with --by build|revision|machine")
    if args.match != "exact" or args.only_changed:
        raise QueryError("compare: --match and --only-changed go with --by build|revision|machine")
    return _compare_run_ids(args)


def _compare_run_ids(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.render import Section
    from benchlab.query.verbs import compare_runs

    result = compare_runs(open_catalog(), args.run_ids)
    labels = [_label(i) for i in range(len(result.runs))]
    legend = [{"label": label, **run} for label, run in zip(labels, result.runs, strict=False)]
    legend_columns = column_specs(
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
    _mbu_metric(result.runs, result.metrics)
    metric_rows = []
    for metric in result.metrics:
        row: dict[str, Any] = {"metric": metric["metric"]}
        if metric.get("better") == "lower":  # say so where the smaller number wins
            row["metric"] += f" ({metric['unit']}, lower is better)"
        for i, label in enumerate(labels):
            row[label] = metric.get("shown", metric["values"])[i]
            if i:
                row[f"{label}/{labels[0]}"] = metric["ratios"][i]
        metric_rows.append(row)
    sections = [
        Section(legend_columns, display_rows(legend, args.format), title="runs"),
        Section(column_specs(*specs), metric_rows, title="metrics"),
    ]
    metrics = [{k: v for k, v in m.items() if k != "shown"} for m in result.metrics]
    data = {"runs": entries_out(result.runs), "metrics": metrics}
    emit_sections(sections, args.format, data, args.wide)
    return 0


def _mbu_metric(runs: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> None:
    """Where decode is compared, an `mbu_pct` row after it, and where prefill is, an
    `mfu_pct` row: each run's MBU / MFU (ARCHITECTURE.md, How close to the hardware); "not
    measured" where a run's machine has no figure (null in json, never 0)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.roofline import DECODE, PREFILL, fleet_specs, json_mbu, mbu_at, mfu_at

    specs = None
    for rate, name, judge in ((DECODE, "mbu_pct", mbu_at), (PREFILL, "mfu_pct", mfu_at)):
        at = next((i for i, m in enumerate(metrics) if m["metric"] == rate), None)
        if at is None or all(value is None for value in metrics[at]["values"]):
            continue
        specs = fleet_specs(store_root()) if specs is None else specs
        shown = [judge(run, specs) for run in runs]
        if all(value is None for value in shown):  # no run states its model's size
            continue
        values = [json_mbu(value) for value in shown]
        first = values[0]
        metrics.insert(
            at + 1,
            {
                "metric": name,
                "unit": "%",
                "better": "higher",
                "values": values,
                "ratios": [None if v is None or not first else v / first for v in values],
                "verdicts": [None] * len(values),
                "shown": shown,
            },
        )


AXIS_SHARES = (("mbu", "MBU %"), ("mfu", "MFU %"))
"""`compare --by`'s roofline columns: MBU beside decode rows, MFU beside prefill rows."""


def _axis_mbu(catalog: Any, rows: list[dict[str, Any]]) -> list[str]:
    """`compare --by`: each decode row's MBU under A and under B (`mbu_a`, `mbu_b`; as
    `_mbu_metric`) and each prefill row's MFU (`mfu_a`, `mfu_b`). Returns the shares some
    row shows (`mbu`, `mfu`)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.read import full_entry
    from benchlab.query.roofline import DECODE, PREFILL, fleet_specs, mbu_at, mfu_at

    judged = [row for row in rows if row["metric"] in (DECODE, PREFILL)]
    if not judged:
        return []
    wanted = {row[k] for row in judged for k in ("run_a", "run_b")}
    runs = {e["run_id"]: full_entry(e) for e in catalog.runs if e["run_id"] in wanted}
    specs = fleet_specs(store_root())
    for row in judged:
        share, judge = ("mbu", mbu_at) if row["metric"] == DECODE else ("mfu", mfu_at)
        for side in ("a", "b"):
            run = runs.get(row[f"run_{side}"])
            value = row[side]
            row[f"{share}_{side}"] = judge(run, specs, value) if run and value else None
    return [
        share
        for share, _ in AXIS_SHARES
        if any(row.get(f"{share}_{side}") is not None for row in judged for side in ("a", "b"))
    ]


def _compare_axis(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.compare import changed, compare_axis
    from benchlab.query.render import Section

    catalog = open_catalog()
    result = _with_memo(
        lambda memo: compare_axis(
            catalog, filters_of(args), args.by, args.a, args.b, args.match, memo
        )
    )
    rows = [row for row in result.rows if changed(row)] if args.only_changed else result.rows
    with_mbu = _axis_mbu(catalog, rows)
    title = f"{args.by}: A = {result.a}, B = {result.b}"
    if args.match == "best":
        title += " (each side at its best settings)"
    if rows or args.format == "json":
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.query.roofline import json_mbu

        data = result.as_json()
        keys = ("mbu_a", "mbu_b", "mfu_a", "mfu_b")
        data["rows"] = [{**row, **{k: json_mbu(row[k]) for k in keys if k in row}} for row in rows]
        shown = [_unit_shown(row) for row in rows]
        specs = _axis_specs(args.by, result, rows)
        for share, heading in AXIS_SHARES:
            if share in with_mbu:
                at = specs.index(("speedup", "speedup", "ratio"))
                specs[at:at] = [
                    (f"{share}_a", f"{heading} {result.a}", "num"),
                    (f"{share}_b", f"{heading} {result.b}", "num"),
                ]
        columns = column_specs(*specs, drops=_AXIS_DROPS)
        section = Section(columns, shown, title=title)
        emit_sections([section], args.format, data, args.wide)
    alone = [(n, value) for n, value in ((result.only_a, result.a), (result.only_b, result.b)) if n]
    if alone:
        told = "; ".join(f"{n} only under {value}" for n, value in alone)
        print(f"bench: note: measurements not compared: {told}", file=sys.stderr)
    if not result.rows:
        hint = (
            "; `--match best` pairs each model at each side's best settings"
            if args.match == "exact"
            else ""
        )
        print(
            f"bench: no measurement was made under both {result.a} and {result.b}{hint}",
            file=sys.stderr,
        )
        return 1
    if not rows:
        print(f"bench: no significant change between {result.a} and {result.b}", file=sys.stderr)
        return 1
    return 0


def _with_memo(answer: Any) -> Any:
    """`answer(memo)` with the step memo of the store's private cache (`query.level`), as
    `bench best` keeps it: a history segmented once is not searched again."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.query.level import MEMO_NAME, load_memo, save_memo

    store = store_root()
    path = store.query_cache.parent / MEMO_NAME
    memo = load_memo(path, store.root)
    size = len(memo)
    result = answer(memo)
    save_memo(path, memo, size, store.root)
    return result


def _unit_shown(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its unit saying where the smaller number wins."""
    if row["better"] != "lower":
        return row
    return {**row, "unit": f"{row['unit']}, lower is better"}


_AXIS_DROPS = {
    "mbu_a": 7,
    "mbu_b": 7,
    "mfu_a": 7,
    "mfu_b": 7,
    "backend": 6,
    "revision": 5,
    "shape": 4,
    "threads": 3,
    "precision": 2,
    "unit": 1,
}
"""`compare --by` on a narrow terminal: the columns left out first (render.fit)."""


def _axis_specs(axis: str, result: Any, rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The columns of `compare --by`: those that tell its rows apart, then the values."""
    specs = [("model", "model", "text")]
    if axis != "machine":
        specs.append(("machine_id", "machine", "text"))
    specs.append(("precision", "precision", "text"))
    if len({row["backend"] for row in rows}) > 1:
        specs.append(("backend", "backend", "text"))
    if result.match == "best":
        specs.append(("settings", "settings", "text"))
    else:
        specs.append(("threads", "threads", "int"))
    specs.append(("shape", "shape", "text"))
    if any(row.get("revision") for row in rows):
        specs.append(("revision", "revision", "text"))
    specs.append(("test", "test", "text"))
    if any(row["unit"] != "tok/s" for row in rows):
        specs.append(("unit", "unit", "text"))
    repeated = any(row["pm_a"] is not None or row["pm_b"] is not None for row in rows)
    unit = "t/s " if all(row["unit"] == "tok/s" for row in rows) else ""
    specs.append(("a", f"{unit}{result.a}", "num"))
    if repeated:  # means of repeats: say how sure each side is
        specs.append(("pm_a", "±95%", "num"))
    specs.append(("b", f"{unit}{result.b}", "num"))
    if repeated:
        specs.append(("pm_b", "±95%", "num"))
    specs += [("speedup", "speedup", "ratio"), ("mark", "mark", "text")]
    return specs
