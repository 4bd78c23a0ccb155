"""benchlab's modules import each other in one direction.

A cycle among imports that run when a module is loaded (top-level imports) makes the
import order matter and breaks on the first refactoring that touches it; a cycle closed by
an import inside a function (a lazy import) still ties two modules into one, so that
neither can be read, tested or moved alone. The graph is read from the source with `ast`,
not by importing: `if TYPE_CHECKING:` blocks are left out of the runtime graph (they never
run), and `from pkg import name` is an edge to `pkg.name` where that is a module, else to
`pkg`.

What holds today: no cycle anywhere, lazy imports included (`test_lazy_cycles_are_listed`
with an empty `LAZY_CYCLES_ALLOWED`), and none in `benchlab.query` even counting
TYPE_CHECKING blocks: its columnar cache is imported by the verbs and never imports them.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

LAZY_CYCLES_ALLOWED: tuple[str, ...] = ()
"""Packages whose modules may still close cycles through lazy (function-level) imports:
none since the catalog restructuring moved the shared format pieces into catalog.format and
the point cap into sweep.expand. A lazy cycle anywhere fails; the failure lists every edge."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    lazy: bool  # inside a function body
    typing_only: bool  # inside `if TYPE_CHECKING:`


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted((root / "benchlab").rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: str, package: bool) -> Iterator[str]:
    """The modules an import statement names (not yet filtered to benchlab's)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        parts = module.split(".") if package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    for alias in node.names:
        yield f"{base}.{alias.name}"  # a submodule, if it is one
        yield base


def _edges_of(module: str, path: Path, known: set[str]) -> Iterator[Edge]:
    package = path.name == "__init__.py"

    def walk(node: ast.AST, lazy: bool, typing_only: bool) -> Iterator[Edge]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for part in child.body:
                    yield from walk_one(part, lazy, True)
                for part in child.orelse:
                    yield from walk_one(part, lazy, typing_only)
                continue
            yield from walk_one(child, lazy, typing_only)

    def walk_one(node: ast.AST, lazy: bool, typing_only: bool) -> Iterator[Edge]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = list(_targets(node, module, package))
            if isinstance(node, ast.Import):
                found = [n for n in names if n in known]
            else:  # per alias: the submodule if there is one, else the package it came from
                pairs = zip(names[::2], names[1::2], strict=True)
                found = [sub if sub in known else base for sub, base in pairs]
                found = [n for n in found if n in known]
            for target in found:
                if target != module:
                    yield Edge(module, target, lazy, typing_only)
            return
        inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield from walk(node, inner, typing_only)

    yield from walk(ast.parse(path.read_text(encoding="utf-8"), str(path)), False, False)


@functools.lru_cache(maxsize=4)
def _edges_under(root: Path) -> tuple[Edge, ...]:
    modules = _modules(root)
    known = set(modules)
    found = (edge for name, path in modules.items() for edge in _edges_of(name, path, known))
    return tuple(dict.fromkeys(found))  # one edge per (source, target, kind)


def import_edges(root: Path = SRC) -> list[Edge]:
    """Every import of a benchlab module by another, each once per kind."""
    return list(_edges_under(root))


def cyclic_groups(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def _describe(groups: list[list[str]], edges: list[Edge]) -> str:
    lines = []
    for group in groups:
        members = set(group)
        lines.append("cycle among " + ", ".join(group) + ":")
        lines += [
            f"  {e.source} -> {e.target}{' (lazy)' if e.lazy else ''}"
            f"{' (TYPE_CHECKING)' if e.typing_only else ''}"
            for e in edges
            if e.source in members and e.target in members
        ]
    return "\n".join(lines)


def test_no_cycle_among_top_level_imports() -> None:
    edges = [e for e in import_edges() if not e.lazy and not e.typing_only]
    groups = cyclic_groups(edges)
    assert not groups, _describe(groups, edges)


def test_no_cycle_at_all_in_query() -> None:
    """The query verbs import the columnar cache, which imports the catalog reader and never
    the verbs back: not at load time, not in a function, not for the type checker."""
    edges = [
        e
        for e in import_edges()
        if e.source.startswith("benchlab.query") and e.target.startswith("benchlab.query")
    ]
    groups = cyclic_groups(edges)
    assert not groups, _describe(groups, edges)


def test_columnar_cache_never_imports_the_verbs() -> None:
    above = ("benchlab.query.verbs", "benchlab.query.show", "benchlab.query.render")
    wrong = [
        e
        for e in import_edges()
        if e.source.startswith("benchlab.query.colcache") and e.target.startswith(above)
    ]
    wrong += [
        e
        for e in import_edges()
        if e.source.startswith("benchlab.catalog") and e.target.startswith("benchlab.query")
    ]
    assert not wrong, "\n".join(f"{e.source} -> {e.target}" for e in wrong)


def test_lazy_cycles_are_listed() -> None:
    """Cycles closed by lazy imports: none outside `LAZY_CYCLES_ALLOWED` (which is empty)."""
    edges = [e for e in import_edges() if not e.typing_only]
    groups = cyclic_groups(edges)
    outside = [
        group
        for group in groups
        if not any(all(m.startswith(p + ".") for m in group) for p in LAZY_CYCLES_ALLOWED)
    ]
    assert not outside, _describe(outside, edges)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import benchlab.b\n", [("benchlab.b", False, False)]),
        ("from benchlab import b\n", [("benchlab.b", False, False)]),
        ("from benchlab.b import thing\n", [("benchlab.b", False, False)]),
        ("from . import b\n", [("benchlab.b", False, False)]),
        ("def f():\n    from benchlab.b import thing\n", [("benchlab.b", True, False)]),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from benchlab.b import T\n",
            [("benchlab.b", False, True)],
        ),
        ("import os\nfrom benchlab import nothing\n", [("benchlab", False, False)]),
    ],
)
def test_edges_are_read_as_python_runs_them(
    tmp_path: Path, source: str, expected: list[tuple[str, bool, bool]]
) -> None:
    package = tmp_path / "benchlab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "b.py").write_text("")
    (package / "a.py").write_text(source)
    found = [(e.target, e.lazy, e.typing_only) for e in import_edges(tmp_path)]
    assert found == expected


def test_a_cycle_is_found(tmp_path: Path) -> None:
    """The finder itself: a lazy cycle of three modules is one group."""
    package = tmp_path / "benchlab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from benchlab import b\n")
    (package / "b.py").write_text("from benchlab import c\n")
    (package / "c.py").write_text("def f():\n    from benchlab import a\n")
    (package / "d.py").write_text("from benchlab import a\n")
    edges = import_edges(tmp_path)
    assert cyclic_groups(edges) == [["benchlab.a", "benchlab.b", "benchlab.c"]]
    assert cyclic_groups([e for e in edges if not e.lazy]) == []


FLOORS: tuple[tuple[str, ...], ...] = (
    ("ground",),
    ("runtime",),
    ("detect", "redact", "agent"),
    ("devices",),
    ("benchmarks",),
    ("catalog",),
    ("sweep", "importers"),
    ("machines",),
    ("query",),
    ("observe", "publish"),
    ("cli",),
)
"""benchlab's packages from the ground up (ARCHITECTURE.md, Packages and floors). A package
imports only packages on lower floors (two on one floor do not import each other); `ground`
is the top-level modules and the package root itself."""

FRONT_DOORS = {
    ("benchlab", "benchlab.query.api"): "`benchlab.open_catalog`, loaded on first use",
    ("benchlab.__main__", "benchlab.cli"): "`python -m benchlab` is the CLI",
}
"""The package root's two doors, the only imports that go up."""


