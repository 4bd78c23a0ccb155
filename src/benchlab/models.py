"""The pydantic models: the one source of truth for every file format benchlab reads or writes.

`schemas/*.json` are generated from these models (`bench schemas --write`) and a test keeps
them in sync. Field names of the v1 formats are kept exactly (ARCHITECTURE.md, The run files);
additions are optional so that files written by other tools (imports, hand-made runs) still load.

Format history:
- v1: machine-specs, run-manifest, kernel-results, batch-results, catalog (the harness
  format of tests/data/seed002); machine-inventory, run-record, sweep-state, agent-task,
  agent-envelope (benchlab).
- catalog v2: entries carry the full measurement identity, `series`, `tests`, attempt,
  warnings, samples and stddevs; `retracted` lists run ids withdrawn from the record. A v1
  (or v2) catalog is refused by every reader until `bench catalog upgrade` rewrites it
  (`benchlab.catalog.upgrade`).
- run-record (additive): `identity`, `tests`.

Run artifacts (manifest, kernel, batch, specs) allow extra keys: new metrics are additive
(ARCHITECTURE.md, The run files). What users write by hand to steer benchlab (sweep configs) forbids
them, so that a typo is an error rather than a silently ignored key.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Status = Literal["ok", "failed"]
FailureKind = Literal["transport", "measurement", "config", "parse"]
GateStatus = Literal["passed", "failed", "unknown"]
"""A catalog entry's gate verdict (`catalog.format.GATE_STATUSES`)."""


class _Open(BaseModel):
    """A file format that tolerates keys it does not know (forward compatible)."""

    # Schemas are built on a model's first use, not at import: `bench site build` reads two
    # of these forty models and importing them all cost a tenth of its CPU at 1,000 runs.
    model_config = ConfigDict(
        extra="allow", populate_by_name=True, allow_inf_nan=False, defer_build=True
    )


