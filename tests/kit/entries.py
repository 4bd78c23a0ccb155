"""One catalog entry (v2: with the measurement identity), as `bench catalog build` writes it."""

from __future__ import annotations

from typing import Any

from benchlab.identity import IDENTITY_FIELDS, precision_family, series_id


def make_entry(run_id: str, machine_id: str, timestamp: str, **fields: Any) -> dict[str, Any]:
    """A v2 catalog entry dict: a SmolLM2-135M q8 reference batch run unless `fields` say
    otherwise. Every identity field is present (None where not given), and
    `precision_family` and `series` are derived from the public values as
    `catalog.extract` derives them, so a query test groups runs exactly as the catalog would.
    """
    entry: dict[str, Any] = dict.fromkeys(IDENTITY_FIELDS)
    entry.update(
        run_id=run_id,
        machine_id=machine_id,
        timestamp=timestamp,
        model="SmolLM2-135M",
        model_id="smollm2-135m",
        precision="q8",
        tags=["kernel", "batch"],
        backend="reference",
        backend_version="benchlab 0.1.0",
        mode="batch",
        threads=4,
        prompt_tokens=32,
        gen_tokens=16,
        batch_sizes=[1, 64],
        tests=["pp32", "tg16"],
        attempt=1,
        attempts=3,
        path=f"runs/by-machine/{machine_id}/{run_id}/",
    )
    entry.update(fields)
    entry["precision_family"] = precision_family(str(entry["precision"]))
    entry["series"] = series_id(entry)
    return entry
