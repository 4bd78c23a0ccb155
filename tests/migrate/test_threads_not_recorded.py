"""An import that did not record its thread count joins the series of the same measurement
with threads known (ARCHITECTURE.md, Measurement identity): one series, not two, in `list`,
`best --by series` and `table`, through the loaded catalog and through the columnar cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.cli import main
from benchlab.query.colcache import MODE_ENV

DATA = Path(__file__).resolve().parents[1] / "data" / "migrate"


def _import(tmp_path: Path, store: Path, name: str, threads: int | None, test_time: str) -> None:
    """llama-bench.json's rows as a file of their own: with `threads`, or without n_threads
    (an older tool's export), at another time so the two are two runs."""
    rows = json.loads((DATA / "llama-bench.json").read_text())
    for row in rows:
        row["test_time"] = test_time
        if threads is None:
            del row["n_threads"]
        else:
            row["n_threads"] = threads
    path = tmp_path / name
    path.write_text(json.dumps(rows))
    argv = ["--store", str(store), "migrate", str(path), "--machine-id", "rig"]
    assert main(argv) == 0


def _json(capsys: pytest.CaptureFixture[str], store: Path, *argv: str) -> list[dict]:
    capsys.readouterr()
    assert main(["--store", str(store), *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("mode", ["never", "always"])
def test_one_candidate_series_is_joined_and_marked(
    tmp_path: Path,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    monkeypatch.setenv(MODE_ENV, mode)
    _import(tmp_path, store, "known.json", 8, "2025-04-24T11:58:50Z")
    _import(tmp_path, store, "unknown.json", None, "2025-04-25T11:58:50Z")
    assert main(["--store", str(store), "catalog", "build"]) == 0
    runs = _json(capsys, store, "list")
    by_threads = {r["threads"]: r for r in runs}
    assert set(by_threads) == {8, None}
    joined = by_threads[None]
    assert joined["series"] == by_threads[8]["series"]
    assert "threads-not-recorded" in joined["tags"]
    assert "joined the t8 series" in joined["series_note"]
    assert (
        len(
            _json(
                capsys, store, "best", "--by", "series", "--ever", "--metric", "decode_tok_per_sec"
            )
        )
        == 1
    )
    assert len(_json(capsys, store, "table")) == 1


def test_several_candidates_leave_it_apart_saying_why(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(tmp_path, store, "t4.json", 4, "2025-04-23T11:58:50Z")
    _import(tmp_path, store, "t8.json", 8, "2025-04-24T11:58:50Z")
    _import(tmp_path, store, "unknown.json", None, "2025-04-25T11:58:50Z")
    assert main(["--store", str(store), "catalog", "build"]) == 0
    runs = _json(capsys, store, "list")
    apart = next(r for r in runs if r["threads"] is None)
    assert len({r["series"] for r in runs}) == 3
    assert "threads-not-recorded" in apart["tags"]
    assert "2 series match it on every other field (t4, t8)" in apart["series_note"]
    capsys.readouterr()
    assert main(["--store", str(store), "show", apart["run_id"]]) == 0
    assert "stands apart" in capsys.readouterr().out