class _Closed(BaseModel):
    """A format written by people: unknown keys are errors."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, allow_inf_nan=False, defer_build=True
    )


class _Document(_Open):
    """A top-level file that names its own format in `$schema`."""

    SCHEMA_ID: ClassVar[str] = ""
    schema_: str = Field(alias="$schema", description="The format name and version.")

    @field_validator("schema_")
    @classmethod
    def _known_schema(cls, value: str) -> str:
        if cls.SCHEMA_ID and value != cls.SCHEMA_ID:
            raise ValueError(f"expected {cls.SCHEMA_ID!r}, got {value!r}")
        return value


# --- machine specs ------------------------------------------------------------------------


class CpuSpec(_Open):
    model: str
    cores_physical: int | None = None
    cores_logical: int | None = None
    frequency_base_mhz: float | None = None
    architecture: str | None = None


BandwidthSource = Literal["measured", "declared", "spec"]


class BandwidthFigure(_Closed):
    """A memory bandwidth and where it came from (ARCHITECTURE.md, "How close to the
    hardware"): a figure without its source cannot be weighed against another."""

    gbs: float = Field(gt=0, le=100_000, description="GB/s (10**9 bytes per second).")
    source: BandwidthSource = Field(
        description="measured (the agent's probe), declared (`bench machines set`), or spec "
        "(the spec-sheet table, from the GPU or SoC name)."
    )
    method: str | None = Field(
        default=None,
        max_length=64,
        description="How: the probe's method, or the spec-sheet entry's name.",
    )
    date: str | None = Field(default=None, description="When it was measured or declared.")


ComputeSource = Literal["measured", "declared", "spec"]


class ComputeFigure(_Closed):
    """A peak compute rate and where it came from (ARCHITECTURE.md, "How close to the
    hardware"): prefill is judged against it as decode is against the bandwidth. Spec-sheet
    GPU figures are dense FP16; a measured figure is the host CPU's float32 BLAS GEMM rate."""

    tflops: float = Field(gt=0, le=100_000, description="TFLOP/s (10**12 FLOPs per second).")
    source: ComputeSource = Field(
        description="measured (the agent's `gemm` probe: the host CPU's float32 GEMM rate "
        "through numpy's BLAS), declared (`bench machines set --peak-tflops`) or spec (the "
        "spec-sheet table of dense FP16 tensor rates, from the GPU or SoC name)."
    )
    method: str | None = Field(
        default=None,
        max_length=64,
        description="How: the probe's method, or the spec-sheet entry's name.",
    )
    date: str | None = Field(default=None, description="When it was measured or declared.")


class GpuSpec(_Open):
    model: str
    memory_gb: float | None = None
    compute_capability: str | None = None
    cuda_version: str | None = None
    driver_version: str | None = None
    mem_bandwidth: BandwidthFigure | None = Field(
        default=None, description="The device memory's bandwidth, with its source."
    )
    peak_tflops: ComputeFigure | None = Field(
        default=None, description="The device's peak dense FP16 rate, with its source."
    )


class StorageSpec(_Open):
    type: str | None = None
    size_gb: float | None = None


class HardwareSpec(_Open):
    cpu: CpuSpec
    gpu: list[GpuSpec] = Field(
        default_factory=list,
        description="GPUs: one object or a list, both are accepted.",
    )
    ram_gb: float | None = None
    storage: StorageSpec | None = None
    mem_bandwidth: BandwidthFigure | None = Field(
        default=None, description="The memory bandwidth decode is bound by, with its source."
    )
    peak_tflops: ComputeFigure | None = Field(
        default=None,
        description="The peak rate prefill is bound by, with its source: the CPU's measured "
        "float32 GEMM rate, or a declared figure.",
    )

    @field_validator("gpu", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, dict) else value


class OsSpec(_Open):
    name: str
    version: str | None = None
    kernel: str | None = None


class MachineSpecs(_Document):
    """`machines/<id>/specs.json` (redacted, public) and `runs/by-machine/<id>/specs.json`."""

    SCHEMA_ID: ClassVar[str] = "benchmark/machine-specs.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    machine_id: str
    hostname: str | None = Field(default=None, description="Private: never published.")
    registered_at: str
    hardware: HardwareSpec
    os: OsSpec
    runtime: dict[str, str | None] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    cost_per_hour: float | None = Field(
        default=None, description="USD per hour of the machine, for cost per token."
    )


class MachineSummary(_Open):
    """A machine as the public catalog shows it (no hostname: public files carry none)."""

    id: str
    os: str | None = None
    arch: str | None = None
    cpu_cores: int | None = None
    gpu: str | None = None
    runs: int = 0
    last_run: str | None = None


class InventoryEntry(_Open):
    id: str
    os: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    cpu_cores: int | None = None
    gpu: str | None = None
    ram_gb: float | None = None
    tags: list[str] = Field(default_factory=list)
    registered_at: str | None = None
    cost_per_hour: float | None = None
    checklist: dict[str, bool] = Field(default_factory=dict)


class MachineInventory(_Document):
    """`machines/catalog.json`: the redacted machine inventory."""

    SCHEMA_ID: ClassVar[str] = "benchmark/machine-inventory.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    machines: dict[str, InventoryEntry] = Field(default_factory=dict)


# --- run artifacts ------------------------------------------------------------------------


class GitInfo(_Open):
    rev: str | None = None
    branch: str | None = None
    dirty: bool | None = None


class HarnessInfo(_Open):
    name: str
    version: str | None = None


class ModelInfo(_Open):
    name: str
    family: str | None = None
    parameters: str | None = None
    source: str | None = None
    precision: str
    quantization: str | None = None


class GateInfo(_Open):
    """A gate's verdict on one run (`manifest.json` `gate`, and `gate.json` in the run dir).

    Written by benchlab.detect.gates when a sweep declares gates (`bench run --publish`,
    `bench regression --gates`). The v1 format's four fields come first; the rest say what was
    compared with what, so a failed gate can be read without re-running anything.
    """

    required: bool | None = None
    status: str | None = Field(
        default=None,
        description="passed, failed, or unknown (the gate could not be checked: its metric "
        "or its baseline run is missing).",
    )
    min_speedup: float | None = None
    actual_speedup: float | None = None
    name: str | None = None
    metric: str | None = None
    value: float | None = None
    min: float | None = None
    max: float | None = None
    baseline: str | None = Field(default=None, description="A run id, or `previous`.")
    baseline_run: str | None = Field(default=None, description="The run compared with.")
    baseline_value: float | None = None
    detail: str | None = None
    checks: list[GateInfo] | None = Field(
        default=None, description="Each gate's own verdict when several apply."
    )


class RunManifest(_Document):
    """`manifest.json`: REQUIRED in every run dir."""

    SCHEMA_ID: ClassVar[str] = "benchmark/run-manifest.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    run_id: str
    machine_id: str
    timestamp: str = Field(description="ISO 8601 UTC, e.g. 2025-01-06T12:00:00Z.")
    git: GitInfo = Field(default_factory=GitInfo)
    harness: HarnessInfo
    model: ModelInfo
    config: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    artifacts: dict[str, str] = Field(default_factory=dict)
    gate: GateInfo | None = None
    backend: str | None = None
    mode: str | None = None
    spec_id: str | None = None
    experiment: str | None = None
    provenance: dict[str, Any] | None = Field(
        default=None, description="Where an imported result came from (bench migrate)."
    )


class PrefillPoint(_Open):
    tokens: int
    median_ms: float
    tok_per_sec: float


class DecodeResult(_Open):
    prompt_tokens: int | None = None
    decode_steps: int | None = None
    reps: int | None = None
    per_token_median_ms: float | None = None
    tok_per_sec: float


class KernelBenchmark(_Open):
    prefill: list[PrefillPoint] = Field(default_factory=list)
    decode: DecodeResult | None = None


class KernelBreakdown(_Open):
    f32_ms: float | None = None
    f32_gbs: float | None = None
    int8xf32_ms: float | None = None
    int8xf32_gbs: float | None = None
    int8xf32_xf32: float | None = None


class KernelResults(_Document):
    """`kernel.json`: REQUIRED."""

    SCHEMA_ID: ClassVar[str] = "benchmark/kernel-results.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    run_id: str
    engine: str
    precision: str
    model: str
    benchmark: KernelBenchmark
    kernel_breakdown: KernelBreakdown | None = None


class BatchBaseline(_Open):
    batch: int
    tok_per_sec: float


class BatchPeak(_Open):
    batch: int
    agg_tok_per_sec: float
    speedup_vs_baseline: float | None = None
    speedup_vs_naive: float | None = None


class BatchPoint(_Open):
    batch: int
    per_user_ms_per_tok: float
    agg_tok_per_sec: float
    speedup_vs_baseline: float | None = None


class BatchResults(_Document):
    """`batch.json`: REQUIRED."""

    SCHEMA_ID: ClassVar[str] = "benchmark/batch-results.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    run_id: str
    engine: str
    model: str
    precision: str
    workers: int | None = None
    baseline: BatchBaseline | None = None
    peak: BatchPeak | None = None
    points: list[BatchPoint] = Field(default_factory=list)


class CommandWorkload(_Document):
    """`workload.json`, optional: the workload a `command` backend run measured.

    Written by the command backend when its output parsed, so a run dir says what command
    made its numbers without the sweep config beside it: the argv as the config gave it and
    as the device was asked to run it, how the output was read, and the numbers it read.
    Environment values are left out (names only): they may hold tokens, and the config keeps
    them.
    """

    SCHEMA_ID: ClassVar[str] = "benchmark/command-workload.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    run_id: str
    backend: str = "command"
    argv: list[str] = Field(description="The argv as the config wrote it (placeholders kept).")
    command: list[str] = Field(
        description="The argv sent to the device: the point's values filled in; `{python}` "
        "and `{agent}` are the agent's to expand."
    )
    env_names: list[str] = Field(
        default_factory=list, description="Variables set for the command (values left out)."
    )
    timeout_s: float | None = None
    parser: Literal["json", "regex"]
    fields: dict[str, str] | None = Field(
        default=None, description="json: metric name (prefill, decode, peak) to field path."
    )
    pattern: list[str] | None = Field(default=None, description="regex: the patterns tried.")
    stream: Literal["stdout", "stderr"] = "stdout"
    version: str | None = Field(default=None, description="The declared version of the command.")
    threads: int | None = None
    prompt_tokens: int | None = None
    gen_tokens: int | None = None
    batch_sizes: list[int] = Field(default_factory=list)
    reported: dict[str, float] = Field(
        default_factory=dict, description="The rates read from the output, in tokens/s."
    )


class Timings(_Open):
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None


HOLE_ERROR_PREFIX = "not attempted"
"""How a hole's record error begins: the point was never measured (ARCHITECTURE.md, The
scheduler)."""
HOLE_TAG = "hole"
"""The tag a hole's catalog entry carries (the catalog keeps no error text)."""


class MetricSamples(_Closed):
    """The repeats a backend measured inside one run for one metric (llama-bench's
    `samples_ts`, the reference decoder's reps): how many, their mean and their standard
    deviation. `bench compare` judges a side of one run by them (ARCHITECTURE.md, Compare)."""

    n: int = Field(ge=2, le=1_000_000, description="Repeats measured (two or more).")
    mean: float = Field(ge=-1e12, le=1e12, description="Their mean, in the metric's unit.")
    sd: float = Field(ge=0, le=1e12, description="Their sample standard deviation (n - 1).")


class RunRecord(_Document):
    """`record.json`: what the sweep runner says about one attempt at one point.

    A run dir without a record (imported, hand-made) counts as ok.
    """

    SCHEMA_ID: ClassVar[str] = "benchmark/run-record.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    run_id: str
    spec_id: str
    machine_id: str
    device: str
    experiment: str | None = None
    status: Status
    failure_kind: FailureKind | None = None
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)
    attempt: int = Field(default=1, description="The attempt that produced this record.")
    attempts: int = Field(default=1, description="The attempts the retry policy allowed.")
    tags: list[str] = Field(default_factory=list)
    timings: Timings = Field(default_factory=Timings)
    worker: str | None = Field(default=None, description="Which worker instance ran it.")
    metrics: dict[str, float | None] = Field(
        default_factory=dict, description="Derived once, by benchlab.metrics; copied by readers."
    )
    tests: list[str] = Field(
        default_factory=list, description="The tests in llama-bench's spelling (pp512, tg128)."
    )
    metric_samples: dict[str, MetricSamples] | None = Field(
        default=None,
        description="Per metric, the repeats measured inside the run: {n, mean, sd} "
        "(benchlab.metrics.repeat_samples); absent where the backend measured one.",
    )
    identity: dict[str, Any] | None = Field(
        default=None, description="The measurement identity (benchlab.identity.IDENTITY_FIELDS)."
    )
    telemetry: dict[str, Any] | None = None
    system: dict[str, Any] | None = Field(
        default=None,
        description="The device's state at the start (governor, boost, load, swap) and "
        "whether it throttled during the run (`during_run`), as the agent saw it.",
    )
    unstable: bool | None = Field(
        default=None,
        description="True when the run's repeats vary more than policies.max_cv (a warning "
        "says which metric and by how much); None where the run measured no spread.",
    )
    spec: RunSpec | None = Field(
        default=None, description="The point this record measures (labels, resume, failover)."
    )


