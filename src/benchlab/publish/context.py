"""The site context: one render's runs grouped once, the detector's steps, the run
links the pages make, the files they write, and the helpers every page uses (links to
machine, model and series pages, the runs table, the thinned trend charts)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.detect.regress import window_start
from benchlab.detect.steps import Step
from benchlab.identity import series_of, version_label
from benchlab.metrics import CATALOG_METRICS, HEADLINE_ORDER, PEAK
from benchlab.publish.charts import (
    Chart,
    Regression,
    Styles,
    downsample,
    label,
    trend_chart,
)
from benchlab.publish.charts.history import trend_metrics
from benchlab.publish.charts.levels import tails
from benchlab.publish.data import PublicData
from benchlab.publish.detection import (
    Found,
    detect_order,
    find_per_series,
    merge_found,
    workers_for,
)
from benchlab.publish.hooks import SLOTS_DIR
from benchlab.publish.links import Links, page_names, series_page_names
from benchlab.publish.tables import (
    Table,
    cell,
    cell_decode,
    cell_num,
    fmt_time,
    impossible,
    is_hole,
    link,
    prefill_mark,
    status_badge,
)
from benchlab.publish.templating import chart_script, environment, templates_cache
from benchlab.query.filters import chronological
from benchlab.query.level import SeriesLevel, StepMemo, rank_key, segment_windows, series_levels

if TYPE_CHECKING:
    from benchlab.models import MachineSpecs

HISTORY_RUNS = 50
WINDOW_DAYS = 14
"""The home page's "what changed" window, counted back from the newest run (not today)."""
STEPS_LIMIT = 200
TREND_POINTS = 60
"""Points per series on the overview trend charts; a series' own page draws up to 300."""


@dataclass
class Groups:
    """The runs grouped once, each group oldest first (`shown`'s order): at a million runs
    every pass over all of them costs about a second, so pages read these groups."""

    ok_of: dict[str, list[Entry]]
    """Series id -> its ok runs (a series' history)."""
    all_of: dict[str, list[Entry]]
    by_machine: dict[str, list[Entry]]
    by_model: dict[str, list[Entry]]
    ok_of_model: dict[tuple[str, str], list[Entry]]
    """(model name, series id) -> its ok runs: a model's page and the home page's fastest
    table group runs by the model's name, which the series key does not hold."""
    mixed: set[str]
    """Series whose runs carry more than one model name: drawn without thinning."""

    @classmethod
    def of(cls, runs: Iterable[Entry]) -> Groups:
        ok_of: dict[str, list[Entry]] = {}
        all_of: dict[str, list[Entry]] = {}
        by_machine: dict[str, list[Entry]] = {}
        by_model: dict[str, list[Entry]] = {}
        ok_of_model: dict[tuple[str, str], list[Entry]] = {}
        for run in chronological(runs):
            sid = series_of(run)
            all_of.setdefault(sid, []).append(run)
            by_machine.setdefault(run["machine_id"], []).append(run)
            by_model.setdefault(run["model"], []).append(run)
            if run.get("status", "ok") == "ok":
                ok_of.setdefault(sid, []).append(run)
                ok_of_model.setdefault((run["model"], sid), []).append(run)
        names = Counter(sid for _, sid in ok_of_model)
        mixed = {sid for sid, count in names.items() if count > 1}
        return cls(ok_of, all_of, by_machine, by_model, ok_of_model, mixed)


NO_OUTCOMES = {"ok": 0, "failed": 0, "holes": 0}


def outcomes(by_machine: Mapping[str, Sequence[Entry]]) -> dict[str, dict[str, int]]:
    """Ok runs, failures and holes (a hole is not a failure) per machine."""
    out = {}
    for machine_id, runs in by_machine.items():
        statuses = Counter(r.get("status", "ok") for r in runs)
        holes = sum(is_hole(r) for r in runs if r.get("status") == "failed")
        out[machine_id] = {"ok": statuses["ok"], "failed": statuses["failed"] - holes,
                           "holes": holes}  # fmt: skip
    return out


