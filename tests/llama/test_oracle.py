"""The oracle: llama.cpp's own compare-llama-bench.py and `bench compare --by build` agree.

Both builds' llama-bench run once each, printing JSON to stdout and SQL to stderr
(`-o json -oe sql`): one measurement, two formats. The SQL goes into an sqlite database as
`llama-bench -o sql | sqlite3 db` would put it, and compare-llama-bench.py (the copy the
newer build vendors, kept by tools/llama/build.py) tabulates it; the JSON goes through
`bench migrate`, `bench catalog build` and `bench compare --by build --format json`. Same
tests, same t/s and the same speedups, to the two decimals the oracle prints.

Loading two builds 14 months apart into one table needs two things llama.cpp's README does
not mention (its recipe assumes neighbouring commits): the table must have the union of
both builds' columns (each prints `CREATE TABLE IF NOT EXISTS` with its own, so the second
build's INSERTs name columns the first never created), and a column only one build prints
must hold that build's value in the other's rows too, because the oracle joins on it with
`=` (NULL never equals anything). Those columns are options the older build did not have
(n_cpu_moe, fit_target, load_mode ...) or dropped (use_mmap), each at its default; the
test checks that no other column needed filling. `-ngl 0 -fa 0` are spelled out because
their defaults changed between the builds (ngl 99 then -1, fa 0 then -1 "auto").
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.kit.catalog import catalog_doc
from tests.kit.oracle import need_modules

from benchlab.cli import main
from benchlab.identity import identity_key, series_key

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ARGS = ("-p", "64", "-n", "16", "-r", "2", "-t", "1", "-ngl", "0", "-fa", "0")
FILLABLE = {
    # Only in the newer build's schema (options 4227c9b did not have) ...
    "n_cpu_moe",
    "devices",
    "load_mode",
    "lazy_mode",
    "no_host",
    "repack",
    "fit_target",
    "fit_min_ctx",
    # ... or only in the older one's (dropped since).
    "defrag_thold",
    "use_mmap",
}


def run_both(binary: Path, model: Path, dest: Path) -> tuple[Path, str]:
    """One llama-bench run: JSON written to `dest`, the same measurement's SQL returned."""
    argv = [str(binary), "-m", str(model), *ARGS, "-o", "json", "-oe", "sql"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv}: {done.stderr[-2000:]}"
    dest.write_text(done.stdout)
    return dest, done.stderr


def _statements(text: str) -> list[str]:
    statements, pending = [], ""
    for line in text.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    return statements


def oracle_db(outputs: list[str], path: Path) -> dict[str, Any]:
    """`llama-bench -o sql | sqlite3 path` for each output, with the table widened to the
    union of the builds' columns; returns the columns filled in for the rows of the build
    that lacks them (name -> value)."""
    db = sqlite3.connect(path)
    try:
        for text in outputs:
            for statement in _statements(text):
                if statement.upper().startswith("INSERT INTO"):
                    names = statement[statement.index("(") + 1 : statement.index(")")].split(",")
                    have = {row[1] for row in db.execute("PRAGMA table_info(llama_bench)")}
                    for name in (n.strip() for n in names):
                        if name not in have:
                            db.execute(f"ALTER TABLE llama_bench ADD COLUMN {name}")
                db.execute(statement)
        filled: dict[str, Any] = {}
        for _, name, *_ in db.execute("PRAGMA table_info(llama_bench)").fetchall():
            nulls = db.execute(f"SELECT COUNT(*) FROM llama_bench WHERE {name} IS NULL")
            if nulls.fetchone()[0] == 0:
                continue
            values = db.execute(
                f"SELECT DISTINCT {name} FROM llama_bench WHERE {name} IS NOT NULL"
            ).fetchall()
            assert len(values) == 1, f"{name}: {values}"
            db.execute(f"UPDATE llama_bench SET {name} = ? WHERE {name} IS NULL", values[0])
            filled[name] = values[0][0]
        db.commit()
        return filled
    finally:
        db.close()


def parse_pipe_table(text: str) -> list[dict[str, str]]:
    """tabulate's `pipe` table (the oracle's default output) as dicts keyed by header."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        for line in lines[2:]
    ]


def test_compare_by_build_agrees_with_compare_llama_bench(
    llama_build: Any,
    older_build: Any,
    tiny_model: Path,
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    need_modules("tabulate", "git", reason="the oracle imports tabulate and GitPython ('.[dev]')")
    old, new = older_build, llama_build
    outputs = {}
    for build in (new, old):  # the newer build's schema first, as after an upgrade
        json_path, sql = run_both(build.llama_bench, tiny_model, tmp_path / f"{build.commit}.json")
        outputs[build.commit] = (json_path, sql)

    # The oracle, on the sqlite database.
    database = tmp_path / "llama-bench.sqlite"
    filled = oracle_db([outputs[new.commit][1], outputs[old.commit][1]], database)
    assert set(filled) <= FILLABLE, f"columns other than options one build lacks: {filled}"
    script = [sys.executable, str(new.compare_script)]
    oracle_run = subprocess.run(
        [*script, "-i", str(database), "-b", old.commit, "-c", new.commit],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not a git repo: commits are taken as given
        timeout=120,
    )
    assert oracle_run.returncode == 0, oracle_run.stderr
    oracle = {row["Test"]: row for row in parse_pipe_table(oracle_run.stdout)}

    # benchlab, on the JSON outputs.
    for commit in (old.commit, new.commit):
        args = ["migrate", str(outputs[commit][0]), "--machine-id", "local"]
        assert main(["--store", str(store), *args]) == 0
    assert main(["--store", str(store), "catalog", "build"]) == 0
    capsys.readouterr()
    compare = ["compare", "--by", "build", "--a", old.commit, "--b", new.commit]
    assert main(["--store", str(store), *compare, "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    ours = {
        row["test"]: row
        for row in result["rows"]
        if row["metric"] in ("prefill_tok_per_sec", "decode_tok_per_sec")
    }
    assert main(["--store", str(store), *compare]) == 0
    table = capsys.readouterr().out
    both = (  # shown only where an assertion below fails
        f"--- compare-llama-bench.py (filled in: {filled})\n{oracle_run.stdout}"
        f"--- bench compare --by build\n{table}"
    )
    assert result["a"] == f"b{old.build_number} ({old.commit})", both
    assert result["b"] == f"b{new.build_number} ({new.commit})", both
    assert sorted(ours) == sorted(oracle) == ["pp64", "tg16"], both
    for test, row in oracle.items():
        mine = ours[test]
        assert float(row[f"t/s {old.commit}"]) == pytest.approx(mine["a"], abs=0.0051), both
        assert float(row[f"t/s {new.commit}"]) == pytest.approx(mine["b"], abs=0.0051), both
        assert float(row["Speedup"]) == pytest.approx(mine["speedup"], abs=0.0051), both
    # One series per test: the two builds are two versions of the same measurement.
    catalog = catalog_doc(store / "catalog.json")
    assert len({series_key(entry) for entry in catalog["runs"]}) == 1
    assert len({identity_key(entry) for entry in catalog["runs"]}) == 2
