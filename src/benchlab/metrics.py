"""The one place a metric is derived from a backend's raw result.

The runner calls `derive` once, when a point has run, and stores the numbers in
record.json; the progress line, the catalog, the query verbs, the charts, the site and the
exporter all read them from there and never recompute them from kernel.json. A run dir
without a record (an import, a hand-made run in the harness format) goes through this same function,
so a number means the same thing whichever way it arrived.

Rules, in one place:
- prefill: the kernel prefill point at the spec's prompt size; else the largest prompt
  measured (the test name says which: `pp64`);
- decode: the kernel's decode result; `decode_ms_per_token` its per-token median;
- ttft_ms: time to the first token at the spec's prompt size, prompt tokens over the
  prefill rate (the chosen point's tokens when the spec names no prompt size);
- peak / baseline / speedup: batch.json's peak and batch-1 baseline, speedup = peak/baseline
  when batch.json does not state it; the peak is a batched aggregate, so a curve with no
  point over batch 1 (llama-bench measures one sequence) has no peak and no speedup;
- stddev and samples: where the backend measured them (llama-bench's `stddev_ts`, reps).
A backend's own extra metrics (`ParsedRun.metrics`) are kept beside these but never
override them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Literal

from benchlab.errors import ConfigError, ParseError
from benchlab.identity import test_key as identity_test_key
from benchlab.identity import test_names

Better = Literal["higher", "lower"]
Group = Literal["throughput", "spread", "latency", "resource", "import", "kernel", "declared"]
"""What a metric measures: a rate, a rate's spread over repeats, a wait, what a run used, an
imported benchmark's value, a kernel point's raw time, a config's own declaration."""
Test = Literal["pp", "tg", "batch1", "batch", "run"]
"""Which test of a run shapes a metric (`test_key`): the prompt-processing test, the
generation test, the batch-1 point or the batched curve, or the run's whole workload."""


@dataclass(frozen=True)
class Metric:
    """One metric, declared once: every verb (best, compare, detect, gates, exporter,
    charts, pages) asks it its label, unit and which way is better instead of keeping its
    own list (ARCHITECTURE.md, Metrics)."""

    name: str
    unit: str
    better: Better
    help: str
    kind: Literal["num", "spread", "record"] = "num"
    """num: a catalog entry field verbs rank; spread: a catalog entry field that qualifies
    another (never ranked); record: kept in record.json and kernel results only."""
    label: str = ""
    """The display name, capitalised (`Decode`, `Time to first token`): chart axes, page
    headings and columns; the name with spaces where empty (a declared metric)."""
    short: str = ""
    """A terse lowercase name (`decode`, `peak rss`): CLI columns and compare rows."""
    group: Group = "declared"
    test: Test = "run"
    """Which test of the run shapes the metric (`test_key`)."""
    spread: str | None = None
    """The metric holding this rate's standard deviation over repeats, where measured."""
    sources: tuple[str, ...] = ()
    """The metrics this one is computed from (ARCHITECTURE.md, Regression detection): where
    they are in a series, a step in this one is theirs again."""
    export: str | None = None
    """The Prometheus family a sweep's exporter publishes it under (a millisecond metric in
    seconds, Prometheus' base unit); None: not exported."""

    @property
    def lower_is_better(self) -> bool:
        return self.better == "lower"

    @property
    def title(self) -> str:
        """The display name (`label`), or the name with spaces for an unlabelled one."""
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def words(self) -> str:
        """The terse name (`short`), or the name with spaces for an unlabelled one."""
        return self.short or self.name.replace("_", " ")

    @property
    def column(self) -> str:
        """A CLI column header: the terse name and the unit (`decode tok/s`); a ratio
        (unit `x`) is named alone."""
        return self.words if self.unit == "x" else f"{self.words} {self.unit}"

    @property
    def heading(self) -> str:
        """A page column header: the display name and the unit (`Decode tok/s`)."""
        return self.title if self.unit == "x" else f"{self.title} {self.unit}"


def _declare(*metrics: Metric) -> dict[str, Metric]:
    table: dict[str, Metric] = {}
    for metric in metrics:
        if metric.name in table:  # pragma: no cover - a programming error, caught at import
            raise ValueError(f"metric {metric.name!r} declared twice")
        table[metric.name] = metric
    return table