# --- the catalog --------------------------------------------------------------------------


class BatchCurvePoint(_Open):
    """One point of a run's batch curve as the catalog carries it (for scaling charts)."""

    batch: int
    agg_tok_per_sec: float


class ExtraMetric(_Closed):
    """One declared metric of a run in the catalog (`benchlab.metrics.EXTRA_FIELD`): its value
    with the unit and direction its config declared, so every clone ranks it the same way."""

    value: float
    unit: str = Field(min_length=1, max_length=32)
    better: Literal["higher", "lower"]


class CatalogEntry(_Open):
    """One run as the public catalog lists it: redacted, flat, queryable.

    It carries the run's full measurement identity (`benchlab.identity.IDENTITY_FIELDS`,
    null where the run did not say) and `series`, the id of the history it belongs to, so
    every reader groups runs the same way. Metrics are copied from the run record, where
    `benchlab.metrics` derived them once.
    """

    run_id: str
    machine_id: str
    timestamp: str
    model: str = Field(description="The model's display name as the run reported it.")
    model_id: str | None = Field(default=None, description="The model slug (index key).")
    precision: str = Field(description="The exact quant type, e.g. q4_k_m, f32.")
    precision_family: str | None = Field(
        default=None, description="The quant family filters accept, e.g. q4 for q4_k_m."
    )
    tags: list[str] = Field(default_factory=list)
    status: Status = "ok"
    failure_kind: FailureKind | None = None
    gate: GateStatus | None = Field(
        default=None,
        description="The gate verdict `bench catalog build` found (detect.gates): passed, "
        "failed, or unknown (could not be checked); absent where no gate applies.",
    )
    gate_detail: str | None = Field(
        default=None, description="Why: the bound or speedup missed and the baseline run."
    )
    backend: str | None = None
    mode: str | None = None
    series: str | None = Field(
        default=None, description="The series id: identity less the version axis, hashed."
    )
    spec_id: str | None = None
    model_digest: str | None = None
    model_size: int | None = Field(default=None, description="Model file size in bytes.")
    model_params: int | None = Field(default=None, description="Model parameter count.")
    backend_version: str | None = Field(
        default=None, description="e.g. `b5163 (abc1234)` for llama.cpp, `benchlab 0.1.0`."
    )
    backend_build: int | None = Field(default=None, description="llama.cpp build number.")
    backend_commit: str | None = Field(default=None, description="llama.cpp build commit.")
    revision: str | None = Field(
        default=None, description="The declared revision of the thing under test."
    )
    threads: int | None = None
    prompt_tokens: int | None = None
    gen_tokens: int | None = None
    depth: int | None = Field(default=None, description="Prefilled context depth (-d).")
    batch_sizes: list[int] | None = None
    n_batch: int | None = None
    n_ubatch: int | None = None
    gpu_layers: int | None = None
    flash_attn: bool | None = None
    type_k: str | None = None
    type_v: str | None = None
    axes: dict[str, Any] | None = Field(
        default=None, description="Any other axis the sweep varied (params), by name."
    )
    tests: list[str] = Field(
        default_factory=list, description="Tests in llama-bench's spelling: pp512, tg128@d64."
    )
    attempt: int | None = Field(default=None, description="The attempt that produced it.")
    attempts: int | None = Field(default=None, description="Attempts the policy allowed.")
    warnings: int | None = Field(default=None, description="How many warnings the run has.")
    samples: int | None = Field(default=None, description="Repetitions behind each number.")
    metric_samples: dict[str, MetricSamples] | None = Field(
        default=None,
        description="Per metric, the repeats measured inside the run: {n, mean, sd}; "
        "`bench compare` judges a one-run side by them (ARCHITECTURE.md, Compare).",
    )
    peak_tok_per_sec: float | None = None
    baseline_tok_per_sec: float | None = None
    speedup: float | None = None
    prefill_tok_per_sec: float | None = None
    decode_tok_per_sec: float | None = None
    prefill_stddev: float | None = None
    decode_stddev: float | None = None
    peak_rss_mb: float | None = Field(
        default=None, description="Peak resident set of the benchmark process (MiB); lower wins."
    )
    gpu_mem_peak_mb: float | None = Field(
        default=None, description="Peak GPU memory in use on the device (MiB); lower wins."
    )
    joules_per_token: float | None = Field(
        default=None, description="Energy per generated token (J) where measured; lower wins."
    )
    decode_ms_per_token: float | None = Field(
        default=None, description="Time per output token (ms, decode median); lower wins."
    )
    ttft_ms: float | None = Field(
        default=None, description="Time to first token at the prompt size (ms); lower wins."
    )
    time_s: float | None = Field(
        default=None, description="An imported time benchmark (s, asv time_*); lower wins."
    )
    mem_bytes: float | None = Field(
        default=None, description="An imported memory benchmark (bytes, asv mem_*); lower wins."
    )
    track_value: float | None = Field(
        default=None, description="An imported tracked value (asv track_*); lower wins."
    )
    extra_metrics: dict[str, ExtraMetric] | None = Field(
        default=None,
        description="The metrics a sweep declared (`metrics:` with a unit and a direction), "
        "by name; ranked like registry metrics (ARCHITECTURE.md, Metrics).",
    )
    path: str | None = Field(default=None, description="Run dir relative to the store root.")
    batch_curve: list[BatchCurvePoint] | None = Field(
        default=None,
        description="Optional compact batch curve (batch size, aggregate tok/s), sorted by batch.",
    )


