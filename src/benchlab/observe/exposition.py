"""The Prometheus text exposition format (version 0.0.4), written by hand.

No new dependency (ARCHITECTURE.md, Observers): the text exposition format is about fifty
lines of code, so prometheus_client is not worth its place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

MetricType = Literal["gauge", "counter", "untyped"]


def escape_label_value(value: str) -> str:
    """Backslash, double quote and newline are the three characters a label value escapes."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """HELP text escapes backslash and newline (not quotes)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


@dataclass
class MetricFamily:
    """One metric name with its HELP, TYPE and samples (label set -> value)."""

    name: str
    help: str
    type: MetricType = "gauge"
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not _METRIC_NAME.match(self.name):
            raise ValueError(f"invalid metric name {self.name!r}")

    def add(self, labels: Mapping[str, object], value: float | None) -> None:
        """Add a sample; a value nobody measured (None) is left out rather than faked as 0."""
        if value is None:
            return
        clean = {}
        for key, label in labels.items():
            if not _LABEL_NAME.match(key) or key.startswith("__"):
                raise ValueError(f"invalid label name {key!r} on {self.name}")
            clean[key] = "" if label is None else str(label)
        self.samples.append((clean, float(value)))


def render(families: Iterable[MetricFamily]) -> str:
    """Families in the given order, samples sorted by their labels so scrapes are stable."""
    lines: list[str] = []
    for family in families:
        lines.append(f"# HELP {family.name} {escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.type}")
        for labels, value in sorted(family.samples, key=lambda s: sorted(s[0].items())):
            if labels:
                body = ",".join(
                    f'{key}="{escape_label_value(val)}"' for key, val in sorted(labels.items())
                )
                lines.append(f"{family.name}{{{body}}} {format_value(value)}")
            else:
                lines.append(f"{family.name} {format_value(value)}")
    return "\n".join(lines) + "\n"
