"""The compare page: `bench compare --by` for pairs of machines, builds and revisions, each
pair a small script the page loads when picked (assets/compare.js draws it), and the cost
table.

The rows are `query.compare.compare_pair`'s own, over the same ok runs and by the same rule
for which repeats count (`query.compare.side_values`) as `bench compare --by`, so the page and
the CLI print the same numbers for one comparison (ARCHITECTURE.md, Compare). Every row of a
pair is in its script: the page filters, sorts and pages through all of them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.publish.charts import build_charts, cost_rows
from benchlab.publish.context import SiteContext
from benchlab.publish.tables import fmt_num
from benchlab.publish.templating import json_script

COST_LIMIT = 100
COMPARE_VALUES = 10
"""Machines (those with the most runs), builds or revisions (the newest) offered per axis;
the page names how many more there are, and `bench compare --by` compares any of them."""
COMPARE_FIELDS = (
    "model", "machine_id", "precision", "backend", "threads", "shape", "test", "metric", "unit",
    "better", "a", "b", "speedup", "pm_a", "pm_b", "mark", "settings_a", "settings_b",
)  # fmt: skip
MODES = {"machine": ("best", "exact"), "build": ("exact",), "revision": ("exact",)}
"""The matches offered per axis, the default first: machines in a real fleet rarely share
every setting, so their default is each side at its best settings."""


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
        index=Markup(json_script("BENCHLAB_CMP_INDEX", "index", index)),
        has_pairs=bool(index["axes"]),
        chart=cost,
        plotly=not cost.empty,
        cost_rows=cost_table,
    )


def compare_data(site: SiteContext) -> dict[str, Any]:
    """Every pair among the offered values of each axis, in each of its matches, as one
    script per pair and match; returns the index the page embeds."""
    from benchlab.query.compare import gather
    from benchlab.query.filters import chronological

    ok_runs = chronological(run for history in site.groups.ok_of.values() for run in history)
    by_id = {r["run_id"]: r for r in ok_runs}
    index: dict[str, Any] = {"axes": []}
    for axis, modes in MODES.items():
        # One segmentation per history window, whichever axis or page asks first.
        sides = gather(ok_runs, axis, site.level_memo, ordered=True)
        values = sides.present
        if len(values) < 2:
            continue
        if axis == "machine":
            counts = Counter(r["machine_id"] for r in ok_runs)
            chosen = sorted(sorted(values, key=lambda v: (-counts[v], v))[:COMPARE_VALUES])
        else:
            chosen = values[-COMPARE_VALUES:]
        # A row names its test from its newest run's test list, which light entries leave
        # out: those runs made full first, as `bench compare` reads them.
        offered = set(chosen)
        site.data.upgrade(runs[-1] for (v, _), runs in sides.repeats.items() if v in offered)
        pairs = {mode: _pairs(site, sides, chosen, mode, by_id) for mode in modes}
        if any(pairs.values()):
            index["axes"].append(
                {
                    "axis": axis,
                    "values": chosen,
                    "left_out": len(values) - len(chosen),
                    "modes": list(modes),
                    "pairs": pairs,
                }
            )
    return index


def _pairs(
    site: SiteContext, sides: Any, chosen: list[str], mode: str, by_id: dict[str, Entry]
) -> list[str]:
    """Write each pair's script that has rows; the pair keys written (`i-j`, i < j)."""
    from benchlab.query.compare import compare_pair

    written = []
    for i, a in enumerate(chosen):
        for j in range(i + 1, len(chosen)):
            result = compare_pair(sides, a, chosen[j], mode)
            if result.rows:
                key = f"{i}-{j}"
                _pair_file(site, f"{sides.axis}-{mode}-{key}", result, by_id)
                written.append(key)
    return written


def _pair_file(site: SiteContext, pair: str, result: Any, by_id: dict[str, Entry]) -> None:
    """`bl/compare/<axis>-<match>-<i>-<j>.js`: one pair's rows, all of them, each linking
    the newest run of both sides."""
    rows = []
    for row in result.rows:
        run_a, run_b = by_id.get(row["run_a"]), by_id.get(row["run_b"])
        rows.append(
            {
                **{k: row.get(k) for k in COMPARE_FIELDS if row.get(k) is not None},
                "n_a": (row.get("stats_a") or {}).get("n"),
                "n_b": (row.get("stats_b") or {}).get("n"),
                "link_a": site.links.run(run_a, "") if run_a else None,
                "link_b": site.links.run(run_b, "") if run_b else None,
            }
        )
    site.files[f"bl/compare/{pair}.js"] = json_script(
        "BENCHLAB_CMP",
        pair,
        {
            "a": result.a,
            "b": result.b,
            "match": result.match,
            "rows": rows,
            "only_a": result.only_a,
            "only_b": result.only_b,
        },
    )
