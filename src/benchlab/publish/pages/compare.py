"""The compare page: `bench compare --by` for pairs of machines, builds and
revisions, each pair a small script the page loads when picked, and the cost table."""

from __future__ import annotations

from collections import Counter
from typing import Any

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.identity import VERSION_FIELDS
from benchlab.publish.charts import build_charts, cost_rows
from benchlab.publish.context import SiteContext
from benchlab.publish.tables import fmt_num
from benchlab.publish.templating import json_script
from benchlab.query.filters import Filters

COST_LIMIT = 100
COMPARE_VALUES = 6
COMPARE_ROWS = 400
COMPARE_REPEATS = 5
"""Newest repeats of a measurement the compare page averages (`bench compare` takes all)."""
COMPARE_FIELDS = (
    "model", "machine_id", "precision", "backend", "threads", "shape", "test", "a", "b", "speedup",
    "pm_a", "pm_b",
)  # fmt: skip


def compare_page(site: SiteContext) -> None:
    index = compare_data(site)
    latest = list(site.latest.values())
    cost_table = [
        {
            "machine": row["machine"],
            "machine_page": site.pages.machine(row["machine"]),
            "model": row["model"],
            "model_page": site.pages.model(row["model"]),
            "precision": row["precision"],
            "threads": "–" if row["threads"] is None else str(row["threads"]),
            "version": row["version"] or "–",
            "tok": fmt_num(row["tok_per_sec"]),
            "price": f"${row['cost_per_hour']:,.2f}",
            "usd": f"${row['usd_per_million_tokens']:,.4f}",
        }
        for row in cost_rows(latest, site.data)[:COST_LIMIT]
    ]
    [cost] = build_charts(site.data, kinds=("cost",), prefix="compare-", runs=latest)
    site.add_charts([cost])
    site.page(
        "compare.md",
        "compare.md.j2",
        root="",
        index=Markup(json_script("BENCHLAB_COMPARE_INDEX", "index", index)),
        has_pairs=bool(index["axes"]),
        repeats=COMPARE_REPEATS,
        chart=cost,
        cost_rows=cost_table,
    )


def compare_data(site: SiteContext) -> dict[str, Any]:
    """The compare page's tables, computed by `query.compare.compare_axis` (the function
    behind `bench compare --by`) for every pair among the newest builds and revisions
    and among the machines with the most runs; each pair is a small script the page
    loads when picked. Returns the index the page embeds."""
    from benchlab.catalog.read import LoadedCatalog
    from benchlab.errors import QueryError
    from benchlab.query.compare import axis_values, compare_axis

    ok_runs = _newest_repeats(site)
    by_id = {r["run_id"]: r for r in ok_runs}
    catalog = LoadedCatalog(path=site.data.catalog.path, runs=ok_runs)
    index: dict[str, Any] = {"axes": []}
    for axis in ("machine", "build", "revision"):
        values = axis_values(ok_runs, axis)
        if len(values) < 2:
            continue
        if axis == "machine":
            counts = Counter(r["machine_id"] for r in ok_runs)
            chosen = sorted(sorted(values, key=lambda v: (-counts[v], v))[:COMPARE_VALUES])
        else:
            chosen = values[-COMPARE_VALUES:]
        pairs: list[str] = []
        for i, a in enumerate(chosen):
            for j in range(i + 1, len(chosen)):
                try:
                    result = compare_axis(catalog, Filters(), axis, a, chosen[j])
                except QueryError:
                    continue
                if not result.rows:
                    continue
                pair = f"{axis}-{i}-{j}"
                _pair_file(site, pair, result, by_id)
                pairs.append(pair)
        if pairs:
            # compare_axis's own default for builds and revisions: the newest two.
            default = pairs[-1] if axis != "machine" else pairs[0]
            index["axes"].append(
                {"axis": axis, "values": chosen, "pairs": pairs, "default": default}
            )
    return index


def _newest_repeats(site: SiteContext) -> list[Entry]:
    """The ok runs the compare page reads, in full, oldest first. compare_axis averages each
    side's repeats (the ok runs of one exact identity); a page must stay bounded at any
    catalog size, so each identity brings only its newest COMPARE_REPEATS runs: the tables
    are compare_axis's own over those."""
    by_identity: dict[tuple[Any, ...], list[Entry]] = {}
    for sid, history in site.groups.ok_of.items():
        for run in history:
            key = (sid, *map(run.get, VERSION_FIELDS))  # scalars: the reader checks
            by_identity.setdefault(key, []).append(run)
    return site.data.full(
        sorted(
            (run for runs in by_identity.values() for run in runs[-COMPARE_REPEATS:]),
            key=lambda r: (r["timestamp"], r["run_id"]),
        )
    )


def _pair_file(site: SiteContext, pair: str, result: Any, by_id: dict[str, Entry]) -> None:
    """`bl/compare/<pair>.js`: one pair's `compare_axis` result (its first COMPARE_ROWS
    rows, each linking the run pages of both sides)."""
    rows = []
    for row in result.rows[:COMPARE_ROWS]:
        run_a, run_b = by_id.get(row["run_a"]), by_id.get(row["run_b"])
        rows.append(
            {
                **{k: row.get(k) for k in COMPARE_FIELDS},
                "n_a": (row.get("stats_a") or {}).get("n"),
                "n_b": (row.get("stats_b") or {}).get("n"),
                "link_a": site.links.run(run_a, "") if run_a else None,
                "link_b": site.links.run(run_b, "") if run_b else None,
            }
        )
    site.files[f"bl/compare/{pair}.js"] = json_script(
        "BENCHLAB_COMPARE",
        pair,
        {
            "a": result.a,
            "b": result.b,
            "rows": rows,
            "hidden": max(0, len(result.rows) - COMPARE_ROWS),
            "only_a": result.only_a,
            "only_b": result.only_b,
        },
    )
