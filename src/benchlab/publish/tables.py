"""Table cells and the sortable tables pages show: each cell is its text and the key
the page script sorts it by (`Cell`), so a column of numbers sorts by value, not as text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.detect.steps import Step
from benchlab.metrics import DECODE as DECODE_METRIC
from benchlab.metrics import PREFILL as PREFILL_METRIC
from benchlab.metrics import title, unit_of
from benchlab.models import HOLE_TAG, MachineSpecs
from benchlab.publish.links import Links
from benchlab.publish.measures import unstable_badge
from benchlab.query.level import SeriesLevel
from benchlab.query.roofline import judge_entry, judge_prefill_entry


def fmt_num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def fmt_time(stamp: str | None) -> str:
    return "–" if not stamp else stamp.replace("T", " ").rstrip("Z")


def is_hole(run: Entry) -> bool:
    return run.get("status", "ok") == "failed" and HOLE_TAG in run.get("tags", ())


Cell = tuple[Markup, Any]


def link(href: str, text: Any) -> Markup:
    return Markup('<a href="{}">{}</a>').format(href, text)


def cell_num(value: float | None, digits: int = 1, suffix: str = "") -> Cell:
    """A number cell: shown formatted, sorted by its value (blank sorts last)."""
    if value is None:
        return (Markup("–"), "")
    return (Markup("{}{}").format(f"{value:,.{digits}f}", suffix), f"{value:.6g}")


NOT_MEASURED: Cell = (Markup("not measured"), "")
"""A metric the run or series has no value for (sorted last, never read as zero)."""


DECODE = DECODE_METRIC.name
PREFILL = PREFILL_METRIC.name
IMPOSSIBLE_TITLE = (
    "faster than its machine's memory bandwidth allows (decode over 1.1 x bandwidth / bytes "
    "per token): a mistake or a fake, never ranked"
)
IMPOSSIBLE_PREFILL_TITLE = (
    "faster than its machine's peak compute allows (prefill over 1.1 x peak FLOP/s / FLOPs "
    "per token): a mistake or a fake, never ranked by prefill"
)
IMPOSSIBLE_TITLES = {DECODE: IMPOSSIBLE_TITLE, PREFILL: IMPOSSIBLE_PREFILL_TITLE}
"""The metrics the physics check judges, each with its badge's explanation."""
IMPOSSIBLE_BADGE = Markup('<span class="bl-badge bl-badge--bad" title="{}">impossible</span>')


def impossible(
    item: SeriesLevel, specs: Mapping[str, MachineSpecs] | None, metric: str = DECODE
) -> bool:
    """Whether a series' decode (or prefill) level beats its machine's memory bandwidth (or
    peak compute) (ARCHITECTURE.md, How close to the hardware); False where it cannot be
    judged or `specs` is None."""
    if not specs:
        return False
    rate = item.level.value if item.metric == metric else item.means.get(metric)
    if rate is None:
        return False
    if metric == PREFILL:
        compute = judge_prefill_entry(item.latest, specs, rate)
        return compute is not None and compute.impossible
    found = judge_entry(item.latest, specs, rate)
    return found is not None and found.impossible


def cell_level(
    item: SeriesLevel, metric: str, specs: Mapping[str, MachineSpecs] | None = None
) -> Cell:
    """A series' `metric` as a page shows it: its current level with the 95% interval's ±
    and "unstable" past the CV limit where `metric` is the level's own, else the newest
    segment's mean ("not measured" where the series did not measure it, e.g. a llama-bench
    run's batched peak): a number with its noise, and never a blank that reads as zero.
    With `specs`, a decode or prefill faster than physics allows is marked impossible and
    sorts last."""
    if item.metric != metric:
        value = item.means.get(metric)
        found = cell_num(value) if value is not None else NOT_MEASURED
    else:
        level = item.level
        text = f"{level.value:,.1f}"
        if level.pm is not None:
            text += f" ± {level.pm:,.1f}"
        if level.unstable:
            text += " unstable"
        shown = Markup("{}").format(text)
        if level.repeats:  # one run: its ± is of its own repeats (query.level.with_repeats)
            shown += Markup(' <span class="bl-within" title="{}">within 1 run</span>').format(
                f"one run: the ± is of its {level.repeats} repeats, the spread within the "
                "run, which understates the noise between runs"
            )
        found = (shown, f"{level.value:.6g}")
    title = IMPOSSIBLE_TITLES.get(metric)
    if title and found is not NOT_MEASURED and impossible(item, specs, metric):
        return (Markup("{} {}").format(found[0], IMPOSSIBLE_BADGE.format(title)), "")
    return found


