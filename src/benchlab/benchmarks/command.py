"""The `command` backend: any command, with a JSON or regex parser. The escape hatch.

spec.params:
    argv       list of strings (required). Placeholders: {python}, {agent} (the agent
               expands them on the device), and {model}, {precision}, {threads},
               {prompt_tokens}, {gen_tokens}, {batch} (expanded here from the spec).
    parser     "json" (default) or "regex".
    fields     json: {"prefill": PATH, "decode": PATH, "peak": PATH}, PATH like
               "results.decode.tok_s" or "tests[1].avg_ts" (at least one of the three).
    pattern    regex: one pattern (or a list) with named groups prefill / decode / peak.
    stream     "stdout" (default) or "stderr": which output to parse.
    requires   binaries that must be on the device's PATH (default: argv[0] unless it is
               a placeholder); requires_modules: Python modules for the agent's interpreter.
    env, timeout_s (3600).
    version    the version of the thing the command measures (the version axis of its
               series: `bench compare --by build` and the regression detector use it).

    metrics    extra metrics the command reports, declared once with a unit and a direction:
               {p99_ms: {unit: ms, better: lower}, rps: {unit: requests/s, better: higher}}
               (a sweep config's top-level `metrics:` is merged in here by the expansion).
               They reach the catalog as `extra_metrics` (ARCHITECTURE.md, Metrics).

prefill, decode and peak are tokens per second: prefill becomes a kernel.json prefill point
at spec.prompt_tokens, decode the decode result and the batch-1 point, peak the batch-curve
peak at the largest of spec.batch_sizes. `fields` (or a regex group) may also name any other
metric of `benchlab.metrics.REGISTRY` (decode_ms_per_token, ttft_ms, peak_rss_mb, time_s ...,
in the registry's unit) or one declared under `metrics`; those are kept as the run's metrics
beside the rates, in their own unit and direction, and never override a derived figure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from benchlab.benchmarks.base import Backend, ParsedRun
from benchlab.benchmarks.common import (
    batch_curve,
    check_finished,
    param,
    require,
    thread_env,
)
from benchlab.devices.base import Transport
from benchlab.errors import ConfigError, ParseError
from benchlab.layout import dump_model
from benchlab.metrics import CATALOG_METRICS, HEADLINE, declare
from benchlab.models import (
    AgentEnvelope,
    AgentTask,
    BatchResults,
    CommandWorkload,
    KernelResults,
    RunSpec,
)

NAMES = ("prefill", "decode", "peak")
OTHER_METRICS = tuple(m for m in CATALOG_METRICS if m not in HEADLINE)
"""Registry metrics a command may report directly, beside the three rates."""
WORKLOAD = "workload.json"
"""The optional run file that says what command made a run's numbers (CommandWorkload)."""
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def resolve(data: Any, path: str) -> Any:
    """The value at a dotted path with [index] steps; KeyError naming the step that failed."""
    value = data
    for match in _STEP.finditer(path):
        key, index = match.group(1), match.group(2)
        if key is not None:
            if not isinstance(value, dict) or key not in value:
                raise KeyError(f"{path}: no key {key!r}")
            value = value[key]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                raise KeyError(f"{path}: no item [{index}]")
            value = value[int(index)]
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise ParseError(f"{what}: expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ParseError(f"{what}: expected a number, got {value!r}") from exc


class CommandBackend(Backend):
    name = "command"

    def _params(self, spec: RunSpec) -> dict[str, Any]:
        where = f"{spec.spec_id}: command"
        argv = spec.params.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError(f"{where}: params.argv: required, a non-empty list of strings")
        parser = param(spec, "parser", "json")
        known = self._known(spec)
        if parser == "json":
            fields = spec.params.get("fields")
            if (
                not isinstance(fields, dict)
                or not fields
                or not all(isinstance(v, str) and v for v in fields.values())
            ):
                raise ConfigError(
                    f"{where}: params.fields: required for the json parser, a mapping of "
                    f"{', '.join(NAMES)} (or a metric name) to paths"
                )
            unknown = sorted(set(fields) - known)
            if unknown:
                raise ConfigError(
                    f"{where}: params.fields.{unknown[0]}: not prefill, decode, peak, a "
                    "registry metric (benchlab.metrics.REGISTRY) or one declared under "
                    "params.metrics"
                )
        elif parser == "regex":
            patterns = spec.params.get("pattern")
            patterns = [patterns] if isinstance(patterns, str) else patterns
            if not isinstance(patterns, list) or not patterns:
                raise ConfigError(f"{where}: params.pattern: required for the regex parser")
            groups: set[str] = set()
            for text in patterns:
                try:
                    groups |= set(re.compile(text).groupindex)
                except (re.error, TypeError) as exc:
                    raise ConfigError(f"{where}: params.pattern {text!r}: {exc}") from exc
            if not groups & known:
                raise ConfigError(
                    f"{where}: params.pattern: needs a named group prefill, decode, peak or "
                    "a metric name"
                )
        else:
            raise ConfigError(f"{where}: params.parser: {parser!r}; expected json or regex")
        if param(spec, "stream", "stdout") not in ("stdout", "stderr"):
            raise ConfigError(f"{where}: params.stream: expected stdout or stderr")
        return {"argv": argv, "parser": parser}

    @staticmethod
    def _known(spec: RunSpec) -> set[str]:
        """The names a field or regex group may carry: the rates, the registry's other
        metrics, and those the config declares."""
        declared = declare(f"{spec.spec_id}: command", spec.params.get("metrics"))
        return set(NAMES) | set(OTHER_METRICS) | set(declared)

    def check_available(self, device: Transport, spec: RunSpec) -> None:
        argv = self._params(spec)["argv"]
        binaries = spec.params.get("requires")
        if binaries is None:
            binaries = [] if argv[0].startswith("{") else [argv[0]]
        for binary in binaries:
            require(device, "binary", str(binary), self.name)
        for module in spec.params.get("requires_modules") or []:
            require(device, "module", str(module), self.name)

    def build_task(self, spec: RunSpec, run_id: str) -> AgentTask:
        where = f"{spec.spec_id}: command"
        argv = self._params(spec)["argv"]
        values = {
            "{model}": spec.model,
            "{precision}": spec.precision,
            "{threads}": "" if spec.threads is None else str(spec.threads),
            "{prompt_tokens}": "" if spec.prompt_tokens is None else str(spec.prompt_tokens),
            "{gen_tokens}": "" if spec.gen_tokens is None else str(spec.gen_tokens),
            "{batch}": ",".join(map(str, spec.batch_sizes)),
        }

        def fill(text: str) -> str:
            for key, value in values.items():
                text = text.replace(key, value)
            return text

        env = spec.params.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ConfigError(f"{where}: params.env: expected a mapping of names to strings")
        timeout = param(spec, "timeout_s", 3600.0)
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigError(f"{where}: params.timeout_s: expected seconds > 0, got {timeout!r}")
        return AgentTask(
            argv=[fill(a) for a in argv],
            env={**thread_env(spec.threads), **{k: fill(v) for k, v in env.items()}},
            timeout_s=float(timeout),
        )

    def _extract(self, text: str, spec: RunSpec, where: str) -> dict[str, float]:
        found: dict[str, float] = {}
        if param(spec, "parser", "json") == "json":
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise ParseError(
                    f"{where}: output is not JSON ({exc}); starts {text[:80]!r}"
                ) from exc
            for name, path in spec.params["fields"].items():
                try:
                    found[name] = _number(resolve(data, path), f"{where}: {name} ({path})")
                except KeyError as exc:
                    raise ParseError(f"{where}: {name}: {exc.args[0]}") from exc
            return found
        patterns = spec.params["pattern"]
        for pattern in [patterns] if isinstance(patterns, str) else patterns:
            match = re.search(pattern, text, re.MULTILINE)
            if match is None:
                raise ParseError(
                    f"{where}: pattern {pattern!r} does not match; output starts {text[:80]!r}"
                )
            for name in match.groupdict():
                if match.group(name) is not None and name in self._known(spec):
                    found[name] = _number(match.group(name), f"{where}: group {name!r}")
        return found

    def parse(self, envelope: AgentEnvelope, spec: RunSpec, run_id: str) -> ParsedRun:
        where = f"{run_id}: command"
        check_finished(envelope, spec, run_id, self.name)
        self._params(spec)
        text = envelope.stderr if param(spec, "stream", "stdout") == "stderr" else envelope.stdout
        found = self._extract(text, spec, where)
        named = {k: v for k, v in found.items() if k not in NAMES}
        found = {k: v for k, v in found.items() if k in NAMES}
        for name, value in found.items():
            if value <= 0:
                raise ParseError(f"{where}: {name} is not a positive rate: {value!r}")
        prefill = []
        if "prefill" in found and spec.prompt_tokens:
            tps = found["prefill"]
            prefill.append(
                {
                    "tokens": spec.prompt_tokens,
                    "median_ms": spec.prompt_tokens / tps * 1e3,
                    "tok_per_sec": tps,
                }
            )
        decode = None
        points = []
        if "decode" in found:
            tps = found["decode"]
            decode = {
                "decode_steps": spec.gen_tokens,
                "per_token_median_ms": 1e3 / tps,
                "tok_per_sec": tps,
            }
            points.append({"batch": 1, "agg_tok_per_sec": tps, "per_user_ms_per_tok": 1e3 / tps})
        if "peak" in found:
            size = max(spec.batch_sizes or [1])
            if size != 1 or not points:
                points.append(
                    {
                        "batch": size,
                        "agg_tok_per_sec": found["peak"],
                        "per_user_ms_per_tok": size / found["peak"] * 1e3,
                    }
                )
        curve = batch_curve(points)
        engine = f"command: {' '.join(spec.params['argv'])[:120]}"
        kernel = KernelResults.model_validate(
            {
                "$schema": KernelResults.SCHEMA_ID,
                "run_id": run_id,
                "engine": engine,
                "precision": spec.precision,
                "model": spec.model,
                "benchmark": {"prefill": prefill, "decode": decode},
            }
        )
        batch = BatchResults.model_validate(
            {
                "$schema": BatchResults.SCHEMA_ID,
                "run_id": run_id,
                "engine": engine,
                "model": spec.model,
                "precision": spec.precision,
                "workers": spec.threads,
                **curve,
            }
        )
        version = spec.params.get("version")
        facts = {"backend_version": str(version)} if version is not None else {}
        # Without a prompt size there is no kernel prefill point to hold the number.
        extra = (
            {"prefill_tok_per_sec": found["prefill"]} if "prefill" in found and not prefill else {}
        )
        workload = self.workload(spec, run_id, {**found, **named})
        return ParsedRun(
            kernel=kernel,
            batch=batch,
            metrics={**named, **extra},
            facts=facts,
            extra_files={WORKLOAD: dump_model(workload)},
        )

    def workload(self, spec: RunSpec, run_id: str, found: dict[str, float]) -> CommandWorkload:
        """`workload.json`: the command behind the numbers, kept beside them in the run dir
        (the config that named it may change or be gone by the time someone asks)."""
        task = self.build_task(spec, run_id)
        parser = param(spec, "parser", "json")
        patterns = spec.params.get("pattern") if parser == "regex" else None
        version = spec.params.get("version")
        return CommandWorkload(
            run_id=run_id,
            argv=list(spec.params["argv"]),
            command=task.argv,
            env_names=sorted(task.env),
            timeout_s=task.timeout_s,
            parser=parser,
            fields=spec.params.get("fields") if parser == "json" else None,
            pattern=[patterns] if isinstance(patterns, str) else patterns,
            stream=param(spec, "stream", "stdout"),
            version=None if version is None else str(version),
            threads=spec.threads,
            prompt_tokens=spec.prompt_tokens,
            gen_tokens=spec.gen_tokens,
            batch_sizes=list(spec.batch_sizes),
            reported=dict(sorted(found.items())),
        )
