"""llama-bench results in any of its output formats, read into one row shape (for imports).

llama-bench prints markdown by default and json, jsonl, csv or sql on request, and its fields
changed across versions (`mostly Q4_0` model types, `pp 512` then `pp512` then
`pp512 @ d512` test names, `backends` after `cuda`/`metal` flags, the sql table `test` then
`llama_bench`). Every reader here returns rows keyed like the JSON printer's objects
(`model_type`, `n_prompt`, `n_gen`, `avg_ts` ...),
so `benchmarks.llama_bench.results_from_rows` maps imports and live runs alike.
"""

from __future__ import annotations

import csv
import io
import re
import sqlite3
from typing import Any

from benchlab.benchmarks.llama_bench import load_rows
from benchlab.errors import ParseError
from benchlab.redact.shapes import public_model_type

_TEST = re.compile(
    r"^(?:(?P<kind>pp|tg)\s*(?P<n>\d+)|pp\s*(?P<pp>\d+)\s*\+\s*tg\s*(?P<tg>\d+))"
    r"(?:\s*@\s*d\s*(?P<depth>\d+))?$"
)
_RATE = re.compile(r"^(?P<avg>[\d.]+)(?:\s*±\s*(?P<std>[\d.]+))?$")
_MD_COLUMNS = {
    "model": "model_type",
    # "size" and "params" stay as printed ("14.01 MiB", "3.67 M"): rounded, they are not
    # the byte and parameter counts the other formats give (model_size, model_n_params),
    # and an identity field holding text would split the series and fail the catalog.
    "backend": "backends",
    "threads": "n_threads",
    "ngl": "n_gpu_layers",
    "n_batch": "n_batch",
    "n_ubatch": "n_ubatch",
    "fa": "flash_attn",
    "type_k": "type_k",
    "type_v": "type_v",
    "mmap": "use_mmap",
    "sm": "split_mode",
}
_INTEGER_FIELDS = (
    "n_prompt",
    "n_gen",
    "n_depth",
    "n_threads",
    "n_gpu_layers",
    "n_batch",
    "n_ubatch",
    "build_number",
    "model_n_params",
    "model_size",
)
_FLOAT_FIELDS = ("avg_ts", "stddev_ts", "avg_ns", "stddev_ns")


def _number(value: Any, kind: type) -> Any:
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    try:
        return kind(float(str(value).strip()))
    except ValueError:
        return value  # "6.74 B", "3.56 GiB": kept as printed


def normalise(row: dict[str, Any]) -> dict[str, Any]:
    """One row in the JSON printer's shape, numbers as numbers, old field names mapped."""
    out = dict(row)
    if "t/s" in out and "avg_ts" not in out:  # early JSON printers
        out["avg_ts"] = out.pop("t/s")
    for key in _INTEGER_FIELDS:
        if key in out:
            out[key] = _number(out[key], int)
    for key in _FLOAT_FIELDS:
        if key in out:
            out[key] = _number(out[key], float)
    return out


def _from_csv(text: str) -> list[dict[str, Any]]:
    return [dict(row) for row in csv.DictReader(io.StringIO(text))]


def _test_fields(test: str) -> dict[str, int]:
    match = _TEST.match(test.strip())
    if not match:
        raise ParseError(f"unknown llama-bench test {test!r}")
    if match["kind"] == "pp":
        fields = {"n_prompt": int(match["n"]), "n_gen": 0}
    elif match["kind"] == "tg":
        fields = {"n_prompt": 0, "n_gen": int(match["n"])}
    else:
        fields = {"n_prompt": int(match["pp"]), "n_gen": int(match["tg"])}
    fields["n_depth"] = int(match["depth"] or 0)
    return fields


_BUILD_LINE = re.compile(r"^build:\s*(?P<commit>[0-9a-f]{4,40})\s*\((?P<number>\d+)\)\s*$")


