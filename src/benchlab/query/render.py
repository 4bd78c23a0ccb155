"""Print query rows as `table`, `json`, `csv` or `markdown`.

`table` is for people: a rich table on a terminal, plain aligned text when piped (so that
`bench list | grep pi5` and golden tests see stable text). Either fits the terminal's width
(`$COLUMNS` where it is set, else the terminal's; piped without `$COLUMNS`, no limit): the
columns a verb marks `drop` are left out, highest first, then long text cells are cut with
`…`; ids and numbers are never cut, and the note names what was left out (`--wide`: all).
`json` is for scripts: the verb's full data, sorted keys, two-space indent, the same bytes
every time. `csv` and `markdown` show the same columns as the table, csv with unrounded values.

rich is imported only when a terminal is there to see it: `bench best` start-up matters.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from benchlab.catalog.gate import hidden_pattern
from benchlab.errors import QueryError
from benchlab.textout import raw

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
    drop: int = 0
    """Where the table must fit the terminal, the columns with the highest `drop` are left
    out first; 0: always shown."""


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
    """The JSON of every `--format json` (ARCHITECTURE.md, One reader and one writer path):
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


_ELIDE_MIN = 12
"""The narrowest a text column is cut to where the table must fit the terminal."""


def output_width(stream: TextIO, wide: bool = False) -> int | None:
    """The width a table must fit: `$COLUMNS` where it is set, else the terminal's; None
    (no limit) with `wide`, or when piped without `$COLUMNS`."""
    if wide:
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if stream.isatty():
        return shutil.get_terminal_size().columns
    return None


def _widths(columns: Sequence[Column], body: Sequence[Sequence[str]]) -> list[int]:
    return [max([len(c.header), *(len(texts[i]) for texts in body)]) for i, c in enumerate(columns)]


def fit(section: Section, width: int | None) -> tuple[Section, list[int] | None]:
    """`section` as it fits `width` characters: the `drop` columns left out (the highest
    first, then the rightmost) while the lines are too long, then the widest text columns cut
    down (to `_ELIDE_MIN`) as far as needed; returns the section (its note wrapped, naming
    what was left out) and each column's most characters (None: no limit)."""
    if width is None:
        return section, None
    columns = list(section.columns)
    body = [[cell(row.get(c.key), c.kind) for c in columns] for row in section.rows]
    widths = _widths(columns, body)
    left_out: list[str] = []
    for _ in range(len(section.columns)):  # each pass drops one column or stops
        if sum(widths) + 2 * (len(widths) - 1) <= width:
            break
        droppable = [i for i, c in enumerate(columns) if c.drop > 0]
        if not droppable:
            break
        victim = max(droppable, key=lambda i: (columns[i].drop, i))
        left_out.append(columns[victim].header)
        del columns[victim], widths[victim]
        body = [texts[:victim] + texts[victim + 1 :] for texts in body]
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    for i in sorted(range(len(columns)), key=lambda i: -widths[i]):  # the widest first
        if excess <= 0:
            break
        if columns[i].kind != "text" or widths[i] <= _ELIDE_MIN:
            continue
        cut = min(excess, widths[i] - max(_ELIDE_MIN, len(columns[i].header)))
        if cut > 0:
            widths[i] -= cut
            excess -= cut
    note = section.note
    if left_out:
        dropped = f"Left out to fit {width} columns: {', '.join(left_out)} (--wide shows them)."
        note = f"{note}\n{dropped}" if note else dropped
    if note:
        note = "\n".join(
            textwrap.fill(part, width, break_on_hyphens=False) for part in note.split("\n")
        )
    title = textwrap.fill(section.title, width) if section.title else section.title
    return Section(columns, section.rows, title=title, note=note), widths


def _elide(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _text_block(section: Section, limits: Sequence[int] | None = None) -> list[str]:
    header = [c.header for c in section.columns]
    body = [[cell(row.get(c.key), c.kind) for c in section.columns] for row in section.rows]
    if limits is not None:
        body = [[_elide(text, most) for text, most in zip(texts, limits, strict=True)]
                for texts in body]  # fmt: skip
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


def to_text(sections: Sequence[Section], width: int | None = None) -> str:
    """Aligned plain text; with `width`, each section `fit` to it."""
    blocks = ["\n".join(_text_block(*fit(s, width))) for s in sections]
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


def _print_rich(sections: Sequence[Section], stream: TextIO, wide: bool = False) -> None:
    """A rich table per section. Ids and numbers are never wrapped nor cut with `…`; other
    text wraps (folding long words) down to `_WRAP_MIN`. Where the terminal is too narrow
    even so, the table is drawn wider and the terminal wraps its lines: a cut run id reads
    as a real one and is worse than an untidy table."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    stream = raw(stream)  # rich's styling codes pass; every cell is escaped (`cell`)
    terminal = Console(file=stream).width
    for whole_section in sections:
        section = whole_section if wide else fit(whole_section, terminal)[0]
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
    *,
    wide: bool = False,
) -> None:
    """Write `sections` (table, csv, markdown) or `data` (json) to `stream` (stdout); a
    table fits the terminal (`output_width`) unless `wide`."""
    stream = stream or sys.stdout
    if fmt == "json":
        stream.write(to_json(data))
    elif fmt == "csv":
        stream.write(to_csv(sections))
    elif fmt == "markdown":
        stream.write(to_markdown(sections))
    elif fmt == "table":
        if stream.isatty():
            _print_rich(sections, stream, wide)
        else:
            stream.write(to_text(sections, output_width(stream, wide)))
    else:
        raise QueryError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
