"""A page per machine: its redacted specs, its series at their current level, its history."""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.identity import series_of, version_label
from benchlab.metrics import HEADLINE_ORDER, REGISTRY
from benchlab.publish.charts import label, latest_by_series
from benchlab.publish.charts.base import STYLE_DIMS, describe
from benchlab.publish.charts.levels import machine_chart, present_metrics, tails
from benchlab.publish.charts.roofline import PREFILL_ROOF, roofline_chart
from benchlab.publish.context import HISTORY_RUNS, NO_OUTCOMES, SiteContext
from benchlab.publish.data import PublicData
from benchlab.publish.hooks import SEARCH_ENTRIES
from benchlab.publish.links import Pages
from benchlab.publish.tables import NOT_MEASURED, Table, cell, cell_level, cell_num, fmt_time, link
from benchlab.query.level import series_levels_of
from benchlab.redact import scrub_public

SERIES_LIMIT = 200
LEVEL_COLUMNS = tuple((m, REGISTRY[m].heading) for m in HEADLINE_ORDER)
"""The level columns of a machine's series table, those some series measured kept."""
LEVEL_METRICS = [m for m, _ in LEVEL_COLUMNS]


def specs_rows(data: PublicData, machine_id: str) -> list[tuple[str, str]]:
    """The redacted specs a machine page shows, most telling first."""
    rows: list[tuple[str, str]] = []
    inv = data.inventory.machines.get(machine_id)
    spec = data.specs.get(machine_id)
    summary = data.catalog.machines.get(machine_id)
    if spec is not None:
        public = scrub_public(spec.model_dump(mode="json", exclude_none=True))
        hw = public.get("hardware", {})
        cpu = hw.get("cpu", {})
        cores = "/".join(
            str(cpu[k]) for k in ("cores_physical", "cores_logical") if cpu.get(k) is not None
        )
        rows.append(
            ("CPU", " ".join(x for x in (cpu.get("model", ""), cores and f"({cores} cores)") if x))
        )
        if cpu.get("architecture"):
            rows.append(("Architecture", cpu["architecture"]))
        for gpu in hw.get("gpu", []):
            mem = f" ({gpu['memory_gb']:g} GB)" if gpu.get("memory_gb") is not None else ""
            rows.append(("GPU", f"{gpu.get('model', '')}{mem}"))
        if hw.get("ram_gb") is not None:
            rows.append(("RAM", f"{hw['ram_gb']:g} GB"))
        storage = hw.get("storage") or {}
        if storage:
            size = f"{storage['size_gb']:g} GB " if storage.get("size_gb") is not None else ""
            rows.append(("Storage", f"{size}{storage.get('type') or ''}".strip()))
        os_ = public.get("os", {})
        rows.append(("OS", " ".join(str(os_[k]) for k in ("name", "version") if os_.get(k))))
        if os_.get("kernel"):
            rows.append(("Kernel", os_["kernel"]))
        for key, value in sorted(public.get("runtime", {}).items()):
            if value:
                rows.append((key, str(value)))
        if public.get("tags"):
            rows.append(("Tags", ", ".join(public["tags"])))
        rows.append(("Registered", fmt_time(public.get("registered_at"))))
    elif inv is not None:
        public = scrub_public(inv.model_dump(mode="json", exclude_none=True))
        for name, key in (
            ("CPU", "cpu_model"),
            ("Cores", "cpu_cores"),
            ("Architecture", "arch"),
            ("GPU", "gpu"),
            ("RAM (GB)", "ram_gb"),
            ("OS", "os"),
        ):
            if public.get(key) is not None:
                rows.append((name, str(public[key])))
        if public.get("tags"):
            rows.append(("Tags", ", ".join(public["tags"])))
    elif summary is not None:
        for name, key in (("OS", "os"), ("Architecture", "arch"), ("GPU", "gpu")):
            value = summary.get(key)
            if value:
                rows.append((name, str(value)))
    price = data.cost_per_hour(machine_id)
    rows.append(("Cost", "–" if price is None else f"${price:,.2f} per hour"))
    return [(k, v if v else "–") for k, v in rows]