def _from_markdown(text: str) -> list[dict[str, Any]]:
    """Rows of one or more markdown tables; each table's `build: <commit> (<number>)` line
    (printed under it since 2023) is kept as the rows' build_commit and build_number, so an
    imported table carries its llama.cpp version as a JSON import does."""
    rows: list[dict[str, Any]] = []
    header: list[str] | None = None
    table_start = 0
    for line in (raw_line.strip() for raw_line in text.splitlines()):
        build = _BUILD_LINE.match(line)
        if build:
            for row in rows[table_start:]:
                row.setdefault("build_commit", build["commit"])
                row.setdefault("build_number", int(build["number"]))
            header, table_start = None, len(rows)
            continue
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if header is None or cells == header:
            header = cells
            if "test" not in header or "t/s" not in header:
                raise ParseError("markdown table has no 'test' and 't/s' columns")
            continue
        if len(cells) != len(header) or all(set(cell) <= set("-: ") for cell in cells):
            continue  # the separator line, or a ragged line
        raw = dict(zip(header, cells, strict=True))
        row = {_MD_COLUMNS.get(k, k): v for k, v in raw.items()}
        row.update(_test_fields(row.pop("test")))
        rate = _RATE.match(row.pop("t/s"))
        if not rate:
            raise ParseError(f"unreadable t/s {raw['t/s']!r}")
        row["avg_ts"] = float(rate["avg"])
        row["stddev_ts"] = float(rate["std"]) if rate["std"] else None
        rows.append(row)
    if header is None and not rows:
        raise ParseError("no markdown table found")
    return rows


# --- sql ----------------------------------------------------------------------------------

SQL_TABLES = ("llama_bench", "test")
"""The table names `llama-bench -o sql` has used: `test` until 2025, then `llama_bench`."""

_SQL_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SQL_TYPE = r"(?:TEXT|INTEGER|REAL)"
_SQL_LITERAL = r"(?:'(?:[^']|'')*'|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|NULL)"
_SQL_CREATE = re.compile(
    rf"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?P<table>{_SQL_NAME})\s*\("
    rf"(?P<columns>\s*{_SQL_NAME}\s+{_SQL_TYPE}\s*(?:,\s*{_SQL_NAME}\s+{_SQL_TYPE}\s*)*)\)\s*;",
    re.IGNORECASE,
)
_SQL_INSERT = re.compile(
    rf"INSERT\s+INTO\s+(?P<table>{_SQL_NAME})\s*"
    rf"\((?P<columns>\s*{_SQL_NAME}\s*(?:,\s*{_SQL_NAME}\s*)*)\)\s*VALUES\s*"
    rf"\((?P<values>\s*{_SQL_LITERAL}\s*(?:,\s*{_SQL_LITERAL}\s*)*)\)\s*;",
    re.IGNORECASE,
)
_SQL_VALUE = re.compile(rf"\s*({_SQL_LITERAL})\s*(?:,|$)")


def _sql_statements(text: str) -> list[str]:
    """The text cut into complete statements (sqlite's own rule, so a `;` inside a quoted
    value does not end one)."""
    statements, pending = [], ""
    for line in text.splitlines(keepends=True):
        if not pending and not line.strip():
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        raise ParseError(f"sql: unterminated statement: {pending.strip()[:80]!r}")
    return statements


def _sql_values(text: str) -> list[Any]:
    """The literals of a VALUES list as Python values (quoted text, numbers, NULL)."""
    values: list[Any] = []
    for match in _SQL_VALUE.finditer(text):
        literal = match[1]
        if literal.upper() == "NULL":
            values.append(None)
        elif literal.startswith("'"):
            values.append(literal[1:-1].replace("''", "'"))
        else:
            values.append(float(literal) if any(c in literal for c in ".eE") else int(literal))
    return values


