"""`bench show`: from the run dir, degrading to the catalog entry when the dir is absent."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.cli import run_cli
from tests.kit.runs import write_run

from benchlab.catalog.read import load_catalog
from benchlab.query.show import ABSENT_NOTE, UNCATALOGUED_NOTE, show_run

from .conftest import LAPTOP_Q8, MAC_Q8


def test_show_reads_the_run_dir(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", LAPTOP_Q8)
    assert (code, err) == (0, "")
    assert out == textwrap.dedent(
        f"""\
        field                 value
        --------------------  ----------------------------------------------------------------------------------------------
        run_id                {LAPTOP_Q8}
        source                run_dir
        machine_id            anthony-laptop
        timestamp             2025-01-06T12:00:00Z
        status                ok
        warnings              attempt 1 failed: transport: ssh dropped
        attempt               2 of 3
        model                 SmolLM2-135M
        model_source          HuggingFaceTB/SmolLM2-135M
        precision             q8
        quantization          Q8_0
        backend               reference
        mode                  batch
        tags                  kernel, batch
        git                   9a0135c master
        harness               benchlab 0.1.0
        engine                reference Q8_0
        decode_tok_per_sec    128.2
        baseline_tok_per_sec  70.6
        peak_tok_per_sec      862.2
        peak_batch            64
        speedup               12.21
        duration_s            42.5
        path                  runs/by-machine/anthony-laptop/{LAPTOP_Q8}/

        batch curve
        batch  per-user ms/tok  agg tok/s  speedup
        -----  ---------------  ---------  -------
            1            14.16      70.60    1.00x
           64            74.23     862.20   12.21x

        prefill
        tokens  median ms    tok/s
        ------  ---------  -------
            16       8.20  1951.20
            64      28.50  2245.60
        """  # noqa: E501
    )


def test_show_json_carries_every_document(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "show", LAPTOP_Q8, "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert data["source"] == "run_dir" and data["note"] is None and data["missing"] == []
    assert data["manifest"]["git"]["rev"] == "9a0135c"
    assert data["batch"]["peak"]["agg_tok_per_sec"] == 862.2
    assert data["kernel"]["benchmark"]["decode"]["tok_per_sec"] == 128.2
    assert data["record"]["attempt"] == 2
    assert data["entry"]["run_id"] == LAPTOP_Q8


def test_show_markdown_has_a_section_per_table(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "show", LAPTOP_Q8, "--format", "markdown")
    assert code == 0
    assert out.startswith("| field | value |\n|---|---|\n| run_id | ")
    assert "\n\n### batch curve\n\n| batch | per-user ms/tok | agg tok/s | speedup |\n" in out
    assert "| 64 | 28.50 | 2245.60 |" in out


def test_show_degrades_to_the_catalog_entry_and_says_so(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "show", MAC_Q8)
    assert code == 0
    assert err == "bench: note: run dir absent on this clone; showing the catalog entry\n"
    assert out.splitlines()[2:5] == [
        f"run_id                {MAC_Q8}",
        "source                catalog",
        "machine_id            mac-m3pro",
    ]
    assert "peak_tok_per_sec      640.5" in out
    code, out, err = run_cli(capsys, "show", MAC_Q8, "--format", "json")
    data = json.loads(out)
    assert data["source"] == "catalog"
    assert data["note"] == ABSENT_NOTE
    assert data["manifest"] is None and data["entry"]["peak_tok_per_sec"] == 640.5
    assert "run dir absent" in err


def test_show_finds_a_promoted_public_dir(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private = golden / "runs" / "by-machine" / "anthony-laptop" / LAPTOP_Q8
    public = golden / "runs" / "public" / "anthony-laptop" / LAPTOP_Q8
    public.parent.mkdir(parents=True)
    shutil.move(private, public)
    details = show_run(golden, LAPTOP_Q8)
    assert details.source == "run_dir"
    assert details.path == f"runs/public/anthony-laptop/{LAPTOP_Q8}/"


def test_show_a_run_not_yet_in_the_catalog(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250301T000000Z"
    write_run(golden, run_id, record=False)
    (golden / "runs" / "by-machine" / "anthony-laptop" / run_id / "batch.json").unlink()
    code, out, err = run_cli(capsys, "show", run_id)
    assert code == 0
    assert err == f"bench: note: {UNCATALOGUED_NOTE}; run dir lacks batch.json\n"
    assert re.search(r"^status +ok \(no record\.json\)$", out, re.MULTILINE)
    assert "batch curve" not in out


def test_show_without_catalog_still_reads_a_run_dir(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (golden / "catalog.json").unlink()
    assert show_run(golden, LAPTOP_Q8).source == "run_dir"
    code, _, err = run_cli(capsys, "show", MAC_Q8)
    assert code == 2
    assert err.endswith("catalog.json: file not found; run `bench catalog build` first\n")


def test_show_never_follows_a_path_out_of_the_store(
    golden: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outside = write_run(tmp_path / "elsewhere", LAPTOP_Q8)
    shutil.rmtree(golden / "runs")
    runs = load_catalog(golden / "catalog.json").runs
    for entry in runs:
        if entry["run_id"] == LAPTOP_Q8:
            entry["path"] = str(Path("..") / ".." / ".." / outside.relative_to(tmp_path))
    write_v3_catalog(golden, runs)
    details = show_run(golden, LAPTOP_Q8)
    assert details.source == "catalog"


def test_show_malformed_run_file_names_file_and_field(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = golden / "runs" / "by-machine" / "anthony-laptop" / LAPTOP_Q8 / "batch.json"
    data = json.loads(batch.read_text())
    data["points"][1]["agg_tok_per_sec"] = "fast"
    batch.write_text(json.dumps(data))
    code, out, err = run_cli(capsys, "show", LAPTOP_Q8)
    assert (code, out) == (2, "")
    assert err.startswith(f"bench: error: {batch}: $.points[1].agg_tok_per_sec: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("run_id", ["../etc", "a/b", "/abs", "x\x1b[31m"])
def test_show_refuses_unsafe_ids(
    golden: Path, capsys: pytest.CaptureFixture[str], run_id: str
) -> None:
    code, out, err = run_cli(capsys, "show", run_id)
    assert (code, out) == (2, "")
    assert err.startswith("bench: error: unsafe run id")


def test_show_unknown_run_id(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", "nope")
    assert (code, out) == (1, "")  # no match: exit 1, as every query verb
    assert err == f"bench: error: {golden / 'catalog.json'}: no run 'nope' in the catalog\n"


def test_show_rounds_each_figure_to_what_its_noise_supports(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.site.site_factory import entry

    run = entry(
        "pi5", "SmolLM2-135M", "q8", 0, 21.836123456, decode_stddev=0.087341,
        prefill_tok_per_sec=218.36123456, baseline_tok_per_sec=123456.789,
    )  # fmt: skip
    write_v3_catalog(store, [run])
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    code, out, _ = run_cli(capsys, "show", run.run_id)
    facts = dict(line.split(None, 1) for line in out.splitlines()[2:] if line.strip())
    assert code == 0
    assert facts["decode_tok_per_sec"] == "21.8361"  # the ± 0.0873: 3 figures of it
    assert facts["decode_stddev"] == "0.0873"
    assert facts["prefill_tok_per_sec"] == "218.4"  # no spread: 4 significant figures
    assert facts["baseline_tok_per_sec"] == "123457"  # never e-notation
