"""The one filter over catalog entries (`--model --machine --precision --since ...`), and
the orderings every verb, chart and page shares."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from benchlab.catalog.read import METRICS
from benchlab.errors import QueryError
from benchlab.identity import precision_family, series_of
from benchlab.ids import slug
from benchlab.metrics import HEADLINE_ORDER, LOWER_IS_BETTER, check_known

# --- filters ------------------------------------------------------------------------------


def parse_date(text: str, flag: str) -> str:
    """A `--since/--until` value: a date as YYYY-MM-DD, or an ISO date-time (`2025-07-04T12:00`,
    with seconds, a `Z` or an offset) as the UTC time `YYYY-MM-DDTHH:MM:SSZ` (one without an
    offset is read as UTC, as the catalog's timestamps are); anything else is a one-line
    QueryError."""
    raw = text.strip()
    try:
        if len(raw) == 10:
            return datetime.strptime(raw, "%Y-%m-%d").strftime("%Y-%m-%d")
        if len(raw) > 10 and raw[10] in "Tt ":
            return utc_stamp(raw)
    except ValueError:
        pass
    raise QueryError(
        f"{flag}: expected a date YYYY-MM-DD or a date-time such as 2025-07-04T12:00 "
        f"(Z or an offset allowed), got {text!r}"
    )


def utc_stamp(text: str) -> str:
    """An ISO date-time as `YYYY-MM-DDTHH:MM:SSZ` in UTC (naive: read as UTC); ValueError
    where it is not one."""
    moment = datetime.fromisoformat(text.replace("z", "Z"))
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def check_range(since: str | None, until: str | None) -> None:
    """Refuse `--since` after `--until`: an empty window asked by mistake, not a question."""
    if since is None or until is None:
        return
    width = min(len(since), len(until))
    if since[:width] > until[:width]:
        raise QueryError(f"--since {since} is after --until {until}: no run can match")


def _entry_stamp(entry: dict[str, Any]) -> str:
    """An entry's timestamp as `utc_stamp` writes it (the catalog's own are already)."""
    stamp: str = entry["timestamp"]
    if len(stamp) == 20 and stamp.endswith("Z"):
        return stamp
    try:
        return utc_stamp(stamp)
    except ValueError:
        return stamp


def check_metric(metric: str) -> str:
    """`metric` if a verb can rank it: a registry metric, or one the loaded catalog's runs
    declare one way (ARCHITECTURE.md, Metrics); else a one-line QueryError."""
    problem = check_known(metric, METRICS)
    if problem is not None:
        raise QueryError(f"--metric: {problem}")
    return metric


@dataclass(frozen=True)
class Filters:
    """What `--model --machine --precision --since --until --tag --status` ask for.

    model matches an entry's slug `model_id` or the slug of its display name, so
    `SmolLM2-135M` and `smollm2-135m` both find the same runs; machine and precision
    match case-insensitively; dates are inclusive; every tag given must be present;
    status None means any status. `machines` (any of them) and `run_type` (an entry's mode
    or one of its tags) are what `bench chart --machines --run-type` and the site's pages ask
    for; they filter the same rows the same way as every other verb.

    Identity filters (ARCHITECTURE.md, Measurement identity): a precision that is a family
    (`q4`) matches every quant type of it (`q4_k_m`, `q4_0`) while an exact type
    (`q4_k_m`) matches only itself; `threads` is exact; `backend` is the backend's name
    (`llama-bench`, `reference`); `build` matches the version axis: a backend_version
    (`b4567 (1a2b3c4)`, `benchlab 0.1.0`), a build number (`4567` or `b4567`) or a commit
    prefix of 4+ hex digits; `series` is a series id or a prefix of one.
    """

    model: str | None = None
    machine: str | None = None
    precision: str | None = None
    since: str | None = None
    until: str | None = None
    tags: tuple[str, ...] = ()
    status: str | None = None
    machines: tuple[str, ...] = ()
    run_type: str | None = None
    threads: int | None = None
    backend: str | None = None
    build: str | None = None
    series: str | None = None

    def describe(self) -> str:
        """The filters as the flags that set them, for 'no runs match ...' messages."""
        parts = [
            f"--{name} {value}"
            for name, value in (
                ("model", self.model),
                ("machine", self.machine),
                ("precision", self.precision),
                ("since", self.since),
                ("until", self.until),
                ("status", self.status),
                ("machines", ",".join(self.machines)),
                ("run-type", self.run_type),
                ("threads", self.threads),
                ("backend", self.backend),
                ("build", self.build),
                ("series", self.series),
            )
            if value
        ]
        parts += [f"--tag {tag}" for tag in self.tags]
        return " ".join(parts)


def model_key(entry: Mapping[str, Any]) -> str:
    """The slug a run's model is known by: its `model_id`, else the slug of its name."""
    model_id = entry.get("model_id")
    if model_id:
        key: str = model_id.lower()
        return key
    return slug(entry["model"])


