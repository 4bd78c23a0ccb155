"""The fleet health page: machines gone silent, runs stamped in the future, and each
machine's runs by outcome."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.publish.charts import Chart, base_layout
from benchlab.publish.context import WINDOW_DAYS, SiteContext
from benchlab.publish.data import PublicData
from benchlab.publish.detection import (
    FUTURE_TOLERANCE,
    build_time,
    future_runs,
    parse_stamp,
    window,
)
from benchlab.publish.links import Pages
from benchlab.publish.tables import fmt_time, is_hole, link


def health_rows_and_chart(
    data: PublicData, pages: Pages, by_machine: Mapping[str, Sequence[Entry]]
) -> tuple[list[dict[str, Any]], Chart]:
    """A row per machine and the outcomes chart, from each machine's runs (`Groups`)."""
    rows = []
    for machine_id in data.machine_ids():
        runs = by_machine.get(machine_id, [])
        holes, failed, ok = 0, [], []
        for r in runs:  # one pass: a million runs cost a second a pass
            if is_hole(r):
                holes += 1
            elif r.get("status") == "failed":
                failed.append(r)
            if r.get("status", "ok") == "ok":
                ok.append(r)
        data.upgrade(failed)  # their failure kinds
        kinds = Counter(r.get("failure_kind") or "unknown" for r in failed)
        rows.append(
            {
                "id": machine_id,
                "page": pages.machine(machine_id),
                "runs": len(runs),
                "ok": len(ok),
                "failed": len(failed),
                "holes": holes,
                "kinds": ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "–",
                "rate": f"{100 * len(ok) / len(runs):.0f} %" if runs else "–",
                "last_run": fmt_time(max((r["timestamp"] for r in runs), default=None)),
                "last_ok": fmt_time(max((r["timestamp"] for r in ok), default=None)),
            }
        )
    traces = []
    for name, key, color in (
        ("ok", "ok", "#3a9d5d"),
        ("failed", "failed", "#c8423c"),
        ("hole", "holes", "#b8913a"),
    ):
        traces.append(
            {
                "type": "bar",
                "name": name,
                "x": [r["id"] for r in rows],
                "y": [r[key] for r in rows],
                "marker": {"color": color},
                "customdata": [[r["id"], "", "", "", "", r["runs"]] for r in rows],
                "hovertemplate": "<b>%{x}</b><br>" + name + ": %{y} of %{customdata[5]} runs"
                "<extra></extra>",
            }
        )
    layout = base_layout("Runs by outcome", "", "Runs", barmode="stack")
    chart = Chart(
        "health-outcomes",
        "Runs by outcome",
        {"data": traces, "layout": layout},
        rows,
        ("id", "runs", "ok", "failed", "holes"),
        note="No runs yet.",
    )
    return rows, chart


FUTURE_LIMIT = 20
SILENT_DAYS = WINDOW_DAYS
"""A machine with no run in this many days up to the catalog's newest run is silent."""


def silent_machines(
    by_machine: Mapping[str, Sequence[Entry]], since: str | None, newest: str | None
) -> list[dict[str, Any]]:
    """Machines whose newest run (of any outcome) is older than `since`, the start of the
    `SILENT_DAYS` up to the catalog's newest honest run (`detection.window`: a wrong clock
    moves neither end), longest silent first: a machine that stopped reporting is named,
    not left to look healthy on old runs."""
    end = parse_stamp(newest) if newest else None
    if since is None or end is None:
        return []
    out = []
    for machine, runs in by_machine.items():
        last = max((r["timestamp"] for r in runs), default=None)
        moment = parse_stamp(last) if last else None
        if last is None or moment is None or last >= since:
            continue
        out.append({"machine": machine, "last": fmt_time(last), "days": (end - moment).days})
    return sorted(out, key=lambda row: (-row["days"], row["machine"]))


def health_page(site: SiteContext) -> None:
    """Each machine's runs by outcome, and their chart; first, any run stamped in the
    future (a wrong clock), which the home page's window sets aside (`detection.window`)."""
    rows, chart = health_rows_and_chart(site.data, site.pages, site.groups.by_machine)
    site.add_charts([chart])
    now = build_time()
    ahead = future_runs(site.groups.all_of.values(), now)
    since, newest = window(site.groups.all_of.values(), SILENT_DAYS, now)
    silent = silent_machines(site.groups.by_machine, since, newest)
    for row in silent:
        row["page"] = site.pages.machine(row["machine"])
    future = [
        {"machine": r["machine_id"], "page": site.pages.machine(r["machine_id"]),
         "stamp": fmt_time(r["timestamp"]), "run": link(site.links.run(r, ""), "details")}
        for r in ahead[:FUTURE_LIMIT]
    ]  # fmt: skip
    site.page(
        "health.md",
        "health.md.j2",
        root="",
        rows=rows,
        chart=chart,
        future=future,
        future_total=len(ahead),
        silent=silent,
        silent_days=SILENT_DAYS,
        newest=fmt_time(newest),
        future_machines=sorted({r["machine_id"] for r in ahead}),
        tolerance_hours=int(FUTURE_TOLERANCE.total_seconds() // 3600),
    )
