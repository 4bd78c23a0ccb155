"""YAML that a person wrote, parsed within bounds (the sweep configs).

The file is hostile until proven otherwise: a YAML alias bomb (`&a [*b, *b, ...]` nine
levels deep is a few hundred bytes that expand to a billion nodes) and nesting deep enough to
overflow a parser are refused with one line naming the file, before anything is built from
the data. Below every package that reads a sweep config: the sweep itself, and the gates
(`detect.gates`), which read the gates a sweep declared when the catalog is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from benchlab.errors import ConfigError
from benchlab.files import read_config_text

MAX_CONFIG_BYTES = 1024 * 1024
"""A sweep config is a page of YAML; a megabyte is already not one."""
MAX_YAML_NODES = 100_000
"""Nodes after every alias is expanded: a real config has hundreds, a bomb has billions."""
MAX_YAML_DEPTH = 64
"""Nesting a real config never reaches; the parser recurses once per level."""


def _check_yaml_graph(root: yaml.Node, where: str) -> None:
    """Refuse a node graph whose aliases expand past MAX_YAML_NODES, or that nests too deep.

    Why here, between composing and constructing: PyYAML shares an aliased node, so the
    composed graph stays small, but everything downstream (validation, expansion, hashing)
    walks the expanded tree. The expanded size is counted once per distinct node (memoised),
    so the check is linear in the file, not in what it expands to. A node that contains
    itself is refused too.
    """
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        key = id(node)
        if depth > MAX_YAML_DEPTH:
            raise ConfigError(f"{where}: nested deeper than {MAX_YAML_DEPTH} levels; refused")
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if children_done:
            on_path.discard(key)
            total = 1 + sum(size[id(child)] for child in children)
            if total > MAX_YAML_NODES:
                raise ConfigError(
                    f"{where}: YAML aliases expand to more than {MAX_YAML_NODES} nodes; "
                    "refused (write the values out, or use fewer nested aliases)"
                )
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            raise ConfigError(f"{where}: a YAML alias refers to itself; refused")
        on_path.add(key)
        stack.append((node, depth, True))
        for child in children:
            if id(child) in on_path:
                raise ConfigError(f"{where}: a YAML alias refers to itself; refused")
            if id(child) not in size:
                stack.append((child, depth + 1, False))


def load_yaml_bounded(text: str, where: str) -> Any:
    """yaml.safe_load with limits on size, nesting and alias expansion; errors name `where`.

    The pure-Python SafeLoader on purpose: libyaml's C composer (CSafeLoader) segfaults on
    100k nested `[`, where the Python one raises RecursionError, which is caught here.
    """
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where}: larger than {MAX_CONFIG_BYTES} bytes; refused")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_graph(node, where)
        return loader.construct_document(node)
    except RecursionError:
        raise ConfigError(f"{where}: nested too deep to parse; refused") from None
    finally:
        loader.dispose()


def read_config_data(path: str | Path) -> Any:
    """A config file's YAML, bounded (`load_yaml_bounded`), not yet validated: what
    `bench inject` lays its axes over before the variant is checked as a whole."""
    where = str(path)
    text = read_config_text(path)
    if text is None:
        raise ConfigError(f"{where}: file not found")
    try:
        data = load_yaml_bounded(text, where)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        position = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        raise ConfigError(f"{where}: {position}malformed YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: malformed YAML: {exc}") from None
    return data