def machine_rows(
    data: PublicData, pages: Pages, by_machine: Mapping[str, Sequence[Entry]] | None = None
) -> list[dict[str, Any]]:
    """A row per machine; `by_machine` (each machine's runs, oldest first) saves two
    passes over every run."""
    if by_machine is None:
        runs_by_machine = Counter(r["machine_id"] for r in data.runs)
        last: dict[str, str] = {}
        for run in data.runs:
            if run["timestamp"] > last.get(run["machine_id"], ""):
                last[run["machine_id"]] = run["timestamp"]
    else:
        runs_by_machine = Counter({m: len(runs) for m, runs in by_machine.items()})
        last = {m: runs[-1]["timestamp"] for m, runs in by_machine.items() if runs}
    rows = []
    for machine_id in data.machine_ids():
        inv = data.inventory.machines.get(machine_id)
        summary = data.catalog.machines.get(machine_id) or {}
        spec = data.specs.get(machine_id)
        price = data.cost_per_hour(machine_id)
        gpu = (inv and inv.gpu) or summary.get("gpu")
        if not gpu and spec is not None and spec.hardware.gpu:
            gpu = ", ".join(g.model for g in spec.hardware.gpu)
        ram = (inv and inv.ram_gb) or (spec and spec.hardware.ram_gb)
        rows.append(
            {
                "id": machine_id,
                "page": pages.machine(machine_id),
                "os": (inv and inv.os) or summary.get("os") or (spec and spec.os.name) or "–",
                "arch": (inv and inv.arch)
                or summary.get("arch")
                or (spec and spec.hardware.cpu.architecture)
                or "–",
                "cpu": (inv and inv.cpu_model) or (spec and spec.hardware.cpu.model) or "–",
                "gpu": gpu or "–",
                "ram": "–" if not ram else f"{ram:g} GB",
                "cost": "–" if price is None else f"${price:,.2f}/h",
                "runs": runs_by_machine.get(machine_id, 0),
                "last_run": fmt_time(last.get(machine_id)),
            }
        )
    return rows


def _number_in(text: str) -> str:
    """The sort key of "16 GB" or "$1,234.50/h": its number ("" sorts last)."""
    found = text.lstrip("$").split(" ")[0].split("/")[0].replace(",", "")
    try:
        return f"{float(found):.6g}"
    except ValueError:
        return ""


def machines_table(rows: Sequence[Mapping[str, Any]], root: str) -> Table:
    """`machine_rows` as a sortable table (a card per machine on a phone), each machine
    linked to its page."""
    columns = [("Machine", "text"), ("OS", "text"), ("Arch", "text"), ("CPU", "text"),
               ("GPU", "text"), ("RAM", "num"), ("Cost", "num"), ("Runs", "num"),
               ("Last run (UTC)", "text")]  # fmt: skip
    cells = [
        [cell(link(f"{root}machines/{r['page'][:-3]}.html", r["id"]), r["id"]),
         cell(r["os"]), cell(r["arch"]), cell(r["cpu"]), cell(r["gpu"]),
         cell(r["ram"], _number_in(r["ram"])),
         cell(r["cost"], _number_in(r["cost"])), cell(r["runs"], r["runs"]), cell(r["last_run"])]
        for r in rows
    ]  # fmt: skip
    return Table(columns, cells, sort="0:asc", ident="machine-list")


