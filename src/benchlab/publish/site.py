"""The static site: Jinja2 renders Markdown pages from the public catalog, MkDocs builds them.

Pages are pure functions of the public files (catalog.json, machines/catalog.json,
machines/<id>/specs.json): never of private runs, never of the wall clock. Jinja2 runs with
autoescape on, and every user string that lands in Markdown also has its Markdown
punctuation escaped (`md` filter), so a model named `<script>alert(1)</script>` is text.

Chart data goes to one small script per chart (bl/charts/<slug>.js) rather than inline in
the page, so pages stay light and the search index holds words, not numbers; plotly.min.js
is copied once into bl/.

Runs are the catalog reader's entry dicts (`publish.data.PublicData`), filtered by the one
filter and grouped by the one series key, like every chart: a table of the newest run per
series has a row per thread count and workload shape, and every row that shows a run shows
its version (backend version, build, revision). The regressions page lists the steps the
regression detector finds, in the detector's series, with the version before and after.
"""

from __future__ import annotations

import gc
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from benchlab.catalog.gate import SERIES
from benchlab.errors import ConfigError, StoreError
from benchlab.identity import SERIES_FIELDS, VERSION_FIELDS, series_of, shape, version_label
from benchlab.ids import check_id, slug
from benchlab.layout import atomic_write_text
from benchlab.metrics import DEFAULT_METRIC
from benchlab.models import HOLE_TAG
from benchlab.pool import cpus, inherits, pool_map
from benchlab.publish import hooks
from benchlab.publish.charts import (
    Chart,
    Regression,
    Styles,
    base_layout,
    build_charts,
    builds_chart,
    chart_json,
    cost_rows,
    downsample,
    label,
    latest_by_series,
    scaling_chart,
    series_chart,
    threads_chart,
    throughput,
    throughput_chart,
    trend_chart,
)
from benchlab.publish.data import PublicData
from benchlab.publish.hooks import SLOTS_DIR, fill
from benchlab.publish.static import SITE_ASSETS, copy_assets
from benchlab.query.filters import Filters, chronological
from benchlab.redact import scrub_public
from benchlab.regress import (
    Step,
    corroborate,
    detect,
    histories,
    recent,
    sort_key,
    window_start,
)

RECENT_RUNS = 25
HISTORY_RUNS = 50
WINDOW_DAYS = 14
"""The home page's "what changed" window, counted back from the newest run (not today)."""
CHANGES_LIMIT = 50
STEPS_LIMIT = 200
FASTEST_LIMIT = 200
SERIES_LIMIT = 200
COST_LIMIT = 100
TREND_POINTS = 60
"""Points per series on the overview trend charts; a series' own page draws up to 300."""
SERIES_BAND = 0.05
"""The threshold band drawn around each segment's median on a series' page."""
COMPARE_VALUES = 6
COMPARE_ROWS = 400
COMPARE_REPEATS = 5
"""Newest repeats of a measurement the compare page averages (`bench compare` takes all)."""
COMPARE_FIELDS = (
    "model", "machine_id", "precision", "backend", "threads", "shape", "test", "a", "b", "speedup",
    "pm_a", "pm_b",
)  # fmt: skip
REGRESSIONS_METHOD = (
    "step detection of benchlab.regress: a rank scan with a permutation test and an effect "
    "size gate, plus a tail check for steps too recent to confirm"
)

Entry = dict[str, Any]

# --- escaping -------------------------------------------------------------------------------

# Python-Markdown's backslash-escapable characters, plus | for tables (< > & are entities).
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|])")


def md_escape(value: Any) -> Markup:
    """A user string made inert for Markdown: punctuation backslashed, then HTML-escaped."""
    text = "" if value is None else str(value)
    text = " ".join(text.split())  # a newline would end a table row
    return Markup(html.escape(_MD_PUNCT.sub(r"\\\1", text), quote=True))


def yaml_title(value: Any) -> Markup:
    """A front-matter title: MkDocs puts titles into pages unescaped, so escape here."""
    return Markup(json.dumps(html.escape(str(value), quote=True)))


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("benchlab.publish", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
    )
    env.filters["md"] = md_escape
    env.filters["yaml_title"] = yaml_title
    return env


# --- formatting -----------------------------------------------------------------------------


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _time(stamp: str | None) -> str:
    return "–" if not stamp else stamp.replace("T", " ").rstrip("Z")


def _is_hole(run: Entry) -> bool:
    return run.get("status", "ok") == "failed" and HOLE_TAG in run.get("tags", ())


@dataclass(frozen=True)
class Pages:
    """Page file names of machines and models (relative to their section dirs)."""

    machines: dict[str, str]
    models: dict[str, str]

    def machine(self, machine_id: str) -> str:
        return self.machines[machine_id]

    def model(self, model: str) -> str:
        return self.models[model]


def page_names(data: PublicData) -> Pages:
    machines = {m: f"{check_id(m, 'machine id')}.md" for m in data.machine_ids()}
    models: dict[str, str] = {}
    taken: set[str] = set()
    ids_of: dict[str, set[str]] = {}
    for run in data.runs:
        ids = ids_of.setdefault(run["model"], set())
        if run.get("model_id"):
            ids.add(run["model_id"])
    for name in sorted(ids_of):
        ids = ids_of[name]
        base = slug(sorted(ids)[0] if ids else name)
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}-{n}", n + 1
        taken.add(candidate)
        models[name] = f"{candidate}.md"
    return Pages(machines, models)


def _run_row(run: Entry, pages: Pages) -> dict[str, Any]:
    """A run as a table row: who, what (threads and shape, so t1 and t2 are two rows), the
    version it ran on, how it went."""
    threads = run.get("threads")
    return {
        "time": _time(run["timestamp"]),
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
        "hole": _is_hole(run),
        "tok": _num(throughput(run)),
        "run_id": run["run_id"],
    }


def _newest_first(runs: Iterable[Entry]) -> list[Entry]:
    return sorted(runs, key=lambda r: (r["timestamp"], r["run_id"]), reverse=True)


# --- pages ----------------------------------------------------------------------------------


@dataclass
class Rendered:
    """The generated docs: Markdown pages and chart scripts by relative path, plus nav."""

    files: dict[str, str]
    nav: list[Any]


def _chart_script(chart: Chart) -> str:
    return (
        "(window.BENCHLAB_CHARTS=window.BENCHLAB_CHARTS||{})"
        f"[{json.dumps(chart.slug)}]={chart_json(chart)};\n"
    )


