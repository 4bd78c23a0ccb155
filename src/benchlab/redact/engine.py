"""Finding tells in a batch of strings: one regex pass per detector over the whole batch.

A run dir holds hundreds of short strings; calling every detector on each of them would
cost a Python call per detector per string. Instead the strings are joined by newlines
into one blob, each detector runs once over it, and every hit is mapped back to its string
with a binary search. Overlapping hits are resolved once, left to right, longest first,
so the scanner and the redactor always agree on what a tell is.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from benchlab.redact import tells
from benchlab.redact.policy import Policy
from benchlab.redact.tells import Detector

_SECRET_TRIM = " \t\r\n=:\"'"
_CONTEXT = 160  # characters of the same line a detector's `context` check may read


@dataclass(frozen=True)
class Hit:
    """One tell: string `index` of the batch, its [start, end) span there, and who found it."""

    index: int
    start: int
    end: int
    value: str
    detector: Detector

    @property
    def tell_class(self) -> str:
        return self.detector.tell_class


def _span(match: re.Match[str], group: int) -> tuple[int, int]:
    if group == -1:
        for number in range(1, match.re.groups + 1):
            if match.group(number):
                return match.span(number)
        return match.span()
    return match.span(group)


def find(policy: Policy, strings: Sequence[str]) -> list[Hit]:
    """Every tell in `strings`, sorted by (index, start), never overlapping.

    Each distinct string is scanned once: run files repeat the same keys, model names and
    engine names thousands of times.
    """
    unique = list(dict.fromkeys(strings))
    if len(unique) == len(strings):
        return _find(policy, strings)
    positions: dict[str, list[int]] = {}
    for index, text in enumerate(strings):
        positions.setdefault(text, []).append(index)
    hits = [
        replace(hit, index=index)
        for hit in _find(policy, unique)
        for index in positions[unique[hit.index]]
    ]
    hits.sort(key=lambda h: (h.index, h.start))
    return hits


def _find(policy: Policy, strings: Sequence[str]) -> list[Hit]:
    if not strings:
        return []
    blob = "\n".join(strings)
    starts: list[int] = []
    offset = 0
    for text in strings:
        starts.append(offset)
        offset += len(text) + 1
    candidates: list[tuple[int, int, int, int, Detector]] = []
    home_users: set[str] = set()
    for priority, detector in enumerate(policy.detectors):
        _collect(policy, detector, priority, blob, candidates, home_users)
    learned = tells.user_words_regex(home_users)
    if learned is not None:
        detector = Detector("home-user", tells.USER, learned, "user")
        _collect(policy, detector, len(policy.detectors), blob, candidates, set())
    candidates.sort()
    hits: list[Hit] = []
    end_of_last = -1
    for start, _neg_len, _priority, end, detector in candidates:
        if start < end_of_last:
            continue
        index = bisect.bisect_right(starts, start) - 1
        local_start = start - starts[index]
        local_end = end - starts[index]
        if local_end > len(strings[index]):
            continue  # crossed into the next string: not a tell of either
        end_of_last = end
        hits.append(Hit(index, local_start, local_end, blob[start:end], detector))
    return hits


def _collect(
    policy: Policy,
    detector: Detector,
    priority: int,
    blob: str,
    out: list[tuple[int, int, int, int, Detector]],
    home_users: set[str],
) -> None:
    if detector.gate is not None and detector.gate.search(blob) is None:
        return
    for match in detector.regex.finditer(blob):
        start, end = _span(match, detector.group)
        if detector.tell_class == tells.SECRET:
            value = blob[start:end]
            stripped = value.strip(_SECRET_TRIM)
            if stripped:
                start += value.index(stripped)
                end = start + len(stripped)
        if start >= end:
            continue
        value = blob[start:end]
        if detector.check is not None and not detector.check(value):
            continue
        if detector.context is not None:
            line_start = blob.rfind("\n", max(0, start - _CONTEXT), start) + 1
            if not detector.context(blob[max(line_start, start - _CONTEXT) : start]):
                continue
        if policy.allowed(detector.tell_class, value):
            continue
        if detector.tell_class == tells.HOME_PATH and match.lastindex:
            home_users.add(match.group(1))
        out.append((start, start - end, priority, end, detector))