def machine_pages(site: SiteContext) -> list[Any]:
    nav = []
    sids_of: dict[str, list[str]] = {}
    for sid, run in site.latest.items():
        sids_of.setdefault(run["machine_id"], []).append(sid)
    counts = site.outcomes
    for machine_id in site.data.machine_ids():
        mine = site.groups.by_machine.get(machine_id, [])
        sids = sids_of.get(machine_id, [])
        latest = [site.latest[sid] for sid in sids]
        prefix = f"machine-{machine_id}-"
        window = tails([site.groups.ok_of[sid] for sid in sids])
        offered = present_metrics(latest)
        # Each series at its current level, as `bench best` answers (ARCHITECTURE.md, The
        # current level): the newest segment's mean ± its interval, not the newest run. The
        # chart and the table read the same levels, found once.
        by_metric = series_levels_of(
            window, list(dict.fromkeys([*offered, *LEVEL_METRICS])), site.level_memo
        )
        charts = [
            machine_chart(window, prefix + "throughput", offered, site.level_memo, known=by_metric),
            site.trend(sids, prefix + "trend"),
        ]
        # Each roofline only where this machine has its figure: nothing drawn at a guess.
        roofs = (
            roofline_chart(latest, site.data.specs, prefix + "roofline"),
            roofline_chart(latest, site.data.specs, prefix + "roofline-compute", PREFILL_ROOF),
        )
        charts += [roof for roof in roofs if not roof.empty]
        site.add_charts(charts)
        levels = {
            metric: {item.series: item for item in by_metric[metric]} for metric in LEVEL_METRICS
        }
        # The level columns some series measured (a llama-bench machine has no batched
        # peak), the table sorted by the first of them: never by a column of blanks.
        measured = [(m, title) for m, title in LEVEL_COLUMNS if levels[m]] or [LEVEL_COLUMNS[1]]
        series_rows = []
        for run in latest_by_series(latest).values():
            sid = series_of(run)
            series_rows.append(
                [
                    cell(site.series_link(run, "../", label(run, machine=False)), label(run)),
                    *(
                        cell_level(levels[metric][sid], metric, site.data.specs)
                        if sid in levels[metric]
                        else NOT_MEASURED
                        for metric, _ in measured
                    ),
                    cell(version_label(run) or "–"),
                    cell_num(len(site.groups.ok_of[sid]), 0),
                    cell(
                        link(site.links.run(run, "../"), fmt_time(run["timestamp"])),
                        run["timestamp"],
                    ),
                ]
            )
        series_rows.sort(key=lambda row: -float(row[1][1] or 0))
        newest_runs = mine[::-1]
        outcome = counts.get(machine_id, NO_OUTCOMES)
        site.page(
            f"machines/{site.pages.machine(machine_id)}",
            "machine.md.j2",
            root="../",
            machine_id=machine_id,
            models=sorted({r["model"] for r in latest}) or ["–"],
            summary={
                "runs": len(mine),
                "ok": outcome["ok"],
                "failed": outcome["failed"],
                "holes": outcome["holes"],
                "last_run": fmt_time(newest_runs[0]["timestamp"] if newest_runs else None),
            },
            specs=specs_rows(site.data, machine_id),
            charts=charts,
            series=Table(
                [
                    ("Series", "text"),
                    *((title, "num") for _, title in measured),
                    ("Build", "text"),
                    ("Runs", "num"),
                    ("Newest run (UTC)", "text"),
                ],
                series_rows[:SERIES_LIMIT],
                sort="1:desc",
                hidden=max(0, len(series_rows) - SERIES_LIMIT),
            ),
            history=site.runs_table(newest_runs, "../", HISTORY_RUNS, machine=False),
        )
        nav.append({html.escape(machine_id): f"machines/{site.pages.machine(machine_id)}"})
    site.files[SEARCH_ENTRIES] = json.dumps(series_entries(site), sort_keys=True) + "\n"
    return nav


SEARCH_BUILDS = 50
"""The most builds a series' search entry names (its newest): the index stays small."""


def series_entries(site: SiteContext) -> list[dict[str, str | float]]:
    """A search entry per series with a page (`publish.hooks.on_post_build` adds them to
    the index: a series page's own text is numbers): its label as title; its id, machine,
    model and label (short and in words) as text, so `t2`, `2 threads` and `s1a2b…` all
    find it; and the backend builds its runs measured (newest first, up to
    `SEARCH_BUILDS`), so a build (`b4520`) finds the series that ran it."""
    entries: list[dict[str, str | float]] = []
    for sid in sorted(site.series_pages):
        run = site.latest[sid]
        words = describe(run, STYLE_DIMS)
        page = site.series_pages[sid]  # a page name (`x.md`) or the one page's address
        text = (
            f"Series {sid}: {label(run)}. {words}. Machine {run['machine_id']}, "
            f"model {run['model']}."
        )
        builds = list(
            dict.fromkeys(
                str(r["backend_version"])
                for r in reversed(site.groups.ok_of.get(sid, [run]))
                if r.get("backend_version")
            )
        )
        if builds:
            text += f" Builds: {', '.join(builds[:SEARCH_BUILDS])}."
        entries.append(
            {  # the search shows title and text as HTML: user strings go in as entities
                "location": f"series/{page[:-3]}.html" if page.endswith(".md") else page,
                "title": html.escape(label(run)),
                "text": html.escape(text),
                "boost": 0.5,  # below the machine and model pages (`search.boost: 2`)
            }
        )
    return entries
