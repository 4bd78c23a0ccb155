"""Peak compute per machine: measured, declared or from the spec sheet, never unsourced.

Prefill multiplies the whole prompt through the weights at once, so it is bound by compute
where decode is bound by memory (ARCHITECTURE.md, "How close to the hardware"). Each machine
keeps one peak FLOP/s figure beside its bandwidth: `measured` (the agent's `gemm` probe, the
host's float32 CPU GEMM rate through numpy's BLAS, where the device has numpy), `declared`
(`bench machines set --peak-tflops`) or `spec` (the table below, matched on the GPU or SoC
name as the bandwidth table is, with the same refusal of laptop parts). The measured figure
is a CPU's practical float32 BLAS rate, not its theoretical peak: it is what a CPU run of
the reference decoder (numpy, the same BLAS) is bound by. A GPU's figure is never measured:
the agent does not drive a GPU.

The table holds dense FP16 tensor (matrix) TFLOP/s without sparsity, at the vendor's boost
clock: for NVIDIA GeForce the FP16-accumulate rate (FP32 accumulate runs at half on those
cards), i.e. SMs x 1,024 FLOPs a clock x boost for Turing to Blackwell, as NVIDIA's
architecture whitepapers list it; data-centre cards from their datasheets (the figure
marked without sparsity). RDNA2 Radeons have no matrix units: their figure is the packed
FP16 rate AMD lists. Apple's figure is the GPU's TFLOPS Apple announced for the part's top
GPU configuration (FP16 runs at the FP32 rate on M1 and M2): a binned part (an M1 Max with
24 GPU cores) reads a lower MFU than it earned, never an impossible one. Left out for want
of a vendor figure this table could trust: Intel Arc, RDNA4 (AMD states integer TOPS, and
whether sparse is unclear), Apple M3/M4 (Apple stated no TFLOPS), Jetson and the
Raspberry Pi, the V100 by bare name (SXM2 and PCIe differ).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchlab.ids import utc_iso
from benchlab.machines.bandwidth import sheet_entry, write_figure
from benchlab.models import ComputeFigure, MachineSpecs

if TYPE_CHECKING:
    from benchlab.layout import Store

SPEC_SHEET_TFLOPS: dict[str, float] = {
    # NVIDIA GeForce RTX 20 / 30 / 40 / 50: SMs x 1,024 x boost GHz / 1,000
    "rtx 2060": 51.6, "rtx 2060 super": 57.4, "rtx 2070": 59.7, "rtx 2070 super": 72.5,
    "rtx 2080": 80.5, "rtx 2080 super": 89.2, "rtx 2080 ti": 107.6, "titan rtx": 130.5,
    "rtx 3050": 36.4, "rtx 3060": 51.0, "rtx 3060 ti": 64.8, "rtx 3070": 81.3,
    "rtx 3070 ti": 87.0, "rtx 3080": 119.1, "rtx 3080 ti": 136.4, "rtx 3090": 142.3,
    "rtx 3090 ti": 160.0,
    "rtx 4060": 60.5, "rtx 4060 ti": 88.3, "rtx 4070": 116.6, "rtx 4070 super": 141.9,
    "rtx 4070 ti": 160.4, "rtx 4070 ti super": 176.4, "rtx 4080": 194.9, "rtx 4080 super": 208.9,
    "rtx 4090": 330.3,
    "rtx 5060": 76.7, "rtx 5060 ti": 94.8, "rtx 5070": 123.5, "rtx 5070 ti": 175.8,
    "rtx 5080": 225.1, "rtx 5090": 419.0,
    # NVIDIA workstation and data centre (datasheets, dense)
    "rtx a6000": 154.8, "rtx 6000 ada": 364.2, "a40": 149.7, "t4": 65, "a10": 125,
    "v100-sxm2-16gb": 125, "v100-sxm2-32gb": 125, "v100-pcie-16gb": 112, "v100-pcie-32gb": 112,
    "a100": 312, "a100-sxm4-40gb": 312, "a100-pcie-40gb": 312, "a100-sxm4-80gb": 312,
    "a100-pcie-80gb": 312, "l4": 121, "l40": 181.05, "l40s": 362.05,
    "h100 pcie": 756, "h100 sxm": 989.4, "h100 80gb hbm3": 989.4, "h100 nvl": 835.5,
    "h200": 989.4, "h200 nvl": 835.5, "gh200": 989.4, "b200": 2250,
    # AMD Radeon RX 6000 (packed FP16, no matrix units) / 7000 (WMMA) and Instinct
    "rx 6600": 17.9, "rx 6600 xt": 21.2, "rx 6700 xt": 26.4, "rx 6800": 32.3,
    "rx 6800 xt": 41.5, "rx 6900 xt": 46.1, "rx 6950 xt": 47.3,
    "rx 7600": 43.5, "rx 7700 xt": 70.3, "rx 7800 xt": 74.6, "rx 7900 gre": 92.0,
    "rx 7900 xt": 103.0, "rx 7900 xtx": 122.8,
    "instinct mi100": 184.6, "instinct mi210": 181.0, "instinct mi250": 362.1,
    "instinct mi250x": 383.0, "instinct mi300a": 980.6, "instinct mi300x": 1307.4,
    "instinct mi325x": 1307.4,
    # Apple silicon GPU (top configuration, as Apple announced it)
    "apple m1": 2.6, "apple m1 pro": 5.2, "apple m1 max": 10.4, "apple m1 ultra": 21.0,
    "apple m2": 3.6, "apple m2 pro": 6.8, "apple m2 max": 13.6, "apple m2 ultra": 27.2,
}  # fmt: skip
"""Dense FP16 TFLOP/s from the vendors' spec sheets, keyed by a normalised name
(`bandwidth.normalise`)."""


def spec_sheet(name: str | None) -> tuple[str, float] | None:
    """The compute table's entry for a GPU or SoC name (`bandwidth.sheet_entry`)."""
    return sheet_entry(SPEC_SHEET_TFLOPS, name)


