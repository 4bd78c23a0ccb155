"""llama-bench results in any of its output formats, read into one row shape (for imports).

llama-bench prints markdown by default and json, jsonl, csv or sql on request, and its fields
changed across versions (`mostly Q4_0` model types, `pp 512` then `pp512` then
`pp512 @ d512` test names, `backends` after `cuda`/`metal` flags). Every reader here returns
rows keyed like the JSON printer's objects (`model_type`, `n_prompt`, `n_gen`, `avg_ts` ...),
so `benchmarks.llama_bench.results_from_rows` maps imports and live runs alike.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from benchlab.errors import ParseError

_TEST = re.compile(
    r"^(?:(?P<kind>pp|tg)\s*(?P<n>\d+)|pp\s*(?P<pp>\d+)\s*\+\s*tg\s*(?P<tg>\d+))"
    r"(?:\s*@\s*d\s*(?P<depth>\d+))?$"
)
_RATE = re.compile(r"^(?P<avg>[\d.]+)(?:\s*±\s*(?P<std>[\d.]+))?$")
_MD_COLUMNS = {
    "model": "model_type",
    "size": "model_size",
    "params": "model_n_params",
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


def _from_markdown(text: str) -> list[dict[str, Any]]:
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    if len(lines) < 3:
        raise ParseError("no markdown table found")
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    if "test" not in header or "t/s" not in header:
        raise ParseError("markdown table has no 'test' and 't/s' columns")
    rows = []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != len(header):
            continue
        raw = dict(zip(header, cells, strict=True))
        row: dict[str, Any] = {_MD_COLUMNS.get(k, k): v for k, v in raw.items()}
        row.update(_test_fields(row.pop("test")))
        rate = _RATE.match(row.pop("t/s"))
        if not rate:
            raise ParseError(f"unreadable t/s {raw['t/s']!r}")
        row["avg_ts"] = float(rate["avg"])
        row["stddev_ts"] = float(rate["std"]) if rate["std"] else None
        rows.append(row)
    return rows


def read_rows(text: str) -> list[dict[str, Any]]:
    """Rows from any llama-bench output; the format is recognised from the text itself."""
    from benchlab.benchmarks.llama_bench import load_rows

    stripped = text.lstrip()
    if not stripped:
        raise ParseError("empty llama-bench output")
    if stripped.startswith(("[", "{")):
        rows = load_rows(stripped, "llama-bench output")
    elif stripped.startswith("|") or "\n|" in stripped:
        rows = _from_markdown(stripped)
    elif "," in stripped.splitlines()[0]:
        rows = _from_csv(stripped)
    else:
        raise ParseError("not llama-bench output (json, jsonl, csv or markdown)")
    if not rows:
        raise ParseError("llama-bench output holds no results")
    return [normalise(row) for row in rows]


_QUANT = re.compile(
    r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32|MXFP4)(?:\s*-\s*(Small|Medium|Large))?",
    re.IGNORECASE,
)


def precision_of(row: dict[str, Any]) -> str:
    """The quantisation tag: from the file name where it says, else from the model type."""
    for source in (str(row.get("model_filename") or ""), str(row.get("model_type") or "")):
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
    model_type = str(row.get("model_type") or "unknown model")
    return _QUANT.sub("", model_type.replace("mostly", "")).strip(" -") or model_type
