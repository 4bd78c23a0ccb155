"""The run page (one, client-rendered) and the run files it reads: a file per
series holding the details of the runs some page links, and only those."""

from __future__ import annotations

from typing import Any

from benchlab.catalog.format import Entry
from benchlab.detect.stats import is_outlier
from benchlab.identity import shape, version_label
from benchlab.publish.charts import label
from benchlab.publish.context import SiteContext
from benchlab.publish.links import series_file
from benchlab.publish.measures import UNSTABLE_TITLE, is_unstable, measure_rows
from benchlab.publish.templating import json_script
from benchlab.publish.workers import in_workers, part_of

_DETAIL_SKIP = frozenset({"path", "series", "gate", "gate_detail", "outlier_reason"})


def run_details(run: Entry) -> dict[str, Any]:
    """What a run page shows: the entry less its store path, plus the labels the site uses
    (series, version, shape)."""
    detail = {k: v for k, v in run.items() if k not in _DETAIL_SKIP and v not in (None, [], {})}
    detail["label"] = label(run)
    detail["version"] = version_label(run)
    detail["shape"] = shape(run) or None
    detail["tests"] = list(run.get("tests") or ())
    # Written out here, not left to the page script: an absent measure reads "not
    # measured" (never 0 or blank), and the words and units come from the registry. The
    # names are written once per run file (`measure_names`), the values per run.
    detail["measures"] = [value for _, value in measure_rows(run)]
    if is_unstable(run):
        detail["unstable"] = UNSTABLE_TITLE
    gate = gate_of(run)
    if gate is not None:
        detail["gate"] = gate
    if is_outlier(run):
        detail["outlier"] = str(run.get("outlier_reason") or "no reason given")
    return detail


GATE_VERDICTS = ("passed", "failed", "unknown")
MEASURE_NAMES_SHOWN = [name for name, _ in measure_rows({})]
"""The measures' names with units, in `measure_rows` order: the run page's first column."""


def gate_of(run: Entry) -> dict[str, str] | None:
    """The run's gate verdict and its detail, or None where no gate applied (the catalog
    entry has no `gate`) or the verdict is not one of the three known words."""
    verdict = run.get("gate")
    if verdict not in GATE_VERDICTS:
        return None
    return {"verdict": str(verdict), "detail": str(run.get("gate_detail") or "")}


def run_page(site: SiteContext) -> None:
    """The run page: one, client-rendered, for every run."""
    site.page("run.md", "run.md.j2", root="")


def run_part(site: SiteContext, part: int, parts: int) -> None:
    """A details file for each series `workers.part_of` gives to `part` of `parts`, of the
    runs the pages link (rendered after them, in `workers`)."""
    site.run_links = {
        sid: sorted(rid for rid in run_ids if rid in site.by_id)
        for sid, run_ids in site.links.linked.items()
        if part_of(sid, parts) == part
    }
    in_workers(site, run_file, sorted(site.run_links))


def run_file(site: SiteContext, sid: str) -> None:
    """`bl/runs/<sid>.js`: the details of the series' runs some page links."""
    members = {
        run["run_id"]: run_details(run)
        for run in site.data.full(site.by_id[rid] for rid in site.run_links[sid])
    }
    payload = {
        "series_page": site.series_pages.get(sid),
        "measure_names": MEASURE_NAMES_SHOWN,
        "runs": members,
    }
    name = series_file(sid, ".js")
    site.files[f"bl/runs/{name}"] = json_script("BENCHLAB_RUNS", sid, payload)
