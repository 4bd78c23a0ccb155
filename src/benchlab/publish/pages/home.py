"""The home page: the answer first (the fastest machine per model and precision, or a first
demo's own results) under a one-line status; then every regression still in effect
(whatever its age, confirmed and suspect apart, each with a sparkline), what changed in the
newest runs' window, the machines, and the newest runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.detect.regress import recent
from benchlab.detect.steps import Step
from benchlab.ids import slug
from benchlab.metrics import DECODE, PEAK, PREFILL
from benchlab.publish.context import WINDOW_DAYS, SiteContext, best_per_machine
from benchlab.publish.detection import build_time, window
from benchlab.publish.open_steps import events, open_table, site_open
from benchlab.publish.pages.machines import machine_rows, machines_table
from benchlab.publish.tables import (
    NOT_MEASURED,
    Table,
    cell,
    cell_level,
    cell_num,
    fmt_time,
    impossible,
    link,
    neg,
    steps_table,
)

RECENT_RUNS = 25
CHANGES_LIMIT = 50
FASTEST_LIMIT = 200
OPEN_LIMIT = 50
GATE_FIELD = "gate"
"""The catalog entry field holding a run's gate verdict ("passed", "failed", "unknown")."""


def open_tables(site: SiteContext, root: str = "") -> dict[str, Any]:
    """The open regressions of every metric of every series, confirmed and suspect apart,
    as the tables and counts the home page shows."""
    found = site_open(site)
    series_link = {sid: _series_href(name, root) for sid, name in site.series_pages.items()}
    run_link = {
        st.first_bad_run: site.links.run(site.by_id[st.first_bad_run], root)
        for st in found
        if st.first_bad_run in site.by_id
    }
    out: dict[str, Any] = {}
    for status, ident in (("confirmed", "open-regressions"), ("suspect", "open-suspects")):
        mine = events([st for st in found if st.status == status])
        out[status] = open_table(mine, site.groups.ok_of, site.by_id, series_link, run_link,
                                 ident, OPEN_LIMIT)  # fmt: skip
        out[f"{status}_total"] = len(mine)
        out[f"{status}_series"] = len({e.lead.series for e in mine})
    return out


def _series_href(name: str, root: str) -> str:
    """A series' address from `site.series_pages`: its view on the one series page
    (`series.html?s=<id>`), or a page of its own where the name is `series/<id>.md`."""
    return f"{root}{name[:-3]}.html" if name.endswith(".md") else f"{root}{name}"


def gate_counts(site: SiteContext) -> dict[str, int] | None:
    """How many series' newest runs passed, failed or could not be judged by their gate;
    None where no newest run carries a verdict, or every one passed (the line is hidden,
    never wrong: all passed says no more than "no regression")."""
    newest = site.data.full(site.latest[sid] for sid in sorted(site.latest))
    verdicts = Counter(r.get(GATE_FIELD) for r in newest if r.get(GATE_FIELD) is not None)
    if not verdicts or verdicts["passed"] == len(newest):
        return None
    return {
        "passed": verdicts["passed"],
        "failed": verdicts["failed"],
        "unknown": len(newest) - verdicts["passed"] - verdicts["failed"],  # none is unknown
        "series": len(newest),
    }


def _ordered_changes(steps: Sequence[Step]) -> list[Step]:
    """What a reader wants first: regressions (confirmed, then suspect), then improvements;
    newest first within each."""
    rank = {("regression", "confirmed"): 0, ("regression", "suspect"): 1}
    return sorted(
        steps,
        key=lambda s: (rank.get((s.kind, s.status), 2), neg(s.first_bad_timestamp), s.series),
    )


def newest_first(runs: Iterable[Entry]) -> list[Entry]:
    """Newest first, ties by run id: the order of every "recent runs" table."""
    return sorted(runs, key=lambda r: (r["timestamp"], r["run_id"]), reverse=True)


def newest_of(groups: Iterable[Sequence[Entry]], limit: int) -> list[Entry]:
    """The newest `limit` runs of oldest-first groups, newest first (`newest_first`)."""
    return newest_first(r for runs in groups for r in runs[-limit:])


DEMO_MACHINE = "local"
"""Every clone's default machine id: a catalog of it alone is the quick start's demo."""
DEMO_LIMIT = 50


