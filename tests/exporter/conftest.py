"""A strict little parser of the text exposition format, independent of benchlab's writer."""

from __future__ import annotations

import re

import pytest

_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r"(?:\{(?P<labels>(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\n]|\\[\\\"n])*\",?)*)\})?"
    r" (?P<value>[-+]?(?:[0-9.eE+-]+|Inf|NaN))$"
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), text)


def parse(text: str) -> dict[str, dict]:
    """{name: {"help": str, "type": str, "samples": [(labels, value)]}}; raises on any bad line
    and on a series (name and label set) that appears twice: Prometheus keeps one of them."""
    families: dict[str, dict] = {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    assert text.endswith("\n"), "exposition must end with a newline"
    for number, line in enumerate(text[:-1].split("\n"), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, rest = line.split(" ", 3)
            family = families.setdefault(name, {"samples": []})
            key = kind.lower()
            assert key not in family, f"line {number}: second {kind} for {name}"
            family[key] = rest
            continue
        match = _SAMPLE.match(line)
        assert match, f"line {number}: not a sample: {line!r}"
        name = match["name"]
        assert name in families and "type" in families[name], f"line {number}: no TYPE for {name}"
        labels = {k: _unescape(v) for k, v in _LABEL.findall(match["labels"] or "")}
        series = (name, tuple(sorted(labels.items())))
        assert series not in seen, f"line {number}: series given twice in one scrape: {line!r}"
        seen.add(series)
        families[name]["samples"].append((labels, float(match["value"])))
    return families


@pytest.fixture(scope="session")
def prom_parse():
    """The independent parser, for tests that check what benchlab serves."""
    return parse
