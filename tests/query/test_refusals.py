"""Nonsense is refused, not answered: a flag value no one can mean is one line on
stderr naming the flag, exit 2, nothing printed and no traceback; a date may be an ISO
date-time; an id filter that names nothing says what it might have meant; and every query
verb follows one rule for "no match": exit 1 with one line on stderr (ARCHITECTURE.md,
Errors and exit codes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.cli import run_cli

from .conftest import LAPTOP_Q8, PI5_Q4

REFUSED = [
    (["list", "--limit", "0"], "--limit"),
    (["list", "--limit", "-2"], "--limit"),
    (["list", "--limit", "two"], "--limit"),
    (["table", "--threads", "0"], "--threads"),
    (["best", "--threads", "-1"], "--threads"),
    (["summary", "--threads", "0"], "--threads"),
    (["compare", "--by", "build", "--threads", "0"], "--threads"),
    (["regression", "--detect", "--alpha", "5"], "--alpha"),
    (["regression", "--detect", "--alpha", "0"], "--alpha"),
    (["regression", "--detect", "--alpha", "1"], "--alpha"),
    (["regression", "--machine", "pi5", "--threshold", "500%"], "--threshold"),
    (["regression", "--machine", "pi5", "--threshold", "0%"], "--threshold"),
    (["regression", "--machine", "pi5", "--threshold", "5"], "--threshold"),
    (["regression", "--detect", "--min-change", "100%"], "--min-change"),
    (["regression", "--detect", "--fail-over", "-5%"], "--fail-over"),
    (["regression", "--detect", "--window", "0"], "--window"),
    (["list", "--since", "2025-02-01", "--until", "2025-01-01"], "--since"),
    (["best", "--since", "2025-01-07T12:00", "--until", "2025-01-07T11:59"], "--since"),
    (["list", "--since", "2025-13-01"], "--since"),
    (["table", "--until", "yesterday"], "--until"),
    (["export", "SWEEP", "--workers", "0"], "--workers"),
    (["export", "SWEEP", "--idle-timeout", "0"], "--idle-timeout"),
    (["export", "SWEEP", "--port", "70000"], "--port"),
    (["run", "CONFIG", "--prometheus-port", "70000"], "--prometheus-port"),
    (["run", "CONFIG", "--prometheus-port", "-1"], "--prometheus-port"),
    (["catalog", "resolve", LAPTOP_Q8, "--keep", "0"], "--keep"),
    (["inject", "CONFIG", "--repeat", "-1"], "--repeat"),
    (["onboard", "--cost-per-hour", "nan"], "--cost-per-hour"),
]


@pytest.mark.parametrize(("argv", "flag"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_nonsense_is_refused_in_one_line_with_exit_2(
    golden: Path, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    before = sorted((p, p.stat().st_mtime_ns) for p in golden.rglob("*") if p.is_file())
    argv = [str(golden) if a in ("SWEEP", "CONFIG") else a for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1, err
    assert flag in err and "Traceback" not in err and "usage:" not in err
    after = sorted((p, p.stat().st_mtime_ns) for p in golden.rglob("*") if p.is_file())
    assert after == before  # nothing written


@pytest.mark.parametrize(
    "since",
    ["2025-01-08T08:00", "2025-01-08T08:00:00Z", "2025-01-08T10:00+02:00", "2025-01-08t08:00z"],
)
def test_since_takes_an_iso_date_time(
    golden: Path, capsys: pytest.CaptureFixture[str], since: str
) -> None:
    code, out, err = run_cli(capsys, "list", "--since", since, "--format", "json")
    assert (code, err) == (0, "")
    ids = [row["run_id"] for row in json.loads(out)]
    assert ids[0] == PI5_Q4  # 2025-01-08T08:00:00Z, and nothing earlier that day
    assert all(row["timestamp"] >= "2025-01-08T08:00:00Z" for row in json.loads(out))


def test_until_with_a_time_stops_at_that_second(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "list", "--until", "2025-01-08T07:59:59Z", "--format", "json")
    assert code == 0
    assert PI5_Q4 not in [row["run_id"] for row in json.loads(out)]


HINTS = [
    (["--model", "smollm2-135n"], "no model 'smollm2-135n' in the catalog; did you mean"),
    (["--machine", "pi6"], "no machine 'pi6' in the catalog; did you mean pi5?"),
    (["--precision", "q9"], "no precision 'q9' in the catalog; did you mean"),
    (["--backend", "referense"], "no backend 'referense' in the catalog; did you mean reference?"),
    (["--build", "benchlab 0.1.1"], "no build 'benchlab 0.1.1' in the catalog; did you mean"),
    (["--threads", "5"], "no thread count 5 in the catalog"),
    (["--series", "szzz"], "no series 'szzz' in the catalog"),
]


@pytest.mark.parametrize(("flags", "hint"), HINTS, ids=[f[0] for f, _ in HINTS])
@pytest.mark.parametrize("verb", ["list", "table", "best", "summary"])
def test_every_id_filter_says_what_it_might_have_meant(
    golden: Path, capsys: pytest.CaptureFixture[str], verb: str, flags: list[str], hint: str
) -> None:
    code, out, err = run_cli(capsys, verb, *flags)
    assert (code, out) == (1, "")
    assert len(err.splitlines()) == 1 and hint in err


NO_MATCH = [
    ["list", "--machine", "pi5", "--since", "2030-01-01"],
    ["table", "--machine", "pi5", "--since", "2030-01-01"],
    ["best", "--machine", "pi5", "--since", "2030-01-01"],
    ["summary", "--machine", "pi5", "--since", "2030-01-01"],
    ["compare", "--by", "build", "--machine", "pi5", "--since", "2030-01-01"],
    ["compare", "--run-id", LAPTOP_Q8, "--run-id", "nosuch-run"],
    ["show", "nosuch-run"],
]


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["regression", "--machine", "pi6"], "did you mean pi5?"),
        (["regression", "--detect", "--model", "smollm2-135n"], "did you mean smollm2-135m?"),
        (["compare", "--by", "machine", "--machine", "pi6"], "did you mean pi5?"),
    ],
)
def test_a_typo_in_regression_or_compare_is_no_match_with_a_hint(
    golden: Path, capsys: pytest.CaptureFixture[str], argv: list[str], hint: str
) -> None:
    """A CI gate with a misspelt machine or model must not pass as "0 found"."""
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (1, "")
    assert len(err.splitlines()) == 1 and hint in err


@pytest.mark.parametrize("argv", NO_MATCH, ids=[a[0] + " " + a[1] for a in NO_MATCH])
def test_no_match_is_exit_1_and_one_line_in_every_verb(
    golden: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (1, "")
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("verb", ["list", "table", "best", "summary"])
def test_no_match_prints_an_empty_list_for_scripts(
    golden: Path, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    code, out, _ = run_cli(capsys, verb, "--machine", "nosuch", "--format", "json")
    assert (code, json.loads(out)) == (1, [])
