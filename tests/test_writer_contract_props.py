"""A property of the writer contract (ARCHITECTURE.md, The catalog): hostile values fed
through the writing verbs (a sweep config as `bench run` reads it, `bench inject`,
`bench migrate` of llama-bench JSON and of asv results) are either refused where they enter,
in one line, or written as lines that every reader's gate accepts: no written line is ever
refused by a reader.

Bounded: few examples per verb, a fresh temporary store per example, no network.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.kit.configs import sweep_dict, write_sweep

from benchlab.catalog.contract import spec_problem
from benchlab.catalog.gate import MAX_SHARD_BYTES, gate_lines, read_regular
from benchlab.cli import main
from benchlab.errors import ConfigError
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.expand import device_settings, expand

LLAMA = Path(__file__).parent / "data" / "llama_bench" / "b5163-cuda-2025-04.json"

NUMBERS = st.one_of(
    st.integers(min_value=-(2**54), max_value=2**54),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, 10**26, 0, -1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e300, -1e300, 1e12, 1e12 + 1, 1e20, 5e-324]),
)
TEXTS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["a" * 1025, "x\u202ey", "nul\x00", "tab\tx", "\u3164", "../../etc"]),
)
VALUES = st.one_of(
    NUMBERS,
    TEXTS,
    st.booleans(),
    st.none(),
    st.lists(st.integers(min_value=0, max_value=9), max_size=3).map(lambda xs: xs * 400),
)
FAST = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@contextmanager
def fresh_store() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "repo" / "experiments" / "benchmark"
        store.mkdir(parents=True)
        yield store


def refused_one_line(err: str) -> None:
    assert err.startswith("bench: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


def every_line_accepted(store: Path) -> int:
    """Build the catalog and hold each shard line to the readers' gate; the lines read."""
    main(["--store", str(store), "catalog", "build"])
    total = 0
    for shard in sorted((store / "catalog").rglob("*.jsonl")):
        raw, _ = read_regular(shard, str(shard), MAX_SHARD_BYTES)
        entries, _, problems = gate_lines(raw, str(shard))
        assert problems == []
        total += len(entries)
    assert main(["--store", str(store), "catalog", "validate"]) == 0
    return total


# --- run: the config ----------------------------------------------------------------------


@FAST
@given(value=VALUES, threads=NUMBERS)
def test_a_config_is_refused_or_every_points_line_passes_the_gate(value: Any, threads: Any) -> None:
    data = sweep_dict(matrix={"params": {"v": value}, "threads": threads})
    try:
        config = parse_sweep_config(json.loads(json.dumps(data)), "lab.yaml")
    except ConfigError as exc:
        assert str(exc).startswith("lab.yaml: ") and "\n" not in str(exc)
        return
    for spec in expand(config):
        assert spec_problem(spec, config.revision, device_settings(config, spec.device)) is None


@pytest.mark.parametrize("value", [0.5, 2**53, "fine"])
def test_a_run_of_a_config_the_contract_accepts_writes_lines_every_reader_accepts(
    value: Any, tmp_path: Path
) -> None:
    """The property's accepting side, end to end: a real `bench run` and build."""
    with fresh_store() as store:
        config = write_sweep(tmp_path / "lab.yaml", matrix={"params": {"v": value}})
        assert main(["--store", str(store), "run", str(config), "--quiet"]) == 0
        assert every_line_accepted(store) == 1


# --- inject -------------------------------------------------------------------------------


@FAST
@given(value=VALUES)
def test_inject_refuses_or_queues_points_whose_lines_pass_the_gate(
    value: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fresh_store() as store:
        config = write_sweep(tmp_path / "lab.yaml")
        axis = f"params={json.dumps({'v': value})}"
        capsys.readouterr()
        code = main(["--store", str(store), "inject", str(config), axis])
        err = capsys.readouterr().err
        if code != 0:
            refused_one_line(err)
            return
        from benchlab.models import RunSpec

        (pending,) = store.rglob("pending.jsonl")
        for line in pending.read_text().splitlines():
            spec = RunSpec.model_validate(json.loads(line)["spec"])
            assert spec_problem(spec, None, None) is None


# --- migrate ------------------------------------------------------------------------------

LLAMA_FIELDS = ("avg_ts", "stddev_ts", "n_threads", "n_prompt", "n_gen", "n_batch")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(LLAMA_FIELDS), value=NUMBERS)
def test_a_llama_bench_import_is_refused_or_builds_lines_every_reader_accepts(
    field: str, value: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rows = json.loads(LLAMA.read_text())
    for row in rows:
        row[field] = value
    with fresh_store() as store:
        source = store.parent / "bench.json"
        source.write_text(json.dumps(rows))
        code = main(["--store", str(store), "migrate", str(source), "--machine-id", "box"])
        if code == 0:
            every_line_accepted(store)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=NUMBERS, date=NUMBERS, param=TEXTS)
def test_an_asv_import_is_refused_or_builds_lines_every_reader_accepts(
    value: Any, date: Any, param: str
) -> None:
    with fresh_store() as store:
        root = store.parent / "asv" / "box"
        root.mkdir(parents=True)
        (root / "machine.json").write_text(json.dumps({"machine": "box", "version": 1}))
        result = {
            "commit_hash": "3f4f2691" * 5,
            "date": date,
            "env_name": "py",
            "results": {"bench.time_x": {"result": [value], "params": [[repr(param)]]}},
        }
        (root / "3f4f2691-py.json").write_text(json.dumps(result))
        code = main(["--store", str(store), "migrate", str(root.parent)])
        if code == 0:
            every_line_accepted(store)
