"""The home page: what changed in the newest runs' window first, then the fastest
machine per model and precision, the machines, and the newest runs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from benchlab.catalog.format import Entry
from benchlab.ids import slug
from benchlab.publish.context import WINDOW_DAYS, SiteContext, best_per_machine
from benchlab.publish.pages.machines import machine_rows
from benchlab.publish.tables import Table, cell, cell_num, fmt_time, neg, steps_table
from benchlab.regress import Step, recent

RECENT_RUNS = 25
CHANGES_LIMIT = 50
FASTEST_LIMIT = 200


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


def home_page(site: SiteContext) -> None:
    """What changed first; then the fastest machine per model and precision."""
    window_steps = _ordered_changes(recent(site.steps, site.since))
    changed = steps_table(
        window_steps, site.by_id, site.series_pages, site.links, "", CHANGES_LIMIT
    )
    changed.ident = "what-changed"
    newest = max((r["timestamp"] for r in site.latest.values()), default=None)
    groups: dict[tuple[str, str], list[Entry]] = {}
    for (model, _sid), runs in site.groups.ok_of_model.items():
        groups.setdefault((model, runs[-1]["precision"]), []).append(runs[-1])
    fastest_rows = []
    for (model, precision), members in sorted(groups.items()):
        peak = best_per_machine(members, "peak_tok_per_sec")
        decode = best_per_machine(members, "decode_tok_per_sec")
        fastest_rows.append(
            [
                cell(site.model_link(model, "", f"#precision-{slug(precision)}"), model),
                cell(precision),
                cell(peak[0]["machine_id"] if peak else "–"),
                cell_num(peak[0]["peak_tok_per_sec"] if peak else None),
                cell(decode[0]["machine_id"] if decode else "–"),
                cell_num(decode[0]["decode_tok_per_sec"] if decode else None),
                cell_num(len({r["machine_id"] for r in members}), 0),
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
        stats=stats,
        since=fmt_time(site.since),
        newest=fmt_time(newest),
        window_days=WINDOW_DAYS,
        changed=changed,
        changes_total=len(window_steps),
        regressions_in_window=sum(st.kind == "regression" for st in window_steps),
        last_updated=fmt_time(site.data.catalog.last_updated),
        fastest=fastest,
        machines=machine_rows(site.data, site.pages, site.groups.by_machine),
        recent=site.runs_table(newest_of(site.groups.by_machine.values(), RECENT_RUNS),
                               "", RECENT_RUNS, total=len(site.runs)),
    )  # fmt: skip
