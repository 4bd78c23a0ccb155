"""The series page: ONE page (`series.html?s=<series id>`) that draws any series from its
data file, like the run page. Rendering a Markdown page per series made MkDocs build
hundreds of pages whose every copy carried the whole theme and nav; the data files are
written once and hold only the series' own numbers (ARCHITECTURE.md, Publishing and
redaction).

`bl/series/<series id>.js` holds asv's per-benchmark graph for the series (its points, each
segment's level inside a noise band from the segment's own spread, marked outliers and
unstable runs, the detector's steps), its current level, the newest run's gate verdict, its
steps and runs tables and its identity. `bl/series/index.js` (and `index.json`, for hooks
such as search) lists every series: id, label, address, machine, model, precision."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.detect.stats import is_outlier
from benchlab.detect.steps import Step
from benchlab.identity import SERIES_FIELDS, version_label
from benchlab.machines.roofline import entry_bytes_per_token, entry_flops_per_token
from benchlab.metrics import (
    DECODE,
    DEFAULT_MAX_CV,
    DEFAULT_METRIC,
    HEADLINE_ORDER,
    PEAK,
    PREFILL,
    REGISTRY,
    unit_of,
)
from benchlab.publish.charts import Chart, builds_chart, downsample, label, series_chart
from benchlab.publish.charts.output import PLOTLY_CONFIG
from benchlab.publish.context import HISTORY_RUNS, STEPS_LIMIT, SiteContext
from benchlab.publish.detection import judged_metrics, open_regressions
from benchlab.publish.links import series_file
from benchlab.publish.measures import MEASURES, UNSTABLE_TITLE, is_unstable, measure_rows
from benchlab.publish.pages.runs import gate_of
from benchlab.publish.tables import Table, is_hole, metric_name, neg, steps_table
from benchlab.publish.templating import json_script
from benchlab.publish.workers import in_workers, part_of
from benchlab.query.level import StepMemo, current_level, with_repeats
from benchlab.query.roofline import NOT_MEASURED, judge_entry, judge_prefill_entry

POINT_FIELDS = 8
"""A chart point's shared customdata (`charts.base.point_data` less chart extras): traces
whose points hold only these refer to rows of the file's `points` table instead (`cdi`)."""


