"""Redaction: the one policy every public artifact passes through.

Raw run dirs are private by default (ARCHITECTURE.md, invariant 5); what is published is built
through this package: `scrub_public` for the catalog, machine inventory, charts and site,
`Redactor` for promoted run copies, and the scanner (`bench scan`) that checks the result.

    tells      the tell classes: named detectors (hostnames, IPs, cloud ids, zones, ...)
    policy     detectors + known names (private specs, sweep configs) + redaction.yaml
    engine     finds tells in a batch of strings, one regex pass per detector
    redactor   replaces tells with stable placeholders (<host:1>, <path:home>, <secret>)
    scan       files, git-tracked files and staged blobs in; masked findings out
"""

from __future__ import annotations

from typing import Any

from benchlab.redact.engine import ScanMemo
from benchlab.redact.policy import Policy, default_policy, load_policy
from benchlab.redact.redactor import FULL_PATH, Redactor, clean_copy

__all__ = ["Policy", "Redactor", "ScanMemo", "default_policy", "load_policy", "scrub_public"]


def scrub_public(value: Any, policy: Policy | None = None, memo: ScanMemo | None = None) -> Any:
    """A copy of `value` fit for a public file.

    Private keys (`hostname`, `user`, `ip` ...) are dropped; every other key and string is
    redacted with the store's policy. Each call numbers its own placeholders, so the
    result depends on `value` alone (a catalog entry redacts the same way on every clone,
    whatever else is in the catalog). `memo` (a `ScanMemo` of `policy`, shared by the
    entries of one build) makes repeated strings cheap and changes nothing in the result.
    """
    policy = policy if policy is not None else default_policy()
    if memo is not None:
        clean = clean_copy(value, policy, memo)
        if clean is not FULL_PATH:
            return clean
    return Redactor(policy, memo).json(value, drop_private=True)
