"""A series' history as a small inline SVG: a line through its runs, the first bad run of a
step as a red dot, marked outliers as hollow circles off the line.

Inline SVG, not a chart library: the home page draws one per open regression and must stay
light (no plotly on it), and an SVG in the table row needs no script to appear."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.detect.stats import is_outlier

WIDTH = 96
HEIGHT = 26
PAD = 3
MAX_POINTS = 60
"""Runs drawn per sparkline, the newest ones: an old step's run is kept (see `sparkline`)."""


def _points(runs: Sequence[Entry], metric: str, keep: str) -> list[tuple[Entry, float]]:
    """The newest `MAX_POINTS` runs with a value, plus `keep` (the first bad run) and the run
    before it where they are older, oldest first."""
    valued = [(r, float(r[metric])) for r in runs if isinstance(r.get(metric), (int, float))]
    if len(valued) <= MAX_POINTS:
        return valued
    ids = [r["run_id"] for r, _ in valued]
    at = ids.index(keep) if keep in ids else len(valued)
    stride = max(1, -(-len(valued) // MAX_POINTS))  # thin evenly, keep the step's runs
    chosen = set(range(len(valued) - 1, -1, -stride)) | {at, at - 1}
    return [valued[i] for i in sorted(chosen) if 0 <= i < len(valued)]


def sparkline(runs: Sequence[Entry], metric: str, first_bad: str, title: str) -> Markup:
    """The SVG of `runs` (one series, oldest first) for `metric`; `first_bad` is dotted red.
    The y range comes from the unmarked runs, so one marked outlier cannot flatten the
    line; a marked run outside it is drawn at the edge, hollow."""
    points = _points(runs, metric, first_bad)
    kept = [v for r, v in points if not is_outlier(r)]
    if len(points) < 2 or not kept:
        return Markup("")
    lo, hi = min(kept), max(kept)
    span = (hi - lo) or abs(hi) or 1.0
    step_x = (WIDTH - 2 * PAD) / (len(points) - 1)

    def y(value: float) -> float:
        clipped = min(max(value, lo), hi)
        return HEIGHT - PAD - (clipped - lo) / span * (HEIGHT - 2 * PAD)

    line, marks = [], []
    for i, (run, value) in enumerate(points):
        at = f'cx="{PAD + i * step_x:.1f}" cy="{y(value):.1f}"'
        if is_outlier(run):
            marks.append(f'<circle class="bl-spark__outlier" {at} r="2"/>')
            continue
        line.append(f"{PAD + i * step_x:.1f},{y(value):.1f}")
        if run["run_id"] == first_bad:
            marks.append(f'<circle class="bl-spark__bad" {at} r="2.4"/>')
    return Markup(
        '<svg class="bl-spark" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        'aria-label="{t}"><title>{t}</title><polyline points="{p}"/>{m}</svg>'
    ).format(w=WIDTH, h=HEIGHT, t=title, p=" ".join(line), m=Markup("".join(marks)))
