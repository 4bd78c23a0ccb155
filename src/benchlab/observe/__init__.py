"""Observers, never in the write path: the Prometheus exporter and device health."""
