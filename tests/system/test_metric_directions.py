"""Every metric is declared once (`benchlab.metrics.REGISTRY`) with its unit and direction,
and every verb reads the direction from there: `best` of a latency is the smallest, a
latency going up is a regression to the detector and a failure to a gate, and `compare`
calls a slower run worse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.entries import make_entry
from tests.system.test_lower_is_better import write_catalog

from benchlab.catalog.read import ENTRY_FIELDS, METRICS, LoadedCatalog
from benchlab.catalog.shards import render_shard
from benchlab.detect.baseline import compare_latest
from benchlab.detect.gates import FAILED, PASSED, evaluate
from benchlab.detect.regress import detect
from benchlab.metrics import REGISTRY, derive, lower_is_better, unit_of
from benchlab.models import GateConfig
from benchlab.observe.exporter import _point_families
from benchlab.observe.exposition import render
from benchlab.query.colcache import MODE_ENV
from benchlab.query.compare import _axis_speedup
from benchlab.query.verbs import compare_runs

LATENCIES = ("decode_ms_per_token", "ttft_ms")


def test_the_catalog_metrics_are_the_registry_s() -> None:
    assert METRICS == tuple(m.name for m in REGISTRY.values() if m.kind == "num")
    for name in LATENCIES:
        assert name in METRICS and ENTRY_FIELDS[name] == "num"
        assert lower_is_better(name) and unit_of(name) == "ms"
    assert not lower_is_better("decode_tok_per_sec") and unit_of("speedup") == "x"
    assert all(m.unit and m.better in ("higher", "lower") for m in REGISTRY.values())


def test_ttft_is_prompt_tokens_over_the_prefill_rate() -> None:
    kernel = {
        "benchmark": {
            "prefill": [{"tokens": 64, "median_ms": 40.0, "tok_per_sec": 1600.0}],
            "decode": {"tok_per_sec": 50.0, "per_token_median_ms": 20.0},
        }
    }
    metrics, _ = derive(kernel, None, prompt_tokens=64)
    assert metrics["ttft_ms"] == pytest.approx(64 / 1600.0 * 1000.0)
    assert metrics["decode_ms_per_token"] == 20.0
    # No prompt size in the spec: the chosen prefill point's own tokens.
    assert derive(kernel, None)[0]["ttft_ms"] == pytest.approx(40.0)


def _write_latency_catalog(store: Path) -> None:
    """`test_lower_is_better`'s catalog (run-a..run-d), three of its runs with latencies."""
    write_catalog(store)
    shards = list(store.rglob("*.jsonl"))
    assert shards
    for shard in shards:
        lines = [json.loads(line) for line in shard.read_text().splitlines() if line]
        for entry in lines:
            entry.update(_LATENCY.get(entry["run_id"], {}))
        shard.write_bytes(render_shard(lines))


_LATENCY = {
    "run-a": {"decode_ms_per_token": 9.0, "ttft_ms": 30.0},
    "run-b": {"decode_ms_per_token": 4.0, "ttft_ms": 80.0},
    "run-c": {"decode_ms_per_token": 12.0, "ttft_ms": 20.0},
}


@pytest.mark.parametrize("mode", ["never", "always"])
def test_best_of_a_latency_is_the_smallest(
    store: Path, bench, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _write_latency_catalog(store)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.setenv(MODE_ENV, mode)

    def best(*args: str) -> list[str]:
        code, out, err = bench("best", *args, "--format", "json")
        assert code == 0, err
        return [row["run_id"] for row in json.loads(out)]

    assert best("--ever", "--metric", "decode_ms_per_token") == ["run-b"]
    assert best("--ever", "--metric", "ttft_ms") == ["run-c"]
    assert best("--ever", "--metric", "ttft_ms", "--by", "machine") == ["run-c", "run-a"]
    # At the current level laptop's TTFT is the mean of 30 and 80 ms, named by its newest run.
    assert best("--metric", "ttft_ms", "--by", "machine") == ["run-c", "run-b"]
    assert best("--metric", "decode_ms_per_token", "--by", "machine") == ["run-b", "run-c"]


def _history(metric: str, values: list[float]) -> list[dict]:
    return [
        make_entry(f"r{i:02d}", "pi5", f"2026-01-01T{i:02d}:00:00Z", **{metric: value})
        for i, value in enumerate(values)
    ]


@pytest.mark.parametrize("metric", LATENCIES)
def test_a_latency_going_up_is_a_regression(metric: str) -> None:
    slower = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 13.0, 13.1, 12.9, 13.0, 13.05, 12.95]
    steps = detect(_history(metric, slower), metric, suspects=False)
    assert [(s.kind, s.first_bad_run) for s in steps] == [("regression", "r07")]
    faster = [13.0 if v < 11 else 10.0 for v in slower]
    assert [s.kind for s in detect(_history(metric, faster), metric, suspects=False)] == [
        "improvement"
    ]
    (latest,) = compare_latest(_history(metric, [10.0, 10.0, 10.0, 12.0]), "pi5", metric=metric)
    assert latest.regression
    (latest,) = compare_latest(_history(metric, [10.0, 10.0, 10.0, 8.0]), "pi5", metric=metric)
    assert not latest.regression