LEVEL_MEANS = HEADLINE_ORDER
"""The throughput columns a page's table averages over a series' newest segment."""


def best_per_machine(
    histories: Iterable[Sequence[Entry]],
    metrics: Sequence[str],
    memo: StepMemo | None = None,
    specs: Mapping[str, MachineSpecs] | None = None,
) -> list[SeriesLevel]:
    """Each machine's best series at its current level, best first: the newest segment's
    mean with outliers left out, the answer `bench best` gives (ARCHITECTURE.md, The current
    level), never one newest run. Machines rank by the first of `metrics` their series
    carry (peak aggregate, else decode: a llama-bench run measures no batched peak), each
    metric's machines after the previous one's, in the metric's own direction. With `specs`,
    a series whose decode beats its machine's memory bandwidth is never ranked: it comes
    after every possible one (ARCHITECTURE.md, How close to the hardware)."""
    entries = tails(histories)
    best: dict[str, SeriesLevel] = {}
    for metric in metrics:
        ranked = rank_key(metric)
        items = series_levels(entries, metric, memo, LEVEL_MEANS)
        for item in sorted(items, key=lambda it: (impossible(it, specs), ranked(it))):
            best.setdefault(item.latest["machine_id"], item)
    if specs:  # a machine whose every series is impossible: after the possible ones
        return sorted(best.values(), key=lambda it: impossible(it, specs))
    return list(best.values())


@dataclass
class Shared:
    """One process's part of a render's shared work (`SiteContext.share`)."""

    found: dict[str, Found]
    """Series id -> the detector's pass over it."""
    levels: StepMemo
    """The level windows it segmented."""


