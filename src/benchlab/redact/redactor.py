"""Redaction: every tell becomes a stable placeholder of its class.

One `Redactor` holds the mapping for one job (a promoted run, one catalog entry): the
same value always becomes the same placeholder (`<host:1>` everywhere `gpu-box-7` was), so
redacted data stays readable ("these two runs came from the same host") without saying
which host. JSON is walked, not rewritten as text: structure, numbers and key order stay;
keys are redacted like values, and the values of private keys (`hostname`, `user` ...)
are masked whatever they look like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.redact import tells
from benchlab.redact.engine import Hit, ScanMemo, find
from benchlab.redact.policy import Policy, default_policy, placeholder_for
from benchlab.redact.tells import Detector

_CASELESS = frozenset({tells.HOST, tells.EMAIL, tells.USER})


def is_placeholder(value: str) -> bool:
    """True for a string that is exactly one placeholder (`<host:1>`, `<secret>`)."""
    if not (value.startswith("<") and value.endswith(">")) or len(value) > 40:
        return False
    inner = value[1:-1]
    return bool(inner) and all(c.isalnum() or c in ":-_" for c in inner)


@dataclass(frozen=True)
class Replacement:
    """What one redaction did: where, which class and detector, and the placeholder."""

    where: str
    tell_class: str
    detector: str
    original: str
    placeholder: str


def private_key_detector(key: str, tell_class: str) -> Detector:
    import re

    text, numbered = placeholder_for(tell_class)
    return Detector(f"private-key:{key}", tell_class, re.compile(r"(?s).+"), text, numbered)


class Redactor:
    """Replaces tells with placeholders, remembering each value's number for this job."""

    def __init__(self, policy: Policy | None = None, memo: ScanMemo | None = None) -> None:
        self.policy = policy if policy is not None else default_policy()
        self.memo = memo  # per-string scan results shared across jobs; same hits
        self._numbers: dict[str, dict[str, int]] = {}
        self.replacements: list[Replacement] = []
        self.unredacted: list[Replacement] = []

    def placeholder(self, detector: Detector, value: str) -> str:
        if not detector.numbered:
            return detector.placeholder
        key = value.lower() if detector.tell_class in _CASELESS else value
        table = self._numbers.setdefault(detector.placeholder, {})
        if key not in table:
            table[key] = len(table) + 1
        return detector.replacement(table[key])

    def strings(self, strings: Sequence[str], where: Sequence[str] | None = None) -> list[str]:
        """Redact a batch of strings (one regex pass per detector for the whole batch)."""
        hits = find(self.policy, strings, self.memo)
        out = list(strings)
        by_index: dict[int, list[Hit]] = {}
        for hit in hits:
            by_index.setdefault(hit.index, []).append(hit)
        for index, group in by_index.items():
            text = strings[index]
            pieces: list[str] = []
            last = 0
            for hit in group:
                if not hit.detector.redact:
                    self.unredacted.append(self._record(where, index, hit, hit.value))
                    continue
                replacement = self.placeholder(hit.detector, hit.value)
                self.replacements.append(self._record(where, index, hit, replacement))
                pieces.append(text[last : hit.start])
                pieces.append(replacement)
                last = hit.end
            pieces.append(text[last:])
            out[index] = "".join(pieces)
        return out

    def _record(
        self, where: Sequence[str] | None, index: int, hit: Hit, replacement: str
    ) -> Replacement:
        place = where[index] if where is not None else f"#{index}"
        return Replacement(place, hit.tell_class, hit.detector.name, hit.value, replacement)

    def text(self, text: str, where: str = "") -> str:
        return self.strings([text], [where])[0]

    def json(self, value: Any, *, drop_private: bool = False, where: str = "") -> Any:
        """A redacted copy of a JSON value; `drop_private` removes private keys instead."""
        slots: list[str] = []
        pointers: list[str] = []
        masked: dict[int, Detector] = {}

        def collect(node: Any, pointer: str, key: str | None) -> Any:
            if isinstance(node, dict):
                out: dict[Any, Any] = {}
                for k, v in node.items():
                    if drop_private and k in self.policy.private_keys:
                        continue
                    child = f"{pointer}/{_escape(str(k))}"
                    slots.append(str(k))
                    pointers.append(f"{where}{child} (key)")
                    key_index = len(slots) - 1
                    out[key_index] = collect(v, child, str(k))
                return ("dict", out)
            if isinstance(node, list):
                return ("list", [collect(v, f"{pointer}/{i}", None) for i, v in enumerate(node)])
            if isinstance(node, str):
                slots.append(node)
                pointers.append(f"{where}{pointer}")
                private = self.policy.private_keys.get(key or "")
                if private and node and not is_placeholder(node):
                    if not self.policy.allowed(private, node):
                        masked[len(slots) - 1] = private_key_detector(key or "", private)
                return ("str", len(slots) - 1)
            return ("leaf", node)

        shape = collect(value, "", None)
        redacted = self._strings_with_masks(slots, pointers, masked)

        def rebuild(node: tuple[str, Any]) -> Any:
            kind, payload = node
            if kind == "dict":
                return {redacted[i]: rebuild(child) for i, child in payload.items()}
            if kind == "list":
                return [rebuild(child) for child in payload]
            if kind == "str":
                return redacted[payload]
            return payload

        return rebuild(shape)

    def _strings_with_masks(
        self, slots: list[str], pointers: list[str], masked: dict[int, Detector]
    ) -> list[str]:
        result = self.strings([("" if i in masked else s) for i, s in enumerate(slots)], pointers)
        for index, detector in masked.items():
            replacement = self.placeholder(detector, slots[index])
            hit = Hit(index, 0, len(slots[index]), slots[index], detector)
            self.replacements.append(self._record(pointers, index, hit, replacement))
            result[index] = replacement
        return result


FULL_PATH: Any = object()
"""What `clean_copy` returns when the value needs the Redactor's full walk."""


class _NeedsRedactor(Exception):
    pass


def clean_copy(value: Any, policy: Policy, memo: ScanMemo | None = None) -> Any:
    """`Redactor(policy, memo).json(value, drop_private=True)` for a value with no tell in
    it, else FULL_PATH.

    A catalog entry almost never holds a tell (the run files' tells sit in fields the entry
    does not copy), so a build asks this first: the same strings in the same order go
    through `find`, and when it finds nothing the result is the copy the Redactor would
    rebuild (private keys dropped, keys as strings) without its pointers and shapes. A
    private-key value that would be masked, or any hit, sends the value down the full walk.
    """
    private = policy.private_keys
    if private.get(""):
        return FULL_PATH  # a string in a list or at the top is looked up under ""
    strings: list[str] = []
    add = strings.append

    def copy(node: Any) -> Any:  # collects the strings as the Redactor's walk would
        if isinstance(node, dict):
            out = {}
            for key, child in node.items():
                if key in private:
                    continue
                name = str(key)
                add(name)
                if isinstance(child, str):
                    if private.get(name):
                        raise _NeedsRedactor  # masking is the Redactor's business
                    add(child)
                    out[name] = child
                else:
                    out[name] = copy(child)
            return out
        if isinstance(node, list):
            return [copy(child) for child in node]
        if isinstance(node, str):
            add(node)
        return node

    try:
        clean = copy(value)
    except _NeedsRedactor:
        return FULL_PATH
    if find(policy, strings, memo):
        return FULL_PATH
    return clean


def _escape(component: str) -> str:
    """RFC 6901: `~` is `~0`, `/` is `~1`."""
    return component.replace("~", "~0").replace("/", "~1")
