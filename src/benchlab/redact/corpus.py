"""Scoring the policy on a labelled corpus: recall on tells, false positives on clean data.

The corpus (tests/data/redact/corpus.json) holds, per tell class, realistic strings that
each carry one tell (the `tell` substring), and clean benchmark strings (model names,
quant tags, GPU names, versions, run ids, hashes) that must never be flagged. Its `store`
section stands in for what a store's private specs and sweep configs would teach the
policy (hostnames, users, machine ids).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.files import read_bytes
from benchlab.redact.engine import find
from benchlab.redact.policy import KnownNames, Policy, RedactionConfig, StoreNames, build_policy


@dataclass
class CorpusScore:
    tells: int = 0
    detected: int = 0
    clean: int = 0
    false_positives: list[str] = field(default_factory=list)
    missed: list[tuple[str, str]] = field(default_factory=list)
    per_class: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def recall(self) -> float:
        return self.detected / self.tells if self.tells else 1.0


def corpus_policy(corpus: dict[str, Any]) -> Policy:
    store = corpus.get("store", {})
    names = StoreNames(
        hosts=set(store.get("hosts", [])),
        users=set(store.get("users", [])),
        machine_ids=set(store.get("machine_ids", [])),
    )
    config = RedactionConfig(known=KnownNames(instances=store.get("instances", [])))
    return build_policy(config, names)


def evaluate(path: Path, policy: Policy | None = None) -> CorpusScore:
    corpus = json.loads(read_bytes(path))
    policy = policy if policy is not None else corpus_policy(corpus)
    score = CorpusScore()
    for tell_class, samples in sorted(corpus["tells"].items()):
        found = 0
        for sample in samples:
            # Each sample alone, as a public value is scanned: in a batch, one sample could
            # open a detector's gate for another and hide a gate that misses it.
            hits = find(policy, [sample["text"]])
            start = sample["text"].index(sample["tell"])
            end = start + len(sample["tell"])
            if any(h.start < end and h.end > start for h in hits):
                found += 1
            else:
                score.missed.append((tell_class, sample["text"]))
        score.tells += len(samples)
        score.detected += found
        score.per_class[tell_class] = (found, len(samples))
    clean = corpus["clean"]
    score.clean = len(clean)
    for text in clean:
        for hit in find(policy, [text]):
            score.false_positives.append(f"{hit.detector.name}: {text!r}")
    return score
