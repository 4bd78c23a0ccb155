"""What a sweep tells the person watching it: one line per point, events, a closing line.

    [  5/25] laptop reference smollm2-135m q8 t4 p128/n64: prefill 56.8 t/s, decode 15.56 t/s
    [  6/25] pi5 reference smollm2-135m q8 t4 p128/n64: FAILED (transport): ssh dropped
    25 run(s) in 5.4 min, 0 failed

Three implementations of one small protocol: `LineProgress` (plain lines, for logs and pipes),
`RichProgress` (the same lines above a progress bar, on a terminal only) and `QuietProgress`
(nothing). Runners call `point_done`, `event` and `close`; `start` and `point_started` are
optional courtesies a runner may call when it knows them.
"""

from __future__ import annotations

import sys
from typing import IO, Any, Protocol, runtime_checkable

from benchlab.metrics import DECODE, PEAK, PREFILL
from benchlab.models import RunRecord, RunSpec
from benchlab.sweep.expand import DEFAULT_MODE
from benchlab.textout import escape_controls, raw


@runtime_checkable
class Progress(Protocol):
    def point_done(self, done: int, total: int, spec: RunSpec, record: RunRecord) -> None: ...

    def event(self, line: str) -> None: ...

    def close(self) -> None: ...


def spec_label(spec: RunSpec) -> str:
    """`laptop reference smollm2-135m q8 t4 p128/n64` (mode only when not the default)."""
    parts = [spec.device, spec.backend, spec.model, spec.precision]
    if spec.mode != DEFAULT_MODE:
        parts.append(spec.mode)
    if spec.threads is not None:
        parts.append(f"t{spec.threads}")
    shape = []
    if spec.prompt_tokens is not None:
        shape.append(f"p{spec.prompt_tokens}")
    if spec.gen_tokens is not None:
        shape.append(f"n{spec.gen_tokens}")
    if shape:
        parts.append("/".join(shape))
    if spec.repeat:
        parts.append(f"r{spec.repeat}")
    if spec.failover_from:
        parts.append(f"(failover from {spec.failover_from})")
    return " ".join(parts)


def _number(value: float) -> str:
    return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"


def metrics_text(metrics: dict[str, float | None]) -> str:
    """`prefill 56.8 t/s, decode 15.56 t/s`, else the peak, else the first few metrics."""
    parts = []
    if metrics.get(PREFILL.name) is not None:
        parts.append(f"prefill {metrics[PREFILL.name]:.1f} t/s")
    if metrics.get(DECODE.name) is not None:
        parts.append(f"decode {metrics[DECODE.name]:.2f} t/s")
    if not parts and metrics.get(PEAK.name) is not None:
        parts.append(f"peak {metrics[PEAK.name]:.1f} t/s")
    if not parts:
        parts = [
            f"{name} {_number(value)}"
            for name, value in sorted(metrics.items())[:3]
            if value is not None
        ]
    return ", ".join(parts) or "ok"


def point_line(done: int, total: int, spec: RunSpec, record: RunRecord) -> str:
    prefix = f"[{done:>3}/{total}] {spec_label(spec)}:"
    if record.status != "ok":
        kind = f" ({record.failure_kind})" if record.failure_kind else ""
        return f"{prefix} FAILED{kind}: {record.error or 'no reason given'}"
    line = f"{prefix} {metrics_text(record.metrics)}"
    if record.attempt > 1:
        line += f" (attempt {record.attempt} of {record.attempts})"
    return line


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def summary_line(runs: int, elapsed_s: float, failed: int) -> str:
    """`25 run(s) in 5.4 min, 0 failed`."""
    return f"{runs} run(s) in {duration_text(elapsed_s)}, {failed} failed"


class QuietProgress:
    """Says nothing (`--quiet`, and the library default)."""

    def start(self, total: int) -> None:
        pass

    def point_started(self, spec: RunSpec) -> None:
        pass

    def point_done(self, done: int, total: int, spec: RunSpec, record: RunRecord) -> None:
        pass

    def event(self, line: str) -> None:
        pass

    def close(self) -> None:
        pass


class LineProgress(QuietProgress):
    """One line per point and per event, flushed at once (logs, pipes, `dvc repro`)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdout

    def _print(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def point_done(self, done: int, total: int, spec: RunSpec, record: RunRecord) -> None:
        self._print(point_line(done, total, spec, record))

    def event(self, line: str) -> None:
        self._print(line)


class RichProgress(LineProgress):
    """The same lines, printed above a rich progress bar that shows the point in flight."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__(stream)
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        # rich draws its own styling codes: under the CLI's SafeStream, to the raw stream
        # (ARCHITECTURE.md, One reader and one writer path); each line is escaped in `_print`.
        self.console = Console(file=raw(self.stream), highlight=False)
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.task: Any = None

    def start(self, total: int) -> None:
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task("sweep", total=total)

    def point_started(self, spec: RunSpec) -> None:
        if self.task is not None:
            self.bar.update(self.task, description=spec_label(spec))

    def _print(self, line: str) -> None:
        self.console.print(escape_controls(line), markup=False, highlight=False, soft_wrap=True)

    def point_done(self, done: int, total: int, spec: RunSpec, record: RunRecord) -> None:
        self.start(total)
        self._print(point_line(done, total, spec, record))
        self.bar.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.task = None


def make_progress(stream: IO[str] | None = None, *, quiet: bool = False) -> QuietProgress:
    """Quiet when asked; a progress bar on a terminal; plain lines everywhere else."""
    if quiet:
        return QuietProgress()
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return RichProgress(stream)
    return LineProgress(stream)
