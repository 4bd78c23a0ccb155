"""The build's scan memo (`redact.engine.ScanMemo`) finds exactly what the plain joined scan
finds, batch after batch, on hostile strings: the labelled tells of tests/data/redact, pieces
of them glued across the newline the engine joins strings with, and the characters that
matter to the detectors. A memo is only worth having if it changes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlab.redact import scrub_public
from benchlab.redact.corpus import corpus_policy
from benchlab.redact.engine import ScanMemo, find, line_local, required_literals
from benchlab.redact.policy import KnownNames, RedactionConfig, StoreNames, build_policy
from benchlab.redact.redactor import FULL_PATH, clean_copy

DATA = Path(__file__).resolve().parents[1] / "data" / "redact"
CORPORA = [json.loads((DATA / name).read_text()) for name in ("corpus.json", "corpus_holdout.json")]
TEXTS = sorted(
    {s["text"] for c in CORPORA for samples in c["tells"].values() for s in samples}
    | {text for c in CORPORA for text in c["clean"]}
)
TELLS = sorted({s["tell"] for c in CORPORA for samples in c["tells"].values() for s in samples})
POLICY = corpus_policy(CORPORA[0])
# A store that adds its own patterns: one anchored at the start of the text, one that may
# span a newline, so that neither is line-local and both run over the joined blob.
CUSTOM = build_policy(
    RedactionConfig.model_validate(
        {
            "patterns": [
                {"name": "ticket", "class": "secret", "regex": r"^TICKET-\d+"},
                {"name": "wrapped", "class": "host", "regex": r"rack\s+\d+"},
            ],
            "known": KnownNames(hosts=["gpu-box-7"], users=["mkowalski"]).model_dump(),
        }
    ),
    StoreNames(hosts={"ANTHONY-WIN"}, users={"anthony"}, machine_ids={"pi5"}),
)

pieces = st.one_of(
    st.sampled_from(TEXTS),
    st.sampled_from(TELLS),
    st.sampled_from(TEXTS).flatmap(
        lambda t: st.tuples(st.integers(0, len(t)), st.integers(0, len(t))).map(
            lambda ab: t[min(ab) : max(ab)]
        )
    ),
    st.text(alphabet="ab01:./@-_ \t\n=\"'~$%\\AKIAghp-eyJ", max_size=24),
    st.sampled_from(["", "\n", " ", "/home/", "~/", "-----BEGIN", "sk-", "TICKET-7", "rack"]),
)
strings = st.lists(st.lists(pieces, min_size=1, max_size=3).map("".join), max_size=10)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(strings, min_size=1, max_size=6), st.sampled_from(["corpus", "custom"]))
def test_memoised_find_equals_the_plain_scan(batches: list[list[str]], which: str) -> None:
    policy = POLICY if which == "corpus" else CUSTOM
    memo = ScanMemo(policy, limit=40)  # small: the memo also starts over mid-run
    for batch in batches:
        assert find(policy, batch, memo) == find(policy, batch)
        assert find(policy, batch, memo) == find(policy, batch)  # warm, too


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), pieces),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(pieces, st.sampled_from(["hostname", "user", "ip", "model", "tags"])),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_values, min_size=1, max_size=5))
def test_memoised_scrub_equals_scrub(values: list[Any]) -> None:
    memo = ScanMemo(POLICY, limit=60)
    for value in values:
        assert scrub_public(value, POLICY, memo) == scrub_public(value, POLICY)


def test_every_labelled_tell_is_found_the_same_with_the_memo() -> None:
    for corpus in CORPORA:
        policy = corpus_policy(corpus)
        memo = ScanMemo(policy)
        for samples in corpus["tells"].values():
            texts = [s["text"] for s in samples]
            assert find(policy, texts, memo) == find(policy, texts)
        assert find(policy, corpus["clean"], memo) == find(policy, corpus["clean"])


def test_a_value_with_a_tell_takes_the_full_walk() -> None:
    memo = ScanMemo(POLICY)
    assert clean_copy({"a": "ok"}, POLICY, memo) == {"a": "ok"}
    home = "/".join(["", "home", "mkowalski", "models", "x.gguf"])  # a tell, made here
    assert clean_copy({"where": home}, POLICY, memo) is FULL_PATH
    assert clean_copy({"host": "x"}, POLICY, memo) == {}  # a private key is dropped
    assert clean_copy({1: ["a", {"b": None}]}, POLICY, memo) == {"1": ["a", {"b": None}]}


@pytest.mark.parametrize(
    ("pattern", "local"),
    [
        (r"(?<![\w.-])ab(?![\w-])", True),
        (r"\bword\b", True),
        (r"(?m)^x$", True),
        (r"[^\n]+", True),
        (r"x\s+y", False),
        (r"[^x]+", False),
        (r"(?s)a.b", False),
        (r"a.b", True),
        (r"^TICKET", False),
        (r"end$", False),
        (r"\Aa", False),
        (r"a\Z", False),
        (r"a(?=\s)", False),
        (r"(?<=\W)a", False),
        (r"(a)\1", True),
        (r"\d+\D", False),
    ],
)
def test_line_local_reads_the_pattern(pattern: str, local: bool) -> None:
    assert line_local(re.compile(pattern)) is local


def test_required_literals_never_miss_a_match() -> None:
    """Each detector's prefilter finds something in every text the detector matches in."""
    for policy in (POLICY, CUSTOM):
        for detector in policy.detectors:
            needs = required_literals(detector.regex)
            if needs is None:
                continue
            for text in [*TEXTS, *TELLS]:
                if detector.regex.search(text) is not None:
                    assert needs.search(text) is not None, (detector.name, text)


PREFILTERS = [(d, required_literals(d.regex)) for d in POLICY.detectors]


@settings(max_examples=300, deadline=None)
@given(pieces)
def test_required_literals_hold_on_generated_text(text: str) -> None:
    for detector, needs in PREFILTERS:
        if needs is not None and detector.regex.search(text) is not None:
            assert needs.search(text) is not None, (detector.name, text)


@pytest.mark.parametrize(
    ("pattern", "hit", "miss"),
    [
        (r"(?i)serial\s*:\s*(\w+)", "SeRiAl: 12", "seria"),
        (r"(?:ssh-rsa|ssh-ed25519) AAAA\w+", "ssh-rsa AAAAxy", "ssh-rsa AAA"),
        (r"x[ab]c", "xbc", "xc"),
        (r"(?:ab)+", "abab", "ba"),
    ],
)
def test_required_literals_of_simple_patterns(pattern: str, hit: str, miss: str) -> None:
    needs = required_literals(re.compile(pattern))
    assert needs is not None
    assert needs.search(hit) is not None and needs.search(miss) is None
