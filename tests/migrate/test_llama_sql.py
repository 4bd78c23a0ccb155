"""`llama-bench -o sql` imports: read through an in-memory sqlite database, never executed.

The SQL below is what the two vendored builds print (tools/llama/build.py: 0.3.36 is
llama.cpp 0c1e570, 0.3.16 is 4227c9b), cut to the columns that matter and one test each;
tests/llama/test_formats.py checks the full output of the real binaries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.benchmarks.llama_rows import read_rows
from benchlab.cli import main
from benchlab.errors import ParseError
from benchlab.layout import read_model
from benchlab.models import RunRecord

NEW = """CREATE TABLE IF NOT EXISTS llama_bench (
  build_commit TEXT,
  build_number INTEGER,
  model_filename TEXT,
  model_type TEXT,
  model_size INTEGER,
  model_n_params INTEGER,
  n_batch INTEGER,
  n_ubatch INTEGER,
  n_threads INTEGER,
  n_gpu_layers INTEGER,
  n_cpu_moe INTEGER,
  flash_attn INTEGER,
  n_prompt INTEGER,
  n_gen INTEGER,
  n_depth INTEGER,
  test_time TEXT,
  avg_ns INTEGER,
  stddev_ns INTEGER,
  avg_ts REAL,
  stddev_ts REAL
);

INSERT INTO llama_bench (build_commit, build_number, model_filename, model_type, model_size, \
model_n_params, n_batch, n_ubatch, n_threads, n_gpu_layers, n_cpu_moe, flash_attn, n_prompt, \
n_gen, n_depth, test_time, avg_ns, stddev_ns, avg_ts, stddev_ts) VALUES ('0c1e570', '20261001', \
'/m/tiny-f32.gguf', 'llama ?B all F32', '14689280', '3672320', '2048', '512', '1', '0', '0', \
'0', '64', '0', '0', '2026-12-02T02:34:02Z', '50767440', '8260170', '1277.561097', '207.866795');
INSERT INTO llama_bench (build_commit, build_number, model_filename, model_type, model_size, \
model_n_params, n_batch, n_ubatch, n_threads, n_gpu_layers, n_cpu_moe, flash_attn, n_prompt, \
n_gen, n_depth, test_time, avg_ns, stddev_ns, avg_ts, stddev_ts) VALUES ('0c1e570', '20261001', \
'/m/tiny-f32.gguf', 'llama ?B all F32', '14689280', '3672320', '2048', '512', '1', '0', '0', \
'0', '0', '16', '0', '2026-12-02T02:34:03Z', '30032202', '12767380', '585.686911', '248.988936');
"""

OLD = """CREATE TABLE IF NOT EXISTS llama_bench (
  build_commit TEXT,
  build_number INTEGER,
  model_filename TEXT,
  model_type TEXT,
  n_threads INTEGER,
  use_mmap INTEGER,
  n_prompt INTEGER,
  n_gen INTEGER,
  n_depth INTEGER,
  avg_ts REAL,
  stddev_ts REAL
);

INSERT INTO llama_bench (build_commit, build_number, model_filename, model_type, n_threads, \
use_mmap, n_prompt, n_gen, n_depth, avg_ts, stddev_ts) VALUES ('4227c9b', '20250814', \
'/m/tiny-f32.gguf', 'llama ?B all F32', '1', '1', '0', '16', '0', '420.830781', '31.297020');
"""


def test_rows_come_back_typed_as_from_a_database() -> None:
    rows = read_rows(NEW)
    assert [(r["n_prompt"], r["n_gen"]) for r in rows] == [(64, 0), (0, 16)]
    first = rows[0]
    assert first["build_number"] == 20261001 and first["model_size"] == 14689280
    assert first["avg_ts"] == pytest.approx(1277.561097) and first["build_commit"] == "0c1e570"


def test_two_builds_appended_load_as_one_table_with_the_union_of_columns() -> None:
    rows = read_rows(NEW + OLD)
    assert [r["build_commit"] for r in rows] == ["0c1e570", "0c1e570", "4227c9b"]
    assert "use_mmap" not in rows[0] and rows[2]["use_mmap"] == 1
    assert "n_cpu_moe" not in rows[2]  # a column the old build never printed stays absent


def test_the_older_table_name_test_is_read() -> None:
    rows = read_rows(OLD.replace("llama_bench", "test"))
    assert rows[0]["n_gen"] == 16


def test_a_quote_inside_a_value_is_data() -> None:
    rows = read_rows(OLD.replace("/m/tiny-f32.gguf", "/m/it''s; DROP TABLE x;--.gguf"))
    assert rows[0]["model_filename"] == "/m/it's; DROP TABLE x;--.gguf"


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE llama_bench;",
        "ATTACH DATABASE '/tmp/x.db' AS x;",
        "PRAGMA writable_schema = 1;",
        "INSERT INTO other (a) VALUES ('1');",
        "INSERT INTO llama_bench (n_gen) SELECT 1;",
        "INSERT INTO llama_bench (n_gen) VALUES ((SELECT 1));",
        "INSERT INTO llama_bench (n_gen) VALUES (load_extension('x'));",
        "CREATE TABLE IF NOT EXISTS llama_bench (a TEXT) ; DROP TABLE llama_bench;",
        "CREATE TABLE llama_bench (a TEXT DEFAULT (readfile('/etc/passwd')));",
        "CREATE TRIGGER t AFTER INSERT ON llama_bench BEGIN DELETE FROM llama_bench; END;",
    ],
)
def test_anything_but_create_and_insert_into_the_bench_table_is_refused(statement: str) -> None:
    with pytest.raises(ParseError, match="sql"):
        read_rows(NEW + statement + "\n")


def test_an_insert_without_its_table_or_with_too_few_values_is_refused() -> None:
    insert = NEW[NEW.index("INSERT") :]
    with pytest.raises(ParseError, match="before its CREATE TABLE"):
        read_rows(insert)
    with pytest.raises(ParseError, match="columns but"):
        read_rows(NEW.replace("'248.988936');", "'248.988936', '1');"))


def test_bench_migrate_reads_a_sql_file(store: Path, tmp_path: Path) -> None:
    source = tmp_path / "tiny-f32.sql"
    source.write_text(NEW)
    assert main(["--store", str(store), "migrate", str(source), "--machine-id", "rig"]) == 0
    [run_dir] = [p for p in (store / "runs" / "by-machine" / "rig").iterdir() if p.is_dir()]
    record = read_model(run_dir / "record.json", RunRecord)
    assert record.status == "ok" and record.tests == ["pp64", "tg16"]
    assert record.metrics["prefill_tok_per_sec"] == pytest.approx(1277.561097)
    assert record.metrics["decode_tok_per_sec"] == pytest.approx(585.686911)
    assert record.identity is not None
    assert record.identity["model_id"] == "tiny" and record.identity["precision"] == "f32"
    assert record.identity["backend_version"] == "b20261001 (0c1e570)"
    raw = json.loads((run_dir / "raw" / "imported.json").read_text())
    assert len(raw["rows"]) == 2
