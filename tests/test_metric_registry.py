"""A metric is declared once (ARCHITECTURE.md, Metrics): its label, unit, direction, group
and test live on its `metrics.Metric` record, and the charts, pages, verbs and the exporter
read them there. No other module keeps a metric-label mapping of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchlab import metrics
from benchlab.metrics import REGISTRY, Metric
from benchlab.observe.exporter import point_metrics
from benchlab.publish.charts.layout import metric_title
from benchlab.publish.measures import measure_text
from benchlab.publish.tables import metric_name
from benchlab.query.compare import row_test

SRC = Path(__file__).resolve().parents[1] / "src" / "benchlab"

P99 = Metric(
    "p99_ms",
    "ms",
    "lower",
    "The 99th percentile of a request's latency.",
    label="P99 latency",
    short="p99",
    group="latency",
    export="benchlab_point_p99_seconds",
)


@pytest.fixture
def p99(monkeypatch: pytest.MonkeyPatch) -> Metric:
    """P99 added to the registry, as one more `Metric(...)` in metrics.py would add it."""
    monkeypatch.setitem(REGISTRY, P99.name, P99)
    return P99


def test_a_new_metric_shows_its_label_unit_and_direction_everywhere(p99: Metric) -> None:
    # the direction every verb asks
    assert metrics.lower_is_better(p99.name) and p99.name in metrics.LOWER_IS_BETTER
    assert metrics.unit_of(p99.name) == "ms"
    # a chart axis
    assert metric_title(p99.name) == "P99 latency, ms (lower is better)"
    # a page's value and the steps tables' running text
    assert measure_text({p99.name: 12.5}, p99.name) == "12.50 ms"
    assert metric_name(p99.name) == "P99 latency"  # an acronym keeps its capital
    # a compare row's test and the CLI column
    assert row_test({"tests": ["pp32", "tg16"]}, p99.name) == "p99"
    assert p99.column == "p99 ms"
    # the exporter: its own family, in seconds, lower is better
    (family,) = [spec for spec in point_metrics() if spec[2] == p99.name]
    name, text, _, how = family
    assert name == "benchlab_point_p99_seconds" and how == "median_ms"
    assert text.startswith("P99 latency of a point (seconds; lower is better)")


def test_without_the_registry_entry_the_metric_is_unknown() -> None:
    """The test above fails on a tree where any of those reads kept its own list."""
    assert P99.name not in REGISTRY
    assert not metrics.lower_is_better(P99.name)
    assert metric_title(P99.name) == "P99 ms (higher is better)"
    assert all(spec[2] != P99.name for spec in point_metrics())


def test_the_registry_records_are_complete() -> None:
    for metric in REGISTRY.values():
        assert metric.label and metric.short, metric.name
        assert metric.group != "declared", metric.name
        assert metrics.unit_ok(metric.unit), metric.name
    assert set(metrics.DERIVED_FROM) == {"decode_ms_per_token", "ttft_ms", "speedup"}
    for sources in metrics.DERIVED_FROM.values():
        assert set(sources) <= set(REGISTRY)
    for metric in REGISTRY.values():
        assert metric.spread is None or REGISTRY[metric.spread].kind == "spread"


def test_test_identity_is_the_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """`test_key` reads the metric's `test`: the prompt's size for a prefill metric, the
    generation's for a decode one, the whole workload otherwise."""
    params = {"backend": "reference", "prompt_tokens": 32, "gen_tokens": 16, "depth": 0}
    assert metrics.test_key("ttft_ms", params) == ("pp", 32, 0)
    assert metrics.test_key("decode_ms_per_token", params) == ("tg", 16, 0, 32)
    assert metrics.test_key("peak_rss_mb", params) == ("run", 32, 16, 0)
    llama = {**params, "backend": "llama-bench"}
    assert metrics.test_key("baseline_tok_per_sec", llama) == ("tg", 16, 0)
    assert metrics.test_key("baseline_tok_per_sec", params) == ("run", 32, 16, 0)
    monkeypatch.setitem(REGISTRY, P99.name, P99)
    assert metrics.test_key(P99.name, params) == ("run", 32, 16, 0)


# --- no second home for a metric's label --------------------------------------------------

ALLOWED = {
    # data, not labels: a record's public value shapes
    "redact/shapes.py",
    # `bench compare`'s B-over-A column, named like the metric but not it
    "cli/compare.py:speedup",
}


def _label_maps(path: Path, root: Path = SRC) -> list[str]:
    """Dicts (and lists of pairs) in `path` that map registry metric names to strings."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            pairs = list(zip(node.keys, node.values, strict=True))
        elif isinstance(node, (ast.Tuple, ast.List)):
            pairs = [
                (e.elts[0], e.elts[1])
                for e in node.elts
                if isinstance(e, ast.Tuple) and len(e.elts) >= 2
            ]
        else:
            continue
        labelled = [
            key.value
            for key, value in pairs
            if isinstance(key, ast.Constant)
            and key.value in REGISTRY
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ]
        if labelled:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {', '.join(labelled)}")
    return found


def test_no_other_module_maps_metric_names_to_labels() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 100  # the scan saw the package
    found = [
        hit
        for path in files
        if path != SRC / "metrics.py" and str(path.relative_to(SRC)) not in ALLOWED
        for hit in _label_maps(path)
        if f"{hit.split(':')[0]}:{hit.split(': ', 1)[1]}" not in ALLOWED
    ]
    assert found == [], "metric labels belong on metrics.REGISTRY:\n" + "\n".join(found)


def test_the_scan_finds_a_label_map(tmp_path: Path) -> None:
    sample = tmp_path / "page.py"
    sample.write_text('NAMES = {"decode_tok_per_sec": "Decode"}\nCOLS = (("ttft_ms", "TTFT"),)\n')
    assert _label_maps(sample, tmp_path) == [
        "page.py:1: decode_tok_per_sec",
        "page.py:2: ttft_ms",
    ]
