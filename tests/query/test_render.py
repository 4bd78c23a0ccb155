"""Output formats: cell formatting, markdown escaping, csv blocks, the format list."""

from __future__ import annotations

import csv
import io

import pytest

from benchlab.cli import query as cli_query
from benchlab.errors import QueryError
from benchlab.query import render

COLUMNS = [
    render.Column("name", "name"),
    render.Column("value", "value", "num"),
    render.Column("ratio", "ratio", "ratio"),
    render.Column("n", "n", "int"),
]
ROWS = [
    {"name": "a|b", "value": 1.005, "ratio": 0.5, "n": 3},
    {"name": "long name", "value": None, "ratio": None, "n": 12},
]


def test_cli_formats_equal_render_formats() -> None:
    assert cli_query.FORMATS == render.FORMATS


def test_cells() -> None:
    assert render.cell(None) == "-"
    assert render.cell(2.0, "num") == "2.00"
    assert render.cell(1.2345, "ratio") == "1.23x"
    assert render.cell(["a", "b"]) == "a, b"
    assert render.cell(True) == "yes"
    assert render.csv_cell(None) == ""
    assert render.csv_cell(["a", "b"]) == "a;b"
    assert render.csv_cell(0.1) == "0.1"


def test_text_aligns_numbers_right() -> None:
    text = render.to_text([render.Section(COLUMNS, ROWS, title="t")])
    assert text == (
        "t\n"
        "name       value  ratio   n\n"
        "---------  -----  -----  --\n"
        "a|b         1.00  0.50x   3\n"
        "long name      -      -  12\n"
    )


def test_markdown_escapes_pipes() -> None:
    text = render.to_markdown([render.Section(COLUMNS, ROWS)])
    assert text.splitlines()[:3] == [
        "| name | value | ratio | n |",
        "|---|---:|---:|---:|",
        "| a\\|b | 1.00 | 0.50x | 3 |",
    ]


def test_csv_blocks_are_separated_and_parse() -> None:
    text = render.to_csv([render.Section(COLUMNS, ROWS), render.Section(COLUMNS[:1], ROWS[:1])])
    first, second = text.split("\n\n")
    assert list(csv.reader(io.StringIO(first))) == [
        ["name", "value", "ratio", "n"],
        ["a|b", "1.005", "0.5", "3"],
        ["long name", "", "", "12"],
    ]
    assert second == "name\na|b\n"


def test_json_is_canonical() -> None:
    assert render.to_json({"b": [1, None], "a": "é"}) == (
        '{\n  "a": "é",\n  "b": [\n    1,\n    null\n  ]\n}\n'
    )


def test_table_on_a_terminal_uses_rich() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    rows = [*ROWS, {"name": "[bold]x[/bold]"}]
    render.emit([render.Section(COLUMNS, rows)], "table", None, stream)
    out = stream.getvalue()
    assert out.startswith("┏") and "│ long name      │     - │     - │ 12 │" in out
    assert "[bold]x[/bold]" in out  # printed as text, not read as markup


def test_unknown_format() -> None:
    with pytest.raises(QueryError, match="--format"):
        render.emit([], "yaml", None, io.StringIO())