def from_spec_sheet(name: str | None) -> ComputeFigure | None:
    entry = spec_sheet(name)
    if entry is None:
        return None
    return ComputeFigure(tflops=entry[1], source="spec", method=f"spec sheet: {entry[0]}")


def declared(tflops: float, *, date: str | None = None) -> ComputeFigure:
    return ComputeFigure(tflops=tflops, source="declared", date=date or utc_iso())


def measured(answer: dict[str, object], *, date: str | None = None) -> ComputeFigure:
    """The agent's `gemm` answer as a figure (a float32 CPU GEMM rate)."""
    tflops = answer.get("tflops")
    if isinstance(tflops, bool) or not isinstance(tflops, (int, float)):
        raise ValueError(f"gemm answered no usable figure: {answer!r}")
    if not 0 < tflops <= 100_000:
        raise ValueError(f"gemm answered no usable figure: {answer!r}")
    method = answer.get("method")
    return ComputeFigure(
        tflops=float(tflops),
        source="measured",
        method=str(method)[:64] if method else "float32 CPU GEMM",
        date=date or utc_iso(),
    )


@dataclass(frozen=True)
class Peak:
    """The compute a run's prefill is bound by, and which processor it is."""

    figure: ComputeFigure
    processor: str
    """`host` or the GPU's name."""


def peak_compute(specs: MachineSpecs, *, on_gpu: bool) -> Peak | None:
    """The figure for the processor a run computed on: the first GPU's where the run
    offloaded (an Apple SoC without a GPU entry: its declared host figure, else the spec
    sheet's for the SoC's GPU, never the measured CPU rate); a run kept on the CPU gets a
    declared or measured host figure, never the spec sheet's (those are GPU rates)."""
    hardware = specs.hardware
    if on_gpu and hardware.gpu:
        gpu = hardware.gpu[0]
        figure = gpu.peak_tflops or from_spec_sheet(gpu.model)
        return Peak(figure, gpu.model) if figure is not None else None
    figure = hardware.peak_tflops
    if on_gpu and (figure is None or figure.source == "measured"):
        # A measured host figure is the CPU's GEMM rate: an SoC's GPU takes its spec sheet's.
        figure = from_spec_sheet(hardware.cpu.model)
    if figure is None or (figure.source == "spec" and not on_gpu):
        return None
    return Peak(figure, "host")


def label(figure: ComputeFigure | None) -> str:
    """`330 TFLOP/s (spec: rtx 4090)`, `2.6 TFLOP/s (declared 2026-12-06)`,
    `0.19 TFLOP/s (measured 2026-12-07, float32 CPU GEMM)`, or `–`."""
    if figure is None:
        return "–"
    amount = f"{figure.tflops:,.0f}" if figure.tflops >= 100 else f"{figure.tflops:.1f}"
    if figure.tflops < 1:
        amount = f"{figure.tflops:.2g}"
    if figure.source == "spec":
        where = (figure.method or "spec sheet").replace("spec sheet: ", "spec: ")
    else:
        where = f"{figure.source} {figure.date[:10]}" if figure.date else figure.source
    if figure.source == "measured":
        where += ", float32 CPU GEMM"
    return f"{amount} TFLOP/s ({where})"


def record(store: Store, machine_id: str, figure: ComputeFigure, *, gpu: bool = False) -> None:
    """Write `figure` into the machine's private specs (the host's, or the first GPU's)."""
    write_figure(store, machine_id, "peak_tflops", figure, gpu=gpu)