class CatalogIndex(_Open):
    by_model: dict[str, list[str]] = Field(default_factory=dict)
    by_precision: dict[str, list[str]] = Field(default_factory=dict)
    by_date: dict[str, list[str]] = Field(default_factory=dict)


class Catalog(_Document):
    """`catalog.json`: the public, redacted, union-merged record."""

    SCHEMA_ID: ClassVar[str] = "benchmark/catalog.v2"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    version: str = "2.0"
    last_updated: str | None = Field(default=None, description="The newest run's timestamp.")
    machines: dict[str, MachineSummary] = Field(default_factory=dict)
    runs: list[CatalogEntry] = Field(default_factory=list)
    index: CatalogIndex = Field(default_factory=CatalogIndex)
    retracted: list[str] = Field(
        default_factory=list,
        description="Run ids withdrawn from the record (`bench catalog retract`): a merge "
        "never brings them back.",
    )


# --- sweeps -------------------------------------------------------------------------------


class DeviceConfig(_Closed):
    """One device of a sweep: how to reach it and how hard it may be pushed."""

    transport: Literal["local", "ssh", "exec"] = "local"
    machine_id: str | None = Field(default=None, description="Defaults to the device id.")
    host: str | None = None
    user: str | None = None
    port: int | None = None
    ssh_config: str | None = Field(default=None, description="An ssh_config file to read.")
    identity_file: str | None = None
    insecure_accept_host_key: bool = False
    connect_timeout_s: float = 10.0
    command_timeout_s: float = 3600.0
    command: list[str] | None = Field(
        default=None, description="exec transport: the prefix, e.g. [kubectl, exec, -i, pod, --]."
    )
    max_concurrency: int = Field(default=1, ge=1)
    resource_group: str | None = None
    failover_to: list[str] = Field(default_factory=list)
    python: str = "python3"
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)

    @field_validator("resource_group", mode="before")
    @classmethod
    def _one_group(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            raise ValueError(
                f"a device is one machine and belongs to one resource group, got {list(value)}"
            )
        return value


class ResourceGroupConfig(_Closed):
    group_max_concurrency: int | None = Field(default=None, ge=1)


class RetryPolicy(_Closed):
    attempts: int = Field(default=3, ge=1, description="Attempts per point, transport only.")
    backoff_s: float = Field(default=1.0, ge=0)


class BreakerPolicy(_Closed):
    failure_threshold: int = Field(default=3, ge=1)
    recovery_after_s: float = Field(default=60.0, ge=0)
    drain_after_cooldowns: int = Field(default=2, ge=1)


class FitnessPolicy(_Closed):
    window: int = Field(default=20, ge=1, description="Outcomes remembered per device.")
    exploration: float = Field(default=0.1, ge=0, le=1)
    seed: int = 0
    pending_after_s: float = Field(
        default=600.0,
        gt=0,
        description="A point held on its device longer than its expected duration (that "
        "device's own history) plus this counts once against the device's fitness; time in "
        "benchlab's own queue never does.",
    )


class Policies(_Closed):
    retries: RetryPolicy = Field(default_factory=RetryPolicy)
    breaker: BreakerPolicy = Field(default_factory=BreakerPolicy)
    order: str = Field(
        default="spec",
        description="The order a device's workers take its points: spec, interleave, shuffle, "
        "a plug-in `package.module:function`, or a name of the `benchlab.order_policies` "
        "entry point group.",
    )
    order_seed: int = 0
    fitness: FitnessPolicy = Field(default_factory=FitnessPolicy)
    repeats: int = Field(
        default=1,
        ge=1,
        description="Run every point this many times, each repeat its own run (same series). "
        "`repeats` in the matrix says the same.",
    )
    max_cv: float = Field(
        default=0.10,
        gt=0,
        description="A run whose repeats vary more than this coefficient of variation "
        "(stddev / mean of a headline rate) is marked unstable (default 0.10, i.e. 10%).",
    )
    max_in_flight: int | None = Field(
        default=None,
        ge=1,
        description="At most this many points running at once across all devices "
        "(the concurrent scheduler's global slot limit); none by default.",
    )


class GateConfig(_Closed):
    """A gate a sweep declares: bounds on a metric, and/or a minimum speedup over a baseline.

    Every condition given must hold. `min_speedup` with a `baseline` is value / baseline
    value (0.95: at most 5% slower than the baseline); without one, the metric is itself a
    speedup (e.g. `speedup`, peak over batch-1) and must reach `min_speedup`.
    """

    name: str | None = Field(default=None, description="Shown in verdicts (default: metric).")
    metric: str = Field(default="peak_tok_per_sec", description="A record metric.")
    min: float | None = Field(default=None, description="The metric must be >= this.")
    max: float | None = Field(default=None, description="The metric must be <= this.")
    min_speedup: float | None = Field(default=None, gt=0)
    baseline: str | None = Field(
        default=None,
        description="A run id, or `previous`: the newest earlier ok run of the same series "
        "(the first run of a series has none, and the speedup condition is skipped).",
    )
    required: bool = Field(default=True, description="A failed required gate fails CI.")
    model: str | None = Field(default=None, description="Only points of this model.")
    device: str | None = Field(default=None, description="Only points on this device.")

    @model_validator(mode="after")
    def _some_condition(self) -> GateConfig:
        if self.min is None and self.max is None and self.min_speedup is None:
            raise ValueError("a gate needs min, max or min_speedup")
        return self


class SweepConfig(_Closed):
    """`experiments/sweeps/<name>.yaml`."""

    experiment: str
    description: str | None = None
    devices: dict[str, DeviceConfig]
    resource_groups: dict[str, ResourceGroupConfig] = Field(default_factory=dict)
    policies: Policies = Field(default_factory=Policies)
    matrix: dict[str, Any] = Field(
        description="Axes (backend, model, precision, mode, threads, prompt_tokens, "
        "gen_tokens, batch_sizes, device ...) whose product expands into RunSpecs."
    )
    tags: list[str] = Field(default_factory=list)
    revision: str | None = Field(
        default=None,
        description="The revision of the thing under test (a commit, a build): the version "
        "axis along which regressions are found. A `params.revision` axis overrides it.",
    )
    public_text: list[str] = Field(
        default_factory=list,
        description="Params whose values the public catalog may show as (scrubbed, bounded) "
        "text; every other param value is published only as a number, a boolean or a short "
        "slug, and withheld otherwise.",
    )
    metrics: dict[str, Any] | None = Field(
        default=None,
        description="Extra metrics the runs report, declared once with a unit and a direction "
        "({p99_ms: {unit: ms, better: lower}}); the catalog and every verb rank them so.",
    )
    gates: list[GateConfig] = Field(
        default_factory=list,
        description="Gates each ok point is checked against (benchlab.detect.gates); the verdict "
        "goes into the run's manifest by `bench run --publish` or `bench regression --gates`.",
    )


AXES = (
    "device",
    "backend",
    "model",
    "precision",
    "mode",
    "threads",
    "prompt_tokens",
    "gen_tokens",
    "batch_sizes",
    "params",
)
"""A sweep matrix's axes, in product order: the first axis varies slowest (`sweep.expand`
expands them; a run's README lists them)."""


class RunSpec(_Closed):
    """One point of a sweep on exactly one device: the device is the thing measured."""

    spec_id: str
    experiment: str
    device: str
    machine_id: str
    backend: str
    model: str
    precision: str
    mode: str
    threads: int | None = None
    prompt_tokens: int | None = None
    gen_tokens: int | None = None
    batch_sizes: list[int] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict, description="Backend-specific knobs.")
    tags: list[str] = Field(default_factory=list)
    failover_from: str | None = None
    repeat: int | None = Field(
        default=None,
        ge=1,
        description="The repeat index (round) of this point; absent for the first. Part of "
        "the spec id and run id, not of the measurement identity: repeats share a series.",
    )


