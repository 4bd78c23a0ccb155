"""The command backend: any command, parsed with JSON field paths or regex named groups."""

from __future__ import annotations

import pytest

from benchlab.benchmarks import get_backend
from benchlab.benchmarks.command import resolve
from benchlab.errors import ConfigError, ParseError
from benchlab.models import AgentEnvelope

from .conftest import derived

JSON_PROGRAM = (
    "import json; print(json.dumps({'results': {'pp': {'tps': 250.5}, "
    "'tests': [{'tps': 1}, {'tps': 31.25}]}, 'peak': 90}))"
)


def run(device, spec):
    backend = get_backend("command")
    backend.check_available(device, spec)
    task = backend.build_task(spec, "rid")
    envelope = AgentEnvelope.model_validate(device.call("run", task.model_dump(), timeout=60))
    return backend.parse(envelope, spec, "rid")


def test_json_fields_end_to_end(device, spec_factory):
    spec = spec_factory(
        "command",
        prompt_tokens=128,
        gen_tokens=32,
        batch_sizes=[1, 8],
        params={
            "argv": ["{python}", "-c", JSON_PROGRAM],
            "parser": "json",
            "fields": {
                "prefill": "results.pp.tps",
                "decode": "results.tests[1].tps",
                "peak": "peak",
            },
        },
    )
    parsed = run(device, spec)
    assert derived(parsed, spec)["prefill_tok_per_sec"] == 250.5
    assert derived(parsed, spec)["decode_tok_per_sec"] == 31.25
    assert derived(parsed, spec)["peak_tok_per_sec"] == 90
    assert derived(parsed, spec)["speedup"] == pytest.approx(90 / 31.25)
    assert parsed.kernel.benchmark.prefill[0].tokens == 128
    assert parsed.kernel.benchmark.prefill[0].median_ms == pytest.approx(128 / 250.5 * 1e3)
    assert [p.batch for p in parsed.batch.points] == [1, 8]
    assert parsed.batch.peak.batch == 8


def test_regex_groups_end_to_end_with_spec_placeholders(device, spec_factory):
    program = (
        "import sys; print('model', sys.argv[1]); "
        "print('prompt eval: 812.5 t/s'); print('eval: 53.98 t/s')"
    )
    spec = spec_factory(
        "command",
        model="qwen",
        params={
            "argv": ["{python}", "-c", program, "{model}"],
            "parser": "regex",
            "pattern": [r"prompt eval: (?P<prefill>[\d.]+)", r"^eval: (?P<decode>[\d.]+)"],
        },
    )
    parsed = run(device, spec)
    assert derived(parsed, spec)["decode_tok_per_sec"] == 53.98
    assert derived(parsed, spec)["prefill_tok_per_sec"] == 812.5
    assert parsed.kernel.benchmark.prefill == []  # no prompt_tokens in the spec: no point
    assert parsed.kernel.model == "qwen"


def test_regex_that_does_not_match_is_a_parse_error(spec_factory, envelope_factory):
    spec = spec_factory(
        "command", params={"argv": ["x"], "parser": "regex", "pattern": r"tps=(?P<decode>\d+)"}
    )
    with pytest.raises(ParseError, match="does not match"):
        get_backend("command").parse(envelope_factory("nothing here"), spec, "rid")


def test_json_errors_are_parse_errors(spec_factory, envelope_factory):
    spec = spec_factory("command", params={"argv": ["x"], "fields": {"decode": "a.b"}})
    backend = get_backend("command")
    with pytest.raises(ParseError, match="not JSON"):
        backend.parse(envelope_factory("oops"), spec, "rid")
    with pytest.raises(ParseError, match="no key 'b'"):
        backend.parse(envelope_factory('{"a": {}}'), spec, "rid")
    with pytest.raises(ParseError, match="expected a number"):
        backend.parse(envelope_factory('{"a": {"b": "fast"}}'), spec, "rid")
    with pytest.raises(ParseError, match="not a positive rate"):
        backend.parse(envelope_factory('{"a": {"b": 0}}'), spec, "rid")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "params.argv: required"),
        ({"argv": ["x"]}, "params.fields: required"),
        ({"argv": ["x"], "fields": {"speed": "a"}}, "params.fields"),
        ({"argv": ["x"], "parser": "regex"}, "params.pattern: required"),
        ({"argv": ["x"], "parser": "regex", "pattern": "(?P<other>1)"}, "named group"),
        ({"argv": ["x"], "parser": "regex", "pattern": "(unclosed"}, "params.pattern"),
        ({"argv": ["x"], "parser": "xml"}, "params.parser"),
    ],
)
def test_bad_params_are_config_errors(spec_factory, params, message):
    with pytest.raises(ConfigError, match=message):
        get_backend("command").build_task(spec_factory("command", params=params), "rid")


def test_missing_binary_is_a_config_error(device, spec_factory):
    spec = spec_factory("command", params={"argv": ["no-such-tool-x1"], "fields": {"decode": "d"}})
    with pytest.raises(ConfigError, match="no-such-tool-x1"):
        get_backend("command").check_available(device, spec)


def test_resolve_paths():
    data = {"a": [{"b": 1}, {"b": [5, 6]}]}
    assert resolve(data, "a[1].b[0]") == 5
    with pytest.raises(KeyError, match=r"no item \[2\]"):
        resolve(data, "a[2]")