_TOK = "tok/s"
PEAK = Metric(
    "peak_tok_per_sec", _TOK, "higher", "Peak aggregate throughput over batch sizes.",
    label="Peak aggregate", short="peak", group="throughput", test="batch",
    export="benchlab_point_peak_tokens_per_second",
)  # fmt: skip
BASELINE = Metric(
    "baseline_tok_per_sec", _TOK, "higher", "Batch-1 throughput.",
    label="Batch-1", short="baseline", group="throughput", test="batch1",
)  # fmt: skip
SPEEDUP = Metric(
    "speedup", "x", "higher", "Peak throughput over the batch-1 baseline.",
    label="Speedup", short="speedup", group="throughput", test="batch",
    sources=(PEAK.name, BASELINE.name),
)  # fmt: skip
PREFILL = Metric(
    "prefill_tok_per_sec", _TOK, "higher", "Prompt processing rate.",
    label="Prefill", short="prefill", group="throughput", test="pp", spread="prefill_stddev",
    export="benchlab_point_prefill_tokens_per_second",
)  # fmt: skip
DECODE = Metric(
    "decode_tok_per_sec", _TOK, "higher", "Token generation rate.",
    label="Decode", short="decode", group="throughput", test="tg", spread="decode_stddev",
    export="benchlab_point_decode_tokens_per_second",
)  # fmt: skip
PREFILL_SD = Metric(
    "prefill_stddev", _TOK, "lower", "Spread of the prefill rate.", "spread",
    label="Prefill stddev", short="prefill stddev", group="spread", test="pp",
)  # fmt: skip
DECODE_SD = Metric(
    "decode_stddev", _TOK, "lower", "Spread of the decode rate.", "spread",
    label="Decode stddev", short="decode stddev", group="spread", test="tg",
)  # fmt: skip
PEAK_RSS = Metric(
    "peak_rss_mb", "MiB", "lower", "Peak resident set of the benchmark process.",
    label="Peak resident memory", short="peak rss", group="resource",
)  # fmt: skip
GPU_MEM = Metric(
    "gpu_mem_peak_mb", "MiB", "lower", "Peak GPU memory in use on the device.",
    label="Peak GPU memory", short="gpu memory", group="resource",
)  # fmt: skip
ENERGY = Metric(
    "energy_j", "J", "lower", "Energy over the whole run.", "record",
    label="Energy", short="energy", group="resource",
)  # fmt: skip
JOULES_PER_TOKEN = Metric(
    "joules_per_token", "J", "lower", "Energy per generated token.",
    label="Energy per token", short="energy", group="resource",
)  # fmt: skip
DECODE_MS = Metric(
    "decode_ms_per_token", "ms", "lower", "Time per output token (decode median).",
    label="Time per output token", short="time per token", group="latency", test="tg",
    sources=(DECODE.name,), export="benchlab_point_decode_seconds_per_token",
)  # fmt: skip
TTFT = Metric(
    "ttft_ms", "ms", "lower", "Time to first token at the spec's prompt size.",
    label="Time to first token", short="first token", group="latency", test="pp",
    sources=(PREFILL.name,), export="benchlab_point_time_to_first_token_seconds",
)  # fmt: skip

REGISTRY: dict[str, Metric] = _declare(
    PEAK,
    BASELINE,
    SPEEDUP,
    PREFILL,
    DECODE,
    PREFILL_SD,
    DECODE_SD,
    PEAK_RSS,
    GPU_MEM,
    JOULES_PER_TOKEN,
    DECODE_MS,
    TTFT,
    Metric(
        "time_s", "s", "lower", "An imported time benchmark's result (asv time_*).",
        label="Time", short="time", group="import",
    ),
    Metric(
        "mem_bytes", "bytes", "lower", "An imported memory benchmark's result (asv mem_*).",
        label="Memory", short="memory", group="import",
    ),
    Metric(
        "track_value", "unit", "lower",
        "An imported tracked value (asv track_*), in the unit its run's config declares; "
        "an increase is a regression, as asv counts it.",
        label="Tracked value", short="tracked value", group="import",
    ),
    ENERGY,
    Metric(
        "median_ms", "ms", "lower", "A kernel point's median time.", "record",
        label="Median", short="median", group="kernel",
    ),
    Metric(
        "per_token_median_ms", "ms", "lower", "Kernel decode time per token.", "record",
        label="Per-token median", short="per-token median", group="kernel",
    ),
)  # fmt: skip
"""Every metric benchlab knows, with its label, unit, direction, group and test. Every
list of metrics below, the catalog's metric fields (`catalog.read.METRICS`), the chart axes,
the page and CLI columns, the compare rows and the exporter's families come from here:
adding a built-in metric is one `Metric` here (and a test)."""


