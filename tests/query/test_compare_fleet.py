"""`bench compare --by machine` on a fleet whose machines share no thread count.

Two machines ran one model at one precision, each at its own thread counts: `big` at 8 and 16,
`small` at 2 and 4. The exact match has no measurement in common (today's answer, kept as
`--match exact`); `--match best` pairs model, precision and test with each side at its best
settings, names them, and marks each row +, - or ~ from the repeats' 95% intervals, in each
metric's own direction (a latency going up is -). A marked outlier never counts, and only the
newest segment of a side's repeats does (`query.compare.side_values`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.cli import run_cli
from tests.kit.entries import make_entry

from benchlab.query.compare import side_values, significance

NOISE = (-0.02, -0.01, 0.0, 0.01, 0.02)
"""Five repeats of every measurement, ±2%: every side has an interval."""
DECODE = {("big", 8): 100.0, ("big", 16): 150.0, ("small", 2): 40.0, ("small", 4): 60.0}
PEAK = {("big", 8): 480.0, ("big", 16): 500.0, ("small", 2): 490.0, ("small", 4): 502.0}


def _run(machine: str, threads: int, k: int, decode: float, **fields: Any) -> dict[str, Any]:
    stamp = f"2025030{1 + k}T{threads:02d}0000Z"
    return make_entry(
        f"{machine}-smollm2-135m-q8-batch-{threads:08x}-{stamp}",
        machine,
        f"2025-03-0{1 + k}T{threads:02d}:00:00Z",
        threads=threads,
        decode_tok_per_sec=decode,
        decode_ms_per_token=1000.0 / decode,
        prefill_tok_per_sec=decode * 10,
        **fields,
    )


def fleet_runs() -> list[dict[str, Any]]:
    runs = []
    for (machine, threads), decode in DECODE.items():
        for k, noise in enumerate(NOISE):
            runs.append(
                _run(
                    machine,
                    threads,
                    k,
                    decode * (1 + noise),
                    peak_tok_per_sec=PEAK[machine, threads] * (1 + noise),
                )
            )
    # small at 2 threads once decoded at 999 tok/s: marked an outlier, it must not count
    # (counted, it would make 2 threads small's best setting).
    runs.append(_run("small", 2, 6, 999.0, tags=["kernel", "batch", "outlier"]))
    return runs


@pytest.fixture
def fleet(store: Path) -> Path:
    write_v3_catalog(store, fleet_runs())
    return store


def _json(capsys: pytest.CaptureFixture[str], store: Path, *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "--store", str(store), "compare", *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _by_metric(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["metric"]: row for row in data["rows"]}


def test_exact_match_finds_nothing_in_common(fleet: Path, capsys: pytest.CaptureFixture[str]):
    code, out, err = run_cli(
        capsys, "--store", str(fleet), "compare", "--by", "machine", "--a", "big", "--b", "small"
    )
    assert (code, out) == (1, "")
    assert "no measurement was made under both big and small" in err


def test_best_match_names_each_sides_settings_and_marks_rows(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _json(capsys, fleet, "--by", "machine", "--a", "big", "--b", "small", "--match", "best")
    assert data["match"] == "best" and (data["only_a"], data["only_b"]) == (0, 0)
    rows = _by_metric(data)
    decode = rows["decode_tok_per_sec"]
    # big is fastest at 16 threads, small at 4 (its 999 tok/s outlier at 2 threads is left out)
    assert decode["settings"] == "A: 16 threads; B: 4 threads"
    assert decode["a"] == pytest.approx(150.0) and decode["b"] == pytest.approx(60.0)
    assert decode["stats_a"]["n"] == 5 and decode["stats_b"]["n"] == 5
    assert decode["mark"] == "-" and decode["speedup"] == pytest.approx(0.4)
    assert decode["test"] == "tg16"
    # the peak is best at 16 threads on big and at 4 on small: 500 against 502, within noise
    assert rows["peak_tok_per_sec"]["settings"] == "A: 16 threads; B: 4 threads"
    assert rows["peak_tok_per_sec"]["mark"] == "~"
    # every metric the runs carry has a row, latencies included
    assert set(rows) == {
        "prefill_tok_per_sec",
        "decode_tok_per_sec",
        "decode_ms_per_token",
        "peak_tok_per_sec",
    }


def test_a_latency_that_goes_up_is_worse(fleet: Path, capsys: pytest.CaptureFixture[str]):
    forward = _by_metric(
        _json(capsys, fleet, "--by", "machine", "--a", "big", "--b", "small", "--match", "best")
    )["decode_ms_per_token"]
    # the best latency is the smallest: big at 16 threads, small at 4
    assert forward["settings"] == "A: 16 threads; B: 4 threads"
    assert forward["better"] == "lower" and forward["b"] > forward["a"]
    assert forward["mark"] == "-" and forward["speedup"] == pytest.approx(0.4, rel=1e-3)
    backward = _by_metric(
        _json(capsys, fleet, "--by", "machine", "--a", "small", "--b", "big", "--match", "best")
    )["decode_ms_per_token"]
    assert backward["b"] < backward["a"]
    assert backward["mark"] == "+" and backward["speedup"] == pytest.approx(2.5, rel=1e-3)


def test_table_names_settings_and_marks(fleet: Path, capsys: pytest.CaptureFixture[str]):
    code, out, _ = run_cli(
        capsys, "--store", str(fleet), "compare", "--by", "machine",
        "--a", "big", "--b", "small", "--match", "best",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "machine: A = big, B = small (each side at its best settings)"
    assert "settings" in lines[1] and lines[1].rstrip().endswith("mark")
    tg = next(line for line in lines if " tg16 " in line and "tok/s" not in line)
    assert "A: 16 threads; B: 4 threads" in tg and tg.rstrip().endswith("-")
    latency = next(line for line in lines if "ms, lower is better" in line)
    assert latency.rstrip().endswith("-")


def test_only_changed_keeps_the_plus_and_minus_rows(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("--by", "machine", "--a", "big", "--b", "small", "--match", "best")
    everything = _json(capsys, fleet, *argv)
    changed = _json(capsys, fleet, *argv, "--only-changed")
    assert {r["mark"] for r in everything["rows"]} == {"-", "~"}
    assert [r["metric"] for r in changed["rows"]] == [
        r["metric"] for r in everything["rows"] if r["mark"] in "+-"
    ]
    assert changed["rows"] and all(r["mark"] in "+-" for r in changed["rows"])


def test_only_changed_with_no_change_says_so(store: Path, capsys: pytest.CaptureFixture[str]):
    runs = [
        _run(machine, 4, k, 100.0 * (1 + noise))
        for machine in ("big", "small")
        for k, noise in enumerate(NOISE)
    ]
    write_v3_catalog(store, runs)
    code, out, err = run_cli(
        capsys, "--store", str(store), "compare", "--by", "machine",
        "--a", "big", "--b", "small", "--only-changed",
    )  # fmt: skip
    assert (code, out) == (1, "")
    assert err == "bench: no significant change between big and small\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--by", "machine", "--match", "fastest"), "--match: invalid choice: 'fastest'"),
        (("--run-id", "x", "--run-id", "y", "--only-changed"), "--only-changed go with --by"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(
    fleet: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, out, err = run_cli(capsys, "--store", str(fleet), "compare", *argv)
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err and err.count("\n") <= 2


# --- the rules themselves ----------------------------------------------------------------


def _side(mean: float, n: int, half: float | None) -> dict[str, Any]:
    ci = None if half is None else [mean - half, mean + half]
    return {"mean": mean, "n": n, "ci95": ci}


@pytest.mark.parametrize(
    ("metric", "a", "b", "mark"),
    [
        ("decode_tok_per_sec", _side(100, 5, 2), _side(110, 5, 2), "+"),
        ("decode_tok_per_sec", _side(100, 5, 2), _side(90, 5, 2), "-"),
        # Welch's t, not the overlap of the intervals: these overlap (94-106, 104-116), yet
        # t = 3.3 on 8 degrees of freedom is significant at 5%.
        ("decode_tok_per_sec", _side(100, 5, 6), _side(110, 5, 6), "+"),
        ("decode_tok_per_sec", _side(100, 5, 12), _side(110, 5, 12), "~"),
        ("decode_ms_per_token", _side(10, 5, 1), _side(13, 5, 1), "-"),
        ("decode_ms_per_token", _side(10, 5, 1), _side(7, 5, 1), "+"),
        ("decode_tok_per_sec", _side(100, 1, None), _side(150, 1, None), "?"),
        ("decode_tok_per_sec", _side(100, 1, None), _side(150, 5, 10), "+"),
        ("decode_tok_per_sec", _side(100, 1, None), _side(105, 5, 10), "~"),
    ],
)
def test_significance_rule(metric: str, a: dict, b: dict, mark: str) -> None:
    assert significance(metric, a, b) == mark


def test_significance_needs_both_sides() -> None:
    assert significance("decode_tok_per_sec", None, _side(1, 3, 0.1)) is None


def test_only_the_newest_segment_counts() -> None:
    """A side that stepped down from 100 to 70 tok/s is compared at 70: the runs before the
    step are not today's level (the same newest segment `bench best` reports)."""
    values = [100.0 + (i % 3) * 0.5 for i in range(10)] + [70.0 + (i % 3) * 0.5 for i in range(10)]
    runs = [_run("big", 4, 0, v) for v in values]  # oldest first, as gather hands them over
    kept = side_values(runs, "decode_tok_per_sec")
    assert kept == values[10:]
    runs[12]["tags"] = ["outlier"]
    assert side_values(runs, "decode_tok_per_sec") == values[10:12] + values[13:]


def _one_run(value: float, n: int, sd: float) -> dict[str, Any]:
    return {"mean": value, "n": 1, "ci95": None, "samples": {"n": n, "mean": value, "sd": sd}}


@pytest.mark.parametrize(
    ("a", "b", "mark"),
    [
        (_one_run(60.0, 5, 0.72), _one_run(53.4, 5, 0.64), "-"),  # 11% down, 1.2% spread
        (_one_run(60.0, 5, 0.72), _one_run(60.5, 5, 0.72), "~"),  # within the samples' noise
        (_one_run(60.0, 5, 0.01), _one_run(60.3, 5, 0.01), "~"),  # under 1% on samples alone
        (_one_run(60.0, 5, 0.72), _side(66.0, 5, 1.0), "+"),  # runs on one side, samples on one
    ],
)
def test_one_run_a_side_is_judged_on_its_samples(a: dict, b: dict, mark: str) -> None:
    assert significance("decode_tok_per_sec", a, b) == mark
