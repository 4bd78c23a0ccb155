"""The generated pages of the project docs: the CLI reference from `bench`'s argument parsers
and the file formats from `schemas/*.json`. Nothing here is written by hand, so the reference
cannot drift from the code.

As a MkDocs hook (`hooks:` in mkdocs.yml) it adds the pages to the build without writing
into docs/; as a script it prints one page, for reading or diffing:

    python tools/docs_reference.py cli        # reference/cli.md
    python tools/docs_reference.py formats    # reference/formats.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"
CLI_PAGE = "reference/cli.md"
FORMATS_PAGE = "reference/formats.md"
MAX_DEPTH = 4
"""Verbs nest at most `bench catalog build` deep; the bound keeps the walk finite."""

if str(ROOT / "src") not in sys.path:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT / "src"))


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """The verbs under `parser`, each with its one-line help, in the order they were added."""
    found: dict[str, tuple[argparse.ArgumentParser, str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found[name] = (sub, helps.get(name, ""))
    return found


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += " " + formatter._format_args(action, action.dest.upper())
        else:
            name = formatter._format_args(action, action.dest)
        help_text = formatter._expand_help(action) if action.help else ""
        rows.append(f"| `{_cell(name)}` | {_cell(help_text)} |")
    return rows


def _verb_section(words: list[str], parser: argparse.ArgumentParser, help_line: str) -> list[str]:
    lines = [f"{'#' * min(len(words), MAX_DEPTH)} {' '.join(words)}", ""]
    about = parser.description or help_line
    if about:
        lines += [" ".join(about.split()), ""]
    usage = " ".join(parser.format_usage().split())
    lines += ["```", usage.removeprefix("usage: "), "```", ""]
    rows = _argument_rows(parser)
    if rows:
        lines += ["| argument | what it does |", "|---|---|", *rows, ""]
    if parser.epilog:
        lines += [" ".join(parser.epilog.split()), ""]
    if len(words) < MAX_DEPTH:
        for name, (sub, sub_help) in _subparsers(parser).items():
            lines += _verb_section([*words, name], sub, sub_help)
    return lines


def verbs() -> list[str]:
    """Every verb path, `bench list` to `bench catalog build`, in the order `bench` adds them."""
    from benchlab.cli import build_parser

    out: list[str] = []

    def walk(words: list[str], parser: argparse.ArgumentParser) -> None:
        for name, (sub, _) in _subparsers(parser).items():
            out.append(" ".join([*words, name]))
            if len(words) < MAX_DEPTH:
                walk([*words, name], sub)

    walk(["bench"], build_parser())
    return out


def cli_markdown() -> str:
    from benchlab.cli import build_parser

    parser = build_parser()
    lines = [
        "# CLI reference",
        "",
        "Generated from `bench`'s argument parsers (`benchlab.cli.build_parser`) at every docs "
        "build: each verb's usage and arguments as `bench VERB --help` prints them.",
        "",
        "| verb | what it does |",
        "|---|---|",
    ]
    for name, (_, help_line) in _subparsers(parser).items():
        lines.append(f"| [`bench {name}`](#bench-{name}) | {_cell(help_line)} |")
    lines.append("")
    lines += _verb_section(["bench"], parser, "")[1:]
    return "\n".join(lines).rstrip() + "\n"


def _anchor(schema_name: str, definition: str) -> str:
    """One definition's anchor: names repeat across schemas (MetricSamples), so both are in it."""
    return f"{schema_name}-{definition}".lower().replace(".", "-")


def _type(schema: dict[str, Any], owner: str) -> str:
    """A field's type in a few words: `string`, `integer or null`, `list of BatchPoint`."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(owner, name)})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(s, owner) for s in schema[key])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"list of {_type(items, owner)}" if isinstance(items, dict) else "list"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {_type(schema['additionalProperties'], owner)}"
    return str(kind)


def _object_table(schema: dict[str, Any], owner: str) -> list[str]:
    properties = schema.get("properties", {})
    if not properties:
        return [f"Type: {_type(schema, owner)}.", ""]
    required = set(schema.get("required", []))
    lines = ["| field | type | required | default | description |", "|---|---|---|---|---|"]
    for name, field in properties.items():
        default = f"`{json.dumps(field['default'])}`" if "default" in field else ""
        lines.append(
            f"| `{name}` | {_cell(_type(field, owner))} | {'yes' if name in required else ''} "
            f"| {_cell(default)} | {_cell(field.get('description', ''))} |"
        )
    extra = schema.get("additionalProperties")
    lines.append("")
    if extra is False:
        lines += ["Other fields are refused.", ""]
    elif extra is True:
        lines += ["Other fields are allowed (additive formats).", ""]
    return lines


def formats_markdown() -> str:
    lines = [
        "# File formats",
        "",
        "Generated from `schemas/*.json` at every docs build. The schemas are themselves "
        "generated from the pydantic models in `benchlab.models` (`bench schemas --write`), "
        "and a test keeps the two in sync.",
        "",
    ]
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        lines += [f"## {path.stem}", "", f"`schemas/{path.name}`"]
        if "$id" in schema:
            lines[-1] += f", `$id` `{schema['$id']}`"
        lines.append("")
        if schema.get("description"):
            lines += [" ".join(str(schema["description"]).split()), ""]
        lines += _object_table(schema, path.stem)
        for name, sub in schema.get("$defs", {}).items():
            lines += [f"### {name} {{#{_anchor(path.stem, name)}}}", ""]
            if sub.get("description"):
                lines += [" ".join(str(sub["description"]).split()), ""]
            lines += _object_table(sub, path.stem)
    return "\n".join(lines).rstrip() + "\n"


PAGES = {CLI_PAGE: cli_markdown, FORMATS_PAGE: formats_markdown}


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages to the build (nothing is written into docs/)."""
    from mkdocs.structure.files import File

    for uri, render in PAGES.items():
        files.append(File.generated(config, uri, content=render()))
    return files


if __name__ == "__main__":
    pages = {"cli": cli_markdown, "formats": formats_markdown}
    if len(sys.argv) != 2 or sys.argv[1] not in pages:
        sys.exit("usage: python tools/docs_reference.py cli|formats")
    sys.stdout.write(pages[sys.argv[1]]())
