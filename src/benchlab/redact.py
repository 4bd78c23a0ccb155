"""Redaction: the one function every public artifact passes through.

This first version removes what the catalog must never carry (hostnames, absolute paths);
the tell classes, the scanner and `bench promote` build on it.
"""

from __future__ import annotations

import re
from typing import Any

_ABSOLUTE_PATH = re.compile(
    r"(?:(?<=\s)|^)(?:/(?:home|Users|root|mnt|srv|opt|var)/\S*|[A-Za-z]:\\\S*)"
)
_PRIVATE_KEYS = frozenset({"hostname", "host", "ip", "user", "username", "email"})


def scrub_public(value: Any) -> Any:
    """A copy of `value` fit for a public file: private keys dropped, absolute paths masked."""
    if isinstance(value, dict):
        return {k: scrub_public(v) for k, v in value.items() if k not in _PRIVATE_KEYS}
    if isinstance(value, list):
        return [scrub_public(v) for v in value]
    if isinstance(value, str):
        return _ABSOLUTE_PATH.sub("<path>", value)
    return value
