"""The hand-written exposition format: escaping, values, order."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchlab.observe.exposition import MetricFamily, escape_label_value, format_value, render


def test_label_values_escape_backslash_quote_and_newline() -> None:
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


def test_render_has_help_type_and_sorted_samples() -> None:
    family = MetricFamily("benchlab_x", "An x.\nSecond line \\ here.")
    family.add({"device": "pi5"}, 2)
    family.add({"device": "laptop"}, 1.5)
    text = render([family])
    assert text == (
        "# HELP benchlab_x An x.\\nSecond line \\\\ here.\n"
        "# TYPE benchlab_x gauge\n"
        'benchlab_x{device="laptop"} 1.5\n'
        'benchlab_x{device="pi5"} 2\n'
    )


def test_unmeasured_values_are_left_out_not_zero() -> None:
    family = MetricFamily("benchlab_power", "Power.")
    family.add({"device": "pi5"}, None)
    assert family.samples == []


def test_special_values() -> None:
    assert format_value(math.nan) == "NaN"
    assert format_value(math.inf) == "+Inf"
    assert format_value(-math.inf) == "-Inf"
    assert format_value(3.0) == "3"
    assert float(format_value(0.1)) == 0.1


def test_invalid_names_are_refused() -> None:
    with pytest.raises(ValueError):
        MetricFamily("bad-name", "x")
    with pytest.raises(ValueError):
        MetricFamily("good", "x").add({"bad-label": "v"}, 1)


@given(
    values=st.dictionaries(
        st.sampled_from(["device", "model", "shape"]),
        st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20),
        min_size=1,
    ),
    number=st.floats(allow_nan=False, allow_infinity=False, width=64),
)
def test_any_label_value_round_trips_through_an_independent_parser(
    prom_parse, values: dict[str, str], number: float
) -> None:
    family = MetricFamily("benchlab_round_trip", "Round trip.")
    family.add(values, number)
    parsed = prom_parse(render([family]))
    [(labels, value)] = parsed["benchlab_round_trip"]["samples"]
    assert labels == values
    assert value == pytest.approx(number, rel=1e-15, abs=0)
