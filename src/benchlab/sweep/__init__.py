"""Sweeps: config, expansion into RunSpecs, the journal (resume), one attempt at a point,
and the one scheduler that runs a sweep sequentially or `--concurrent` (scheduler.py)."""
