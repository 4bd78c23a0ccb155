"""What a run used and how long it waited (memory, energy, latencies) and whether its
repeats were steady, as the site shows them: a value with its registry unit, or the words
"not measured", never a 0 or a blank that reads as a measurement."""

from __future__ import annotations

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.metrics import (
    CATALOG_RESOURCES,
    DEFAULT_MAX_CV,
    JOULES_PER_TOKEN,
    LATENCY,
    UNSTABLE_TAG,
    better_word,
    title,
    unit_of,
)

MEASURES = (*CATALOG_RESOURCES, *LATENCY)
"""The catalog's memory, energy and latency metrics, in the order a page lists them."""

NOT_MEASURED = "not measured"
NOT_MEASURED_WHY = {JOULES_PER_TOKEN.name: "not measured: no energy counter on this device"}
"""Why a measure can be absent, where one reason covers every case: an energy figure is
missing only where the device has no counter to read."""

UNSTABLE_TITLE = (
    "unstable: this run's repeats varied more than policies.max_cv allows "
    f"(coefficient of variation over {DEFAULT_MAX_CV:.0%} by default); re-run on a quiet machine"
)


def measure_text(run: Entry, metric: str) -> str:
    """`metric` of `run` with its unit, or why there is none."""
    value = run.get(metric)
    if value is None or isinstance(value, bool):
        return NOT_MEASURED_WHY.get(metric, NOT_MEASURED)
    unit = unit_of(metric) or ""
    return f"{value:,.2f} {unit}".rstrip() if isinstance(value, float) else f"{value} {unit}"


def measure_rows(run: Entry) -> list[list[str]]:
    """[name (unit), value or "not measured"] for each of MEASURES."""
    return [
        [f"{title(m)} ({unit_of(m)}, {better_word(m)})", measure_text(run, m)] for m in MEASURES
    ]


def is_unstable(run: Entry) -> bool:
    """The catalog marks such a run with the `unstable` tag (its record with `unstable`)."""
    return UNSTABLE_TAG in (run.get("tags") or ()) or run.get("unstable") is True


def unstable_badge(run: Entry) -> Markup:
    """A visible badge for an unstable run whose tooltip names the CV threshold; empty
    otherwise."""
    if not is_unstable(run):
        return Markup("")
    return Markup('<span class="bl-badge bl-badge--unstable" title="{}">unstable</span>').format(
        UNSTABLE_TITLE
    )