def group(name: Group) -> tuple[str, ...]:
    """The registry's metrics of one group, in registry order."""
    return tuple(m.name for m in REGISTRY.values() if m.group == name)


def get(name: str) -> Metric:
    """The declaration of `name`: the registry's, the loaded catalog's (`learn`), else an
    unlabelled one (a name alone: higher is better, no unit)."""
    return REGISTRY.get(name) or _DECLARED.get(name) or Metric(name, "", "higher", "")


def title(name: str) -> str:
    """The display name of a metric (`Decode`): chart axes, page headings."""
    return get(name).title


def words(name: str) -> str:
    """The terse lowercase name of a metric (`decode`, `peak rss`)."""
    return get(name).words


def exported() -> tuple[Metric, ...]:
    """The metrics a sweep's exporter publishes, in registry order."""
    return tuple(m for m in REGISTRY.values() if m.export)


_TEST_ORDER: dict[Test, int] = {"pp": 0, "tg": 1, "batch": 2, "batch1": 2, "run": 3}


def by_test(names: Iterable[str]) -> tuple[str, ...]:
    """`names` ordered by the test that shapes them (prompt, generation, batched curve, the
    rest), registry order within one: the order a compare lists its rows in."""
    return tuple(sorted(names, key=lambda n: _TEST_ORDER[get(n).test]))


def test_key(metric: str, params: Mapping[str, Any]) -> tuple[Any, ...]:
    """The test `metric` of a run measures, as a hashable key (`identity.test_key` of the
    metric's `test`)."""
    return identity_test_key(get(metric).test, params)


CATALOG_METRICS = tuple(m.name for m in REGISTRY.values() if m.kind == "num")
"""The metrics a catalog entry carries and the verbs rank, in catalog order."""

CATALOG_FIELDS = tuple(m.name for m in REGISTRY.values() if m.kind in ("num", "spread"))
"""Every metric-valued catalog entry field: CATALOG_METRICS and their spreads."""

HEADLINE = group("throughput")
"""The throughput metrics a run may have (a llama-bench or `command` run has no batched
peak or speedup); higher is better for each."""

HEADLINE_ORDER = (PEAK.name, DECODE.name, PREFILL.name)
"""What a run or series is judged by when no metric is named, the first it measured: the
default gate, `bench regression` without `--metric`, the level columns of the pages."""

SPREAD = group("spread")
"""Standard deviations (tok/s) of the headline prefill and decode numbers, where measured."""

LATENCY = group("latency")
"""Time per output token and time to first token (ms); lower is better."""

RESOURCES = group("resource")
"""What a run used, where the device measured it: peak resident set of the benchmark
process (MiB), peak GPU memory in use on the device (MiB, every process on the GPU), energy
per generated token and energy over the run (J, every counter the device has). Absent where
not measured, never 0."""

CATALOG_RESOURCES = tuple(m for m in RESOURCES if REGISTRY[m].kind == "num")
"""The RESOURCES a catalog entry carries (energy_j stays in the record: it grows with the
run's length, so it compares nothing across runs)."""

DERIVED_FROM = {m.name: m.sources for m in REGISTRY.values() if m.sources}
"""Metrics computed from others a run carries, and their sources (`Metric.sources`)."""


class _LowerIsBetter(AbstractSet[str]):
    """The registry's lower-is-better metrics and those the loaded catalog declares
    (`learn`): one set every verb asks, whichever way a metric was declared."""

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        held = REGISTRY.get(name) or _DECLARED.get(name)
        return held is not None and held.lower_is_better

    def __iter__(self) -> Iterator[str]:
        yield from sorted(n for n, m in REGISTRY.items() if m.lower_is_better)
        yield from sorted(n for n, m in _DECLARED.items() if m.lower_is_better)

    def __len__(self) -> int:
        return sum(1 for _ in self)


LOWER_IS_BETTER: AbstractSet[str] = _LowerIsBetter()
"""Metrics where the smaller value is the better run; every other metric is higher-is-better."""

