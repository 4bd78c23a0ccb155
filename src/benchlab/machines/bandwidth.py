"""Memory bandwidth per machine: measured, declared or from the spec sheet, never unsourced.

A roofline needs one figure per machine (ARCHITECTURE.md, "How close to the hardware").
Three sources, in the order a reader should trust them for the memory the model ran from:
`measured` (the agent's `membw` probe, host memory), `declared` (`bench machines set
--mem-bandwidth`, for a machine benchlab cannot reach), `spec` (the table below, matched on
the GPU or SoC name llama-bench's `gpu_info`/`cpu_info` or sysinfo gave). A GPU's device
memory cannot be probed from the stdlib agent, so a GPU carries its spec-sheet figure unless
someone declares one.

The table holds the cards and SoCs llama.cpp's public scoreboards cover. Laptop variants
are left out on purpose: their memory clocks vary by vendor, and "RTX 4090 Laptop GPU"
matching the desktop card's 1,008 GB/s would be a figure that means nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from benchlab.errors import ConfigError
from benchlab.ids import utc_iso
from benchlab.layout import read_model, write_model
from benchlab.models import BandwidthFigure, ComputeFigure, MachineSpecs

if TYPE_CHECKING:
    from pydantic import BaseModel

    from benchlab.layout import Store

SPEC_SHEET_GBS: dict[str, float] = {
    # NVIDIA GeForce RTX 20 / 30 / 40 / 50
    "rtx 2060": 336, "rtx 2060 super": 448, "rtx 2070": 448, "rtx 2070 super": 448,
    "rtx 2080": 448, "rtx 2080 super": 496, "rtx 2080 ti": 616, "titan rtx": 672,
    "rtx 3050": 224, "rtx 3060": 360, "rtx 3060 ti": 448, "rtx 3070": 448,
    "rtx 3070 ti": 608, "rtx 3080": 760, "rtx 3080 ti": 912, "rtx 3090": 936,
    "rtx 3090 ti": 1008,
    "rtx 4060": 272, "rtx 4060 ti": 288, "rtx 4070": 504, "rtx 4070 super": 504,
    "rtx 4070 ti": 504, "rtx 4070 ti super": 672, "rtx 4080": 716.8, "rtx 4080 super": 736,
    "rtx 4090": 1008,
    "rtx 5060": 448, "rtx 5060 ti": 448, "rtx 5070": 672, "rtx 5070 ti": 896,
    "rtx 5080": 960, "rtx 5090": 1792,
    # NVIDIA workstation and data centre
    "rtx a6000": 768, "rtx 6000 ada": 960, "a40": 696, "t4": 320, "v100": 900, "a10": 600,
    "a100 40gb": 1555, "a100-sxm4-40gb": 1555, "a100-pcie-40gb": 1555,
    "a100 80gb": 2039, "a100-sxm4-80gb": 2039, "a100-pcie-80gb": 1935, "a100 80gb pcie": 1935,
    "l4": 300, "l40": 864, "l40s": 864, "h100 pcie": 2000, "h100 sxm": 3350,
    "h100 80gb hbm3": 3350, "h100 nvl": 3900, "h200": 4800, "gh200": 4000, "b200": 8000,
    # AMD Radeon RX 6000 / 7000 / 9000 and Instinct
    "rx 6600": 224, "rx 6600 xt": 256, "rx 6700 xt": 384, "rx 6800": 512, "rx 6800 xt": 512,
    "rx 6900 xt": 512, "rx 6950 xt": 576,
    "rx 7600": 288, "rx 7700 xt": 432, "rx 7800 xt": 624, "rx 7900 gre": 576,
    "rx 7900 xt": 800, "rx 7900 xtx": 960,
    "rx 9060 xt": 320, "rx 9070": 640, "rx 9070 xt": 640,
    "instinct mi100": 1229, "instinct mi210": 1638, "instinct mi250": 3277,
    "instinct mi250x": 3277, "instinct mi300a": 5300, "instinct mi300x": 5300,
    "instinct mi325x": 6000,
    # Intel Arc
    "arc a380": 186, "arc a580": 512, "arc a750": 512, "arc a770": 560, "arc b570": 380,
    "arc b580": 456,
    # Apple silicon (unified memory: the SoC's figure serves CPU and GPU alike)
    "apple m1": 68.25, "apple m1 pro": 200, "apple m1 max": 400, "apple m1 ultra": 800,
    "apple m2": 100, "apple m2 pro": 200, "apple m2 max": 400, "apple m2 ultra": 800,
    "apple m3": 100, "apple m3 pro": 150, "apple m3 max": 400, "apple m3 ultra": 819,
    "apple m4": 120, "apple m4 pro": 273, "apple m4 max": 546,
    # NVIDIA Jetson and Raspberry Pi
    "jetson agx orin": 204.8, "jetson orin nx": 102.4, "jetson orin nano": 68,
    "raspberry pi 4": 12.8, "raspberry pi 5": 17.1,
}  # fmt: skip
"""GB/s from the vendors' spec sheets, keyed by a normalised name (see `normalise`)."""

_NOISE = re.compile(
    r"\b(nvidia|geforce|amd|radeon|intel|\(r\)|\(tm\)|graphics|gpu|model [a-z]|rev [\d.]+)\b"
    r"|\(r\)|\(tm\)|®|™"
)
_LAPTOP = re.compile(r"\b(laptop|mobile|max-q)\b")


def normalise(name: str) -> str:
    """`NVIDIA GeForce RTX 4090` -> `rtx 4090`; `Raspberry Pi 5 Model B Rev 1.0` ->
    `raspberry pi 5`."""
    text = _NOISE.sub(" ", name.lower())
    return " ".join(text.replace(",", " ").split())


