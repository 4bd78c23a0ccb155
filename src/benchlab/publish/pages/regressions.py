"""The regressions page: the regressions still in effect first (as on the home page), then
every step the detector finds, newest first."""

from __future__ import annotations

from benchlab.publish.context import STEPS_LIMIT, SiteContext
from benchlab.publish.open_steps import events, site_open
from benchlab.publish.tables import neg, steps_table

REGRESSIONS_METHOD = (
    "step detection of benchlab.detect.regress: the whole history segmented, a test per step "
    "and an effect size gate against the series' own noise, the false discovery rate kept across "
    "series, plus a tail check for steps too recent to confirm"
)


def regressions_page(site: SiteContext) -> None:
    everything = sorted(site.steps, key=lambda st: (neg(st.first_bad_timestamp), st.series))
    table = steps_table(everything, site.by_id, site.series_pages, site.links, "", STEPS_LIMIT)
    table.ident = "all-steps"
    flagged = {g.step.series for g in site.regressions}
    chart = site.trend(flagged, "regressions-trend")
    site.add_charts([chart])
    found = site_open(site)
    site.page(
        "regressions.md",
        "regressions.md.j2",
        root="",
        empty=not site.runs,
        series_count=len(site.series_pages),
        method=REGRESSIONS_METHOD,
        chart=chart,
        table=table,
        total=len(everything),
        open_total=len(events([st for st in found if st.status == "confirmed"])),
        open_suspects=len(events([st for st in found if st.status == "suspect"])),
    )
