"""The compare page: `bench compare --by` for any two machines, builds or revisions,
computed in the browser (assets/compare.js) from per-value summaries written at build time,
and the cost table.

A summary file per axis value (`bl/compare/<axis>-<i>.js`) holds each measurement under that
value: its row fields and, per metric, the side `query.compare` would use (`Sides.side`: the
repeats that count by `side_values`, the one rule) as n, mean and sd, with the one run's
samples (n, mean, sd) where the side is one run that carries them. The page loads A's and
B's files and pairs, picks and marks rows as `query.compare.compare_pair` does (ARCHITECTURE.md,
Compare), so the page and the CLI print the same numbers for any pair, and nothing caps the
pairs: the data grows with the measurements, not with their pairs.
"""

from __future__ import annotations

import hashlib
from typing import Any

from markupsafe import Markup

from benchlab.catalog.format import Entry
from benchlab.detect.stats import T_975, Z_975
from benchlab.identity import series_of, shape, test_names
from benchlab.metrics import CATALOG_METRICS, PEAK, get, lower_is_better, unit_of
from benchlab.publish.charts import build_charts, cost_rows
from benchlab.publish.context import SiteContext
from benchlab.publish.jsontext import dumps
from benchlab.publish.links import series_url
from benchlab.publish.tables import fmt_num
from benchlab.publish.templating import json_script
from benchlab.query.compare import (
    ROW_METRICS,
    best_key,
    gather,
    row_test,
    setting_parts,
    workload_of,
)
from benchlab.query.filters import chronological

COST_LIMIT = 100
NAMED_TESTS = (*(m for m in CATALOG_METRICS if get(m).test in ("pp", "tg")), PEAK.name)
"""The metrics whose row test depends on the run (`query.compare.row_test`: pp512, tg128,
batch peak b8); the others' is a fixed label (`_label`, in the index)."""
MODES = {"machine": ("best", "exact"), "build": ("exact",), "revision": ("exact",)}
"""The matches offered per axis, the default first: machines in a real fleet rarely share
every setting, so their default is each side at its best settings."""


def compare_page(site: SiteContext) -> None:
    index = compare_data(site)
    latest = list(site.latest.values())
    cost_table = [
        {
            "machine": row["machine"],
            "machine_page": site.pages.machine(row["machine"]),
            "model": row["model"],
            "model_page": site.pages.model(row["model"]),
            "precision": row["precision"],
            "threads": "–" if row["threads"] is None else str(row["threads"]),
            "version": row["version"] or "–",
            "tok": fmt_num(row["tok_per_sec"]),
            "price": f"${row['cost_per_hour']:,.2f}",
            "usd": f"${row['usd_per_million_tokens']:,.4f}",
        }
        for row in cost_rows(latest, site.data)[:COST_LIMIT]
    ]
    [cost] = build_charts(site.data, kinds=("cost",), prefix="compare-", runs=latest)
    site.add_charts([cost])
    site.page(
        "compare.md",
        "compare.md.j2",
        root="",
        index=Markup(json_script("BENCHLAB_CMP_INDEX", "index", index)),
        has_pairs=bool(index["axes"]),
        chart=cost,
        plotly=not cost.empty,
        cost_rows=cost_table,
    )


def compare_data(site: SiteContext) -> dict[str, Any]:
    """A summary file per value of each axis (`_summary`); returns the index the page
    embeds: each axis's values, its matches, the metrics' units and directions, and the t
    quantiles the page's significance test reads (`stats.t_quantile`'s own table)."""
    ok_runs = chronological(run for history in site.groups.ok_of.values() for run in history)
    index: dict[str, Any] = {
        "axes": [],
        "metrics": [[m, unit_of(m) or "", lower_is_better(m)] for m in ROW_METRICS],
        "t": [*T_975, Z_975],
        "labels": [row_test({}, m) for m in ROW_METRICS],
    }
    for axis, modes in MODES.items():
        # One segmentation per history window, whichever axis or page asks first.
        sides = gather(ok_runs, axis, site.level_memo, ordered=True)
        values = sorted(sides.present) if axis == "machine" else sides.present
        if len(values) < 2:
            continue
        # A row names its test from its newest run's test list where the workload fields
        # name none, and light entries leave that list out: those runs made full first.
        site.data.upgrade(
            runs[-1] for runs in sides.repeats.values()
            if not test_names(runs[-1].get("prompt_tokens"), runs[-1].get("gen_tokens"),
                              runs[-1].get("depth"))
        )  # fmt: skip
        under: dict[str, list[tuple[str, Any]]] = {}
        for value, key in sides.repeats:
            under.setdefault(value, []).append((repr(key), key))
        for i, value in enumerate(values):
            # Ordered by the key's repr: `compare._pick` takes the first of equal bests so.
            measurements = [
                _summary(sides, value, key, axis, ROW_METRICS, series_of)
                for _, key in sorted(under.get(value, []), key=lambda item: item[0])
            ]
            name = f"{axis}-{i}"
            site.files[f"bl/compare/{name}.js"] = json_script(
                "BENCHLAB_CMP", name, {"value": value, "m": [m for m in measurements if m]}
            )
        index["axes"].append({"axis": axis, "values": values, "modes": list(modes)})
    return index


def _digest(key: Any) -> str:
    """A short stand-in for a row key (two measurements are paired when theirs are equal)."""
    return hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()


def _summary(
    sides: Any, value: str, key: Any, axis: str, metrics: Any, series_of: Any
) -> dict[str, Any] | None:
    """One measurement under `value`: `k` its pair key, `g` the key `match=best` pairs on
    (machines), `f` the row fields of its newest run (model, machine, precision, backend,
    threads, shape, workload), `s` its settings as (name, words, value) for the row's
    settings label, `u` its series page, and `v` per metric the side [metric index, n, mean,
    sd, test] (and the one run's samples' n, mean, sd where it carries them)."""
    run: Entry = sides.repeats[(value, key)][-1]
    found = []
    for index, metric in enumerate(metrics):
        side = sides.side(value, key, metric)
        if side is None:
            continue
        item = [index, side["n"], side["mean"], side["stddev"], row_test(run, metric)]
        held = side.get("samples")
        if held:
            item += [held["n"], held["mean"], held["sd"]]
        found.append(item)
    if not found:
        return None
    # A row is named by A's test even where A lacks the metric (B alone measured it).
    have = {item[0] for item in found}
    named = {
        str(index): row_test(run, metric) for index, metric in enumerate(metrics)
        if index not in have and metric in NAMED_TESTS
    }  # fmt: skip
    out: dict[str, Any] = {
        "k": _digest(key),
        "f": [
            run["model"], run["machine_id"], run["precision"], run.get("backend"),
            run.get("threads"), shape(run) or None, workload_of(run) or None,
        ],
        "u": series_url(series_of(run)),
        "v": found,
    }  # fmt: skip
    if named:
        out["t"] = named
    if axis == "machine":
        out["g"] = _digest(best_key(run, axis))
        out["s"] = [
            [name, text, dumps(run.get(name), sort_keys=True)] for name, text in setting_parts(run)
        ]
    return out
