"""Measurement identity in the verbs: runs that differ in threads, shape or build are told
apart by `list`, `table`, `best` and `compare --by build`, and the CLI traps (a short
`--limit`, a mistyped model, a long run id) have a way out."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest
from tests.kit.cli import run_cli
from tests.kit.runs import write_run

from benchlab.catalog.read import LoadedCatalog, load_catalog
from benchlab.errors import QueryError
from benchlab.query import render
from benchlab.query.compare import axis_values, compare_axis
from benchlab.query.filters import Filters, select
from benchlab.query.verbs import best_runs, machine_table

from .conftest import (
    LAPTOP_Q8,
    LOCAL_T1,
    LOCAL_T2,
    MAC_T4_B4600,
    MAC_T8_B4600,
    PI5_T2_B4500,
    PI5_T2_B4600,
    PI5_T2_B4600_FAILED,
    PI5_T4_B4400,
    PI5_T4_B4500,
    PI5_T4_B4600,
    PI5_T4_B4600_AGAIN,
)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.fixture
def builds(golden_builds: Path) -> LoadedCatalog:
    return load_catalog(golden_builds / "catalog.json")


def ids(rows: list[dict[str, object]]) -> list[str]:
    return [str(r["run_id"]) for r in rows]


# --- the default sweep's t1 and t2 are two measurements -----------------------------------


def test_t1_and_t2_are_distinct_in_list_json_and_table(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "list", "--model", "smollm2-135m", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and ids(rows) == [LOCAL_T1, LOCAL_T2]
    assert [r["threads"] for r in rows] == [1, 2]
    assert rows[0]["series"] != rows[1]["series"]
    assert all(r["series"] and r["series"].startswith("s") for r in rows)
    code, out, _ = run_cli(capsys, "table", "--model", "smollm2-135m", "--format", "json")
    assert code == 0 and ids(json.loads(out)) == [LOCAL_T2, LOCAL_T1]


def test_table_one_row_per_series_exact(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No batch peak on llama-bench kernel runs: ranked by decode tok/s. pi5 t4's best run is
    # b4500's (8.00 tok/s), though b4600 ran later.
    code, out, err = run_cli(capsys, "table", "--ever", "--model", "llama-3.2-1b")
    assert (code, err) == (0, "")
    assert out == dedent(
        """
        machine    precision  backend      threads  shape      version           peak tok/s  baseline tok/s  speedup  prefill tok/s  decode tok/s  run id
        ---------  ---------  -----------  -------  ---------  ----------------  ----------  --------------  -------  -------------  ------------  --------------------------------------------------------------
        mac-m3pro  q4_0       llama-bench        8  p512/n128  b4600 (5e6f7a8b)           -               -        -         310.00         60.00  mac-m3pro-llama-3.2-1b-q4_0-kernel-4600cccc-20250210T100000Z
        mac-m3pro  q4_k_m     llama-bench        4  p512/n128  b4600 (5e6f7a8b)           -               -        -         150.00         30.00  mac-m3pro-llama-3.2-1b-q4_k_m-kernel-4600dddd-20250210T110000Z
        pi5        q4_k_m     llama-bench        4  p512/n128  b4500 (1a2b3c4d)           -               -        -          36.00          8.00  pi5-llama-3.2-1b-q4_k_m-kernel-4500bbbb-20250201T090000Z
        pi5        q4_k_m     llama-bench        2  p512/n128  b4600 (5e6f7a8b)           -               -        -          22.00          5.50  pi5-llama-3.2-1b-q4_k_m-kernel-4600aaaa-20250210T080000Z
        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used.
        """  # noqa: E501
    )


def test_table_without_model_has_a_model_column(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "table", "--ever", "--threads", "2", "--format", "markdown")
    assert code == 0
    assert out == dedent(
        """
        | model | machine | precision | backend | threads | shape | version | peak tok/s | baseline tok/s | speedup | prefill tok/s | decode tok/s | MBU % | MFU % | run id |
        |---|---|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|
        | Llama-3.2-1B | pi5 | q4_k_m | llama-bench | 2 | p512/n128 | b4600 (5e6f7a8b) | - | - | - | 22.00 | 5.50 | - | - | pi5-llama-3.2-1b-q4_k_m-kernel-4600aaaa-20250210T080000Z |
        | SmolLM2-135M | local | f32 | reference | 2 | p32/n16 | benchlab 0.1.0 | 51.30 | 27.10 | 1.89x | 702.90 | 28.31 | not measured | not measured | local-smollm2-135m-f32-batch-055bf275-20261201T034102Z |

        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used. MBU %: decode t/s x bytes per token over the machine's memory bandwidth (bench machines); not measured: the machine has no bandwidth figure; physics: impossible where decode beats that bandwidth by over 10%. MFU %: prefill t/s x 2 x parameters over the processor's peak FLOP/s (bench machines: a GPU's dense FP16 spec figure, a CPU's measured float32 GEMM rate); not measured: no peak figure for the processor it ran on; physics: also impossible where prefill beats that peak by over 10%.
        """  # noqa: E501
    )


def test_list_shows_threads_shape_and_attempts(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "list", "--threads", "2", "--status", "ok")
    assert code == 0
    assert out == dedent(
        """
        timestamp             run id                                                    machine  model         precision  threads  shape      attempt  status  peak tok/s
        --------------------  --------------------------------------------------------  -------  ------------  ---------  -------  ---------  -------  ------  ----------
        2025-02-01T08:00:00Z  pi5-llama-3.2-1b-q4_k_m-kernel-4500aaaa-20250201T080000Z  pi5      Llama-3.2-1B  q4_k_m           2  p512/n128  1/3      ok               -
        2025-02-10T08:00:00Z  pi5-llama-3.2-1b-q4_k_m-kernel-4600aaaa-20250210T080000Z  pi5      Llama-3.2-1B  q4_k_m           2  p512/n128  2/3      ok               -
        2026-12-01T03:41:40Z  local-smollm2-135m-f32-batch-055bf275-20261201T034102Z    local    SmolLM2-135M  f32              2  p32/n16    1/3      ok           51.30
        """  # noqa: E501
    )


def test_shape_falls_back_to_the_tests() -> None:
    from benchlab.cli.query import display_rows

    row = {"run_id": "r", "tests": ["pp512", "tg128"], "attempt": 1, "attempts": 1}
    assert display_rows([row], "table")[0]["shape"] == "pp512, tg128"
    assert display_rows([row], "table")[0]["attempt"] == "1/1"
    assert display_rows([row], "json") == [row]


# --- best ---------------------------------------------------------------------------------


def test_best_by_machine_says_which_measurement_won(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        capsys, "best", "--ever", "--model", "llama-3.2-1b", "--by", "machine", "--metric",
        "decode_tok_per_sec",
    )  # fmt: skip
    assert code == 0
    assert out == dedent(
        """
        machine    model         precision  backend      threads  shape      version           decode_tok_per_sec  timestamp             run id
        ---------  ------------  ---------  -----------  -------  ---------  ----------------  ------------------  --------------------  ------------------------------------------------------------
        mac-m3pro  Llama-3.2-1B  q4_0       llama-bench        8  p512/n128  b4600 (5e6f7a8b)               60.00  2025-02-10T10:00:00Z  mac-m3pro-llama-3.2-1b-q4_0-kernel-4600cccc-20250210T100000Z
        pi5        Llama-3.2-1B  q4_k_m     llama-bench        4  p512/n128  b4500 (1a2b3c4d)                8.00  2025-02-01T09:00:00Z  pi5-llama-3.2-1b-q4_k_m-kernel-4500bbbb-20250201T090000Z
        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used.
        """  # noqa: E501
    )


def test_best_by_series(golden_builds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "best", "--ever", "--model", "smollm2-135m", "--by", "series")
    assert code == 0
    assert out == dedent(
        """
        series         machine  model         precision  backend    threads  shape    version         peak_tok_per_sec  timestamp             run id
        -------------  -------  ------------  ---------  ---------  -------  -------  --------------  ----------------  --------------------  ------------------------------------------------------
        s5fb149ae0359  local    SmolLM2-135M  f32        reference        2  p32/n16  benchlab 0.1.0             51.30  2026-12-01T03:41:40Z  local-smollm2-135m-f32-batch-055bf275-20261201T034102Z
        sf04ee9c55d32  local    SmolLM2-135M  f32        reference        1  p32/n16  benchlab 0.1.0             32.97  2026-12-01T03:41:15Z  local-smollm2-135m-f32-batch-6e8547bf-20261201T034102Z
        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used.
        """  # noqa: E501
    )


def test_best_by_series_as_functions(builds: LoadedCatalog) -> None:
    rows = best_runs(
        builds,
        Filters(model="llama-3.2-1b", status="ok"),
        "decode_tok_per_sec",
        "series",
        ever=True,
    )
    assert ids(rows) == [MAC_T8_B4600, MAC_T4_B4600, PI5_T4_B4500, PI5_T2_B4600]
    with pytest.raises(QueryError, match="--by: expected one of machine, model, series"):
        best_runs(builds, Filters(), by="precision")


# --- filters ------------------------------------------------------------------------------


def test_precision_family_and_exact_type(builds: LoadedCatalog) -> None:
    family = ids(select(builds.runs, Filters(precision="q4")))
    assert MAC_T8_B4600 in family and PI5_T2_B4500 in family  # q4_0 and q4_k_m
    assert ids(select(builds.runs, Filters(precision="Q4_0"))) == [MAC_T8_B4600]
    assert MAC_T8_B4600 not in ids(select(builds.runs, Filters(precision="q4_k_m")))
    assert select(builds.runs, Filters(precision="q4_k")) == []  # exact: no such type


def test_threads_backend_build_series(builds: LoadedCatalog) -> None:
    def found(**kw: object) -> set[str]:
        return set(ids(select(builds.runs, Filters(**kw))))  # type: ignore[arg-type]

    assert found(threads=1) == {LOCAL_T1}
    assert found(backend="Reference") == {LOCAL_T1, LOCAL_T2}
    b4500 = {PI5_T2_B4500, PI5_T4_B4500}
    assert found(build="b4500 (1a2b3c4d)") == b4500  # the version string
    assert found(build="4500") == b4500  # the build number
    assert found(build="B4500") == b4500
    assert found(build="1a2b") == b4500  # a commit prefix
    assert found(build="1a2") == set()  # too short to be a commit
    assert found(build="benchlab 0.1.0") == {LOCAL_T1, LOCAL_T2}
    series = builds.find(PI5_T4_B4400)["series"]  # type: ignore[index]
    assert (
        found(series=series)
        == found(series=series[:6])
        == {
            PI5_T4_B4400,
            PI5_T4_B4500,
            PI5_T4_B4600,
            PI5_T4_B4600_AGAIN,
        }
    )


def test_identity_flags_in_describe() -> None:
    filters = Filters(threads=4, backend="llama-bench", build="b4500", series="s1")
    assert filters.describe() == "--threads 4 --backend llama-bench --build b4500 --series s1"


# --- compare --by -------------------------------------------------------------------------


def test_compare_by_build_exact(golden_builds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Defaults: the two newest builds that share a measurement. pi5 t4 under b4600 ran twice:
    # its mean (40.5 / 7.4) is compared, with the 95% interval of the two repeats.
    code, out, err = run_cli(capsys, "compare", "--by", "build", "--model", "llama-3.2-1b")
    assert code == 0
    assert out == dedent(
        """
        build: A = b4500 (1a2b3c4d), B = b4600 (5e6f7a8b)
        model         machine  precision  threads  shape      test   t/s b4500 (1a2b3c4d)  ±95%  t/s b4600 (5e6f7a8b)  ±95%  speedup  mark
        ------------  -------  ---------  -------  ---------  -----  --------------------  ----  --------------------  ----  -------  ----
        Llama-3.2-1B  pi5      q4_k_m           2  p512/n128  pp512                 20.00     -                 22.00     -    1.10x  ?
        Llama-3.2-1B  pi5      q4_k_m           2  p512/n128  tg128                  5.00     -                  5.50     -    1.10x  ?
        Llama-3.2-1B  pi5      q4_k_m           4  p512/n128  pp512                 36.00     -                 40.50  6.35    1.12x  ~
        Llama-3.2-1B  pi5      q4_k_m           4  p512/n128  tg128                  8.00     -                  7.40  2.54    0.93x  ~
        """  # noqa: E501
    )
    assert err == "bench: note: measurements not compared: 2 only under b4600 (5e6f7a8b)\n"


def test_compare_by_build_named_values_markdown(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        capsys, "compare", "--by", "build", "--a", "4400", "--b", "5e6f", "--format", "markdown"
    )
    assert code == 0
    assert out == dedent(
        """
        ### build: A = b4400 (0a1b2c3d), B = b4600 (5e6f7a8b)

        | model | machine | precision | threads | shape | test | t/s b4400 (0a1b2c3d) | ±95% | t/s b4600 (5e6f7a8b) | ±95% | speedup | mark |
        |---|---|---|---:|---|---|---:|---:|---:|---:|---:|---|
        | Llama-3.2-1B | pi5 | q4_k_m | 4 | p512/n128 | pp512 | 30.00 | - | 40.50 | 6.35 | 1.35x | + |
        | Llama-3.2-1B | pi5 | q4_k_m | 4 | p512/n128 | tg128 | 7.00 | - | 7.40 | 2.54 | 1.06x | ~ |
        """  # noqa: E501
    )


def test_compare_by_build_json_names_the_runs(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "compare", "--by", "build", "--threads", "4", "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert (data["axis"], data["a"], data["b"]) == ("build", "b4500 (1a2b3c4d)", "b4600 (5e6f7a8b)")
    assert data["values"] == [
        "b4400 (0a1b2c3d)",
        "b4500 (1a2b3c4d)",
        "b4600 (5e6f7a8b)",
    ]
    tg = next(r for r in data["rows"] if r["test"] == "tg128")
    assert (tg["run_a"], tg["run_b"]) == (PI5_T4_B4500, PI5_T4_B4600_AGAIN)
    # b4600 was measured twice: the mean of its repeats, with their spread and interval.
    assert tg["stats_b"]["n"] == 2 and tg["b"] == pytest.approx((7.2 + 7.6) / 2)
    assert tg["stats_b"]["ci95"] == pytest.approx([7.4 - 2.5412, 7.4 + 2.5412])
    assert tg["speedup"] == pytest.approx(7.4 / 8.0)
    assert (data["only_a"], data["only_b"]) == (0, 1)


def test_compare_by_machine(golden_builds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "compare", "--by", "machine", "--a", "pi5", "--b", "mac-m3pro", "--format", "csv"
    )
    assert code == 0
    header, *rows = [line.split(",") for line in out.splitlines()]
    assert header == "model,precision,threads,shape,test,a,pm_a,b,pm_b,speedup,mark".split(",")
    expected = [("pp512", 40.5, 12.706 * 0.5, 150.0), ("tg128", 7.4, 12.706 * 0.2, 30.0)]
    for row, (test, a, pm_a, b) in zip(rows, expected, strict=True):
        assert row[:5] == ["Llama-3.2-1B", "q4_k_m", "4", "p512/n128", test] and row[8] == ""
        values = [float(row[5]), float(row[6]), float(row[7]), float(row[9])]
        assert values == pytest.approx([a, pm_a, b, b / a])
    assert err == (
        "bench: note: measurements not compared: 1 only under pi5; 1 only under mac-m3pro\n"
    )
    code, out, err = run_cli(capsys, "compare", "--by", "machine")
    assert (code, out) == (2, "")
    assert err == (
        "bench: error: compare --by machine: give --a and --b "
        "(machines present: local, mac-m3pro, pi5)\n"
    )


def test_compare_by_reference_rows_include_the_batch_peak() -> None:
    runs = [
        {
            "run_id": f"r{i}",
            "machine_id": "m",
            "timestamp": f"2025-01-0{i}T00:00:00Z",
            "model": "M",
            "precision": "f32",
            "backend": "reference",
            "revision": revision,
            "batch_sizes": [1, 2, 4],
            "tests": ["pp32", "tg16"],
            "peak_tok_per_sec": peak,
            "decode_tok_per_sec": 10.0,
        }
        for i, (revision, peak) in enumerate((("v1", 30.0), ("v2", 33.0)), start=1)
    ]
    result = compare_axis(LoadedCatalog(Path("c.json"), runs), Filters(), "revision")
    assert (result.a, result.b) == ("v1", "v2")
    assert [(r["test"], r["a"], r["b"]) for r in result.rows] == [
        ("tg16", 10.0, 10.0),
        ("batch peak b4", 30.0, 33.0),
    ]


def test_compare_by_errors(golden_builds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def error(*argv: str) -> str:
        code, out, err = run_cli(capsys, "compare", *argv)
        assert (code, out) == (2, "")
        return err

    assert error("--by", "revision") == (
        "bench: error: compare --by revision: need two revision values to compare, "
        "found 0 (none) among runs matching --status ok\n"
    )
    assert error("--by", "build", "--a", "b9999") == (
        "bench: error: --a b9999: no build 'b9999' among the runs; present: "
        "b4400 (0a1b2c3d), b4500 (1a2b3c4d), b4600 (5e6f7a8b), benchlab 0.1.0\n"
    )
    assert error("--by", "build", "--a", "b4600 (5e6f7a8c)") == (
        "bench: error: --a b4600 (5e6f7a8c): no build 'b4600 (5e6f7a8c)' among the runs; "
        "did you mean b4600 (5e6f7a8b)?\n"
    )
    assert error("--by", "build", "--a", "4500", "--b", "1a2b3c") == (
        "bench: error: compare --by build: --a and --b name the same build 'b4500 (1a2b3c4d)'\n"
    )
    assert error("--by", "build", "--run-id", LOCAL_T1) == (
        "bench: error: compare: give either --run-id or --by, not both\n"
    )
    assert error("--run-id", LOCAL_T1, "--run-id", LOCAL_T2, "--a", "x") == (
        "bench: error: compare: --a and --b go with --by build|revision|machine\n"
    )


def test_compare_by_nothing_shared_exits_1(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys, "compare", "--by", "build", "--a", "benchlab 0.1.0", "--b", "b4600"
    )
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        "bench: no measurement was made under both benchlab 0.1.0 and b4600 (5e6f7a8b); "
        "`--match best` pairs each model at each side's best settings"
    )


def test_axis_values_order_by_build_number() -> None:
    runs = [
        {"run_id": "a", "timestamp": "2025-01-01", "backend_build": 4600},
        {"run_id": "b", "timestamp": "2025-01-02", "backend_build": 4500},
    ]
    assert axis_values(runs, "build") == ["b4500", "b4600"]


def test_machine_table_function_is_per_series(builds: LoadedCatalog) -> None:
    rows = machine_table(builds, Filters(model="smollm2-135m"), ever=True)
    assert ids(rows) == [LOCAL_T2, LOCAL_T1]
    failed = machine_table(builds, Filters(status="failed"), ever=True)
    assert ids(failed) == [PI5_T2_B4600_FAILED]


# --- CLI traps ----------------------------------------------------------------------------


def test_list_limit_keeps_the_newest(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "list", "--limit", "3", "--format", "json")
    assert code == 0
    assert [r["timestamp"] for r in json.loads(out)] == [
        "2025-01-08T08:00:00Z",
        "2025-01-08T20:00:00Z",
        "2025-01-09T10:00:00Z",
    ]
    with pytest.raises(SystemExit):
        run_cli(capsys, "list", "--help")
    out = capsys.readouterr().out
    assert "only the newest N runs (still printed oldest first)" in " ".join(out.split())


def test_unknown_model_did_you_mean(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "best", "--model", "smollm2")
    assert (code, out) == (1, "")
    assert err == (
        "bench: no runs match --model smollm2 --status ok (no model 'smollm2' in the catalog; "
        "did you mean smollm2-135m?) (with a peak_tok_per_sec)\n"
    )
    # A known model with no run matching the other filters is not called unknown.
    code, _, err = run_cli(capsys, "table", "--model", "qwen3-1.7b", "--machine", "pi5")
    assert err == "bench: no runs match --model qwen3-1.7b --machine pi5 --status ok\n"


def test_show_and_compare_take_a_unique_prefix(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "show", "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106")
    assert code == 0 and f"run_id                {LAPTOP_Q8}" in out
    code, out, _ = run_cli(
        capsys, "compare", "--run-id", "mac-m3pro-smollm2", "--run-id", "pi5-smollm2-135m-q4",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert [r["precision"] for r in json.loads(out)["runs"]] == ["q8", "q4"]


def test_ambiguous_prefix_is_one_line_with_candidates(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "show", "anthony-laptop")
    assert (code, out) == (2, "")
    assert err == (
        "bench: error: run id prefix 'anthony-laptop' is ambiguous: 3 runs start with it: "
        "anthony-laptop-qwen3-1.7b-q8-batch-12345678-20250109T100000Z, "
        "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z, "
        "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250107T090000Z\n"
    )
    code, _, err = run_cli(capsys, "compare", "--run-id", "pi5", "--run-id", "mac-m3pro-qwen")
    assert code == 2 and err.startswith("bench: error: run id prefix 'pi5' is ambiguous: 2 runs")
    assert err.count("\n") == 1


def test_show_prefix_of_an_uncatalogued_run_dir(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    write_run(store, LAPTOP_Q8)  # no catalog at all
    code, out, err = run_cli(capsys, "show", LAPTOP_Q8[:30], "--format", "json")
    assert code == 0 and json.loads(out)["run_id"] == LAPTOP_Q8
    assert "not in the catalog yet" in err


def test_rich_never_cuts_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    run_id = LAPTOP_Q8
    columns = [
        render.Column("machine", "machine"),
        render.Column("model", "model"),
        render.Column("peak", "peak tok/s", "num"),
        render.Column("run_id", "run id", "id"),
    ]
    row = {"machine": "anthony-laptop", "model": "SmolLM2-135M long name", "peak": 862.2}
    for width in ("200", "60", "20"):
        monkeypatch.setenv("COLUMNS", width)
        stream = Tty()
        render.emit([render.Section(columns, [{**row, "run_id": run_id}])], "table", None, stream)
        out = stream.getvalue()
        assert run_id in out and "…" not in out, width
        assert "862.20" in out


def test_guide_compare_by_build_example_is_real(
    golden_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's `compare --by build` block is this golden catalog's output, verbatim."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "asking-questions.md").read_text()
    command = "$ bench compare --by build --model llama-3.2-1b\n"
    block = readme[readme.index(command) + len(command) :]
    block = block[: block.index("```")]
    code, out, err = run_cli(capsys, "compare", "--by", "build", "--model", "llama-3.2-1b")
    assert code == 0
    assert out + err == block


def test_compare_means_repeats_and_leaves_outliers_out(tmp_path: Path) -> None:
    """Three runs of one measurement under b2, one marked an outlier: B is the mean of the
    other two, with their interval; A (one run) has no interval."""
    from tests.kit.entries import make_entry

    from benchlab.catalog.read import LoadedCatalog
    from benchlab.query.compare import compare_axis
    from benchlab.query.filters import Filters

    def run(n: int, build: str, decode: float, tags: list[str] | None = None) -> dict:
        return make_entry(
            f"m-r{n}",
            "m",
            f"2025-01-0{n}T00:00:00Z",
            backend_version=build,
            decode_tok_per_sec=decode,
            tags=tags or [],
        )

    runs = [
        run(1, "b1", 10.0),
        run(2, "b2", 12.0),
        run(3, "b2", 14.0),
        run(4, "b2", 99.0, ["outlier"]),
    ]
    result = compare_axis(LoadedCatalog(tmp_path / "c.json", runs), Filters(), "build")
    [row] = [r for r in result.rows if r["metric"] == "decode_tok_per_sec"]
    assert (row["a"], row["b"], row["speedup"]) == (10.0, 13.0, 1.3)
    assert row["stats_b"]["n"] == 2 and row["pm_a"] is None
    assert row["pm_b"] == pytest.approx(12.706)  # t(1 df) x stddev sqrt(2) / sqrt(2 runs)
