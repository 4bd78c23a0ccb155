"""The physics check on the site (ARCHITECTURE.md, "How close to the hardware"): a series
whose decode beats its machine's memory bandwidth is marked impossible on every page that
shows its rate, and never ranked fastest."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from page_tables import table_rows
from site_factory import entry, write_entries

from benchlab.layout import Store, write_model
from benchlab.machines.bandwidth import declared
from benchlab.models import CpuSpec, GpuSpec, HardwareSpec, MachineSpecs, OsSpec
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


PARAMS = 7_000_000_000
"""A 7 B model: 14 GFLOPs a prompt token; an RTX 4090's spec sheet peak (330.3 TFLOP/s)
allows 23,592.9 t/s of prefill, so 4,000 t/s is 17.0% MFU and 40,000 t/s impossible."""


def _gpu_site(root: Path) -> dict[str, str]:
    """Three machines that offloaded a 7 B model: `gpu` and `fast` on an RTX 4090 (a spec
    sheet figure), `bare` on a GPU the peak table has no figure for; `fast` claims 10x the
    prefill `gpu` measured."""
    llama = {"backend": "llama-bench", "model_size": SIZE, "model_params": PARAMS,
             "gpu_layers": 99, "peak_tok_per_sec": None, "baseline_tok_per_sec": None,
             "speedup": None, "batch_curve": None}  # fmt: skip
    runs = [
        entry(machine, "Llama-7B", "q4_0", day, 100.0, prefill_tok_per_sec=prefill, **llama)
        for machine, prefill in (("gpu", 4000.0), ("bare", 3000.0), ("fast", 40000.0))
        for day in range(3)
    ]
    store = write_entries(root, runs)
    for machine, card in (("gpu", "NVIDIA GeForce RTX 4090"), ("bare", "Intel Arc B580"),
                          ("fast", "NVIDIA GeForce RTX 4090")):  # fmt: skip
        write_model(
            Store(root).public_specs(machine),
            MachineSpecs(
                machine_id=machine,
                registered_at="2025-01-01T00:00:00Z",
                hardware=HardwareSpec(cpu=CpuSpec(model="x"), gpu=[GpuSpec(model=card)]),
                os=OsSpec(name="Linux"),
            ),
        )
    return render_pages(load_public(store)).files


def _series_payloads(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each series page's data (`bl/series/<id>.js`) by its machine."""
    out = {}
    for path, text in files.items():
        if path.startswith("bl/series/s") and path.endswith(".js"):
            payload = json.loads(text[text.index("]=") + 2 : text.rindex("}") + 1])
            out[payload["machine"]["text"]] = payload
    return out


def test_mfu_and_the_impossible_prefill_on_the_pages(tmp_path: Path) -> None:
    files = _gpu_site(tmp_path / "experiments" / "benchmark")
    series = _series_payloads(files)
    assert set(series) == {"gpu", "bare", "fast"}
    mfu = {machine: dict((u[0], u[1:]) for u in data["utilisation"])["MFU"]
           for machine, data in series.items()}  # fmt: skip
    assert mfu["gpu"] == [17.0, "of 330 TFLOP/s (spec: rtx 4090)"]  # 4,000 x 14e9 / 330.3e12
    assert mfu["bare"][0] == "not measured"  # never 0, never blank
    assert mfu["fast"][0] == 169.5
    assert (
        series["gpu"]["impossible_prefill"] is None and series["bare"]["impossible_prefill"] is None
    )
    assert series["fast"]["impossible_prefill"].startswith(
        "prefill 40,000.0 t/s is over 1.1 x the 23,592.9 t/s that 330 TFLOP/s (spec: rtx 4090) "
        "of peak compute allows (MFU 170%)"
    )

    rows = {r[0]: r for r in table_rows(expand(files, "models/llama-7b.md"), "fastest-q4-0",
                                        required=True)}  # fmt: skip
    prefill = [i for i, c in enumerate(rows["fast"]) if c.startswith("40,000.0")]
    assert prefill and rows["fast"][prefill[0]] == "40,000.0 impossible"
    assert "impossible" not in " ".join(rows["gpu"] + rows["bare"])

    fast = expand(files, "machines/fast.md")
    cells = re.findall(r'data-label="Prefill tok/s"[^>]*>(.*?)</td>', fast)
    assert cells and all(cell.endswith(">impossible</span>") for cell in cells)
    status = re.findall(r'data-label="Status"[^>]*>(.*?)</td>', fast)
    assert status and all(">impossible prefill</span>" in cell for cell in status)
    for honest in ("machines/gpu.md", "machines/bare.md"):
        assert "impossible" not in expand(files, honest)


def test_the_compute_roofline_draws_each_judged_prefill_under_its_peak(tmp_path: Path) -> None:
    """The prefill roofline beside the decode one: a point per series whose machine has a
    peak figure, at its MFU; a machine without one draws no compute roofline at all."""
    files = _gpu_site(tmp_path / "experiments" / "benchmark")
    model = next(path for path in files if path.startswith("bl/charts/") and
                 path.endswith("roofline-compute.js") and "model" in path)  # fmt: skip
    text = files[model]
    names = re.findall(r'"name":"([^"]*)"', text)
    assert sorted(names) == ["MFU 100%", "fast", "gpu", "impossible above"]  # no `bare`
    assert "MFU 17% of 330 TFLOP/s (spec: rtx 4090)" in text
    machine_charts = {path for path in files if path.startswith("bl/charts/machine")}
    assert any(path.endswith("roofline-compute.js") and "-gpu-" in path for path in machine_charts)
    assert not any(path.endswith("roofline-compute.js") and "-bare-" in path
                   for path in machine_charts)  # fmt: skip