class SiteContext:
    """One render: the pages, the run links they make, and the lookups they share."""

    def __init__(self, data: PublicData, workers: int | None = None, detect: bool = True) -> None:
        """`detect=False` leaves the detector's pass to `share` and `complete`, which split
        it between two processes (`workers.beside`)."""
        self.data = data
        self.env = environment(templates_cache(data.store_root))
        self.pages = page_names(data)
        self.files: dict[str, str] = {}
        self.runs = data.runs
        self.groups = Groups.of(self.runs)
        self.by_id = {r["run_id"]: r for r in self.runs}
        self.links = Links()
        self.ok_runs = sum(len(runs) for runs in self.groups.ok_of.values())
        """How many ok runs the render reads: it sizes the worker processes."""
        self.workers = workers if workers is not None else workers_for(self.ok_runs)
        self.level_memo: StepMemo = {}
        """One segmentation per history window, whichever page or chart asks first."""
        self.latest = {sid: runs[-1] for sid, runs in self.groups.ok_of.items()}
        """The newest ok run of each series: what `latest_by_series` keeps of any runs."""
        self.since = window_start(self.latest.values(), WINDOW_DAYS)
        self.outcomes = outcomes(self.groups.by_machine)
        self._thinned: dict[tuple[str | None, str], list[Entry]] = {}
        self._points: dict[tuple[str, str], Any] = {}
        """Each drawn run's chart point (`charts.point_data`), made once for every trend."""
        self.series_pages = series_page_names(self.latest.values())
        """Series id -> its address on the one series page, relative to the site root."""
        self.steps_by_series: dict[str, list[Step]] = {}
        """Each series' steps, for its page (`pages.series`)."""
        self.run_links: dict[str, list[str]] = {}
        """Each series' linked runs once every page is rendered, for its run file."""
        self._shared: list[Shared] = []
        self.detected = False
        self.steps: list[Step] = []
        self.series_steps: dict[str, list[Step]] = {}
        """Each series' steps in every metric it carries (`detection.merge_found`)."""
        self.regressions: list[Regression] = []
        self.flagged: set[str] = set()
        self.judged: dict[str, list[str]] = {}
        """Each series' judged metrics, as the detector's pass found them."""
        if detect:
            self.detect()

    def detect(self) -> None:
        """The detector's pass over every series, in `workers` processes
        (`detection.detect_per_series`, its metrics per series kept)."""
        ok_of = self.groups.ok_of
        found = find_per_series(ok_of, detect_order(ok_of), self.workers)
        self._use_steps(*merge_found(ok_of, found))
        self._keep_judged(found)

    def _keep_judged(self, found: dict[str, Found]) -> None:
        self.judged.update((sid, metrics) for sid, (*_, metrics) in found.items())

    def _use_steps(self, steps: list[Step], series_steps: dict[str, list[Step]]) -> None:
        self.steps, self.series_steps = steps, series_steps
        self.regressions = [
            Regression(self.by_id[st.first_bad_run], self.by_id[st.first_bad_run][st.metric],
                       st.before, st.after, st)
            for st in self.steps
            if st.kind == "regression" and st.status == "confirmed"
            and st.first_bad_run in self.by_id
        ]  # fmt: skip
        self.flagged = {g.run["run_id"] for g in self.regressions}
        self.detected = True

    def share(self, part: int, parts: int) -> Shared:
        """This process's part of what the pages of every process read: for every
        `parts`-th series from `part` on, the detector's pass (where not done yet) and the
        segmentation of its level windows (`segment_levels`). Kept here and returned, for
        the other processes' `complete`."""
        found = {}
        if not self.detected:
            sids = detect_order(self.groups.ok_of)[part::parts]
            found = find_per_series(self.groups.ok_of, sids, 1)
        self.segment_levels(part, parts)
        mine = Shared(found, dict(self.level_memo))
        self._shared.append(mine)
        return mine

    def complete(self, *others: Shared) -> None:
        """Take the other processes' parts (`share`): the levels into the memo, and with
        every series' detector pass, the steps (the same in every process: `merge_found`
        orders them)."""
        found: dict[str, Found] = {}
        for part in (*self._shared, *others):
            found.update(part.found)
            self.level_memo.update(part.levels)
        self._shared = []
        if not self.detected:
            self._use_steps(*merge_found(self.groups.ok_of, found))
            self._keep_judged(found)

    def segment_levels(self, part: int, parts: int) -> None:
        """Fill the level memo for every `parts`-th series from `part` on, for each metric a
        run can carry: the windows that the pages' current levels read (`share`)."""
        histories = list(self.groups.ok_of.values())[part::parts]
        segment_windows(histories, CATALOG_METRICS, self.level_memo)

    def add_charts(self, charts: Iterable[Chart]) -> None:
        for chart in charts:
            self.links.from_chart(chart)
            if not chart.empty:
                self.files[f"bl/charts/{chart.slug}.js"] = chart_script(chart)

    def page(self, path: str, template: str, **context: Any) -> None:
        """Render a page; its tables go to its slots file (`publish.hooks`)."""
        slots: list[str] = []

        def slot(table_html: str) -> Markup:
            slots.append(str(table_html))
            return Markup(f"<!--bl-slot {len(slots) - 1}-->")

        self.files[path] = self.env.get_template(template).render(slot=slot, **context)
        if slots:
            self.files[f"{SLOTS_DIR}/{path}.json"] = json.dumps(slots, ensure_ascii=False) + "\n"

    def series_link(self, run: Mapping[str, Any], root: str, text: str | None = None) -> Markup:
        sid = series_of(run)
        shown_text = text if text is not None else label(run)
        if sid in self.series_pages:
            return link(f"{root}{self.series_pages[sid]}", shown_text)
        return Markup("{}").format(shown_text)

    def machine_link(self, machine_id: str, root: str) -> Markup:
        return link(f"{root}machines/{self.pages.machine(machine_id)[:-3]}.html", machine_id)

    def model_link(self, model: str, root: str, anchor: str = "") -> Markup:
        return link(f"{root}models/{self.pages.model(model)[:-3]}.html{anchor}", model)

    def trend(self, sids: Iterable[str], slug: str, model: str | None = None) -> Chart:
        """`trend_chart(self.ok_runs_of(sids, model), slug, self.regressions,
        max_points=TREND_POINTS)`, from each series' history thinned once for every chart
        that draws it: the runs `downsample` keeps, and the regressions. Exact where every
        history drawn holds one model name (always on a model's page): then the first run
        of a thinned history names its series as the first of the whole one does, and the
        styles come from each series' fields, as those of the whole histories do."""
        sids = sorted(sids)
        keys = [(model, sid) for sid in sids]
        if model is None and any(sid in self.groups.mixed for sid in sids):
            whole = self.ok_runs_of(sids)
            return trend_chart(whole, slug, self.regressions, max_points=TREND_POINTS,
                               metrics=trend_metrics(whole))  # fmt: skip
        runs: list[Entry] = []
        newest: list[Entry] = []  # one run per series: all that `Styles.of` tells apart
        for key in keys:
            thinned = self._thinned.get(key)
            if thinned is None:
                # Every throughput the trend offers (`trend_metrics`), thinned on the first
                # the series carries: a llama-bench series has no peak, and is drawn all
                # the same.
                whole = self.ok_runs_of([key[1]], key[0])
                carried = trend_metrics(whole)
                drawn = [r for r in whole if any(r.get(m) is not None for m in carried)]
                keep = {r["run_id"] for r in downsample(drawn, TREND_POINTS, carried[0])} \
                    if carried else set()  # fmt: skip
                thinned = [r for r in drawn if r["run_id"] in keep or r["run_id"] in self.flagged]
                self._thinned[key] = thinned
            if thinned:
                newest.append(thinned[-1])
            runs.extend(thinned)
        styles = Styles.of(newest)
        return trend_chart(runs, slug, self.regressions, max_points=None, styles=styles,
                           metrics=trend_metrics(newest), made=self._points)  # fmt: skip

    def runs_table(
        self,
        rows_in: Sequence[Entry],
        root: str,
        limit: int,
        machine: bool = True,
        total: int | None = None,
    ) -> Table:
        """The first `limit` of `rows_in` (of `total` runs, when only those are given)."""
        self.data.upgrade(rows_in[:limit])
        columns = [("Time (UTC)", "text")]
        if machine:
            columns.append(("Machine", "text"))
        columns += [
            ("Model", "text"),
            ("Precision", "text"),
            ("Threads", "num"),
            ("Status", "text"),
            ("Peak tok/s", "num"),
            ("Decode tok/s", "num"),
            ("Build", "text"),
            ("Attempt", "text"),
            ("Series", "text"),
        ]
        rows = []
        for run in rows_in[:limit]:
            row = [
                cell(link(self.links.run(run, root), fmt_time(run["timestamp"])), run["timestamp"])
            ]
            if machine:
                row.append(cell(self.machine_link(run["machine_id"], root), run["machine_id"]))
            attempt, attempts = run.get("attempt"), run.get("attempts")
            row += [
                cell(self.model_link(run["model"], root), run["model"]),
                cell(run["precision"]),
                cell_num(run.get("threads"), 0),
                cell(
                    status_badge(run) + prefill_mark(run, self.data.specs), run.get("status", "ok")
                ),
                cell_num(run.get(PEAK.name)),
                cell_decode(run, self.data.specs),
                cell(version_label(run) or "–"),
                cell(f"{attempt}/{attempts}" if attempt and attempts else "–"),
                cell(self.series_link(run, root, "series")),
            ]
            rows.append(row)
        total = len(rows_in) if total is None else total
        return Table(columns, rows, sort="0:desc", hidden=max(0, total - limit))

    def ok_runs_of(self, sids: Iterable[str], model: str | None = None) -> list[Entry]:
        """The ok runs of these series (of `model` only, if given), each series oldest first:
        what the charts group by series, as they would `shown(...)` of the same runs."""
        if model is None:
            return [r for sid in sids for r in self.groups.ok_of[sid]]
        return [r for sid in sids for r in self.groups.ok_of_model.get((model, sid), ())]

    def latest_of(self, model: str | None = None) -> dict[str, Entry]:
        """The newest ok run of each series (of `model`'s runs only, if given): all that
        `latest_by_series` keeps of any set of runs holding every run of those series."""
        if model is None:
            return self.latest
        return {
            sid: runs[-1] for (name, sid), runs in self.groups.ok_of_model.items() if name == model
        }