def package_of(module: str) -> str:
    """`benchlab.sweep.expand` -> `sweep`; a top-level module or the root -> `ground`."""
    parts = module.split(".")
    if len(parts) < 2:
        return "ground"
    if (SRC / "benchlab" / parts[1]).is_dir():
        return parts[1]
    return "ground"


def floor_of(package: str) -> int:
    for index, floor in enumerate(FLOORS):
        if package in floor:
            return index
    raise AssertionError(f"package {package!r} has no floor in FLOORS")


def test_every_package_has_a_floor() -> None:
    packages = {p.name for p in (SRC / "benchlab").iterdir() if (p / "__init__.py").is_file()}
    named = {name for floor in FLOORS for name in floor}
    assert packages | {"ground"} == named, "FLOORS must name every package exactly"


def test_no_package_imports_one_above_it() -> None:
    """Module level, in a function or for the type checker alike: an import from a package
    to one on its own floor or above ties the lower one to the upper."""
    wrong = []
    for edge in import_edges():
        source, target = package_of(edge.source), package_of(edge.target)
        if source == target or (edge.source, edge.target) in FRONT_DOORS:
            continue
        if floor_of(target) >= floor_of(source):
            wrong.append(f"{edge.source} ({source}) -> {edge.target} ({target})")
    assert not wrong, "imports that point up a floor:\n" + "\n".join(sorted(set(wrong)))


def test_the_floor_check_sees_a_lazy_import_upward(tmp_path: Path) -> None:
    package = tmp_path / "benchlab"
    for name in ("catalog", "sweep"):
        (package / name).mkdir(parents=True)
        (package / name / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "catalog" / "build.py").write_text("def f():\n    from benchlab.sweep import x\n")
    (package / "sweep" / "x.py").write_text("")
    edges = import_edges(tmp_path)
    assert [(e.source, e.target, e.lazy) for e in edges] == [
        ("benchlab.catalog.build", "benchlab.sweep.x", True)
    ]
