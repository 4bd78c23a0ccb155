"""Progress lines in their exact style, and the closing line."""

from __future__ import annotations

import io

from tests.sweep.lab import lab_config

from benchlab.models import RunRecord
from benchlab.sweep.expand import expand
from benchlab.sweep.progress import (
    LineProgress,
    QuietProgress,
    RichProgress,
    make_progress,
    point_line,
    summary_line,
)


def rec(spec, **kw) -> RunRecord:
    base = dict(run_id="r", spec_id=spec.spec_id, machine_id=spec.machine_id, device=spec.device)
    return RunRecord(**{**base, **kw})


def test_point_line_matches_the_seed() -> None:
    spec = expand(lab_config(matrix={"precision": "q8"}))[0]
    ok = rec(
        spec, status="ok", metrics={"prefill_tok_per_sec": 56.83, "decode_tok_per_sec": 15.564}
    )
    assert point_line(5, 25, spec, ok) == (
        "[  5/25] laptop reference smollm2-135m q8 t4 p128/n64: prefill 56.8 t/s, decode 15.56 t/s"
    )
    failed = rec(spec, status="failed", failure_kind="transport", error="ssh dropped")
    assert point_line(6, 25, spec, failed) == (
        "[  6/25] laptop reference smollm2-135m q8 t4 p128/n64: FAILED (transport): ssh dropped"
    )
    retried = rec(spec, status="ok", metrics={"decode_tok_per_sec": 1.0}, attempt=2, attempts=3)
    assert point_line(1, 1, spec, retried).endswith("decode 1.00 t/s (attempt 2 of 3)")
    custom = rec(spec, status="ok", metrics={"latency_ms": 12.345})
    assert point_line(1, 1, spec, custom).endswith(": latency_ms 12.35")


def test_summary_line() -> None:
    assert summary_line(25, 324.0, 0) == "25 run(s) in 5.4 min, 0 failed"
    assert summary_line(3, 12.34, 1) == "3 run(s) in 12.3 s, 1 failed"
    assert summary_line(1, 7200, 0) == "1 run(s) in 2.0 h, 0 failed"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_kinds_and_rich_bar_on_tty_only() -> None:
    assert isinstance(make_progress(io.StringIO(), quiet=True), QuietProgress)
    plain = make_progress(io.StringIO())
    assert type(plain) is LineProgress
    stream = Tty()
    bar = make_progress(stream)
    assert isinstance(bar, RichProgress)
    spec = expand(lab_config())[0]
    bar.start(2)
    bar.point_started(spec)
    bar.point_done(1, 2, spec, rec(spec, status="ok", metrics={"decode_tok_per_sec": 2.0}))
    bar.event("DOWN pi5 taken out of service after 3 transport failures: x")
    bar.close()
    text = stream.getvalue()
    assert "[  1/2] laptop reference smollm2-135m f32 t4 p128/n64: decode 2.00 t/s" in text
    assert "DOWN pi5" in text