def _specs_rows(data: PublicData, machine_id: str) -> list[tuple[str, str]]:
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
        rows.append(("Registered", _time(public.get("registered_at"))))
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


def _machine_rows(
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
                "last_run": _time(last.get(machine_id)),
            }
        )
    return rows


def _health(
    data: PublicData, pages: Pages, by_machine: Mapping[str, Sequence[Entry]]
) -> tuple[list[dict[str, Any]], Chart]:
    """A row per machine and the outcomes chart, from each machine's runs (`_Groups`)."""
    rows = []
    for machine_id in data.machine_ids():
        runs = by_machine.get(machine_id, [])
        holes, failed, ok = 0, [], []
        for r in runs:  # one pass: a million runs cost a second a pass
            if _is_hole(r):
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
                "last_run": _time(max((r["timestamp"] for r in runs), default=None)),
                "last_ok": _time(max((r["timestamp"] for r in ok), default=None)),
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


Cell = tuple[Markup, Any]


def _link(href: str, text: Any) -> Markup:
    return Markup('<a href="{}">{}</a>').format(href, text)


def _cell_num(value: float | None, digits: int = 1, suffix: str = "") -> Cell:
    """A number cell: shown formatted, sorted by its value (blank sorts last)."""
    if value is None:
        return (Markup("–"), "")
    return (Markup("{}{}").format(f"{value:,.{digits}f}", suffix), f"{value:.6g}")


def _cell(text: Any, key: Any = None) -> Cell:
    return (text if isinstance(text, Markup) else Markup("{}").format(text), key)


@dataclass
class Table:
    """An HTML table the page script can sort (`sort` names the column and the direction
    the rows already come in); `hidden` rows were left out to keep pages small."""

    columns: list[tuple[str, str]]
    rows: list[list[Cell]]
    sort: str = ""
    hidden: int = 0
    ident: str = ""


class Links:
    """Run pages: `run.html?s=<series>&r=<run id>`, one client-rendered page whose data is
    the series' run file (bl/runs/<series>.js). Every run a page or chart links is
    remembered here, and only those runs' details are published: bounded by what the pages
    show, not by the catalog's size."""

    def __init__(self) -> None:
        self.linked: dict[str, set[str]] = {}

    def run(self, run: Entry, root: str) -> str:
        sid = series_of(run)
        self.linked.setdefault(sid, set()).add(run["run_id"])
        return f"{root}run.html?s={sid}&r={run['run_id']}"

    def from_chart(self, chart: Chart) -> None:
        for trace in chart.figure["data"]:
            for point in trace.get("customdata") or ():
                if len(point) > 7 and isinstance(point[7], str) and point[7].startswith("s"):
                    self.linked.setdefault(point[7], set()).add(point[3])


_DETAIL_SKIP = frozenset({"path", "series"})


def _run_details(run: Entry) -> dict[str, Any]:
    """What a run page shows: the entry less its store path, plus the labels the site uses
    (series, version, shape)."""
    detail = {k: v for k, v in run.items() if k not in _DETAIL_SKIP and v not in (None, [], {})}
    detail["label"] = label(run)
    detail["version"] = version_label(run)
    detail["shape"] = shape(run) or None
    detail["tests"] = list(run.get("tests") or ())
    return detail


def _json_script(name: str, key: str, payload: Any) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"(window.{name}=window.{name}||{{}})[{json.dumps(key)}]={text};\n"


def _step_status(step: Step) -> Markup:
    kind = "bad" if step.kind == "regression" else "ok"
    text = step.kind if step.status == "confirmed" else f"suspect {step.kind}"
    css = "suspect" if step.status == "suspect" else kind
    return Markup('<span class="bl-badge bl-badge--{}">{}</span>').format(css, text)


def _confidence(step: Step) -> Cell:
    text = f"{step.confidence:.3f}" if step.confidence < 0.999 else "≥ 0.999"
    if step.corroborated_by:
        text += f" ({step.corroborated_by} more series on this machine agree)"
    return (Markup("{}").format(text), f"{step.confidence:.6f}")


def _versions(step: Step) -> Markup:
    before = step.version_before or "not recorded"
    after = step.version_after or "not recorded"
    if step.version_changed:
        return Markup("{} → <strong>{}</strong>").format(before, after)
    return Markup("same: {}").format(after)


def steps_table(
    steps: Sequence[Step],
    by_id: dict[str, Entry],
    series_pages: dict[str, str],
    links: Links,
    root: str,
    limit: int,
    show_series: bool = True,
) -> Table:
    """The detector's steps as rows: kind and status, size, series, first bad run (a link
    to its run page), the build or revision either side, confidence, runs after it."""
    columns = [("Status", "text"), ("Change", "num")]
    if show_series:
        columns.append(("Series", "text"))
    columns += [
        ("First bad run (UTC)", "text"),
        ("Build before → after", "text"),
        ("Before tok/s", "num"),
        ("After tok/s", "num"),
        ("Confidence", "num"),
        ("Runs after", "num"),
    ]
    rows = []
    for step in steps[:limit]:
        bad = by_id.get(step.first_bad_run)
        run_cell = (
            _link(links.run(bad, root), _time(step.first_bad_timestamp))
            if bad is not None
            else Markup("{}").format(_time(step.first_bad_timestamp))
        )
        row = [
            (_step_status(step), f"{step.status} {step.kind}"),
            _cell_num(100 * step.change, 1, " %"),
        ]
        if show_series:
            page_name = series_pages.get(step.series)
            text = step.label
            row.append(
                _cell(
                    _link(f"{root}series/{page_name[:-3]}.html", text) if page_name else text, text
                )
            )
        row += [
            _cell(run_cell, step.first_bad_timestamp),
            _cell(_versions(step)),
            _cell_num(step.before, 2),
            _cell_num(step.after, 2),
            _confidence(step),
            _cell_num(step.runs_after, 0),
        ]
        rows.append(row)
    return Table(columns, rows, hidden=max(0, len(steps) - limit))


def _neg(stamp: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in stamp)


def _ordered_changes(steps: Sequence[Step]) -> list[Step]:
    """What a reader wants first: regressions (confirmed, then suspect), then improvements;
    newest first within each."""
    rank = {("regression", "confirmed"): 0, ("regression", "suspect"): 1}
    return sorted(
        steps,
        key=lambda s: (rank.get((s.kind, s.status), 2), _neg(s.first_bad_timestamp), s.series),
    )


def _series_pages(ok_runs: Sequence[Entry]) -> dict[str, str]:
    """A page per series that has data (an ok run): `series/<series id>.md`."""
    return {sid: series_file(sid, ".md") for sid in sorted({series_of(r) for r in ok_runs})}