class SweepState(_Document):
    """`runs/sweeps/<experiment>/state.json`: fixed when a sweep first starts."""

    SCHEMA_ID: ClassVar[str] = "benchmark/sweep-state.v1"
    schema_: str = Field(default=SCHEMA_ID, alias="$schema")
    experiment: str
    stamp: str = Field(description="Sweep stamp YYYYMMDDThhmmssZ, part of every run id.")
    started_at: str
    config_path: str | None = None


# --- the agent protocol -------------------------------------------------------------------


class AgentTask(_Closed):
    """What the controller asks the device-side agent to run (`agent run`, JSON on stdin).

    argv may use `{python}` (the agent's interpreter) and `{agent}` (the agent zipapp).
    """

    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = 3600.0
    sample_interval_s: float = 0.5
    stdin: str | None = None


class AgentEnvelope(_Open):
    """What the agent answers for `run`: stamps, exit code, raw output, telemetry."""

    started_at: float = Field(description="Device clock, UNIX seconds.")
    finished_at: float
    exit_code: int | None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    telemetry: dict[str, Any] = Field(default_factory=dict)
    resources: dict[str, Any] = Field(
        default_factory=dict,
        description="peak_rss_mb, gpu_mem_peak_mb, energy_j where the device measured them.",
    )
    system: dict[str, Any] | None = None


DOCUMENTS: tuple[type[_Document], ...] = (
    MachineSpecs,
    MachineInventory,
    RunManifest,
    KernelResults,
    BatchResults,
    RunRecord,
    Catalog,
    SweepState,
    CommandWorkload,
)
"""Every versioned file format; each gets `schemas/<name>.json`."""