def demo_results(site: SiteContext) -> dict[str, Any] | None:
    """A first demo's own results (a catalog whose only machine is `local`): each series'
    newest run, and one sentence saying what ran, where, and how to name and publish."""
    if site.data.machine_ids() != [DEMO_MACHINE] or not site.groups.ok_of:
        return None
    newest = sorted(
        (runs[-1] for runs in site.groups.ok_of.values()),
        key=lambda r: (r["model"], r["precision"], r.get("threads") or 0, r["run_id"]),
    )
    rows = [
        [
            cell(site.model_link(r["model"], ""), r["model"]),
            cell(r["precision"]),
            cell_num(r.get("threads"), 0),
            cell_num(r.get(PREFILL.name)),
            cell_num(r.get(DECODE.name)),
            cell_num(r.get(PEAK.name)),
            cell(link(site.links.run(r, ""), fmt_time(r["timestamp"])), r["timestamp"]),
        ]
        for r in newest[:DEMO_LIMIT]
    ]
    table = Table(
        [("Model", "text"), ("Precision", "text"), ("Threads", "num"), ("Prefill tok/s", "num"),
         ("Decode tok/s", "num"), ("Peak tok/s", "num"), ("Run (UTC)", "text")],
        rows, sort="0:asc", hidden=max(0, len(newest) - DEMO_LIMIT), ident="demo-results",
    )  # fmt: skip
    runs = sum(len(r) for r in site.groups.ok_of.values())
    backends = ", ".join(sorted({str(r.get("backend") or "?") for r in newest}))
    models = ", ".join(sorted({r["model"] for r in newest}))
    sentence = Markup(
        "This is a demo: {} run(s) of the {} backend ({}) ran on this computer under the "
        "machine id <code>local</code>, which is never published; to publish, give the machine "
        "a name of its own (<code>bench onboard --machine-id NAME</code>), run "
        "<code>dvc repro</code> again and add the catalog to git."
    ).format(runs, backends, models)
    return {"table": table, "sentence": sentence}


def home_page(site: SiteContext, now: datetime | None = None) -> None:
    """Open regressions first, what changed in the window next; then the fastest machine
    per model and precision. `now` (the build time by default) only sets aside runs
    stamped in the future, so that they cannot move the window (`detection.window`)."""
    since, newest = window(site.groups.ok_of.values(), WINDOW_DAYS, now or build_time())
    window_steps = _ordered_changes(recent(site.steps, since))
    changed = steps_table(
        window_steps, site.by_id, site.series_pages, site.links, "", CHANGES_LIMIT
    )
    changed.ident = "what-changed"
    groups: dict[tuple[str, str], list[list[Entry]]] = {}
    for (model, _sid), runs in site.groups.ok_of_model.items():
        groups.setdefault((model, runs[-1]["precision"]), []).append(runs)
    fastest_rows = []
    for (model, precision), members in sorted(groups.items()):
        # The current level, as `bench best` answers (ARCHITECTURE.md, The current level).
        peak = best_per_machine(members, (PEAK.name,), site.level_memo)
        # Never a decode faster than its machine's bandwidth allows (How close to the hardware).
        specs = site.data.specs
        decode = best_per_machine(members, (DECODE.name,), site.level_memo, specs)
        decode = [item for item in decode if not impossible(item, specs)]
        fastest_rows.append(
            [
                cell(site.model_link(model, "", f"#precision-{slug(precision)}"), model),
                cell(precision),
                cell(peak[0].latest["machine_id"] if peak else "–"),
                cell_level(peak[0], PEAK.name) if peak else NOT_MEASURED,
                cell(decode[0].latest["machine_id"] if decode else "–"),
                cell_level(decode[0], DECODE.name) if decode else NOT_MEASURED,
                cell_num(len({runs[-1]["machine_id"] for runs in members}), 0),
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
    counts = site.outcomes
    stats = {
        "machines": len(site.data.machine_ids()),
        "models": len(site.pages.models),
        "series": len(site.series_pages),
        "ok": sum(len(runs) for runs in site.groups.ok_of.values()),
        "failed": sum(c["failed"] for c in counts.values()),
        "holes": sum(c["holes"] for c in counts.values()),
    }
    site.page(
        "index.md",
        "home.md.j2",
        root="",
        empty=not site.runs,
        demo=demo_results(site),
        stats=stats,
        since=fmt_time(since),
        newest=fmt_time(newest),
        window_days=WINDOW_DAYS,
        changed=changed,
        changes_total=len(window_steps),
        regressions_in_window=sum(st.kind == "regression" for st in window_steps),
        open=open_tables(site),
        gates=gate_counts(site),
        last_updated=fmt_time(site.data.catalog.last_updated),
        fastest=fastest,
        machines=machines_table(machine_rows(site.data, site.pages, site.groups.by_machine), ""),
        recent=site.runs_table(newest_of(site.groups.by_machine.values(), RECENT_RUNS),
                               "", RECENT_RUNS, total=len(site.runs)),
    )  # fmt: skip
