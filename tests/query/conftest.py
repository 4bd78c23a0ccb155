"""Small golden stores.

`golden`: seven catalog entries on three machines, one run dir on disk (the reference
backend, with the v2 identity fields a build writes: threads, shape, tests, attempts,
backend_version, series).

`golden_builds`: llama-bench runs of one model on two machines at two thread counts and
three llama.cpp builds, plus the default local sweep's situation (two reference runs equal
but for threads): what `table`, `best --by series` and `compare --by build` must tell apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.entries import make_entry
from tests.kit.runs import write_run

from benchlab.models import CatalogEntry

LAPTOP_Q8 = "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z"
LAPTOP_Q8_LATER = "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250107T090000Z"
MAC_Q8 = "mac-m3pro-smollm2-135m-q8-batch-a1b2c3d4-20250105T103000Z"
PI5_Q8_FAILED = "pi5-smollm2-135m-q8-batch-a1b2c3d4-20250107T150000Z"
PI5_Q4 = "pi5-smollm2-135m-q4-batch-0badcafe-20250108T080000Z"
MAC_QWEN = "mac-m3pro-qwen3-1.7b-bf16-batch-12345678-20250108T200000Z"
LAPTOP_QWEN = "anthony-laptop-qwen3-1.7b-q8-batch-12345678-20250109T100000Z"


def _entry(run_id: str, machine: str, timestamp: str, **fields: object) -> CatalogEntry:
    return CatalogEntry.model_validate(make_entry(run_id, machine, timestamp, **fields))


def golden_entries() -> list[CatalogEntry]:
    return [
        _entry(
            LAPTOP_Q8,
            "anthony-laptop",
            "2025-01-06T12:00:00Z",
            attempt=2,  # as its record says: the first attempt's ssh dropped
            peak_tok_per_sec=862.2,
            baseline_tok_per_sec=70.6,
            speedup=12.21,
            prefill_tok_per_sec=2245.6,
            decode_tok_per_sec=128.2,
        ),
        _entry(
            LAPTOP_Q8_LATER,
            "anthony-laptop",
            "2025-01-07T09:00:00Z",
            peak_tok_per_sec=850.0,
            baseline_tok_per_sec=71.0,
            speedup=11.97,
            prefill_tok_per_sec=2200.0,
            decode_tok_per_sec=127.5,
        ),
        _entry(
            MAC_Q8,
            "mac-m3pro",
            "2025-01-05T10:30:00Z",
            tags=["kernel", "batch", "smoke"],
            threads=8,
            peak_tok_per_sec=640.5,
            baseline_tok_per_sec=80.1,
            speedup=8.0,
            prefill_tok_per_sec=1800.0,
            decode_tok_per_sec=150.3,
        ),
        _entry(
            PI5_Q8_FAILED,
            "pi5",
            "2025-01-07T15:00:00Z",
            status="failed",
            failure_kind="transport",
            attempt=3,
            tests=[],
        ),
        # No model_id: found by the slug of its display name.
        _entry(
            PI5_Q4,
            "pi5",
            "2025-01-08T08:00:00Z",
            model_id=None,
            precision="q4",
            threads=None,  # an old run that did not say
            peak_tok_per_sec=95.5,
            baseline_tok_per_sec=12.5,
            speedup=7.64,
            decode_tok_per_sec=14.25,
        ),
        _entry(
            MAC_QWEN,
            "mac-m3pro",
            "2025-01-08T20:00:00Z",
            model="Qwen3-1.7B",
            model_id="qwen3-1.7b",
            precision="bf16",
            peak_tok_per_sec=300.0,
            baseline_tok_per_sec=30.0,
            speedup=10.0,
            decode_tok_per_sec=33.0,
        ),
        _entry(
            LAPTOP_QWEN,
            "anthony-laptop",
            "2025-01-09T10:00:00Z",
            model="Qwen3-1.7B",
            model_id="qwen3-1.7b",
            peak_tok_per_sec=410.0,
            baseline_tok_per_sec=41.0,
            speedup=10.0,
            decode_tok_per_sec=45.0,
        ),
    ]


# --- golden_builds ------------------------------------------------------------------------

PI5_T4_B4400 = "pi5-llama-3.2-1b-q4_k_m-kernel-4400aaaa-20250120T080000Z"
PI5_T2_B4500 = "pi5-llama-3.2-1b-q4_k_m-kernel-4500aaaa-20250201T080000Z"
PI5_T4_B4500 = "pi5-llama-3.2-1b-q4_k_m-kernel-4500bbbb-20250201T090000Z"
PI5_T2_B4600 = "pi5-llama-3.2-1b-q4_k_m-kernel-4600aaaa-20250210T080000Z"
PI5_T4_B4600 = "pi5-llama-3.2-1b-q4_k_m-kernel-4600bbbb-20250210T090000Z"
PI5_T4_B4600_AGAIN = "pi5-llama-3.2-1b-q4_k_m-kernel-4600bbbb-20250211T090000Z"
PI5_T2_B4600_FAILED = "pi5-llama-3.2-1b-q4_k_m-kernel-4600aaaa-20250212T080000Z"
MAC_T8_B4600 = "mac-m3pro-llama-3.2-1b-q4_0-kernel-4600cccc-20250210T100000Z"
MAC_T4_B4600 = "mac-m3pro-llama-3.2-1b-q4_k_m-kernel-4600dddd-20250210T110000Z"
LOCAL_T1 = "local-smollm2-135m-f32-batch-6e8547bf-20261201T034102Z"
LOCAL_T2 = "local-smollm2-135m-f32-batch-055bf275-20261201T034102Z"

_BUILDS = {4400: "0a1b2c3d", 4500: "1a2b3c4d", 4600: "5e6f7a8b"}


def _llama(
    run_id: str,
    machine: str,
    timestamp: str,
    *,
    build: int,
    threads: int,
    prefill: float | None,
    decode: float | None,
    precision: str = "q4_k_m",
    **fields: object,
) -> CatalogEntry:
    commit = _BUILDS[build]
    return _entry(
        run_id,
        machine,
        timestamp,
        model="Llama-3.2-1B",
        model_id="llama-3.2-1b",
        precision=precision,
        tags=["kernel"],
        backend="llama-bench",
        backend_version=f"b{build} ({commit})",
        backend_build=build,
        backend_commit=commit,
        mode="kernel",
        threads=threads,
        prompt_tokens=512,
        gen_tokens=128,
        batch_sizes=None,
        tests=["pp512", "tg128"],
        prefill_tok_per_sec=prefill,
        decode_tok_per_sec=decode,
        **fields,
    )


def builds_entries() -> list[CatalogEntry]:
    pi5 = "pi5"
    return [
        _llama(PI5_T4_B4400, pi5, "2025-01-20T08:00:00Z", build=4400, threads=4,
               prefill=30.0, decode=7.0),
        _llama(PI5_T2_B4500, pi5, "2025-02-01T08:00:00Z", build=4500, threads=2,
               prefill=20.0, decode=5.0),
        _llama(PI5_T4_B4500, pi5, "2025-02-01T09:00:00Z", build=4500, threads=4,
               prefill=36.0, decode=8.0),
        _llama(PI5_T2_B4600, pi5, "2025-02-10T08:00:00Z", build=4600, threads=2,
               prefill=22.0, decode=5.5, attempt=2),
        _llama(PI5_T4_B4600, pi5, "2025-02-10T09:00:00Z", build=4600, threads=4,
               prefill=40.0, decode=7.2),
        # A repeat: compare takes each side's latest run, this one.
        _llama(PI5_T4_B4600_AGAIN, pi5, "2025-02-11T09:00:00Z", build=4600, threads=4,
               prefill=41.0, decode=7.6),
        _llama(PI5_T2_B4600_FAILED, pi5, "2025-02-12T08:00:00Z", build=4600, threads=2,
               prefill=None, decode=None, status="failed", failure_kind="measurement",
               attempt=1, attempts=1),
        # Only under b4600: not compared by build, and said so; by machine, mac t4 pairs
        # with pi5 t4.
        _llama(MAC_T8_B4600, "mac-m3pro", "2025-02-10T10:00:00Z", build=4600, threads=8,
               prefill=310.0, decode=60.0, precision="q4_0"),
        _llama(MAC_T4_B4600, "mac-m3pro", "2025-02-10T11:00:00Z", build=4600, threads=4,
               prefill=150.0, decode=30.0),
        # The default local sweep: equal but for threads.
        _entry(LOCAL_T1, "local", "2026-12-01T03:41:15Z", precision="f32", threads=1,
               peak_tok_per_sec=32.97, baseline_tok_per_sec=17.59, speedup=1.87,
               prefill_tok_per_sec=410.2, decode_tok_per_sec=18.07, batch_sizes=[1, 2, 4]),
        _entry(LOCAL_T2, "local", "2026-12-01T03:41:40Z", precision="f32", threads=2,
               peak_tok_per_sec=51.3, baseline_tok_per_sec=27.1, speedup=1.89,
               prefill_tok_per_sec=702.9, decode_tok_per_sec=28.31, batch_sizes=[1, 2, 4]),
    ]  # fmt: skip


def write_catalog(root: Path, entries: list[CatalogEntry]) -> Path:
    """The golden entries as a sharded v3 catalog, the one format every reader takes."""
    return write_v3_catalog(root, entries)


LAPTOP_Q8_RECORD: dict[str, Any] = {
    "attempt": 2,
    "attempts": 3,
    "warnings": ["attempt 1 failed: transport: ssh dropped"],
    "duration_s": 42.5,
}
"""What LAPTOP_Q8's record says: its first attempt's ssh dropped (the catalog entry agrees)."""


@pytest.fixture
def golden(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The golden store, pointed to by $BENCHLAB_STORE; only LAPTOP_Q8 has a run dir."""
    write_catalog(store, golden_entries())
    write_run(store, LAPTOP_Q8, **LAPTOP_Q8_RECORD)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


@pytest.fixture
def golden_builds(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The builds store, pointed to by $BENCHLAB_STORE; no run dirs."""
    write_catalog(store, builds_entries())
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store
