"""What a run used and how long it waited (memory, energy, latencies) and whether its
repeats were steady, as the site shows them: a value with its registry unit, or the words
"not measured", never a 0 or a blank that reads as a measurement."""

from __future__ import annotations

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.metrics import DEFAULT_MAX_CV, UNSTABLE_TAG, unit_of

MEASURES = ("peak_rss_mb", "gpu_mem_peak_mb", "joules_per_token", "decode_ms_per_token", "ttft_ms")
"""The catalog's memory, energy and latency metrics, in the order a page lists them."""

MEASURE_NAMES = {
    "peak_rss_mb": "Peak resident memory",
    "gpu_mem_peak_mb": "Peak GPU memory",
    "joules_per_token": "Energy per token",
    "decode_ms_per_token": "Time per output token",
    "ttft_ms": "Time to first token",
}

NOT_MEASURED = "not measured"
NOT_MEASURED_WHY = {"joules_per_token": "not measured: no energy counter on this device"}
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
        [f"{MEASURE_NAMES[m]} ({unit_of(m)}, lower is better)", measure_text(run, m)]
        for m in MEASURES
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
