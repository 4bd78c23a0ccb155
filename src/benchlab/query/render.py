"""Print query rows as `table`, `json`, `csv` or `markdown`.

`table` is for people: a rich table on a terminal, plain aligned text when piped (so that
`bench list | grep pi5` and golden tests see stable text). `json` is for scripts: the
verb's full data, sorted keys, two-space indent, the same bytes every time. `csv` and
`markdown` show the same columns as the table, csv with unrounded values.

rich is imported only when a terminal is there to see it: `bench best` start-up matters.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from benchlab.errors import QueryError

FORMATS = ("table", "json", "csv", "markdown")
_NUMERIC = ("num", "int", "ratio")


@dataclass(frozen=True)
class Column:
    """One column: the row key it reads, its header, and how to print its values.

    kind: text, num (two decimals), int, ratio (two decimals and an x), id (text that is
    never shortened: a cut run id or series id cannot be pasted back into `bench show`).
    """

    key: str
    header: str
    kind: str = "text"


@dataclass(frozen=True)
class Section:
    """One table of rows; a verb prints one or more (show: facts, batch curve, prefill)."""

    columns: Sequence[Column]
    rows: Sequence[Mapping[str, Any]]
    title: str | None = None
    note: str | None = None
    """What the columns mean, printed under the table (text, markdown, rich); csv and json
    carry data only."""


def visible(text: str) -> str:
    """`text` with every control, bidi or other hidden character (`ids.hidden_character`'s
    set) written as an escape (`\\u202e`): a catalog string pulled from another clone must
    not reorder or rewrite what the terminal shows. Plain text is returned as it is."""
    if text.isascii() and text.isprintable():
        return text
    from benchlab.catalog.gate import hidden_pattern

    return hidden_pattern().sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def cell(value: Any, kind: str = "text") -> str:
    """A value as people read it (hidden characters escaped); a missing value is `-`."""
    if value is None:
        return "-"
    if kind == "num" and isinstance(value, (int, float)):
        return f"{value:.2f}"
    if kind == "ratio" and isinstance(value, (int, float)):
        return f"{value:.2f}x"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return visible(", ".join(str(v) for v in value))
    return visible(str(value))


def csv_cell(value: Any) -> str:
    """A value for csv: unrounded, empty when missing, lists joined by `;`, hidden
    characters escaped."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return visible(";".join(str(v) for v in value))
    return visible(str(value))


def to_json(data: Any) -> str:
    """The JSON of every `--format json` (ARCHITECTURE.md, One reader, one writer path):
    canonical (sorted keys, indent 2, newline-ended), as layout.canonical_json; NaN and
    infinities are `null` (JSON has no such numbers: a reader such as `jq` refuses `NaN`);
    a hidden character in a string is written as its `\\uXXXX` escape (the same JSON value);
    a set is a sorted list and any other object its text."""
    text = orjson.dumps(
        data,
        default=_json_default,
        option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
    ).decode()
    if not text.isascii():
        from benchlab.catalog.gate import hidden_pattern

        text = hidden_pattern().sub(_json_escape, text)
    return text.replace("\x7f", "\\u007f") + "\n"


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:  # orjson escapes these in strings: this is the indent's newline
        return match.group()
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _text_block(section: Section) -> list[str]:
    header = [c.header for c in section.columns]
    body = [[cell(row.get(c.key), c.kind) for c in section.columns] for row in section.rows]
    widths = [max(len(text) for text in column) for column in zip(header, *body, strict=False)]
    right = [c.kind in _NUMERIC for c in section.columns]

    def line(texts: Sequence[str]) -> str:
        parts = [
            text.rjust(width) if is_right else text.ljust(width)
            for text, width, is_right in zip(texts, widths, right, strict=False)
        ]
        return "  ".join(parts).rstrip()

    lines = [section.title] if section.title else []
    lines += [line(header), line(["-" * w for w in widths])]
    lines += [line(texts) for texts in body]
    if section.note:
        lines.append(section.note)
    return lines


def to_text(sections: Sequence[Section]) -> str:
    blocks = ["\n".join(_text_block(s)) for s in sections]
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(sections: Sequence[Section]) -> str:
    blocks = []
    for section in sections:
        lines = [f"### {section.title}", ""] if section.title else []
        lines.append("| " + " | ".join(_md_escape(c.header) for c in section.columns) + " |")
        lines.append(
            "|" + "|".join("---:" if c.kind in _NUMERIC else "---" for c in section.columns) + "|"
        )
        for row in section.rows:
            texts = [_md_escape(cell(row.get(c.key), c.kind)) for c in section.columns]
            lines.append("| " + " | ".join(texts) + " |")
        if section.note:
            lines += ["", _md_escape(section.note)]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def to_csv(sections: Sequence[Section]) -> str:
    """One csv block per section (header row = column keys), blocks split by a blank line."""
    out = io.StringIO()
    for i, section in enumerate(sections):
        if i:
            out.write("\n")
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([c.key for c in section.columns])
        for row in section.rows:
            writer.writerow([csv_cell(row.get(c.key)) for c in section.columns])
    return out.getvalue()


_WRAP_MIN = 12
"""The narrowest a wrapping text column gets on a narrow terminal."""


def _print_rich(sections: Sequence[Section], stream: TextIO) -> None:
    """A rich table per section. Ids and numbers are never wrapped nor cut with `…`; other
    text wraps (folding long words) down to `_WRAP_MIN`. Where the terminal is too narrow
    even so, the table is drawn wider and the terminal wraps its lines: a cut run id reads
    as a real one and is worse than an untidy table."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from benchlab.textout import raw

    stream = raw(stream)  # rich's styling codes pass; every cell is escaped (`cell`)
    terminal = Console(file=stream).width
    for section in sections:
        table = Table(
            title=section.title, title_justify="left", caption=section.note, caption_justify="left"
        )
        texts = [[cell(row.get(c.key), c.kind) for c in section.columns] for row in section.rows]
        needed = 1
        for i, column in enumerate(section.columns):
            longest = max([len(column.header), *(len(t[i]) for t in texts)])
            whole = column.kind == "id" or column.kind in _NUMERIC
            width = longest if whole else min(longest, _WRAP_MIN)
            needed += width + 3
            table.add_column(
                column.header,
                justify="right" if column.kind in _NUMERIC else "left",
                no_wrap=whole,
                overflow="fold",
                min_width=width,
            )
        for row_texts in texts:
            # Text, not str: a run's strings are data, never rich markup.
            table.add_row(*(Text(text) for text in row_texts))
        Console(file=stream, width=max(terminal, needed)).print(table, crop=False)


def emit(
    sections: Sequence[Section],
    fmt: str,
    data: Any,
    stream: TextIO | None = None,
) -> None:
    """Write `sections` (table, csv, markdown) or `data` (json) to `stream` (stdout)."""
    stream = stream or sys.stdout
    if fmt == "json":
        stream.write(to_json(data))
    elif fmt == "csv":
        stream.write(to_csv(sections))
    elif fmt == "markdown":
        stream.write(to_markdown(sections))
    elif fmt == "table":
        if stream.isatty():
            _print_rich(sections, stream)
        else:
            stream.write(to_text(sections))
    else:
        raise QueryError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