@pytest.mark.parametrize("metric", LATENCIES)
def test_a_gate_fails_a_latency_that_doubled(metric: str) -> None:
    gate = GateConfig(metric=metric, min_speedup=0.95, baseline="previous")
    doubled = evaluate(gate, {metric: 20.0}, {metric: 10.0}, baseline_run="base")
    assert (doubled.status, doubled.actual_speedup) == (FAILED, 0.5)
    halved = evaluate(gate, {metric: 5.0}, {metric: 10.0}, baseline_run="base")
    assert (halved.status, halved.actual_speedup) == (PASSED, 2.0)
    throughput = GateConfig(metric="decode_tok_per_sec", min_speedup=0.95, baseline="previous")
    more = evaluate(throughput, {"decode_tok_per_sec": 20.0}, {"decode_tok_per_sec": 10.0})
    assert more.status == PASSED


def test_compare_calls_a_slower_run_worse_in_each_metric_s_direction() -> None:
    runs = [
        make_entry("a", "pi5", "2026-01-01T00:00:00Z", decode_tok_per_sec=100.0),
        make_entry("b", "pi5", "2026-01-02T00:00:00Z", decode_tok_per_sec=80.0),
    ]
    runs[0].update(decode_ms_per_token=10.0, ttft_ms=50.0)
    runs[1].update(decode_ms_per_token=12.5, ttft_ms=40.0)
    result = compare_runs(LoadedCatalog(Path("c.json"), runs), ["a", "b"])
    by_metric = {m["metric"]: m for m in result.metrics}
    assert by_metric["decode_tok_per_sec"]["verdicts"] == ["same", "worse"]
    assert by_metric["decode_ms_per_token"]["verdicts"] == ["same", "worse"]
    assert by_metric["ttft_ms"]["verdicts"] == ["same", "better"]
    assert (by_metric["ttft_ms"]["unit"], by_metric["ttft_ms"]["better"]) == ("ms", "lower")
    # compare --by: B's speedup over A is A/B for a latency (12.5 ms after 10 ms: 0.8x).
    assert _axis_speedup("decode_ms_per_token", 10.0, 12.5) == pytest.approx(0.8)
    assert _axis_speedup("decode_tok_per_sec", 100.0, 80.0) == pytest.approx(0.8)


def test_compare_table_says_lower_is_better(store: Path, bench, monkeypatch) -> None:
    _write_latency_catalog(store)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    code, out, err = bench("compare", "--run-id", "run-a", "--run-id", "run-b")
    assert code == 0, err
    assert "decode_ms_per_token (ms, lower is better)" in out
    assert "peak_tok_per_sec " in out and "peak_tok_per_sec (" not in out


def test_the_exporter_gives_latencies_in_seconds_and_says_lower_is_better() -> None:
    record = {
        "status": "ok",
        "machine_id": "pi5",
        "spec": {"device": "local"},
        "identity": {"backend": "reference", "model_id": "m", "precision": "q8"},
        "metrics": {"decode_ms_per_token": 20.0, "ttft_ms": 250.0},
    }
    text = render(
        _point_families([(record, None), (dict(record, metrics={"ttft_ms": 350.0}), None)])
    )
    lines = text.splitlines()
    assert any(
        line.startswith("benchlab_point_decode_seconds_per_token{") and line.endswith(" 0.02")
        for line in lines
    )
    assert any(
        line.startswith("benchlab_point_time_to_first_token_seconds{") and line.endswith(" 0.3")
        for line in lines
    )
    assert "# HELP benchlab_point_time_to_first_token_seconds Time to first token" in text
    assert "seconds; lower is better" in text


def test_a_chart_axis_of_a_lower_is_better_metric_says_so() -> None:
    from benchlab.publish.charts.layout import METRIC_TITLES

    assert {"decode_ms_per_token", "ttft_ms"} <= set(METRIC_TITLES)
    for metric, title in METRIC_TITLES.items():
        assert ("lower is better" in title) == lower_is_better(metric), metric