def _from_sql(text: str) -> list[dict[str, Any]]:
    """Rows of `llama-bench -o sql` output, read back through an in-memory sqlite database.

    The output is meant for `sqlite3 db < out.sql`, but an imported file is untrusted: no
    statement of it is executed. Each one must be a CREATE TABLE or an INSERT into
    llama-bench's own table (`SQL_TABLES`), checked whole against a strict grammar (names,
    column types, literal values only); the database then runs statements built here from
    the parsed names, with the values bound as parameters. sqlite still does the work it is
    there for: column affinity turns the printed '20261001' into an integer, as in a real
    database. Several builds' outputs appended to one file load as one table, whose columns
    are the union of theirs (each build prints its own schema; a column it lacks reads back
    as absent, not null).
    """
    database = sqlite3.connect(":memory:")
    try:
        columns: dict[str, list[str]] = {}
        for statement in _sql_statements(text):
            create, insert = _SQL_CREATE.fullmatch(statement), _SQL_INSERT.fullmatch(statement)
            match = create or insert
            if match is None:
                raise ParseError(
                    "sql: only CREATE TABLE and INSERT INTO llama-bench's table are read; "
                    f"refused {statement[:80]!r}"
                )
            table = match["table"].lower()
            if table not in SQL_TABLES:
                raise ParseError(f"sql: table {match['table']!r} is not llama-bench's")
            if create:
                defs = [d.split() for d in create["columns"].split(",")]
                known = columns.get(table)
                if known is None:
                    body = ", ".join(f'"{name}" {kind.upper()}' for name, kind in defs)
                    database.execute(f'CREATE TABLE "{table}" ({body})')
                    columns[table] = [name for name, _ in defs]
                    continue
                for name, kind in defs:  # another build's schema: widen the table
                    if name not in known:
                        database.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {kind}')
                        known.append(name)
                continue
            assert insert is not None  # `match` is `create or insert`, and `create` was None
            if table not in columns:
                raise ParseError(f"sql: INSERT INTO {table} before its CREATE TABLE")
            names = [name.strip() for name in insert["columns"].split(",")]
            values = _sql_values(insert["values"])
            if len(values) != len(names):
                raise ParseError(f"sql: {len(names)} columns but {len(values)} values")
            for name in names:
                if name not in columns[table]:
                    database.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}"')
                    columns[table].append(name)
            quoted = ", ".join(f'"{name}"' for name in names)
            holes = ", ".join("?" for _ in names)
            database.execute(f'INSERT INTO "{table}" ({quoted}) VALUES ({holes})', values)
        rows: list[dict[str, Any]] = []
        for table in columns:
            cursor = database.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
            names = [d[0] for d in cursor.description]
            for record in cursor:
                rows.append({k: v for k, v in zip(names, record, strict=True) if v is not None})
        return rows
    except sqlite3.Error as exc:
        raise ParseError(f"sql: {exc}") from None
    finally:
        database.close()


def _is_sql(text: str) -> bool:
    return re.match(r"(?:CREATE\s+TABLE|INSERT\s+INTO)\b", text, re.IGNORECASE) is not None


def read_rows(text: str) -> list[dict[str, Any]]:
    """Rows from any llama-bench output; the format is recognised from the text itself."""
    stripped = text.lstrip()
    if not stripped:
        raise ParseError("empty llama-bench output")
    if stripped.startswith(("[", "{")):
        rows = load_rows(stripped, "llama-bench output")
    elif _is_sql(stripped):
        rows = _from_sql(stripped)
    elif stripped.startswith("|") or "\n|" in stripped:
        rows = _from_markdown(stripped)
    elif "," in stripped.splitlines()[0]:
        rows = _from_csv(stripped)
    else:
        raise ParseError("not llama-bench output (json, jsonl, csv, markdown or sql)")
    if not rows:
        raise ParseError("llama-bench output holds no results")
    return [normalise(row) for row in rows]


_QUANT = re.compile(
    r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32|MXFP4)(?:\s*-\s*(Small|Medium|Large))?",
    re.IGNORECASE,
)


def precision_of(row: dict[str, Any]) -> str:
    """The quantisation tag: from the file name where it says, else from the model type."""
    model_type = public_model_type(row.get("model_type")) or ""
    for source in (str(row.get("model_filename") or ""), model_type):
        match = _QUANT.search(source.rsplit("/", 1)[-1])
        if match:
            tag = match[1].upper()
            if match[2]:
                tag += "_" + match[2][0].upper()
            return tag.lower()
    return "unknown"


def model_of(row: dict[str, Any]) -> str:
    """A readable model name: the file stem without its quantisation tag, else the type."""
    filename = str(row.get("model_filename") or "")
    if filename:
        stem = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1].removesuffix(".gguf")
        stem = _QUANT.sub("", stem).strip("-_. ")
        if stem:
            return stem
    model_type = public_model_type(row.get("model_type")) or "unknown model"
    return _QUANT.sub("", model_type.replace("mostly", "")).strip(" -") or model_type
