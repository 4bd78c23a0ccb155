"""The Grafana dashboard imports as is and graphs only metrics the exporter serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchlab.observe.exporter import POINT_LABELS

DASHBOARD = Path(__file__).resolve().parents[2] / "grafana" / "benchlab-sweep.json"
EXPORTED = {
    "benchlab_device_up",
    "benchlab_clock_offset_seconds",
    "benchlab_clock_uncertainty_seconds",
    "benchlab_clock_agreeing",
    "benchlab_cpu_quota_cores",
    "benchlab_runs_finished",
    "benchlab_runs_in_flight",
    "benchlab_breaker_trips",
    "benchlab_transport_failures",
    "benchlab_point_prefill_tokens_per_second",
    "benchlab_point_decode_tokens_per_second",
    "benchlab_point_peak_tokens_per_second",
    "benchlab_point_power_watts",
    "benchlab_point_temperature_celsius",
}


def test_dashboard_uses_a_datasource_variable_and_known_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert dashboard["uid"] and dashboard["title"]
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    used = set()
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
        for target in panel["targets"]:
            used |= set(re.findall(r"benchlab_[a-z_]+", target["expr"]))
    assert used <= EXPORTED, used - EXPORTED
    assert {"benchlab_device_up", "benchlab_point_decode_tokens_per_second"} <= used


def test_point_panels_show_every_swept_axis() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        legend = panel["targets"][0]["legendFormat"]
        if "per point" in panel["title"] and "throughput" in panel["title"]:
            for label in POINT_LABELS:
                assert "{{" + label + "}}" in legend, (panel["title"], label)
