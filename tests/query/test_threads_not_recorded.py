"""Unknown is unknown: a run that did not record its thread count joins the one series it
matches on every other field (tagged threads-not-recorded), or stands apart and says why
(ARCHITECTURE.md, Measurement identity)."""

from __future__ import annotations

from typing import Any

from benchlab.identity import SERIES_NOTE, THREADS_NOT_RECORDED, join_unrecorded_threads, series_id


def _run(run_id: str, threads: int | None, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "run_id": run_id,
        "machine_id": "pi5",
        "model_id": "llama-3.2-1b",
        "precision": "q4_k_m",
        "backend": "llama-bench",
        "threads": threads,
        "prompt_tokens": 512,
        "gen_tokens": 128,
        "tags": [],
        **fields,
    }
    entry["series"] = series_id(entry)
    return entry


def test_an_import_without_threads_joins_the_one_matching_series() -> None:
    known, imported = _run("a", 4), _run("b", None)
    other_model = _run("c", None, model_id="smollm2-135m")
    assert imported["series"] != known["series"]  # before: a series of its own
    assert join_unrecorded_threads([known, imported, other_model]) == 1
    assert imported["series"] == known["series"]
    assert THREADS_NOT_RECORDED in imported["tags"]
    assert "joined the t4 series" in imported[SERIES_NOTE]
    assert THREADS_NOT_RECORDED not in other_model["tags"]  # nothing to join: as it was
    assert THREADS_NOT_RECORDED not in known["tags"]


def test_with_several_thread_counts_it_stands_apart_and_says_why() -> None:
    t2, t4, imported = _run("a", 2), _run("b", 4), _run("c", None)
    before = imported["series"]
    assert join_unrecorded_threads([t2, t4, imported]) == 0
    assert imported["series"] == before
    assert THREADS_NOT_RECORDED in imported["tags"]
    assert "2 series match it on every other field (t2, t4)" in imported[SERIES_NOTE]


def test_a_run_differing_in_another_field_never_joins() -> None:
    known, imported = _run("a", 4, gen_tokens=64), _run("b", None)
    assert join_unrecorded_threads([known, imported]) == 0
    assert imported["series"] != known["series"] and imported["tags"] == []