def cell_decode(run: Entry, specs: Mapping[str, MachineSpecs] | None) -> Cell:
    """One run's decode rate, marked impossible where it beats its machine's bandwidth."""
    found = cell_num(run.get(DECODE))
    if not specs or run.get("status", "ok") != "ok":
        return found
    judged = judge_entry(run, specs)
    if judged is None or not judged.impossible:
        return found
    return (Markup("{} {}").format(found[0], IMPOSSIBLE_BADGE.format(IMPOSSIBLE_TITLE)), found[1])


def prefill_mark(run: Entry, specs: Mapping[str, MachineSpecs] | None) -> Markup:
    """The "impossible prefill" badge for a run whose prefill beats its machine's peak
    compute (the runs tables have no prefill column: the mark goes beside its status)."""
    if not specs or run.get("status", "ok") != "ok":
        return Markup("")
    judged = judge_prefill_entry(run, specs)
    if judged is None or not judged.impossible:
        return Markup("")
    return Markup(
        ' <span class="bl-badge bl-badge--bad" title="{}">impossible prefill</span>'
    ).format(IMPOSSIBLE_PREFILL_TITLE)


def cell(text: Any, key: Any = None) -> Cell:
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


def status_badge(run: Entry) -> Markup:
    if is_hole(run):
        return Markup('<span class="bl-badge bl-badge--hole">hole</span>')
    if run.get("status", "ok") == "ok":
        return Markup('<span class="bl-badge bl-badge--ok">ok</span>') + unstable_badge(run)
    kind = run.get("failure_kind")
    return Markup('<span class="bl-badge bl-badge--bad">failed{}</span>').format(
        f" · {kind}" if kind else ""
    )


def neg(stamp: str) -> tuple[int, ...]:
    """A key that sorts stamps newest first inside an otherwise ascending sort."""
    return tuple(-ord(c) for c in stamp)


def _step_status(step: Step) -> Markup:
    kind = "bad" if step.kind == "regression" else "ok"
    text = step.kind if step.status == "confirmed" else f"{step.status} {step.kind}"
    if step.status == "outlier":  # one run that came back: shown as a suspect run, no step
        text = "outlier run (suspect)"
    css = kind if step.status == "confirmed" else "suspect"
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


def metric_name(metric: str) -> str:
    """A metric in running text: its display name (`metrics.title`), lowercased unless it
    starts with an acronym (`peak aggregate`, `GPU memory`)."""
    name = title(metric)
    return name if name[:2].isupper() else name[:1].lower() + name[1:]


def _change_in(step: Step) -> Cell:
    """The step's size and, under it, the metric it is a step of (each metric of a series
    is its own history: ARCHITECTURE.md, Regression detection)."""
    text, key = cell_num(100 * step.change, 1, " %")
    sub = Markup(' <span class="bl-open__sub" data-metric="{}">{}</span>').format(
        step.metric, metric_name(step.metric)
    )
    return (text + sub, key)


def steps_table(
    steps: Sequence[Step],
    by_id: dict[str, Entry],
    series_pages: dict[str, str],
    links: Links,
    root: str,
    limit: int,
    show_series: bool = True,
) -> Table:
    """The detector's steps as rows: kind and status, size, the metric (each metric of a
    series is its own history), series, first bad run (a link to its run page), the build
    or revision either side, the levels before and after in the metric's unit, confidence,
    runs after it."""
    columns = [("Status", "text"), ("Change", "num")]
    if show_series:
        columns.append(("Series", "text"))
    columns += [
        ("First bad run (UTC)", "text"),
        ("Build before → after", "text"),
        ("Before", "num"),
        ("After", "num"),
        ("Confidence", "num"),
        ("Runs after", "num"),
    ]
    rows = []
    for step in steps[:limit]:
        bad = by_id.get(step.first_bad_run)
        run_cell = (
            link(links.run(bad, root), fmt_time(step.first_bad_timestamp))
            if bad is not None
            else Markup("{}").format(fmt_time(step.first_bad_timestamp))
        )
        row = [
            (_step_status(step), f"{step.status} {step.kind}"),
            _change_in(step),
        ]
        if show_series:
            page_name = series_pages.get(step.series)
            text = step.label
            row.append(cell(link(f"{root}{page_name}", text) if page_name else text, text))
        row += [
            cell(run_cell, step.first_bad_timestamp),
            cell(_versions(step)),
            cell_num(step.before, 2, f" {unit_of(step.metric) or ''}".rstrip()),
            cell_num(step.after, 2, f" {unit_of(step.metric) or ''}".rstrip()),
            _confidence(step),
            cell_num(step.runs_after, 0),
        ]
        rows.append(row)
    return Table(columns, rows, hidden=max(0, len(steps) - limit))