def select(runs: Iterable[dict[str, Any]], filters: Filters) -> list[dict[str, Any]]:
    """The entries that pass every filter, in the order given.

    One list comprehension per filter, the most selective (model) first: on 100,000 runs
    this is several times faster than testing a list of predicates per entry.
    """
    rows = list(runs)
    if filters.model is not None:
        wanted = slug(filters.model)
        names = {e["model"] for e in rows}
        matching_names = {name for name in names if slug(name) == wanted}
        rows = [
            e
            for e in rows
            if e["model"] in matching_names
            or ((model_id := e.get("model_id")) is not None and model_id.lower() == wanted)
        ]
    if filters.machine is not None:
        machine = filters.machine.lower()
        rows = [e for e in rows if e["machine_id"].lower() == machine]
    if filters.precision is not None:
        precision = filters.precision.lower()
        if precision_family(precision) == precision:  # a family: q4 is q4_0, q4_k_m ...
            rows = [e for e in rows if _family(e) == precision]
        else:
            rows = [e for e in rows if e["precision"].lower() == precision]
    if filters.since is not None:
        since = filters.since
        if len(since) == 10:
            rows = [e for e in rows if e["timestamp"][:10] >= since]
        else:  # a date-time: to the second, in UTC
            rows = [e for e in rows if _entry_stamp(e) >= since]
    if filters.until is not None:
        until = filters.until
        if len(until) == 10:
            rows = [e for e in rows if e["timestamp"][:10] <= until]
        else:
            rows = [e for e in rows if _entry_stamp(e) <= until]
    if filters.tags:
        wanted_tags = set(filters.tags)
        rows = [e for e in rows if wanted_tags.issubset(e.get("tags", ()))]
    if filters.status is not None:
        status = filters.status
        rows = [e for e in rows if e.get("status", "ok") == status]
    if filters.machines:
        machines = {m.lower() for m in filters.machines}
        rows = [e for e in rows if e["machine_id"].lower() in machines]
    if filters.run_type is not None:
        run_type = filters.run_type
        rows = [e for e in rows if e.get("mode") == run_type or run_type in e.get("tags", ())]
    if filters.threads is not None:
        threads = filters.threads
        rows = [e for e in rows if e.get("threads") == threads]
    if filters.backend is not None:
        backend = filters.backend.lower()
        rows = [e for e in rows if (e.get("backend") or "").lower() == backend]
    if filters.build is not None:
        build = filters.build.lower()
        rows = [e for e in rows if _build_matches(e, build)]
    if filters.series is not None:
        series = filters.series
        rows = [e for e in rows if series_of(e).startswith(series)]
    return rows


def _family(entry: dict[str, Any]) -> str:
    """An entry's precision family: stored by v2 catalogs, derived for older entries."""
    return entry.get("precision_family") or precision_family(entry["precision"])


def _build_matches(entry: dict[str, Any], build: str) -> bool:
    """Whether lower-cased `build` names the entry's place on the version axis."""
    version = entry.get("backend_version")
    if version is not None and version.lower() == build:
        return True
    number = entry.get("backend_build")
    if number is not None and build in (str(number), f"b{number}"):
        return True
    commit = entry.get("backend_commit")
    if not commit:
        return False
    return len(build) >= 4 and commit.lower().startswith(build)


def chronological(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (e["timestamp"], e["run_id"]))


TABLE_METRICS = HEADLINE_ORDER
"""What `table` ranks by, in turn: a llama-bench kernel run has no batch peak, and its
best run is then the one that decodes fastest. Here, below the verbs and the columnar
query cache, because both rank by it."""


def ranked(entries: Iterable[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Best `metric` first (highest; lowest for LOWER_IS_BETTER, memory and energy); ties
    go to the newer run, then the smaller run id.

    Entries without a value for the metric come last.
    """
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    rows = sorted(entries, key=lambda e: e["run_id"])
    rows.sort(key=lambda e: e["timestamp"], reverse=True)
    rows.sort(
        key=lambda e: (e.get(metric) is not None, sign * (e.get(metric) or 0.0)), reverse=True
    )
    return rows
