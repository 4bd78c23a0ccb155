"""Sweeps: config, expansion into RunSpecs, the journal (resume), one attempt at a point,
the sequential runner (the reference), and the concurrent scheduler's parts."""