DEFAULT_MAX_CV = 0.10
"""The coefficient of variation (stddev / mean) over which a run's repeats are unstable."""

UNSTABLE_TAG = "unstable"
"""The tag an unstable run's record carries; `bench catalog build` copies record tags into
the catalog, so `bench list` marks it and `--tag unstable` finds it."""

DEFAULT_METRIC = PEAK.name


def lower_is_better(metric: str) -> bool:
    """Whether `best` should pick the smallest value of `metric`."""
    return metric in LOWER_IS_BETTER


MAX_DECLARED = 16
"""The most extra metrics one config may declare: each is a column in every run's record."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
UNIT_SHAPE = re.compile(
    r"(?:%|[A-Za-z0-9µ°][A-Za-z0-9µ°%/._^*-]{0,23})(?: [A-Za-z0-9µ°%/._^*-]{1,16}){0,2}"
)
"""A unit as people write one (`ms`, `tok/s`, `requests/s`, `%`, `°C`, `tokens per s`):
letters, digits and a few signs, no leading `/`, at most 32 characters. It is published
with every run, so a path, an address or a sentence is refused."""


def unit_ok(unit: object) -> bool:
    """True when `unit` has UNIT_SHAPE (`//` and `..` are no unit's)."""
    return (
        isinstance(unit, str)
        and len(unit) <= 32
        and UNIT_SHAPE.fullmatch(unit) is not None
        and "//" not in unit
        and ".." not in unit
    )


def declare(where: str, declared: Any) -> dict[str, Metric]:
    """A config's extra metrics (`metrics: {p99_ms: {unit: ms, better: lower}}`) as
    registry-shaped declarations; a ConfigError naming `where` and the field otherwise.

    A name the registry already holds must agree with it: one name, one meaning."""
    if declared is None:
        return {}
    if not isinstance(declared, Mapping) or len(declared) > MAX_DECLARED:
        raise ConfigError(
            f"{where}: metrics: expected a mapping of at most {MAX_DECLARED} metric names to "
            "{unit, better}"
        )
    out: dict[str, Metric] = {}
    for name, shape in declared.items():
        field = f"{where}: metrics.{name}"
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"{field}: a metric name is lower_snake_case, at most 64 chars")
        if not isinstance(shape, Mapping) or set(shape) - {"unit", "better", "help"}:
            raise ConfigError(f"{field}: expected {{unit: ..., better: higher|lower}}")
        unit, better = shape.get("unit"), shape.get("better")
        if not unit_ok(unit):
            raise ConfigError(
                f"{field}.unit: expected a short unit of letters, digits and / % . _ ^ * - "
                "(ms, requests/s, J, s)"
            )
        assert isinstance(unit, str)
        if better not in ("higher", "lower"):
            raise ConfigError(f"{field}.better: expected higher or lower, got {better!r}")
        known = REGISTRY.get(name)
        if known is not None and (known.unit, known.better) != (unit, better):
            raise ConfigError(
                f"{field}: the registry declares {name} as {known.unit}, {known.better} is "
                "better; use another name"
            )
        out[name] = Metric(name, unit, better, str(shape.get("help") or ""), "record")
    return out


def unit_of(metric: str) -> str | None:
    """The declared unit of `metric`, None for one neither the registry nor the loaded
    catalog declares."""
    known = REGISTRY.get(metric) or _DECLARED.get(metric)
    return known.unit if known is not None else None


# --- declared metrics in the catalog (ARCHITECTURE.md, Metrics) ----------------------------

MAX_MEASURED = 1e12
"""The largest value a run's metric may be recorded with: the catalog gate's bound on a
metric (`catalog.gate.MAX_METRIC`; a test keeps the two equal)."""

EXTRA_FIELD = "extra_metrics"
"""The catalog entry field of a run's declared metrics: {name: {value, unit, better}}."""
EXTRA_NAME = r"^[a-z][a-z0-9_]{0,63}$"
"""A declared metric's name (the pattern `declare` holds configs to, and the gate pulled
lines to)."""
MAX_UNIT = 32
MAX_EXTRA_VALUE = 1e12
"""A declared value is finite and within +-1e12 (a declared metric may be signed)."""

