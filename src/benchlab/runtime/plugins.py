"""Plug-ins that installed packages register in an entry point group: order policies
(`sweep.order`) and backends (`benchmarks`) are found by name the same way."""

from __future__ import annotations

from importlib import metadata


def plugin_names(group: str) -> set[str]:
    """The names installed packages register in entry point `group`."""
    return {ep.name for ep in metadata.entry_points(group=group)}


def load_plugin(group: str, name: str) -> object:
    """What the first entry point called `name` in `group` names, imported; None when no
    installed package registers that name."""
    found = [ep for ep in metadata.entry_points(group=group) if ep.name == name]
    return found[0].load() if found else None
