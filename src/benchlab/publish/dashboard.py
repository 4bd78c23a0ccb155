"""`bench dashboard`: the one-file dashboard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.identity import shape, version_label
from benchlab.layout import atomic_write_text
from benchlab.publish.charts import build_charts, chart_json, label, throughput
from benchlab.publish.data import PublicData
from benchlab.publish.links import Pages, page_names
from benchlab.publish.pages.home import newest_first
from benchlab.publish.pages.machines import machine_rows
from benchlab.publish.static import copy_assets
from benchlab.publish.tables import fmt_num, fmt_time, is_hole
from benchlab.publish.templating import environment


def run_row(run: Entry, pages: Pages) -> dict[str, Any]:
    """A run as a table row: who, what (threads and shape, so t1 and t2 are two rows), the
    version it ran on, how it went."""
    threads = run.get("threads")
    return {
        "time": fmt_time(run["timestamp"]),
        "machine_id": run["machine_id"],
        "machine_page": pages.machine(run["machine_id"]),
        "model": run["model"],
        "model_page": pages.model(run["model"]),
        "precision": run["precision"],
        "threads": "–" if threads is None else str(threads),
        "shape": shape(run) or "–",
        "series": label(run),
        "version": version_label(run) or "–",
        "mode": run.get("mode") or "–",
        "status": run.get("status", "ok"),
        "failure_kind": run.get("failure_kind"),
        "hole": is_hole(run),
        "tok": fmt_num(throughput(run)),
        "run_id": run["run_id"],
    }


def build_dashboard(data: PublicData, output: Path) -> Path:
    """`bench dashboard`: one static HTML page (inventory, recent runs, top charts, filters),
    with plotly.min.js and benchlab.js copied beside it once."""
    env = environment()
    pages = page_names(data)
    charts = build_charts(data, kinds=("throughput", "prefill-decode", "trend"), prefix="dash-")
    text = env.get_template("dashboard.html.j2").render(
        charts=charts,
        chart_json=lambda c: Markup(chart_json(c)),
        last_updated=fmt_time(data.catalog.last_updated),
        machines=machine_rows(data, pages),
        recent=[run_row(r, pages) for r in newest_first(data.runs)[:100]],
    )
    atomic_write_text(output, text)
    copy_assets(output.parent)
    return output
