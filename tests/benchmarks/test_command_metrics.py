"""The command backend carries any named metric: a registry metric in its registry unit, or
one the config declares with a unit and a direction (`params.metrics`)."""

from __future__ import annotations

import json

import pytest

from benchlab.benchmarks import get_backend
from benchlab.errors import ConfigError
from benchlab.metrics import declare

from .conftest import derived

DECLARED = {
    "p99_ms": {"unit": "ms", "better": "lower"},
    "rps": {"unit": "requests/s", "better": "higher"},
}
OUTPUT = json.dumps({"tps": 40.0, "ttft": 95.5, "lat": {"p99": 12.25}, "rps": 310.0})


def _spec(spec_factory, **params):
    base = {
        "argv": ["server-bench"],
        "fields": {"decode": "tps", "ttft_ms": "ttft", "p99_ms": "lat.p99", "rps": "rps"},
        "metrics": DECLARED,
    }
    return spec_factory("command", params={**base, **params})


def test_named_and_declared_metrics_are_kept_beside_the_rates(spec_factory, envelope_factory):
    spec = _spec(spec_factory)
    parsed = get_backend("command").parse(envelope_factory(OUTPUT), spec, "rid")
    metrics = derived(parsed, spec)
    assert metrics["decode_tok_per_sec"] == 40.0
    assert metrics["ttft_ms"] == 95.5  # a registry metric: the catalog carries it
    assert (metrics["p99_ms"], metrics["rps"]) == (12.25, 310.0)
    assert metrics["decode_ms_per_token"] == pytest.approx(25.0)  # derived, not overridden


def test_a_regex_group_may_name_a_declared_metric(spec_factory, envelope_factory):
    spec = spec_factory(
        "command",
        params={
            "argv": ["x"],
            "parser": "regex",
            "pattern": [r"decode (?P<decode>[\d.]+)", r"p99 (?P<p99_ms>[\d.]+) ms"],
            "metrics": DECLARED,
        },
    )
    parsed = get_backend("command").parse(envelope_factory("decode 20\np99 7.5 ms\n"), spec, "r")
    assert derived(parsed, spec)["p99_ms"] == 7.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metrics": {"p99_ms": {"unit": "ms", "better": "sideways"}}}, r"metrics\.p99_ms\.better"),
        ({"metrics": {"p99_ms": {"better": "lower"}}}, r"metrics\.p99_ms\.unit"),
        ({"metrics": {"P99": {"unit": "ms", "better": "lower"}}}, r"metrics\.P99"),
        ({"metrics": {"ttft_ms": {"unit": "s", "better": "lower"}}}, "registry declares ttft_ms"),
        ({"metrics": {}}, r"params\.fields\.p99_ms"),  # not declared: refused, not dropped
        ({"metrics": ["p99_ms"]}, "metrics: expected a mapping"),
    ],
)
def test_bad_declarations_are_one_config_error_naming_the_field(spec_factory, change, message):
    with pytest.raises(ConfigError, match=message):
        get_backend("command").build_task(_spec(spec_factory, **change), "rid")


def test_declarations_are_bounded() -> None:
    many = {f"m{i}": {"unit": "ms", "better": "lower"} for i in range(17)}
    with pytest.raises(ConfigError, match="at most 16"):
        declare("sweep.yaml", many)
    assert declare("sweep.yaml", DECLARED)["p99_ms"].lower_is_better