_SERIES_ID = re.compile(SERIES)


def series_file(sid: Any, suffix: str) -> str:
    """The file name of a series' page or run file. Only a series id (`s` + 12 hex digits)
    names a file: the catalog gate sets aside any other, and this refuses one that got past
    it, so no id can put a file outside the site (`../../x`)."""
    if type(sid) is not str or not _SERIES_ID.match(sid):
        raise StoreError(f"series id {sid!a}: not a series id; no file is named after it")
    return f"{sid}{suffix}"


def _best_per_machine(runs: Sequence[Entry], metric: str) -> list[Entry]:
    """Each machine's best newest-run-of-a-series for `metric`, fastest first."""
    best: dict[str, Entry] = {}
    for run in latest_by_series(runs).values():
        value = run.get(metric)
        if value is None:
            continue
        held = best.get(run["machine_id"])
        if held is None or (value, run["run_id"]) > (held[metric], held["run_id"]):
            best[run["machine_id"]] = run
    return sorted(best.values(), key=lambda r: (-r[metric], r["machine_id"]))


def _identity_value(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _status_badge(run: Entry) -> Markup:
    if _is_hole(run):
        return Markup('<span class="bl-badge bl-badge--hole">hole</span>')
    if run.get("status", "ok") == "ok":
        return Markup('<span class="bl-badge bl-badge--ok">ok</span>')
    kind = run.get("failure_kind")
    return Markup('<span class="bl-badge bl-badge--bad">failed{}</span>').format(
        f" · {kind}" if kind else ""
    )


@dataclass
class _Groups:
    """The runs grouped once, each group oldest first (`shown`'s order): at a million runs
    every pass over all of them costs about a second, so pages read these groups."""

    ok_of: dict[str, list[Entry]]
    """Series id -> its ok runs (a series' history)."""
    all_of: dict[str, list[Entry]]
    by_machine: dict[str, list[Entry]]
    by_model: dict[str, list[Entry]]
    ok_of_model: dict[tuple[str, str], list[Entry]]
    """(model name, series id) -> its ok runs: a model's page and the home page's fastest
    table group runs by the model's name, which the series key does not hold."""
    mixed: set[str]
    """Series whose runs carry more than one model name: drawn without thinning."""

    @classmethod
    def of(cls, runs: Iterable[Entry]) -> _Groups:
        ok_of: dict[str, list[Entry]] = {}
        all_of: dict[str, list[Entry]] = {}
        by_machine: dict[str, list[Entry]] = {}
        by_model: dict[str, list[Entry]] = {}
        ok_of_model: dict[tuple[str, str], list[Entry]] = {}
        for run in chronological(runs):
            sid = series_of(run)
            all_of.setdefault(sid, []).append(run)
            by_machine.setdefault(run["machine_id"], []).append(run)
            by_model.setdefault(run["model"], []).append(run)
            if run.get("status", "ok") == "ok":
                ok_of.setdefault(sid, []).append(run)
                ok_of_model.setdefault((run["model"], sid), []).append(run)
        names = Counter(sid for _, sid in ok_of_model)
        mixed = {sid for sid, count in names.items() if count > 1}
        return cls(ok_of, all_of, by_machine, by_model, ok_of_model, mixed)


PARALLEL_RUNS = 20_000
"""From this many ok runs the step detector and the series pages run in a worker process
per CPU (the detector's permutation tests are most of a large site's work); below,
in-process."""

_DETECT_INPUT: dict[str, list[Entry]] = {}
"""The histories the detector workers read (inherited by forked ones, pickled once for
spawned ones: `pool.pool_map`)."""

DECODE = "decode_tok_per_sec"


def _detect_series(sid: str) -> tuple[tuple[str, str] | None, list[Step], list[Step]]:
    """One series' `detect` over the headline metric (with the key `detect` orders series
    by) and over decode (the series page's second chart)."""
    runs = _DETECT_INPUT[sid]
    grouped = histories(runs)
    key = sort_key(next(iter(grouped.values()))[0][0]) if grouped else None
    return key, detect(runs), detect(runs, DECODE)


def detect_per_series(
    ok_of: dict[str, list[Entry]], workers: int | None = None
) -> tuple[list[Step], dict[str, list[Step]]]:
    """`detect` over every ok run (the headline metric), and each series' decode steps.

    `detect` reads each series alone, then corroborates suspects across series; a series
    yields at most one suspect per metric, so running it per series (in parallel), ordering
    the results as `detect` orders series and corroborating them together gives exactly
    `detect(all ok runs)`. `workers` defaults to one per CPU from `PARALLEL_RUNS` runs on."""
    if workers is None:
        workers = _workers(sum(len(runs) for runs in ok_of.values()))
    sids = sorted(ok_of, key=lambda sid: (-len(ok_of[sid]), sid))  # long ones first
    try:
        results = pool_map(_detect_series, sids, workers, setup=_set_detect_input, shared=ok_of)
    finally:
        _set_detect_input({})
    found = dict(zip(sids, results, strict=True))
    ordered = sorted((key, sid) for sid, (key, _, _) in found.items() if key is not None)
    steps = corroborate([step for _, sid in ordered for step in found[sid][1]])
    return steps, {sid: decode for sid, (_, _, decode) in found.items()}


def _set_detect_input(ok_of: dict[str, list[Entry]]) -> None:
    """Install the histories `_detect_series` reads (here, or in a spawned worker)."""
    global _DETECT_INPUT
    _DETECT_INPUT = ok_of


def _workers(ok_runs: int) -> int:
    """Processes for the detector and the series pages: one per CPU from `PARALLEL_RUNS`
    ok runs on (the pages stay in-process where fork is missing: `_Site.in_workers`)."""
    return 1 if ok_runs < PARALLEL_RUNS else cpus()


class _Site:
    """One render: the pages, the run links they make, and the lookups they share."""

    def __init__(self, data: PublicData, workers: int | None = None) -> None:
        self.data = data
        self.env = environment()
        self.pages = page_names(data)
        self.files: dict[str, str] = {}
        self.runs = data.runs
        self.groups = _Groups.of(self.runs)
        self.by_id = {r["run_id"]: r for r in self.runs}
        self.links = Links()
        total = sum(len(runs) for runs in self.groups.ok_of.values())
        self.workers = workers if workers is not None else _workers(total)
        self.steps, self.decode_steps = detect_per_series(self.groups.ok_of, self.workers)
        self.latest = {sid: runs[-1] for sid, runs in self.groups.ok_of.items()}
        """The newest ok run of each series: what `latest_by_series` keeps of any runs."""
        self.since = window_start(self.latest.values(), WINDOW_DAYS)
        self.regressions = [
            Regression(self.by_id[st.first_bad_run], self.by_id[st.first_bad_run][st.metric],
                       st.before, st.after, st)
            for st in self.steps
            if st.kind == "regression" and st.status == "confirmed"
            and st.first_bad_run in self.by_id
        ]  # fmt: skip
        self.outcomes = _outcomes(self.groups.by_machine)
        self.flagged = {g.run["run_id"] for g in self.regressions}
        self._thinned: dict[tuple[str | None, str], list[Entry]] = {}
        self.series_pages = _series_pages(self.latest.values())

    def add_charts(self, charts: Iterable[Chart]) -> None:
        for chart in charts:
            self.links.from_chart(chart)
            if not chart.empty:
                self.files[f"bl/charts/{chart.slug}.js"] = _chart_script(chart)

    def page(self, path: str, template: str, **context: Any) -> None:
        """Render a page; its tables go to its slots file (`publish.hooks`)."""
        slots: list[str] = []

        def slot(table_html: str) -> Markup:
            slots.append(str(table_html))
            return Markup(f"<!--bl-slot {len(slots) - 1}-->")

        self.files[path] = self.env.get_template(template).render(slot=slot, **context)
        if slots:
            self.files[f"{SLOTS_DIR}/{path}.json"] = json.dumps(slots, ensure_ascii=False) + "\n"

    def series_link(self, run: Entry, root: str, text: str | None = None) -> Markup:
        sid = series_of(run)
        shown_text = text if text is not None else label(run)
        if sid in self.series_pages:
            return _link(f"{root}series/{sid}.html", shown_text)
        return Markup("{}").format(shown_text)

    def machine_link(self, machine_id: str, root: str) -> Markup:
        return _link(f"{root}machines/{self.pages.machine(machine_id)[:-3]}.html", machine_id)

    def model_link(self, model: str, root: str, anchor: str = "") -> Markup:
        return _link(f"{root}models/{self.pages.model(model)[:-3]}.html{anchor}", model)

    def trend(self, sids: Iterable[str], slug: str, model: str | None = None) -> Chart:
        """`trend_chart(self.ok_runs_of(sids, model), slug, self.regressions,
        max_points=TREND_POINTS)`, from each series' history thinned once for every chart
        that draws it: the runs `downsample` keeps, and the regressions. Exact where every
        history drawn holds one model name (always on a model's page): then the first run
        of a thinned history names its series as the first of the whole one does, and the
        styles come from the whole histories' models, machines and precisions."""
        sids = sorted(sids)
        keys = [(model, sid) for sid in sids]
        if model is None and any(sid in self.groups.mixed for sid in sids):
            return trend_chart(self.ok_runs_of(sids), slug, self.regressions,
                               max_points=TREND_POINTS)  # fmt: skip
        runs: list[Entry] = []
        kinds: set[tuple[str, str, str]] = set()
        for key in keys:
            thinned = self._thinned.get(key)
            if thinned is None:
                whole = self.ok_runs_of([key[1]], key[0])
                drawn = [r for r in whole if r.get(DEFAULT_METRIC) is not None]
                keep = {r["run_id"] for r in downsample(drawn, TREND_POINTS, DEFAULT_METRIC)}
                thinned = [r for r in drawn if r["run_id"] in keep or r["run_id"] in self.flagged]
                self._thinned[key] = thinned
            if thinned:
                kinds.add(
                    (thinned[-1]["model"], thinned[-1]["machine_id"], thinned[-1]["precision"])
                )
            runs.extend(thinned)
        styles = Styles.of(
            {"model": m, "machine_id": machine, "precision": p} for m, machine, p in sorted(kinds)
        )
        return trend_chart(runs, slug, self.regressions, max_points=None, styles=styles)

    def runs_table(
        self,
        rows_in: Sequence[Entry],
        root: str,
        limit: int,
        machine: bool = True,
        total: int | None = None,
    ) -> Table:
        """The first `limit` of `rows_in` (of `total` runs, when only those are given)."""
        self.data.upgrade(rows_in[:limit])
        columns = [("Time (UTC)", "text")]
        if machine:
            columns.append(("Machine", "text"))
        columns += [
            ("Model", "text"),
            ("Precision", "text"),
            ("Threads", "num"),
            ("Status", "text"),
            ("Peak tok/s", "num"),
            ("Decode tok/s", "num"),
            ("Build", "text"),
            ("Attempt", "text"),
            ("Series", "text"),
        ]
        rows = []
        for run in rows_in[:limit]:
            row = [
                _cell(_link(self.links.run(run, root), _time(run["timestamp"])), run["timestamp"])
            ]
            if machine:
                row.append(_cell(self.machine_link(run["machine_id"], root), run["machine_id"]))
            attempt, attempts = run.get("attempt"), run.get("attempts")
            row += [
                _cell(self.model_link(run["model"], root), run["model"]),
                _cell(run["precision"]),
                _cell_num(run.get("threads"), 0),
                _cell(_status_badge(run), run.get("status", "ok")),
                _cell_num(run.get("peak_tok_per_sec")),
                _cell_num(run.get("decode_tok_per_sec")),
                _cell(version_label(run) or "–"),
                _cell(f"{attempt}/{attempts}" if attempt and attempts else "–"),
                _cell(self.series_link(run, root, "series")),
            ]
            rows.append(row)
        total = len(rows_in) if total is None else total
        return Table(columns, rows, sort="0:desc", hidden=max(0, total - limit))

    # --- pages ---------------------------------------------------------------------------

    def ok_runs_of(self, sids: Iterable[str], model: str | None = None) -> list[Entry]:
        """The ok runs of these series (of `model` only, if given), each series oldest first:
        what the charts group by series, as they would `shown(...)` of the same runs."""
        if model is None:
            return [r for sid in sids for r in self.groups.ok_of[sid]]
        return [r for sid in sids for r in self.groups.ok_of_model.get((model, sid), ())]

    def latest_of(self, model: str | None = None) -> dict[str, Entry]:
        """The newest ok run of each series (of `model`'s runs only, if given): all that
        `latest_by_series` keeps of any set of runs holding every run of those series."""
        if model is None:
            return self.latest
        return {
            sid: runs[-1] for (name, sid), runs in self.groups.ok_of_model.items() if name == model
        }

    def home(self) -> None:
        """What changed first; then the fastest machine per model and precision."""
        window_steps = _ordered_changes(recent(self.steps, self.since))
        changed = steps_table(
            window_steps, self.by_id, self.series_pages, self.links, "", CHANGES_LIMIT
        )
        changed.ident = "what-changed"
        newest = max((r["timestamp"] for r in self.latest.values()), default=None)
        groups: dict[tuple[str, str], list[Entry]] = {}
        for (model, _sid), runs in self.groups.ok_of_model.items():
            groups.setdefault((model, runs[-1]["precision"]), []).append(runs[-1])
        fastest_rows = []
        for (model, precision), members in sorted(groups.items()):
            peak = _best_per_machine(members, "peak_tok_per_sec")
            decode = _best_per_machine(members, "decode_tok_per_sec")
            fastest_rows.append(
                [
                    _cell(self.model_link(model, "", f"#precision-{slug(precision)}"), model),
                    _cell(precision),
                    _cell(peak[0]["machine_id"] if peak else "–"),
                    _cell_num(peak[0]["peak_tok_per_sec"] if peak else None),
                    _cell(decode[0]["machine_id"] if decode else "–"),
                    _cell_num(decode[0]["decode_tok_per_sec"] if decode else None),
                    _cell_num(len({r["machine_id"] for r in members}), 0),
                ]
            )
        fastest = Table(
            [
                ("Model", "text"),
                ("Precision", "text"),
                ("Fastest (peak aggregate)", "text"),
                ("Peak tok/s", "num"),
                ("Fastest (decode)", "text"),
                ("Decode tok/s", "num"),
                ("Machines", "num"),
            ],
            fastest_rows[:FASTEST_LIMIT],
            sort="0:asc",
            hidden=max(0, len(fastest_rows) - FASTEST_LIMIT),
            ident="fastest",
        )
        counts = self.outcomes
        stats = {
            "machines": len(self.data.machine_ids()),
            "models": len(self.pages.models),
            "series": len(self.series_pages),
            "ok": sum(len(runs) for runs in self.groups.ok_of.values()),
            "failed": sum(c["failed"] for c in counts.values()),
            "holes": sum(c["holes"] for c in counts.values()),
        }
        self.page(
            "index.md",
            "home.md.j2",
            root="",
            empty=not self.runs,
            stats=stats,
            since=_time(self.since),
            newest=_time(newest),
            window_days=WINDOW_DAYS,
            changed=changed,
            changes_total=len(window_steps),
            regressions_in_window=sum(st.kind == "regression" for st in window_steps),
            last_updated=_time(self.data.catalog.last_updated),
            fastest=fastest,
            machines=_machine_rows(self.data, self.pages, self.groups.by_machine),
            recent=self.runs_table(_newest_of(self.groups.by_machine.values(), RECENT_RUNS),
                                   "", RECENT_RUNS, total=len(self.runs)),
        )  # fmt: skip

    def compare(self) -> None:
        index = self._compare_data()
        latest = list(self.latest.values())
        cost_table = [
            {
                "machine": row["machine"],
                "machine_page": self.pages.machine(row["machine"]),
                "model": row["model"],
                "model_page": self.pages.model(row["model"]),
                "precision": row["precision"],
                "threads": "–" if row["threads"] is None else str(row["threads"]),
                "version": row["version"] or "–",
                "tok": _num(row["tok_per_sec"]),
                "price": f"${row['cost_per_hour']:,.2f}",
                "usd": f"${row['usd_per_million_tokens']:,.4f}",
            }
            for row in cost_rows(latest, self.data)[:COST_LIMIT]
        ]
        [cost] = build_charts(self.data, kinds=("cost",), prefix="compare-", runs=latest)
        self.add_charts([cost])
        self.page(
            "compare.md",
            "compare.md.j2",
            root="",
            index=Markup(_json_script("BENCHLAB_COMPARE_INDEX", "index", index)),
            has_pairs=bool(index["axes"]),
            repeats=COMPARE_REPEATS,
            chart=cost,
            cost_rows=cost_table,
        )

    def _compare_data(self) -> dict[str, Any]:
        """The compare page's tables, computed by `query.verbs.compare_axis` (the function
        behind `bench compare --by`) for every pair among the newest builds and revisions
        and among the machines with the most runs; each pair is a small script the page
        loads when picked. Returns the index the page embeds."""
        from benchlab.catalog.read import LoadedCatalog
        from benchlab.errors import QueryError
        from benchlab.query.verbs import axis_values, compare_axis

        # compare_axis averages each side's repeats (the ok runs of one exact identity).
        # A page must stay bounded at any catalog size, so each identity brings only its
        # newest COMPARE_REPEATS runs: the tables are compare_axis's own over those.
        by_identity: dict[tuple[Any, ...], list[Entry]] = {}
        for sid, history in self.groups.ok_of.items():
            for run in history:
                key = (sid, *map(run.get, VERSION_FIELDS))  # scalars: the reader checks
                by_identity.setdefault(key, []).append(run)
        ok_runs = self.data.full(
            sorted(
                (run for runs in by_identity.values() for run in runs[-COMPARE_REPEATS:]),
                key=lambda r: (r["timestamp"], r["run_id"]),
            )
        )
        by_id = {r["run_id"]: r for r in ok_runs}
        catalog = LoadedCatalog(path=self.data.catalog.path, runs=ok_runs)
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
                    key = f"{axis}-{i}-{j}"
                    rows = []
                    for row in result.rows[:COMPARE_ROWS]:
                        run_a, run_b = by_id.get(row["run_a"]), by_id.get(row["run_b"])
                        rows.append(
                            {
                                **{k: row.get(k) for k in COMPARE_FIELDS},
                                "n_a": (row.get("stats_a") or {}).get("n"),
                                "n_b": (row.get("stats_b") or {}).get("n"),
                                "link_a": self.links.run(run_a, "") if run_a else None,
                                "link_b": self.links.run(run_b, "") if run_b else None,
                            }
                        )
                    self.files[f"bl/compare/{key}.js"] = _json_script(
                        "BENCHLAB_COMPARE",
                        key,
                        {
                            "a": result.a,
                            "b": result.b,
                            "rows": rows,
                            "hidden": max(0, len(result.rows) - COMPARE_ROWS),
                            "only_a": result.only_a,
                            "only_b": result.only_b,
                        },
                    )
                    pairs.append(key)
            if pairs:
                # compare_axis's own default for builds and revisions: the newest two.
                default = pairs[-1] if axis != "machine" else pairs[0]
                index["axes"].append(
                    {"axis": axis, "values": chosen, "pairs": pairs, "default": default}
                )
        return index

    def regressions_page(self) -> None:
        everything = sorted(self.steps, key=lambda st: (_neg(st.first_bad_timestamp), st.series))
        table = steps_table(everything, self.by_id, self.series_pages, self.links, "", STEPS_LIMIT)
        flagged = {g.step.series for g in self.regressions}
        chart = self.trend(flagged, "regressions-trend")
        self.add_charts([chart])
        self.page(
            "regressions.md",
            "regressions.md.j2",
            root="",
            empty=not self.runs,
            series_count=len(self.series_pages),
            method=REGRESSIONS_METHOD,
            chart=chart,
            table=table,
            total=len(everything),
        )

    def machine_pages(self) -> list[Any]:
        nav = []
        sids_of: dict[str, list[str]] = {}
        for sid, run in self.latest.items():
            sids_of.setdefault(run["machine_id"], []).append(sid)
        counts = self.outcomes
        for machine_id in self.data.machine_ids():
            mine = self.groups.by_machine.get(machine_id, [])
            sids = sids_of.get(machine_id, [])
            latest = [self.latest[sid] for sid in sids]
            prefix = f"machine-{machine_id}-"
            charts = [
                throughput_chart(latest, prefix + "throughput"),
                throughput_chart(latest, prefix + "decode", "decode_tok_per_sec"),
                self.trend(sids, prefix + "trend"),
            ]  # fmt: skip
            self.add_charts(charts)
            series_rows = []
            for run in latest_by_series(latest).values():
                series_rows.append(
                    [
                        _cell(self.series_link(run, "../", label(run, machine=False)), label(run)),
                        _cell_num(run.get("peak_tok_per_sec")),
                        _cell_num(run.get("decode_tok_per_sec")),
                        _cell(version_label(run) or "–"),
                        _cell_num(len(self.groups.ok_of[series_of(run)]), 0),
                        _cell(
                            _link(self.links.run(run, "../"), _time(run["timestamp"])),
                            run["timestamp"],
                        ),
                    ]
                )
            series_rows.sort(key=lambda row: -float(row[1][1] or 0))
            newest_runs = mine[::-1]
            outcome = counts.get(machine_id, _NO_OUTCOMES)
            self.page(
                f"machines/{self.pages.machine(machine_id)}",
                "machine.md.j2",
                root="../",
                machine_id=machine_id,
                summary={
                    "runs": len(mine),
                    "ok": outcome["ok"],
                    "failed": outcome["failed"],
                    "holes": outcome["holes"],
                    "last_run": _time(newest_runs[0]["timestamp"] if newest_runs else None),
                },
                specs=_specs_rows(self.data, machine_id),
                charts=charts,
                series=Table(
                    [
                        ("Series", "text"),
                        ("Peak tok/s", "num"),
                        ("Decode tok/s", "num"),
                        ("Build", "text"),
                        ("Runs", "num"),
                        ("Newest run (UTC)", "text"),
                    ],
                    series_rows[:SERIES_LIMIT],
                    sort="1:desc",
                    hidden=max(0, len(series_rows) - SERIES_LIMIT),
                ),
                history=self.runs_table(newest_runs, "../", HISTORY_RUNS, machine=False),
            )
            nav.append({html.escape(machine_id): f"machines/{self.pages.machine(machine_id)}"})
        return nav

    def model_pages(self) -> list[Any]:
        """The fastest machines per precision (sorted tables), then the charts: peak and
        decode by machine, batch scaling per thread count, decode by threads, history."""
        nav = []
        for model, name in self.pages.models.items():
            mine = self.groups.by_model.get(model, [])
            latest_map = self.latest_of(model)
            latest = list(latest_map.values())
            self.data.upgrade(latest)  # the scaling chart reads their batch curves
            prefix = f"model-{name.removesuffix('.md')}-"
            charts = [
                throughput_chart(latest, prefix + "throughput"),
                throughput_chart(latest, prefix + "decode", "decode_tok_per_sec"),
                scaling_chart(latest, self.data.store_root, prefix + "scaling"),
                threads_chart(latest, prefix + "threads"),
                self.trend(latest_map, prefix + "trend", model),
            ]  # fmt: skip
            self.add_charts(charts)
            sections = []
            for precision in sorted({r["precision"] for r in latest}):
                best = _best_per_machine(
                    [r for r in latest if r["precision"] == precision], "peak_tok_per_sec"
                )
                rows = [
                    [
                        _cell(self.machine_link(r["machine_id"], "../"), r["machine_id"]),
                        _cell_num(r.get("peak_tok_per_sec")),
                        _cell_num(r.get("decode_tok_per_sec")),
                        _cell_num(r.get("prefill_tok_per_sec")),
                        _cell_num(r.get("threads"), 0),
                        _cell(shape(r) or "–"),
                        _cell(r.get("backend") or "–"),
                        _cell(version_label(r) or "–"),
                        _cell(self.series_link(r, "../", "history")),
                        _cell(_link(self.links.run(r, "../"), _time(r["timestamp"])),
                              r["timestamp"]),
                    ]
                    for r in best
                ]  # fmt: skip
                sections.append(
                    {
                        "precision": precision,
                        "anchor": f"precision-{slug(precision)}",
                        "table": Table(
                            [
                                ("Machine", "text"),
                                ("Peak tok/s", "num"),
                                ("Decode tok/s", "num"),
                                ("Prefill tok/s", "num"),
                                ("Threads", "num"),
                                ("Shape", "text"),
                                ("Backend", "text"),
                                ("Build", "text"),
                                ("Series", "text"),
                                ("Run (UTC)", "text"),
                            ],
                            rows,
                            sort="1:desc",
                            ident=f"fastest-{slug(precision)}",
                        ),
                    }
                )
            self.page(
                f"models/{name}",
                "model.md.j2",
                root="../",
                model=model,
                summary={
                    "ok": sum(len(runs) for runs in
                              (self.groups.ok_of_model[(model, sid)] for sid in latest_map)),
                    "failed": sum(r.get("status") == "failed" for r in mine),
                    "machines": len({r["machine_id"] for r in mine}),
                    "precisions": ", ".join(sorted({r["precision"] for r in mine})) or "–",
                },
                charts=charts,
                sections=sections,
            )  # fmt: skip
            nav.append({html.escape(model): f"models/{name}"})
        return nav

    def series_pages_(self) -> None:
        """asv's per-benchmark graph, one page per series with data (in `workers`)."""
        self.steps_by_series: dict[str, list[Step]] = {}
        for st in self.steps:
            self.steps_by_series.setdefault(st.series, []).append(st)
        self.in_workers("series_page", list(self.series_pages))

    def series_page(self, sid: str) -> None:
        name = self.series_pages[sid]
        history = self.groups.ok_of[sid]
        newest = history[-1]
        mine_steps = self.steps_by_series.get(sid, [])
        decode_steps = self.decode_steps.get(sid, [])
        # The decode chart's band reads each drawn run's decode_stddev.
        self.data.upgrade(_drawn(history, decode_steps, "decode_tok_per_sec"))
        charts = [
            series_chart(history, mine_steps, f"series-{sid}-peak", "peak_tok_per_sec",
                         SERIES_BAND),
            series_chart(history, decode_steps,
                         f"series-{sid}-decode", "decode_tok_per_sec", SERIES_BAND),
            builds_chart(history, f"series-{sid}-builds"),
        ]  # fmt: skip
        charts = [c for c in charts if not c.empty]
        self.add_charts(charts)
        identity = [
            (field_name, _identity_value(newest.get(field_name)))
            for field_name in SERIES_FIELDS
            if newest.get(field_name) is not None
        ]
        ordered = sorted(mine_steps, key=lambda st: _neg(st.first_bad_timestamp))
        self.page(
            f"series/{name}",
            "series.md.j2",
            root="../",
            title=label(newest),
            sid=sid,
            machine=self.machine_link(newest["machine_id"], "../"),
            model=self.model_link(newest["model"], "../"),
            identity=identity,
            count=len(history),
            version=version_label(newest) or "not recorded",
            charts=charts,
            steps=steps_table(
                ordered, self.by_id, self.series_pages, self.links, "../", STEPS_LIMIT,
                show_series=False,
            ),
            runs=self.runs_table(self.groups.all_of[sid][::-1], "../", HISTORY_RUNS,
                                 machine=False),
        )  # fmt: skip

    def run_data(self) -> None:
        """The run page (one, client-rendered) and a details file per series it reads."""
        self.page("run.md", "run.md.j2", root="")
        self.run_links = {
            sid: sorted(rid for rid in run_ids if rid in self.by_id)
            for sid, run_ids in self.links.linked.items()
        }
        self.in_workers("run_file", sorted(self.run_links))

    def run_file(self, sid: str) -> None:
        """`bl/runs/<sid>.js`: the details of the series' runs some page links."""
        members = {
            run["run_id"]: _run_details(run)
            for run in self.data.full(self.by_id[rid] for rid in self.run_links[sid])
        }
        payload = {
            "series_page": f"series/{sid}.html" if sid in self.series_pages else None,
            "runs": members,
        }
        name = series_file(sid, ".js")
        self.files[f"bl/runs/{name}"] = _json_script("BENCHLAB_RUNS", sid, payload)

    def in_workers(self, method: str, sids: list[str]) -> None:
        """Call `method(sid)` for each series, in forked worker processes where the site is
        large (`self.workers`): each returns the files it rendered and the runs it linked,
        merged here. Pages do not depend on one another, so the files are the same. The
        site (templates, lookups) is not pickled for spawned workers: without fork the
        pages render here (`pool.pool_map`, picklable=False)."""
        if self.workers <= 1 or len(sids) < 2 or not inherits():
            for sid in sids:
                getattr(self, method)(sid)
            return
        global _SITE_INPUT
        _SITE_INPUT = (self, method)
        chunks = [sids[i :: self.workers * 4] for i in range(self.workers * 4)]
        try:
            results = pool_map(_site_chunk, [c for c in chunks if c], self.workers, picklable=False)
        finally:
            _SITE_INPUT = None
        for files, linked in results:
            self.files.update(files)
            for sid, run_ids in linked.items():
                self.links.linked.setdefault(sid, set()).update(run_ids)


_SITE_INPUT: tuple[_Site, str] | None = None
"""The site and method the forked page workers run (inherited, never pickled)."""


def _site_chunk(sids: list[str]) -> tuple[dict[str, str], dict[str, set[str]]]:
    """In a worker: render these series' files from a clean slate; return them and the
    runs they linked."""
    assert _SITE_INPUT is not None
    site, method = _SITE_INPUT
    site.files = {}
    site.links = Links()
    for sid in sids:
        getattr(site, method)(sid)
    return site.files, site.links.linked


_NO_OUTCOMES = {"ok": 0, "failed": 0, "holes": 0}


def _outcomes(by_machine: Mapping[str, Sequence[Entry]]) -> dict[str, dict[str, int]]:
    """Ok runs, failures and holes (a hole is not a failure) per machine."""
    out = {}
    for machine_id, runs in by_machine.items():
        statuses = Counter(r.get("status", "ok") for r in runs)
        holes = sum(_is_hole(r) for r in runs if r.get("status") == "failed")
        out[machine_id] = {"ok": statuses["ok"], "failed": statuses["failed"] - holes,
                           "holes": holes}  # fmt: skip
    return out


def _newest_of(groups: Iterable[Sequence[Entry]], limit: int) -> list[Entry]:
    """The newest `limit` runs of oldest-first groups, newest first (`_newest_first`)."""
    return _newest_first(r for runs in groups for r in runs[-limit:])


def _drawn(history: Sequence[Entry], steps: Sequence[Step], metric: str) -> list[Entry]:
    """The runs `series_chart(history, steps, ..., metric)` draws as points."""
    with_metric = [r for r in history if r.get(metric) is not None]
    drawn = downsample(with_metric)
    wanted = {s.first_bad_run for s in steps}
    present = {r["run_id"] for r in drawn}
    return drawn + [r for r in with_metric if r["run_id"] in wanted and r["run_id"] not in present]


def render_pages(data: PublicData, workers: int | None = None) -> Rendered:
    """Every generated page, chart script and run data file, as text by relative path.

    Every page is bounded whatever the catalog's size: histories are downsampled
    (`charts.MAX_POINTS`, `TREND_POINTS`), tables are limited (their hidden rows counted),
    aggregates (newest run per series, best per machine) stand in for run lists, and run
    details are published only for the runs some page shows. Runs are read in groups made
    once (`_Groups`), light entries (`publish.data.load_site`) are made full only where a
    page shows them, and the step detector runs per series in `workers` processes
    (`detect_per_series`)."""
    # The runs live to the end of the render: frozen, the cycle collector never walks the
    # million of them again, and forked workers do not copy the pages it would touch.
    gc.freeze()
    try:
        return _render(data, workers)
    finally:
        gc.unfreeze()


def _render(data: PublicData, workers: int | None) -> Rendered:
    site = _Site(data, workers)
    site.home()
    site.compare()
    site.regressions_page()
    health_rows, health_chart = _health(data, site.pages, site.groups.by_machine)
    site.add_charts([health_chart])
    site.page("health.md", "health.md.j2", root="", rows=health_rows, chart=health_chart)
    machine_nav = site.machine_pages()
    model_nav = site.model_pages()
    site.series_pages_()
    site.run_data()
    nav: list[Any] = [
        {"What changed": "index.md"},
        {"Compare": "compare.md"},
        {"Regressions": "regressions.md"},
        {"Fleet health": "health.md"},
    ]
    if machine_nav:
        nav.append({"Machines": machine_nav})
    if model_nav:
        nav.append({"Models": model_nav})
    return Rendered(files=site.files, nav=nav)


# --- the build ------------------------------------------------------------------------------


def default_source(store_root: Path) -> Path:
    """The site/ folder of the repository the store belongs to, never of wherever benchlab
    was installed: two clones sharing one virtualenv each build their own site."""
    root = store_root.resolve()
    for candidate in (root, *root.parents):
        if (candidate / "site" / "mkdocs.yml").is_file():
            return candidate / "site"
    return Path.cwd() / "site"


def expand(files: dict[str, str], path: str) -> str:
    """A rendered page with its slots filled in (what the built page's body holds): for
    tests and for reading `render_pages` output without MkDocs."""
    slots = files.get(f"{SLOTS_DIR}/{path}.json")
    return fill(files[path], json.loads(slots)) if slots else files[path]


def write_docs(data: PublicData, docs: Path, source: Path) -> Rendered:
    """Render the generated docs dir: hand-written pages from source/docs, then generated
    pages, then assets. The dir is replaced whole so no stale page survives."""
    rendered = render_pages(data)
    for rel in rendered.files:  # before anything is removed or written
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise StoreError(f"{rel!a}: a page name outside the site; nothing written")
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    hand = source / "docs"
    if hand.is_dir():
        for path in sorted(hand.rglob("*")):
            rel = path.relative_to(hand)
            if rel.parts[0] == "generated" or not path.is_file():
                continue
            (docs / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, docs / rel)
    for rel, text in sorted(rendered.files.items()):
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    copy_assets(docs / "bl", SITE_ASSETS, durable=False)
    return rendered


def _epoch(stamp: str | None) -> int:
    """SOURCE_DATE_EPOCH from the catalog's last_updated: MkDocs stamps sitemaps with it."""
    if not stamp:
        return 0
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return 0
    return int(moment.timestamp())


def mkdocs_config(source: Path, docs: Path, output: Path, nav: list[Any]) -> dict[str, Any]:
    base_path = source / "mkdocs.yml"
    try:
        base = yaml.safe_load(base_path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{base_path}: cannot read the MkDocs config: {exc}") from None
    config = dict(base)
    config["docs_dir"] = str(docs.resolve())
    config["site_dir"] = str(output.resolve())
    theme = dict(config.get("theme") or {})
    if theme.get("custom_dir"):
        theme["custom_dir"] = str((source / theme["custom_dir"]).resolve())
    config["theme"] = theme
    hand_pages = sorted(
        p.relative_to(source / "docs").as_posix()
        for p in (source / "docs").glob("*.md")
        if (source / "docs").is_dir()
    )
    extra_nav = [{_page_title(source / "docs" / p): p} for p in hand_pages]
    config["nav"] = nav + extra_nav
    # The pages' tables wait in _slots/ and the hook puts them in (publish/hooks.py).
    config["hooks"] = [*config.get("hooks", []), str(Path(hooks.__file__).resolve())]
    excluded = str(config.get("exclude_docs") or "")
    config["exclude_docs"] = f"{excluded}\n/{SLOTS_DIR}/\n".lstrip("\n")
    return config


def _page_title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()


def run_mkdocs(config: dict[str, Any], work: Path, epoch: int) -> None:
    config_path = work / "mkdocs.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=True), encoding="utf-8")
    env = {
        **os.environ,
        "NO_MKDOCS_2_WARNING": "1",
        "SOURCE_DATE_EPOCH": str(epoch),
        "PYTHONHASHSEED": "0",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(config_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        reason = lines[-1] if lines else f"exit {proc.returncode}"
        raise StoreError(f"{config_path}: mkdocs build --strict failed: {reason}")


def build_site(
    data: PublicData,
    output: Path,
    source: Path | None = None,
    docs: Path | None = None,
    run_build: bool = True,
) -> Path:
    """Render the pages and (unless run_build is False) build the site into `output`.

    Returns the generated docs dir when only rendering, else the output dir.
    """
    source = source or default_source(data.store_root or Path.cwd())
    if not (source / "mkdocs.yml").is_file():
        raise ConfigError(f"{source / 'mkdocs.yml'}: file not found (pass --source DIR)")
    if not run_build:
        target = docs or source / "docs" / "generated"
        write_docs(data, target, source)
        return target
    with tempfile.TemporaryDirectory(prefix="benchlab-site-") as tmp:
        work = Path(tmp)
        target = docs or work / "docs"
        rendered = write_docs(data, target, source)
        config = mkdocs_config(source, target, output, rendered.nav)
        if output.exists():
            shutil.rmtree(output)
        run_mkdocs(config, work, _epoch(data.catalog.last_updated))
    return output


# --- the one-file dashboard -----------------------------------------------------------------


def build_dashboard(data: PublicData, output: Path) -> Path:
    """`bench dashboard`: one static HTML page (inventory, recent runs, top charts, filters),
    with plotly.min.js and benchlab.js copied beside it once."""
    env = environment()
    pages = page_names(data)
    charts = build_charts(data, kinds=("throughput", "prefill-decode", "trend"), prefix="dash-")
    text = env.get_template("dashboard.html.j2").render(
        charts=charts,
        chart_json=lambda c: Markup(chart_json(c)),
        last_updated=_time(data.catalog.last_updated),
        machines=_machine_rows(data, pages),
        recent=[_run_row(r, pages) for r in _newest_first(data.runs)[:100]],
    )
    atomic_write_text(output, text)
    copy_assets(output.parent)
    return output


def tree_digest(root: Path, hasher: Callable[[], Any] | None = None) -> str:
    """One hash over every file's relative path and bytes: two equal builds, equal digests."""
    import hashlib

    digest = (hasher or hashlib.sha256)()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
