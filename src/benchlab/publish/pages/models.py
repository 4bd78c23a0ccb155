"""A page per model: the fastest machines per precision, then its charts."""

from __future__ import annotations

import html
from typing import Any

from benchlab.identity import shape, version_label
from benchlab.ids import slug
from benchlab.metrics import DECODE, HEADLINE_ORDER, PEAK, REGISTRY
from benchlab.publish.charts import scaling_chart, threads_chart
from benchlab.publish.charts.levels import machine_chart, present_metrics, tails
from benchlab.publish.charts.roofline import PREFILL_ROOF, roofline_chart
from benchlab.publish.context import SiteContext, best_per_machine
from benchlab.publish.tables import (
    NOT_MEASURED,
    Table,
    cell,
    cell_level,
    cell_num,
    fmt_time,
    link,
)

LEVEL_COLUMNS = tuple((m, REGISTRY[m].heading) for m in HEADLINE_ORDER)
"""The level columns of a model page's tables, those some row measured kept."""


def model_pages(site: SiteContext, which: slice = slice(None)) -> list[Any]:
    """The fastest machines per precision (sorted tables), then the charts: every machine at
    its best configuration for any metric the runs carry (a selector), batch scaling,
    decode by thread count (a numeric axis), history. `which`: the models (in the site's
    order) whose pages to render, so two processes can share them out; their nav."""
    nav = []
    for model, name in list(site.pages.models.items())[which]:
        mine = site.groups.by_model.get(model, [])
        latest_map = site.latest_of(model)
        latest = list(latest_map.values())
        site.data.upgrade(latest)  # the scaling chart reads their batch curves
        prefix = f"model-{name.removesuffix('.md')}-"
        histories = [site.groups.ok_of_model[(model, sid)] for sid in latest_map]
        charts = [
            machine_chart(
                tails(histories), prefix + "throughput", present_metrics(latest), site.level_memo
            ),
            scaling_chart(latest, site.data.store_root, prefix + "scaling"),
            threads_chart(latest, prefix + "threads"),
            site.trend(latest_map, prefix + "trend", model),
        ]  # fmt: skip
        # A scaling chart with no curve of two batch sizes shows no scaling (llama-bench
        # measures batch 1 alone): left out.
        charts = [c for c in charts if not (c.slug == prefix + "scaling" and c.empty)]
        # Each roofline only where some machine has its figure: nothing drawn at a guess.
        roofs = (
            roofline_chart(latest, site.data.specs, prefix + "roofline"),
            roofline_chart(latest, site.data.specs, prefix + "roofline-compute", PREFILL_ROOF),
        )
        charts += [roof for roof in roofs if not roof.empty]
        site.add_charts(charts)
        sections = []
        for precision in sorted({r["precision"] for r in latest}):
            best = best_per_machine(
                [h for h in histories if h[-1]["precision"] == precision],
                (PEAK.name, DECODE.name),
                site.level_memo,
                site.data.specs,
            )
            # A level column no row measured (a llama-bench fleet's batched peak) is left
            # out, so the table sorts by a column that has values.
            measured = [
                (metric, title) for metric, title in LEVEL_COLUMNS
                if any(cell_level(item, metric) != NOT_MEASURED for item in best)
            ] or list(LEVEL_COLUMNS[1:2])  # fmt: skip
            rows = [
                [
                    cell(site.machine_link(r["machine_id"], "../"), r["machine_id"]),
                    *(cell_level(item, metric, site.data.specs) for metric, _ in measured),
                    cell_num(item.level.n, 0),
                    cell_num(r.get("threads"), 0),
                    cell(shape(r) or "–"),
                    cell(r.get("backend") or "–"),
                    cell(version_label(r) or "–"),
                    cell(site.series_link(r, "../", "history")),
                    cell(link(site.links.run(r, "../"), fmt_time(r["timestamp"])),
                          r["timestamp"]),
                ]
                for item in best
                for r in (item.latest,)
            ]  # fmt: skip
            sections.append(
                {
                    "precision": precision,
                    "anchor": f"precision-{slug(precision)}",
                    "table": Table(
                        [
                            ("Machine", "text"),
                            *((title, "num") for _, title in measured),
                            ("Runs", "num"),
                            ("Threads", "num"),
                            ("Shape", "text"),
                            ("Backend", "text"),
                            ("Build", "text"),
                            ("Series", "text"),
                            ("Newest run (UTC)", "text"),
                        ],
                        rows,
                        sort="1:desc",
                        ident=f"fastest-{slug(precision)}",
                    ),
                }
            )
        site.page(
            f"models/{name}",
            "model.md.j2",
            root="../",
            model=model,
            ids=sorted({r.get("model_id") or "" for r in mine} - {""}),
            machines=sorted({r["machine_id"] for r in mine}),
            summary={
                "ok": sum(len(runs) for runs in
                          (site.groups.ok_of_model[(model, sid)] for sid in latest_map)),
                "failed": sum(r.get("status") == "failed" for r in mine),
                "machines": len({r["machine_id"] for r in mine}),
                "precisions": ", ".join(sorted({r["precision"] for r in mine})) or "–",
            },
            charts=charts,
            sections=sections,
        )  # fmt: skip
        nav.append({html.escape(model): f"models/{name}"})
    return nav