_DECLARED: dict[str, Metric] = {}
"""The declarations of the catalog last loaded (`learn`): what `lower_is_better`,
`unit_of` and `--metric` know beside the registry."""
_AMBIGUOUS: dict[str, str] = {}
"""Names two runs of that catalog declare differently, and how: no verb ranks them."""


def extra_entry(
    metrics: Mapping[str, Any], declared: Mapping[str, Metric]
) -> dict[str, dict[str, Any]] | None:
    """A run's `extra_metrics` entry field: each declared metric it measured (a finite
    number), with the declaration's unit and direction, so a pulled clone reads the meaning
    from the line itself; None when there is none. A declared name the registry or the
    entry already holds is never an extra (one name, one meaning)."""
    out: dict[str, dict[str, Any]] = {}
    for name, metric in sorted(declared.items()):
        value = _number(metrics.get(name))
        if name in REGISTRY or value is None or not math.isfinite(value):
            continue
        if abs(value) > MAX_EXTRA_VALUE:
            continue
        out[name] = {"value": value, "unit": metric.unit, "better": metric.better}
    return out or None


def lift(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries that declare metrics, each value lifted to an entry field of its name (in
    memory; the stored line keeps it under `extra_metrics`), so every verb reads a declared
    metric as it reads a registry one."""
    lifted = []
    for entry in entries:
        extra = entry.get(EXTRA_FIELD)
        if extra:
            for name, held in extra.items():
                entry[name] = held["value"]
            lifted.append(entry)
    return lifted


def declarations(entries: Iterable[Mapping[str, Any]]) -> dict[str, list[str] | None]:
    """{name: [unit, better]} of what `entries` declare; None for a name declared two ways.
    JSON-shaped, so the columnar cache keeps it in its header."""
    found: dict[str, list[str] | None] = {}
    for entry in entries:
        for name, held in (entry.get(EXTRA_FIELD) or {}).items():
            shape = [held["unit"], held["better"]]
            if name not in found:
                found[name] = shape
            elif found[name] is not None and found[name] != shape:
                found[name] = None
    return found


def merge_declarations(
    parts: Iterable[Mapping[str, list[str] | None]],
) -> dict[str, list[str] | None]:
    """`declarations` of several parts (the columnar cache's segments) as of their union."""
    out: dict[str, list[str] | None] = {}
    for part in parts:
        for name, shape in part.items():
            if name not in out:
                out[name] = None if shape is None else list(shape)
            elif out[name] is not None and out[name] != shape:
                out[name] = None
    return out


def learn(found: Mapping[str, list[str] | None]) -> None:
    """Hold `found` (`declarations`) as the catalog's: what `lower_is_better`, `unit_of` and
    `--metric` know beside the registry; a name declared two ways is ambiguous."""
    _DECLARED.clear()
    _AMBIGUOUS.clear()
    for name, shape in found.items():
        if shape is None:
            _AMBIGUOUS[name] = "declared with two different units or directions by different runs"
        else:
            unit, better = shape
            _DECLARED[name] = Metric(name, unit, "lower" if better == "lower" else "higher", "")


def declared_metrics() -> tuple[str, ...]:
    """The loaded catalog's declared metric names, sorted."""
    return tuple(sorted(_DECLARED))


def check_known(metric: str, known: Iterable[str]) -> str | None:
    """Why `metric` cannot be ranked (unknown, or declared two ways); None when it can."""
    if metric in known or metric in _DECLARED:
        return None
    if metric in _AMBIGUOUS:
        return f"metric {metric!r} is {_AMBIGUOUS[metric]}; rename one of them"
    valid = [*known, *declared_metrics()]
    return f"unknown metric {metric!r}; valid: {', '.join(valid)}"


def better_word(metric: str) -> str:
    """'lower is better' or 'higher is better': what a chart axis or a report says."""
    return "lower is better" if lower_is_better(metric) else "higher is better"


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None and getattr(obj, "model_extra", None):
        value = obj.model_extra.get(name)
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def chosen_prefill(kernel: Any, prompt_tokens: int | None) -> Any:
    """The prefill point the headline number comes from (see the module rules)."""
    points = list(_get(_get(kernel, "benchmark"), "prefill") or [])
    if not points:
        return None
    exact = [p for p in points if _get(p, "tokens") == prompt_tokens]
    return exact[0] if exact else max(points, key=lambda p: _get(p, "tokens") or 0)


def _ttft_ms(prefill: Any, prompt_tokens: int | None) -> float | None:
    """Milliseconds to read `prompt_tokens` at the chosen point's prefill rate."""
    rate = _number(_get(prefill, "tok_per_sec"))
    tokens = prompt_tokens or _get(prefill, "tokens")
    if not rate or rate <= 0 or not isinstance(tokens, int) or tokens <= 0:
        return None
    return round(tokens / rate * 1000.0, 6)


def _batched_peak(batch: Any) -> float | None:
    """The peak aggregate rate over batch sizes, only where a batch over 1 was measured.

    One name, one meaning: `peak_tok_per_sec` is a batched aggregate (batch 1 included,
    when batching does not help). A backend that measured one sequence has no peak
    aggregate: llama-bench's only curve point is its tg rate, and repeating it under this
    name would rank a single-stream figure against another backend's batched one."""
    peak = _get(batch, "peak")
    sizes = [_get(p, "batch") for p in _get(batch, "points") or []] + [_get(peak, "batch")]
    if not any(isinstance(size, int) and size > 1 for size in sizes):
        return None
    value = _number(_get(peak, "agg_tok_per_sec"))
    if value is None:
        curve = [_number(_get(p, "agg_tok_per_sec")) for p in _get(batch, "points") or []]
        found = [v for v in curve if v is not None]
        value = max(found) if found else None
    return value


def derive(
    kernel: Any,
    batch: Any,
    *,
    prompt_tokens: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[dict[str, float], list[str]]:
    """(metrics, llama-bench style test names) of one run from its kernel and batch results.

    `kernel` and `batch` may be the pydantic models or their JSON dicts. Absent values are
    dropped (an absent metric is absent, not zero); a non-finite one is a ParseError.
    """
    metrics: dict[str, float | None] = {}
    prefill = chosen_prefill(kernel, prompt_tokens)
    decode = _get(_get(kernel, "benchmark"), "decode")
    if prefill is not None:
        metrics["prefill_tok_per_sec"] = _number(_get(prefill, "tok_per_sec"))
        metrics["prefill_stddev"] = _number(_get(prefill, "stddev_ts"))
        metrics["ttft_ms"] = _ttft_ms(prefill, prompt_tokens)
    if decode is not None:
        metrics["decode_tok_per_sec"] = _number(_get(decode, "tok_per_sec"))
        metrics["decode_ms_per_token"] = _number(_get(decode, "per_token_median_ms"))
        metrics["decode_stddev"] = _number(_get(decode, "stddev_ts"))
    reps = [_get(p, "reps") for p in (prefill, decode) if p is not None]
    reps = [r for r in reps if isinstance(r, int) and not isinstance(r, bool)]
    if reps:
        metrics["samples"] = float(min(reps))
    peak, baseline = _get(batch, "peak"), _get(batch, "baseline")
    peak_tps = _batched_peak(batch)
    if peak_tps is None:
        peak = None  # a batch-1 "peak" is the baseline again, not a peak aggregate
    base_tps = _number(_get(baseline, "tok_per_sec"))
    speedup = _number(_get(peak, "speedup_vs_baseline"))
    if speedup is None and peak_tps is not None and base_tps:
        speedup = peak_tps / base_tps
    metrics.update(peak_tok_per_sec=peak_tps, baseline_tok_per_sec=base_tps, speedup=speedup)
    for key, value in (extra or {}).items():
        if key not in metrics or metrics[key] is None:
            metrics[key] = _number(value)
    depth = _get(prefill, "n_depth") or _get(decode, "n_depth")
    tests = test_names(
        _get(prefill, "tokens") if prefill is not None else None,
        _get(decode, "decode_steps") if decode is not None else None,
        depth if isinstance(depth, int) else None,
    )
    kept = {key: value for key, value in sorted(metrics.items()) if value is not None}
    for key, value in kept.items():
        if not math.isfinite(value):
            raise ParseError(f"metric {key!r} is not finite: {value!r}")
    return kept, tests


def repeat_samples(
    kernel: Any, prompt_tokens: int | None = None, batch: Any = None
) -> dict[str, dict[str, Any]]:
    """The run's samples per metric: {metric: {n, mean, sd}} for each rate whose repeats
    the backend measured (two or more, with their spread: llama-bench's `samples_ts` as
    `reps` and `stddev_ts`, the reference decoder's reps), from the same points `derive`
    reads. The mean is the point's rate (llama-bench's `avg_ts`, the mean of its samples;
    the reference decoder's median-based rate, the best it reports). The latencies derived
    from a rate (`ttft_ms`, `decode_ms_per_token`) get the rate's relative spread (first
    order: sd/mean of 1/x is that of x). A batch-1 baseline that is the decode test's own
    rate (llama-bench's one curve point) has the decode's samples. Absent where a backend
    measured once."""
    out: dict[str, dict[str, Any]] = {}
    prefill = chosen_prefill(kernel, prompt_tokens)
    decode = _get(_get(kernel, "benchmark"), "decode")
    pairs = (
        (prefill, "prefill_tok_per_sec", "ttft_ms"),
        (decode, "decode_tok_per_sec", "decode_ms_per_token"),
    )
    derived, _ = (
        derive(kernel, None, prompt_tokens=prompt_tokens) if prefill or decode else ({}, [])
    )
    for point, rate_name, latency_name in pairs:
        if point is None:
            continue
        reps, sd, rate = (
            _get(point, "reps"),
            _number(_get(point, "stddev_ts")),
            derived.get(rate_name),
        )
        if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2 or sd is None:
            continue
        if rate is None or rate <= 0 or not math.isfinite(sd) or sd < 0:
            continue
        out[rate_name] = {"n": reps, "mean": rate, "sd": sd}
        latency = derived.get(latency_name)
        if latency is not None:
            out[latency_name] = {"n": reps, "mean": latency, "sd": latency * sd / rate}
    decoded = out.get("decode_tok_per_sec")
    baseline = _number(_get(_get(batch, "baseline"), "tok_per_sec"))
    if decoded is not None and baseline is not None and baseline == decoded["mean"]:
        out["baseline_tok_per_sec"] = dict(decoded)
    return out


def resource_metrics(
    resources: Mapping[str, Any] | None,
    duration_s: float | None,
    decode_tok_per_sec: float | None,
    warnings: list[str] | None = None,
) -> dict[str, float]:
    """The RESOURCES metrics of a run from the agent's `resources` (absent: not measured).

    joules_per_token is the run's mean power (energy over its duration) divided by its
    decode rate: the energy of one generated token at the measured speed. The run's energy
    also covers loading and prefill; the mean power is what stands for decode's.
    """
    out: dict[str, float] = {}
    for key in ("peak_rss_mb", "gpu_mem_peak_mb", "energy_j"):
        value = _number(_get(resources, key))
        if value is None or not math.isfinite(value) or value < 0:
            continue
        if value > MAX_MEASURED or (key == "peak_rss_mb" and value == 0):
            # A process has pages: 0 MiB is no reading; past the catalog's bound is a broken
            # or fake tool. Either is not measured, and said so, never published.
            if warnings is not None:
                warnings.append(f"{key}: the device reported {value:g}; not measured")
            continue
        out[key] = value
    energy = out.get("energy_j")
    if energy is not None and duration_s and duration_s > 0 and decode_tok_per_sec:
        out["joules_per_token"] = round(energy / duration_s / decode_tok_per_sec, 6)
    return out


def spread_cv(metrics: Mapping[str, Any]) -> dict[str, float]:
    """{rate: stddev / mean} for each headline rate whose spread over repeats was measured."""
    out: dict[str, float] = {}
    for rate, stddev in (
        ("prefill_tok_per_sec", "prefill_stddev"),
        ("decode_tok_per_sec", "decode_stddev"),
    ):
        mean, spread = _number(metrics.get(rate)), _number(metrics.get(stddev))
        if mean and spread is not None and mean > 0:
            out[rate] = spread / mean
    return out


def instability(
    metrics: Mapping[str, Any], max_cv: float = DEFAULT_MAX_CV
) -> tuple[bool | None, list[str]]:
    """(unstable, warnings): True with one warning per rate whose repeats vary more than
    `max_cv`; None where no spread was measured (stability unknown, not "stable")."""
    cvs = spread_cv(metrics)
    if not cvs:
        return None, []
    warnings = [
        f"unstable: {rate} varies {cv:.0%} between repeats (coefficient of variation over "
        f"{max_cv:.0%}); the machine was busy or throttling, re-run on a quiet machine"
        for rate, cv in sorted(cvs.items())
        if cv > max_cv
    ]
    return bool(warnings), warnings
