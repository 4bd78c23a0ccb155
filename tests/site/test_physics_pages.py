"""The physics check on the site (ARCHITECTURE.md, "How close to the hardware"): a series
whose decode beats its machine's memory bandwidth is marked impossible on every page that
shows its rate, and never ranked fastest."""

from __future__ import annotations

import re
from pathlib import Path

from page_tables import table_rows
from site_factory import entry, write_entries

from benchlab.layout import Store, write_model
from benchlab.machines.bandwidth import declared
from benchlab.models import CpuSpec, HardwareSpec, MachineSpecs, OsSpec
from benchlab.publish.build import expand
from benchlab.publish.data import load_public
from benchlab.publish.site import render_pages

SIZE = 4_000_000_000
"""A 4 GB model: on 100 GB/s the ceiling is 25 t/s, so 90 t/s is impossible."""


def _site(root: Path) -> dict[str, str]:
    llama = {"backend": "llama-bench", "model_size": SIZE, "peak_tok_per_sec": None,
             "baseline_tok_per_sec": None, "speedup": None}  # fmt: skip
    runs = [
        entry(machine, "Llama-7B", "q4_0", day, rate, **llama)
        for machine, rate in (("honest", 12.5), ("fake", 90.0))
        for day in range(3)
    ]
    store = write_entries(root, runs)
    for machine in ("honest", "fake"):
        write_model(
            Store(root).public_specs(machine),
            MachineSpecs(
                machine_id=machine,
                registered_at="2025-01-01T00:00:00Z",
                hardware=HardwareSpec(cpu=CpuSpec(model="x"), mem_bandwidth=declared(100.0)),
                os=OsSpec(name="Linux"),
            ),
        )
    return render_pages(load_public(store)).files


def test_an_impossible_series_is_marked_everywhere_and_never_fastest(tmp_path: Path) -> None:
    files = _site(tmp_path / "experiments" / "benchmark")
    [home] = [
        r
        for r in table_rows(expand(files, "index.md"), "fastest", required=True)
        if r[0] == "Llama-7B"
    ]
    assert home[4] == "honest" and home[5].startswith("12.5")  # fake's 90 t/s never wins

    rows = table_rows(expand(files, "models/llama-7b.md"), "fastest-q4-0", required=True)
    assert [row[0] for row in rows] == ["honest", "fake"]  # ranked after every possible one
    assert rows[1][1] == "90.0 ± 0.0 impossible" and "impossible" not in rows[0][1]

    decode = re.findall(
        r'data-label="Decode tok/s"[^>]*>(.*?)</td>', expand(files, "machines/fake.md")
    )
    assert decode and all(cell.endswith(">impossible</span>") for cell in decode)
    assert "impossible" not in expand(files, "machines/honest.md")

    payloads = {
        p: text for p, text in files.items() if p.startswith("bl/series/s") and p.endswith(".js")
    }
    marked = [text for text in payloads.values() if "is over 1.1 x the 25.0 t/s" in text]
    assert len(payloads) == 2 and len(marked) == 1 and '"text":"fake"' in marked[0]
