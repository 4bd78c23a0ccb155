"""What is published stays re-checked (ARCHITECTURE.md, Publishing and redaction): the
catalog lines already written, held to the redaction policy of today.

A line was checked when it was built, under the detectors and value shapes of that day.
When they grow (a new tell shape, a stricter field), a line published before may hold what
the policy would now withhold. `withheld_lines` names each such line, `file:line` and the
fields; `bench scan --tracked` reports them, so a tracked catalog is scanned by the policy
of its own store, not only by the text detectors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlab.catalog.shards import iter_shards, read_shard_gated
from benchlab.redact.policy import Policy
from benchlab.redact.shapes import PUBLIC_VALUE_SHAPES, withhold_unsafe

MAX_REPORTED = 10_000
"""Lines named at most in one report (a policy change can touch a whole fleet)."""


@dataclass(frozen=True)
class WithheldLine:
    path: str  # relative to the store
    line: int
    run_id: str
    fields: tuple[str, ...]


CLONE_DETECTORS = frozenset({"known-host", "known-user"})
"""Detectors made (in part) of this clone's private machine specs: another clone's differ, so
they stay out of the version a shared head records (two clones would each find the other's
version stale after every pull). A run dir is read under them; `bench scan --tracked` names
a published line they would withhold."""


def policy_version(policy: Policy) -> str:
    """A digest of what decides publication and every clone at one commit shares: every
    detector (name, class, pattern, flags) but `CLONE_DETECTORS`, the allow lists, the
    private keys, the public-text params and every field's value shapes. Equal policies,
    equal digests; the catalog head records it (`catalog.recheck`)."""
    parts = sorted(
        f"{d.name}\x1f{d.tell_class}\x1f{d.regex.pattern}\x1f{d.regex.flags}"
        for d in policy.detectors
        if d.name not in CLONE_DETECTORS
    )
    parts.extend(f"{field}\x1f{shapes}" for field, shapes in sorted(PUBLIC_VALUE_SHAPES.items()))
    parts.extend(sorted(policy.public_text))
    parts.extend(sorted(f"allow\x1f{v}" for v in policy.allow_values))
    parts.extend(f"allow-re\x1f{p.pattern}" for p in policy.allow_patterns)
    parts.extend(f"allow-path\x1f{p}" for p in policy.allow_paths)
    parts.extend(f"private\x1f{k}\x1f{v}" for k, v in sorted(policy.private_keys.items()))
    return hashlib.sha256("\x1e".join(parts).encode("utf-8")).hexdigest()[:16]


def withheld_lines(store_root: Path, policy: Policy) -> Iterator[WithheldLine]:
    """Every published line that `policy` would withhold a value of, in shard order, at
    most MAX_REPORTED. A line the gate refuses is the build's and validate's to name."""
    catalog = store_root / "catalog.json"
    passed: set[tuple[str, object]] = set()
    reported = 0
    for name, path in iter_shards(catalog):
        entries, _ = read_shard_gated(path, name)
        for number, entry in enumerate(entries, start=1):
            fields = withhold_unsafe(dict(entry), policy, policy.public_text, passed)
            if fields:
                yield WithheldLine(name, number, str(entry.get("run_id")), tuple(fields))
                reported += 1
                if reported >= MAX_REPORTED:
                    return
