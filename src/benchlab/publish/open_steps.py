"""The open-regressions table the home and regressions pages lead with: one row per
regression still in effect (`detection.open_regressions`), with a sparkline of its series.

One event seen in several metrics of one series (the same first bad run: peak, prefill and
decode all drop with a slower build) is one row, led by its largest metric, the others named
beside it, so a single slow build is not counted three times. The columns are few and short
(before and after under the change, confidence without prose) so that the table fits the
content column at 1440 px without hiding Confidence and "Runs after", and stacks as cards
at 390 px (the CSS keys on the table's id)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.detect.steps import Step
from benchlab.metrics import DEFAULT_METRIC, unit_of
from benchlab.publish.detection import open_order, open_regressions
from benchlab.publish.sparkline import sparkline
from benchlab.publish.tables import (
    Cell,
    Table,
    cell,
    cell_num,
    fmt_num,
    fmt_time,
    link,
    metric_name,
)

if TYPE_CHECKING:
    from benchlab.publish.context import SiteContext


COLUMNS = [
    ("Trend", "text"),
    ("Series", "text"),
    ("Change", "num"),
    ("First bad run (UTC)", "text"),
    ("Build before → after", "text"),
    ("Confidence", "num"),
    ("Runs after", "num"),
]


@dataclass(frozen=True)
class Event:
    """One regression of one series, as seen in one or more of its metrics."""

    lead: Step
    also: tuple[Step, ...] = ()


def events(steps: Sequence[Step]) -> list[Event]:
    """Open regressions grouped by (series, first bad run), each led by its headline metric
    where that stepped, else by its largest change; in `open_order` of the leads."""
    grouped: dict[tuple[str, str], list[Step]] = {}
    for step in steps:
        grouped.setdefault((step.series, step.first_bad_run), []).append(step)
    out = []
    for members in grouped.values():
        members.sort(key=lambda s: (s.metric != DEFAULT_METRIC, open_order(s)))
        out.append(Event(members[0], tuple(members[1:])))
    return sorted(out, key=lambda e: open_order(e.lead))


def site_open(site: SiteContext) -> list[Step]:
    """The regressions still in effect of a site: of its steps in every metric its series
    carry (`detection.detect_per_series`), the same steps its Regressions page lists."""
    return open_regressions(site.steps)


def _change(event: Event) -> Cell:
    step = event.lead
    unit = unit_of(step.metric) or ""
    text = Markup('<strong class="bl-open__pct">{}</strong>').format(f"{100 * step.change:+.1f} %")
    text += Markup('<span class="bl-open__sub">{} {} → {} {}</span>').format(
        metric_name(step.metric), _level(step.before), _level(step.after), unit
    )
    if event.also:
        also = ", ".join(f"{metric_name(s.metric)} {100 * s.change:+.0f} %" for s in event.also)
        text += Markup('<span class="bl-open__sub">also {}</span>').format(also)
    return (text, f"{abs(step.change):.6g}")


def _level(value: float) -> str:
    """A level as its size asks: 1,300 MiB, 122.9 tok/s, 4.80 tok/s, 0.0123 s."""
    size = abs(value)
    digits = 0 if size >= 1000 else 1 if size >= 100 else 2 if size >= 1 else 4
    return fmt_num(value, digits)


def _versions(step: Step) -> Markup:
    before = step.version_before or "not recorded"
    after = step.version_after or "not recorded"
    if step.version_changed:
        return Markup("{} → <strong>{}</strong>").format(before, after)
    return Markup("same: {}").format(after)


def _confidence(step: Step) -> Cell:
    text = f"{step.confidence:.3f}" if step.confidence < 0.999 else "≥ 0.999"
    if step.corroborated_by:
        return (
            Markup('{} <span class="bl-open__sub" title="{} more series on this machine stepped '
                   'with it">+{} series agree</span>').format(
                text, step.corroborated_by, step.corroborated_by),
            f"{step.confidence:.6f}",
        )  # fmt: skip
    return (Markup("{}").format(text), f"{step.confidence:.6f}")


def open_table(
    found: Sequence[Event],
    history_of: dict[str, list[Entry]],
    by_id: dict[str, Entry],
    series_link: dict[str, str],
    run_link: dict[str, str],
    ident: str,
    limit: int,
) -> Table:
    """The rows of `found`: sparkline, series, change (with before → after), first bad run,
    build either side, confidence, runs after. `series_link` and `run_link` give the hrefs
    of series pages and first bad runs (the caller records the runs it links)."""
    rows = []
    for event in found[:limit]:
        step = event.lead
        history = history_of.get(step.series, [])
        title = f"{step.label}: {metric_name(step.metric)}, {len(history)} runs"
        href = series_link.get(step.series)
        bad = by_id.get(step.first_bad_run)
        stamp = fmt_time(step.first_bad_timestamp)
        when = link(run_link[step.first_bad_run], stamp) if bad is not None else stamp
        rows.append(
            [
                cell(sparkline(history, step.metric, step.first_bad_run, title), ""),
                cell(link(href, step.label) if href else step.label, step.label),
                _change(event),
                cell(when, step.first_bad_timestamp),
                cell(_versions(step)),
                _confidence(step),
                cell_num(step.runs_after, 0),
            ]
        )
    return Table(list(COLUMNS), rows, hidden=max(0, len(found) - limit), ident=ident)
