"""Telemetry summaries (pure logic) and a live sampler on this machine."""

from __future__ import annotations

import time

from benchlab.agent.telemetry import CHANNELS, Sampler, summarise


def test_summarise_gives_min_median_max_and_none_for_missing_channels():
    samples = [
        {"t_s": 0.0, "load_1m": 1.0, "temperature_c": None},
        {"t_s": 0.5, "load_1m": 3.0, "temperature_c": None},
        {"t_s": 1.0, "load_1m": 2.0},
    ]
    out = summarise(samples)
    assert out["load_1m"] == {"min": 1.0, "median": 2.0, "max": 3.0}
    assert out["temperature_c"] is None
    assert set(CHANNELS) <= set(out)


def test_sampler_takes_samples_while_running():
    sampler = Sampler(0.05)
    sampler.start()
    time.sleep(0.3)
    summary = sampler.stop()
    assert len(summary["samples"]) >= 3
    assert summary["interval_s"] == 0.05
    assert set(CHANNELS) <= set(summary)
    assert all(s["t_s"] >= 0 for s in summary["samples"])