def sheet_entry(table: Mapping[str, float], name: str | None) -> tuple[str, float] | None:
    """A spec table's entry for a GPU or SoC name: the longest key that the name holds as
    whole words, so `RTX 4070 Ti SUPER` is not read as `RTX 4070`. None for a laptop part
    (its clocks vary by vendor) or an unknown name. For this table and the compute one."""
    if not name or _LAPTOP.search(name.lower()):
        return None
    text = f" {normalise(name)} "
    best: tuple[str, float] | None = None
    for key, figure in table.items():
        if f" {key} " in text and (best is None or len(key) > len(best[0])):
            best = (key, figure)
    return best


def spec_sheet(name: str | None) -> tuple[str, float] | None:
    """The bandwidth table's entry for a GPU or SoC name (`sheet_entry`)."""
    return sheet_entry(SPEC_SHEET_GBS, name)


def from_spec_sheet(name: str | None) -> BandwidthFigure | None:
    entry = spec_sheet(name)
    if entry is None:
        return None
    return BandwidthFigure(gbs=entry[1], source="spec", method=f"spec sheet: {entry[0]}")


def declared(gbs: float, *, date: str | None = None) -> BandwidthFigure:
    return BandwidthFigure(gbs=gbs, source="declared", date=date or utc_iso())


def measured(answer: dict[str, object], *, date: str | None = None) -> BandwidthFigure:
    """The agent's `membw` answer as a figure."""
    gbs = answer.get("gbs")
    if not isinstance(gbs, (int, float)) or not 0 < gbs <= 100_000:
        raise ValueError(f"membw answered no usable figure: {answer!r}")
    method = answer.get("method")
    return BandwidthFigure(
        gbs=float(gbs),
        source="measured",
        method=str(method)[:64] if method else None,
        date=date or utc_iso(),
    )


_RANK = {"declared": 3, "measured": 2, "spec": 1}


Figure = TypeVar("Figure", BandwidthFigure, ComputeFigure)


def better(old: Figure | None, new: Figure | None) -> Figure | None:
    """Which figure a machine keeps, of its bandwidth or of its peak compute alike: a
    declared figure is a person's word and outranks a probe; a probe outranks the spec sheet
    (it is this machine, not the model line); among equals the newer wins."""
    if old is None or new is None:
        return new or old
    if _RANK[new.source] != _RANK[old.source]:
        return new if _RANK[new.source] > _RANK[old.source] else old
    return new


@dataclass(frozen=True)
class Ceiling:
    """The bandwidth a run's decode is bound by, and which memory it is."""

    figure: BandwidthFigure
    memory: str
    """`host` or the GPU's name."""


def ceiling_bandwidth(specs: MachineSpecs, *, on_gpu: bool) -> Ceiling | None:
    """The figure for the memory a run read its weights from: the first GPU's where the run
    offloaded to a GPU with a figure, else the host's (an Apple SoC's host figure is its
    unified memory's). A GPU without a figure gives None rather than the host's figure."""
    hardware = specs.hardware
    if on_gpu and hardware.gpu:
        gpu = hardware.gpu[0]
        figure = gpu.mem_bandwidth or from_spec_sheet(gpu.model)
        return Ceiling(figure, gpu.model) if figure is not None else None
    figure = hardware.mem_bandwidth or from_spec_sheet(hardware.cpu.model)
    return Ceiling(figure, "host") if figure is not None else None


def label(figure: BandwidthFigure | None) -> str:
    """`33.9 GB/s (measured 2026-12-06)`, `1,008 GB/s (spec: rtx 4090)`, or `–`."""
    if figure is None:
        return "–"
    amount = f"{figure.gbs:,.0f}" if figure.gbs >= 100 else f"{figure.gbs:.1f}"
    if figure.source == "spec":
        where = (figure.method or "spec sheet").replace("spec sheet: ", "spec: ")
    else:
        where = f"{figure.source} {figure.date[:10]}" if figure.date else figure.source
    return f"{amount} GB/s ({where})"


def record(store: Store, machine_id: str, figure: BandwidthFigure, *, gpu: bool = False) -> None:
    """Write `figure` into the machine's private specs (the host's, or the first GPU's)."""
    write_figure(store, machine_id, "mem_bandwidth", figure, gpu=gpu)


def write_figure(
    store: Store, machine_id: str, field: str, figure: BaseModel, *, gpu: bool = False
) -> None:
    """Write a hardware figure (`mem_bandwidth`, `peak_tflops`) into the machine's private
    specs, the host's or the first GPU's.

    An explicit verb replaces whatever figure was there (`better` is for onboarding, where a
    probe must not undo a person's word). A machine with no private specs takes a copy of its
    public ones; one with neither (an import from a person's notes) gets specs that say
    nothing but the figure, so the catalog build can publish it."""
    private = store.private_specs(machine_id)
    public = store.public_specs(machine_id)
    if private.is_file():
        specs = read_model(private, MachineSpecs)
    elif public.is_file():
        specs = read_model(public, MachineSpecs)
    else:
        specs = MachineSpecs.model_validate(
            {
                "machine_id": machine_id,
                "registered_at": utc_iso(),
                "hardware": {"cpu": {"model": "unknown"}},
                "os": {"name": "unknown"},
            }
        )
    hardware = specs.hardware
    if gpu:
        if not hardware.gpu:
            raise ConfigError(f"{machine_id}: --gpu: the machine's specs list no GPU")
        first = hardware.gpu[0].model_copy(update={field: figure})
        hardware = hardware.model_copy(update={"gpu": [first, *hardware.gpu[1:]]})
    else:
        hardware = hardware.model_copy(update={field: figure})
    write_model(private, specs.model_copy(update={"hardware": hardware}), root=store.root)
