"""benchlab: benchmark sweeps across a fleet of unlike machines, kept honest."""

__version__ = "0.1.0"