def identity_value(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def drawn_runs(history: Sequence[Entry], steps: Sequence[Step], metric: str) -> list[Entry]:
    """The runs `series_chart(history, steps, ..., metric)` draws as points."""
    with_metric = [r for r in history if r.get(metric) is not None and not is_outlier(r)]
    drawn = downsample(with_metric)
    wanted = {s.first_bad_run for s in steps}
    present = {r["run_id"] for r in drawn}
    return drawn + [r for r in with_metric if r["run_id"] in wanted and r["run_id"] not in present]


def series_page(site: SiteContext) -> None:
    """The one series page (its script draws whichever series the address names)."""
    site.page("series.md", "series.md.j2", root="")


def series_index(site: SiteContext) -> None:
    """The series index, for search and the series list."""
    index = [series_entry(site, sid) for sid in site.series_pages]
    site.files["bl/series/index.js"] = json_script("BENCHLAB_SERIES_INDEX", "all", index)
    # JSON for hooks (search entries); < > & escaped as in every data script.
    text = json.dumps({"series": index}, sort_keys=True, ensure_ascii=True, indent=0)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    site.files["bl/series/index.json"] = text + "\n"


def series_part(site: SiteContext, part: int, parts: int) -> None:
    """A data file for each series `workers.part_of` gives to `part` of `parts` (in
    `workers`): two processes each render theirs (`workers.beside`'s `After`), or one
    renders every series in its workers."""
    site.steps_by_series = {}
    for st in site.steps:
        site.steps_by_series.setdefault(st.series, []).append(st)
    sids = [sid for sid in site.series_pages if part_of(sid, parts) == part]
    in_workers(site, series_data, sids)


def series_entry(site: SiteContext, sid: str) -> dict[str, Any]:
    """One row of the series index: what search and the series list need."""
    newest = site.latest[sid]
    return {
        "id": sid,
        "label": label(newest),
        "url": site.series_pages[sid],
        "machine": newest["machine_id"],
        "model": newest["model"],
        "precision": newest.get("precision"),
        "runs": len(site.groups.ok_of[sid]),
    }


def series_data(site: SiteContext, sid: str) -> None:
    """`bl/series/<sid>.js`: everything the series page shows of one series."""
    history = site.groups.ok_of[sid]
    newest = history[-1]
    mine_steps = site.steps_by_series.get(sid, [])
    metrics = site.judged.get(sid)
    if metrics is None:
        metrics = judged_metrics([r for r in history if not is_outlier(r)])
    # The decode chart's band reads each drawn run's decode_stddev.
    site.data.upgrade(drawn_runs(history, mine_steps, DECODE.name))
    site.data.upgrade([newest])
    made: dict[tuple[str, str], Any] = {}  # a run's point and CSV columns, for all its charts
    charts = [  # a chart and its steps for each metric the series carries (as detected)
        series_chart(history, [st for st in mine_steps if st.metric == m],
                     f"series-{sid}-{chart_slug(m)}", m, made=made)
        for m in metrics
    ]  # fmt: skip
    charts += [
        *(series_chart(history, [], f"series-{sid}-{m}", m, made=made)
          for m in MEASURES if m not in metrics),
        builds_chart([r for r in history if not is_outlier(r)], f"series-{sid}-builds"),
    ]  # fmt: skip
    charts = [c for c in charts if not c.empty]
    for chart in charts:
        site.links.from_chart(chart)
    points, figures = compact_charts(charts)
    ordered = sorted(mine_steps, key=lambda st: neg(st.first_bad_timestamp))
    macros = site.env.get_template("_macros.md.j2").module
    steps = steps_table(ordered, site.by_id, site.series_pages, site.links, "", STEPS_LIMIT,
                        show_series=False)  # fmt: skip
    newest_first = site.groups.all_of[sid][::-1]
    # Every metric's own level (its history segmented on its own steps), as `bench table`.
    levels = [lv for m in metrics if (lv := level_of(history, m, site.level_memo))]
    payload = {
        "title": label(newest),
        "machine": {
            "text": newest["machine_id"],
            "href": f"machines/{site.pages.machine(newest['machine_id'])[:-3]}.html",
        },
        "model": {
            "text": newest["model"],
            "href": f"models/{site.pages.model(newest['model'])[:-3]}.html",
        },
        "count": len(history),
        "version": version_label(newest) or None,
        "newest": {"run_id": newest["run_id"], "href": site.links.run(newest, "")},
        "gate": series_gate(newest, mine_steps),
        "metric_gates": metric_gates(metrics, mine_steps),
        "unstable": UNSTABLE_TITLE if is_unstable(newest) else None,
        "unstable_count": sum(1 for r in history if is_unstable(r)),
        "unstable_title": UNSTABLE_TITLE,
        "outliers": sum(1 for r in history if is_outlier(r)),
        "level": levels[0] if levels else level_of(history, DEFAULT_METRIC, site.level_memo),
        "levels": levels,
        "impossible": _physics(history, newest, site),
        "impossible_prefill": _prefill_physics(history, newest, site),
        "utilisation": utilisation(history, newest, site),
        "points": points,
        "charts": figures,
        "measures": measure_rows(newest),
        "steps": _table_html(macros, steps) if steps.rows else None,
        "runs": runs_rows(site, sid, newest_first),
        "runs_hidden": max(0, len(newest_first) - HISTORY_RUNS),
        "identity": [
            [field_name, identity_value(newest.get(field_name))]
            for field_name in SERIES_FIELDS
            if newest.get(field_name) is not None
        ]
        + [["series", sid]],
    }
    site.files[f"bl/series/{series_file(sid, '.js')}"] = json_script(
        "BENCHLAB_SERIES", sid, payload
    )


CHART_SLUGS = {m: REGISTRY[m].words for m in HEADLINE_ORDER}
"""The short slug of a headline metric's chart on the series page; other metrics' charts
are named by the metric."""


def chart_slug(metric: str) -> str:
    return CHART_SLUGS.get(metric, metric)


def _in_effect(steps: Sequence[Step], metric: str) -> list[Step]:
    """The confirmed regressions of one metric still in effect at the newest run."""
    mine = [st for st in steps if st.metric == metric]
    return [st for st in open_regressions(mine) if st.status == "confirmed"]


def metric_gates(metrics: Sequence[str], steps: Sequence[Step]) -> list[dict[str, str]]:
    """Each metric's gate on the series page: failed where a confirmed regression of that
    metric is still in effect at the newest run (`detection.open_regressions`, the home
    page's list), else passed. As `bench regression` judges every metric, so does the page."""
    out = []
    for metric in metrics:
        found = _in_effect(steps, metric)
        detail = "; ".join(
            f"{100 * st.change:+.1f} % since {st.first_bad_run}"
            + (f" ({st.version_before} → {st.version_after})" if st.version_changed else "")
            for st in found
        )
        out.append({
            "metric": metric,
            "verdict": "failed" if found else "passed",
            "detail": detail or "no regression in effect at the newest run",
        })  # fmt: skip
    return out


def series_gate(newest: Entry, steps: Sequence[Step]) -> dict[str, str] | None:
    """The badge: the newest run's own gate verdict (`runs.gate_of`), failed where any
    metric of the series has a confirmed regression in effect, whatever that verdict said:
    a series 15 % down in prefill never shows "gate passed"."""
    verdict = gate_of(newest)
    failing = sorted({st.metric for st in steps if st in _in_effect(steps, st.metric)})
    if not failing:
        return verdict
    named = ", ".join(failing)
    return {"verdict": "failed", "detail": f"regression in effect in {named}"}


RUN_COLUMNS = ("time", "run_id", "model", "precision", "threads", "status", "peak", "decode",
               "build", "attempt", "flags")  # fmt: skip
"""The fields of a row of the series page's runs table (`runs_rows`), in order."""


def runs_rows(site: SiteContext, sid: str, newest_first: Sequence[Entry]) -> list[list[Any]]:
    """The newest `HISTORY_RUNS` runs as plain rows (`RUN_COLUMNS`) that the page script
    turns into a sortable table with textContent: values, not HTML, so a long history costs
    no escaping here. Each run is linked, so its details are published."""
    shown = list(newest_first[:HISTORY_RUNS])
    site.data.upgrade(shown)
    site.links.linked.setdefault(sid, set()).update(r["run_id"] for r in shown)
    rows = []
    for run in shown:
        attempt, attempts = run.get("attempt"), run.get("attempts")
        flags = [word for word, on in (("unstable", is_unstable(run)),
                                        ("outlier", is_outlier(run))) if on]  # fmt: skip
        if run.get("gate") in ("passed", "failed", "unknown"):
            flags.append(f"gate {run['gate']}")
        rows.append(
            [run["timestamp"], run["run_id"], run["model"], run.get("precision"),
             run.get("threads"), _status(run), run.get(PEAK.name),
             run.get(DECODE.name), version_label(run) or None,
             f"{attempt}/{attempts}" if attempt and attempts else None, flags]
        )  # fmt: skip
    return rows


def _status(run: Entry) -> str:
    """ok, hole, or failed with its kind: the words of `tables.status_badge`."""
    if is_hole(run):
        return "hole"
    if run.get("status", "ok") == "ok":
        return "ok"
    kind = run.get("failure_kind")
    return f"failed · {kind}" if kind else "failed"


def _table_html(macros: Any, table: Table) -> dict[str, Any]:
    """A table as the HTML the pages' slots hold (every cell built with escaping by
    `publish.tables`), with its count of rows left out."""
    return {"html": str(macros.table_html(table)), "hidden": table.hidden}


def _physics(history: Sequence[Entry], newest: Entry, site: SiteContext) -> str | None:
    """Where the series' decode level beats its machine's memory bandwidth (ARCHITECTURE.md,
    How close to the hardware): the badge's explanation; else None."""
    decode = level_of(history, DECODE.name, site.level_memo)
    if decode is None:
        return None
    found = judge_entry(newest, site.data.specs, decode["value"])
    if found is None or not found.impossible:
        return None
    return (
        f"decode {decode['value']:,.1f} t/s is over 1.1 x the {found.ceiling_tok_per_sec:,.1f} "
        f"t/s that {found.bandwidth_source} of memory bandwidth allows "
        f"(MBU {found.mbu_pct:,.0f}%): a mistake or a fake, never ranked"
    )


def _prefill_physics(history: Sequence[Entry], newest: Entry, site: SiteContext) -> str | None:
    """Where the series' prefill level beats its machine's peak compute (the compute twin of
    `_physics`): the "impossible prefill" badge's explanation; else None."""
    prefill = level_of(history, PREFILL.name, site.level_memo)
    if prefill is None:
        return None
    found = judge_prefill_entry(newest, site.data.specs, prefill["value"])
    if found is None or not found.impossible:
        return None
    return (
        f"prefill {prefill['value']:,.1f} t/s is over 1.1 x the "
        f"{found.ceiling_tok_per_sec:,.1f} t/s that {found.peak_source} of peak compute "
        f"allows (MFU {found.mfu_pct:,.0f}%): a mistake or a fake, never ranked by prefill"
    )


def utilisation(history: Sequence[Entry], newest: Entry, site: SiteContext) -> list[list[Any]]:
    """MBU at the series' decode level and MFU at its prefill level, as `bench table` shows
    them (ARCHITECTURE.md, How close to the hardware): `[name, percent, figure]` each, the
    percent `NOT_MEASURED` (never 0) where the machine has no figure for the processor the
    run used; a rate the run lacks, or a model with no size (no parameter count), is left
    out: nothing to judge."""
    out: list[list[Any]] = []
    specs = site.data.specs
    decode = level_of(history, DECODE.name, site.level_memo)
    if decode is not None and entry_bytes_per_token(newest) is not None:
        found = judge_entry(newest, specs, decode["value"])
        out.append(
            ["MBU", NOT_MEASURED, "no bandwidth figure for the memory it read"]
            if found is None
            else ["MBU", round(found.mbu_pct, 1), f"of {found.bandwidth_source}"]
        )
    prefill = level_of(history, PREFILL.name, site.level_memo)
    if prefill is not None and entry_flops_per_token(newest) is not None:
        compute = judge_prefill_entry(newest, specs, prefill["value"])
        out.append(
            ["MFU", NOT_MEASURED, "no peak compute figure for the processor it ran on"]
            if compute is None
            else ["MFU", round(compute.mfu_pct, 1), f"of {compute.peak_source}"]
        )
    return out


def level_of(
    history: Sequence[Entry], metric: str, memo: StepMemo | None = None
) -> dict[str, Any] | None:
    """The series' current level (`query.level.current_level`: the newest segment's mean,
    outliers left out) with its interval and CV; `unstable` where the CV is over the stated
    `metrics.DEFAULT_MAX_CV`. `memo`: the render's segmentation memo (the machine and model
    pages segment the same window)."""
    counted = [r for r in history if r.get(metric) is not None and not is_outlier(r)]
    level = current_level([r[metric] for r in counted], memo)
    if level is None:
        return None
    level = with_repeats(level, counted[-1], metric)
    return {
        "metric": metric,
        "name": metric_name(metric),
        "unit": unit_of(metric) or "",
        "value": level.value,
        "pm": level.pm,
        "repeats": level.repeats,
        "n": level.n,
        "cv": level.cv,
        "unstable": level.unstable,
        "max_cv": DEFAULT_MAX_CV,
    }


def compact_charts(charts: Sequence[Chart]) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    """The charts as Plotly figures whose plain points refer to one shared table: a run is
    drawn on several charts of the page, and its eight customdata fields are written once.
    The page script puts `customdata` back from `cdi` before drawing."""
    points: list[list[Any]] = []
    row_of: dict[str, int] = {}
    figures = []
    for chart in charts:
        traces = []
        for trace in chart.figure["data"]:
            custom = trace.get("customdata")
            if custom and all(len(p) == POINT_FIELDS for p in custom):
                trace = dict(trace)
                indices = []
                for point in trace.pop("customdata"):
                    key = point[3]
                    if key not in row_of:
                        row_of[key] = len(points)
                        points.append(point)
                    indices.append(row_of[key])
                trace["cdi"] = indices
            traces.append(trace)
        config = dict(PLOTLY_CONFIG)
        config["toImageButtonOptions"] = {
            **PLOTLY_CONFIG["toImageButtonOptions"],
            "filename": chart.slug,
        }
        figures.append({"slug": chart.slug, "title": chart.title, "data": traces,
                        "layout": chart.figure["layout"], "config": config})  # fmt: skip
    return points, figures
