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

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from benchlab.errors import ConfigError, StoreError
from benchlab.identity import shape, version_label
from benchlab.ids import check_id, slug
from benchlab.layout import atomic_write_text
from benchlab.models import HOLE_TAG
from benchlab.publish.charts import (
    Chart,
    Regression,
    base_layout,
    build_charts,
    chart_json,
    cost_per_million,
    cost_rows,
    find_regressions,
    label,
    latest_by_series,
    shown,
    throughput,
    trend_chart,
)
from benchlab.publish.data import PublicData
from benchlab.publish.static import SITE_ASSETS, copy_assets
from benchlab.query.filters import Filters
from benchlab.redact import scrub_public
from benchlab.regress import series_of

RECENT_RUNS = 25
HISTORY_RUNS = 50
REGRESSIONS_METHOD = "step detection of benchlab.regress, rank-based with a permutation test"

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


def _result_row(run: Entry, pages: Pages, data: PublicData) -> dict[str, Any]:
    price = data.cost_per_hour(run["machine_id"])
    rate = throughput(run)
    cost = cost_per_million(price, rate) if price is not None and rate else None
    speedup = run.get("speedup")
    return {
        **_run_row(run, pages),
        "prefill": _num(run.get("prefill_tok_per_sec")),
        "decode": _num(run.get("decode_tok_per_sec")),
        "speedup": "–" if speedup is None else f"{speedup:.2f}×",
        "cost": "–" if cost is None else f"${cost:,.4f}",
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


def _machine_rows(data: PublicData, pages: Pages) -> list[dict[str, Any]]:
    runs_by_machine = Counter(r["machine_id"] for r in data.runs)
    last: dict[str, str] = {}
    for run in data.runs:
        if run["timestamp"] > last.get(run["machine_id"], ""):
            last[run["machine_id"]] = run["timestamp"]
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


def _health(data: PublicData, pages: Pages) -> tuple[list[dict[str, Any]], Chart]:
    rows = []
    by_machine: dict[str, list[Entry]] = {}
    for run in data.runs:
        by_machine.setdefault(run["machine_id"], []).append(run)
    for machine_id in data.machine_ids():
        runs = by_machine.get(machine_id, [])
        holes = [r for r in runs if _is_hole(r)]
        failed = [r for r in runs if r.get("status") == "failed" and not _is_hole(r)]
        ok = [r for r in runs if r.get("status", "ok") == "ok"]
        kinds = Counter(r.get("failure_kind") or "unknown" for r in failed)
        rows.append(
            {
                "id": machine_id,
                "page": pages.machine(machine_id),
                "runs": len(runs),
                "ok": len(ok),
                "failed": len(failed),
                "holes": len(holes),
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


def render_pages(data: PublicData) -> Rendered:
    """Every generated page and chart script, as text by relative path."""
    env = environment()
    pages = page_names(data)
    files: dict[str, str] = {}
    runs = data.runs
    ok_runs = shown(runs)
    # Found once over every whole series; each page's trend keeps those among its runs.
    regressions = find_regressions(ok_runs)

    def add_charts(charts: Sequence[Chart]) -> None:
        for c in charts:
            if not c.empty:
                files[f"bl/charts/{c.slug}.js"] = _chart_script(c)

    def page(path: str, template: str, **context: Any) -> None:
        files[path] = env.get_template(template).render(**context)

    # Home.
    home = {
        c.slug.removeprefix("home-"): c
        for c in build_charts(data, kinds=("throughput",), prefix="home-")
    }
    pair = headline_pair(ok_runs)
    [split] = build_charts(
        data,
        Filters(model=pair[0], precision=pair[1]) if pair else Filters(),
        kinds=("prefill-decode",),
        prefix="home-",
    )
    if pair:
        split.title = f"Prefill vs decode: {pair[0]} · {pair[1]} (log scale)"
        split.figure["layout"]["title"]["text"] = html.escape(split.title)
    home["prefill-decode"] = split
    add_charts(home.values())
    stats = {
        "machines": len(data.machine_ids()),
        "models": len(pages.models),
        "ok": sum(r.get("status", "ok") == "ok" for r in runs),
        "failed": sum(r.get("status") == "failed" and not _is_hole(r) for r in runs),
        "holes": sum(_is_hole(r) for r in runs),
    }
    page(
        "index.md",
        "home.md.j2",
        root="",
        stats=stats,
        last_updated=_time(data.catalog.last_updated),
        charts=home,
        machines=_machine_rows(data, pages),
        recent=[_run_row(r, pages) for r in _newest_first(runs)[:RECENT_RUNS]],
    )

    # Compare and cost.
    compare = build_charts(data, kinds=("throughput", "cost"), prefix="compare-")
    add_charts(compare)
    latest = list(latest_by_series(ok_runs).values())
    cost_table = [
        {
            "machine": row["machine"],
            "machine_page": pages.machine(row["machine"]),
            "model": row["model"],
            "model_page": pages.model(row["model"]),
            "precision": row["precision"],
            "threads": "–" if row["threads"] is None else str(row["threads"]),
            "version": row["version"] or "–",
            "tok": _num(row["tok_per_sec"]),
            "price": f"${row['cost_per_hour']:,.2f}",
            "usd": f"${row['usd_per_million_tokens']:,.4f}",
        }
        for row in cost_rows(ok_runs, data)
    ]
    page(
        "compare.md",
        "compare.md.j2",
        root="",
        charts=compare,
        cost_rows=cost_table,
        table=[_result_row(r, pages, data) for r in latest],
    )

    # Regressions.
    flagged = {series_of(g.run) for g in regressions}
    flagged_runs = [r for r in ok_runs if series_of(r) in flagged]
    reg_chart = trend_chart(flagged_runs, "regressions-trend", regressions)
    add_charts([reg_chart])
    page(
        "regressions.md",
        "regressions.md.j2",
        root="",
        method=REGRESSIONS_METHOD,
        chart=reg_chart,
        rows=[_regression_row(g, pages) for g in reversed(regressions)],
    )

    # Fleet health.
    health_rows, health_chart = _health(data, pages)
    add_charts([health_chart])
    page("health.md", "health.md.j2", root="", rows=health_rows, chart=health_chart)

    # One page per machine.
    machine_nav = []
    for machine_id in data.machine_ids():
        mine = [r for r in runs if r["machine_id"] == machine_id]
        prefix = f"machine-{machine_id}-"
        charts = build_charts(
            data,
            Filters(machines=(machine_id,)),
            kinds=("throughput", "trend", "scaling"),
            prefix=prefix,
            regressions=regressions,
        )
        add_charts(charts)
        newest = _newest_first(mine)
        page(
            f"machines/{pages.machine(machine_id)}",
            "machine.md.j2",
            root="../",
            machine_id=machine_id,
            summary={
                "runs": len(mine),
                "ok": sum(r.get("status", "ok") == "ok" for r in mine),
                "failed": sum(r.get("status") == "failed" and not _is_hole(r) for r in mine),
                "holes": sum(_is_hole(r) for r in mine),
                "last_run": _time(newest[0]["timestamp"] if newest else None),
            },
            specs=_specs_rows(data, machine_id),
            charts=charts,
            history=[_run_row(r, pages) for r in newest[:HISTORY_RUNS]],
            hidden=max(0, len(newest) - HISTORY_RUNS),
        )
        machine_nav.append({html.escape(machine_id): f"machines/{pages.machine(machine_id)}"})

    # One page per model.
    model_nav = []
    for model, name in pages.models.items():
        mine = [r for r in runs if r["model"] == model]
        ids = {r["model_id"] for r in mine if r.get("model_id")}
        filters = Filters(model=sorted(ids)[0] if len(ids) == 1 else model)
        charts = build_charts(
            data,
            filters,
            prefix=f"model-{name.removesuffix('.md')}-",
            regressions=regressions,
        )
        add_charts(charts)
        newest_ok = [r for r in ok_runs if r["model"] == model]
        page(
            f"models/{name}",
            "model.md.j2",
            root="../",
            model=model,
            summary={
                "ok": sum(r.get("status", "ok") == "ok" for r in mine),
                "failed": sum(r.get("status") == "failed" for r in mine),
                "machines": len({r["machine_id"] for r in mine}),
                "precisions": ", ".join(sorted({r["precision"] for r in mine})) or "–",
            },
            charts=charts,
            table=[_result_row(r, pages, data) for r in latest_by_series(newest_ok).values()],
        )
        model_nav.append({html.escape(model): f"models/{name}"})

    nav: list[Any] = [
        {"Overview": "index.md"},
        {"Compare and cost": "compare.md"},
        {"Regressions": "regressions.md"},
        {"Fleet health": "health.md"},
    ]
    if machine_nav:
        nav.append({"Machines": machine_nav})
    if model_nav:
        nav.append({"Models": model_nav})
    return Rendered(files=files, nav=nav)


def headline_pair(runs: Sequence[Entry]) -> tuple[str, str] | None:
    """The model and precision measured on the most machines (then most runs, then name):
    the home page's prefill/decode chart shows it, the model pages show the rest."""
    machines: dict[tuple[str, str], set[str]] = {}
    counts: Counter[tuple[str, str]] = Counter()
    for run in runs:
        key = (run["model"], run["precision"])
        machines.setdefault(key, set()).add(run["machine_id"])
        counts[key] += 1
    if not counts:
        return None
    return min(counts, key=lambda k: (-len(machines[k]), -counts[k], k))


def _regression_row(g: Regression, pages: Pages) -> dict[str, Any]:
    """A step of the detector: the run row of its first bad run, the medians either side,
    and the version axis either side (a build change inside the series shows here)."""
    step = g.step
    return {
        **_run_row(g.run, pages),
        "before": _num(g.before),
        "after": _num(g.after),
        "change": f"−{100 * g.drop:.1f} %",
        "version_before": step.version_before or "–",
        "version_after": step.version_after or "–",
        "version_changed": step.version_changed,
    }


# --- the build ------------------------------------------------------------------------------


def default_source(store_root: Path) -> Path:
    """The site/ folder of the repository the store belongs to, never of wherever benchlab
    was installed: two clones sharing one virtualenv each build their own site."""
    root = store_root.resolve()
    for candidate in (root, *root.parents):
        if (candidate / "site" / "mkdocs.yml").is_file():
            return candidate / "site"
    return Path.cwd() / "site"


def write_docs(data: PublicData, docs: Path, source: Path) -> Rendered:
    """Render the generated docs dir: hand-written pages from source/docs, then generated
    pages, then assets. The dir is replaced whole so no stale page survives."""
    rendered = render_pages(data)
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
