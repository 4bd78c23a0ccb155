"""Every source file stays readable: none over 1,000 lines, no function over 120, no state
spread over private mixins.

A long file or function is where a fix lands in the wrong place or a reviewer stops
reading; the limits are checked on the syntax tree so a rule broken anywhere under
src/benchlab fails here with the file, the function and its length.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "benchlab"
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 120


def _sources() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def _function_lengths(path: Path) -> list[tuple[str, int, int]]:
    """(qualified name, first line, length) of every function, nested ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    found.append((name, child.lineno, length))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def test_the_walk_sees_the_package() -> None:
    files = _sources()
    assert len(files) > 50, f"expected the benchlab sources under {SOURCE}"
    assert any(
        name == "run_sweep_concurrent"
        for name, _, _ in _function_lengths(SOURCE / "sweep" / "scheduler.py")
    )


def test_no_source_file_over_the_line_limit() -> None:
    too_long = []
    for path in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_FILE_LINES:
            too_long.append(f"{path.relative_to(SOURCE.parent)}: {lines} lines")
    assert not too_long, f"files over {MAX_FILE_LINES} lines: {too_long}"


def test_no_function_over_the_line_limit() -> None:
    too_long = []
    for path in _sources():
        for name, line, length in _function_lengths(path):
            if length > MAX_FUNCTION_LINES:
                too_long.append(f"{path.relative_to(SOURCE.parent)}:{line} {name}: {length} lines")
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"


MAX_TOP_LEVEL_MODULES = 8
"""The ground floor (ARCHITECTURE.md, Packages and floors): `__init__` and `__main__` aside."""

MAX_LAZY_IMPORTS = 20
"""Imports of benchlab modules inside functions, outside `cli/` (start-up time) and `agent/`
(a zipapp of its own): an import inside a function hides an edge of the package graph, so
it is kept for an optional heavy dependency (numpy, pydantic, Fabric) or start-up time."""

LAZY_REASON = "# lazy:"
"""The one-line reason an import inside a function carries, on its line or on the line above
the run of imports it belongs to."""


def _lazy_benchlab_imports(path: Path) -> list[int]:
    """Lines of imports of benchlab modules inside a function body (relative ones included)."""
    found: list[int] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                if isinstance(child, ast.Import):
                    names = [alias.name for alias in child.names]
                else:
                    names = ["benchlab"] if child.level else [child.module or ""]
                if inside and any(n == "benchlab" or n.startswith("benchlab.") for n in names):
                    found.append(child.lineno)
                continue
            function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, inside or function)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), False)
    return found


def _unexplained_lazy_imports(path: Path) -> list[int]:
    """Lines of imports of benchlab modules inside a function with no `# lazy:` reason: on
    the import's own line, or on the line above the run of imports it starts or belongs to."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    lazy = set(_lazy_benchlab_imports(path))
    found: list[int] = []

    def explained(run: list[ast.stmt]) -> bool:
        above = lines[run[0].lineno - 2].strip() if run[0].lineno >= 2 else ""
        return above.startswith(LAZY_REASON)

    for node in ast.walk(ast.parse(text, filename=str(path))):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list):
                continue
            run: list[ast.stmt] = []
            for statement in [*statements, None]:
                if isinstance(statement, ast.Import | ast.ImportFrom):
                    run.append(statement)
                    continue
                found.extend(
                    n.lineno
                    for n in run
                    if n.lineno in lazy
                    and LAZY_REASON not in lines[n.lineno - 1]
                    and not explained(run)
                )
                run = []
    return sorted(found)


def _private_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{node.lineno}: {node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.level or (node.module or "").startswith("benchlab"))
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_ground_floor_holds_at_most_eight_modules() -> None:
    top = sorted(p.name for p in SOURCE.glob("*.py") if not p.name.startswith("__"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"top-level modules: {top}"


def test_imports_inside_functions_only_go_down() -> None:
    counted = {
        f"{path.relative_to(SOURCE)}:{line}"
        for path in _sources()
        if not path.relative_to(SOURCE).as_posix().startswith(("cli/", "agent/"))
        for line in _lazy_benchlab_imports(path)
    }
    assert len(counted) <= MAX_LAZY_IMPORTS, sorted(counted)


def test_every_import_inside_a_function_says_why() -> None:
    """In `cli/` too: start-up time, or the heavy dependency it keeps off the import path."""
    found = [
        f"{path.relative_to(SOURCE.parent)}:{line}"
        for path in _sources()
        for line in _unexplained_lazy_imports(path)
    ]
    assert not found, f"imports inside functions without a `{LAZY_REASON}` reason: {found}"


def test_no_private_name_imports() -> None:
    """`from benchlab.x import _name` reaches into another module: a name used across modules
    is public in its home (or the code moves to where it is used)."""
    found = [f"{p.relative_to(SOURCE)}:{hit}" for p in _sources() for hit in _private_imports(p)]
    assert not found, found


def test_no_class_shares_its_state_across_private_mixins() -> None:
    """A class with two or more private bases is one object's state spread over files that
    each pretend to own it (the scheduler was once five): state goes in one typed object
    that the parts receive, and no `__all__` exports a private name."""
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(SOURCE.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                private = [
                    b.id for b in node.bases if isinstance(b, ast.Name) and b.id.startswith("_")
                ]
                if len(private) > 1:
                    found.append(f"{where}: class {node.name}({', '.join(private)})")
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                names = [e.value for e in getattr(node.value, "elts", [])]
                found.extend(
                    f"{where}: __all__ exports {n}"
                    for n in names
                    if isinstance(n, str) and n.startswith("_") and not n.startswith("__")
                )
    assert not found, found


def test_the_shape_checks_see_what_they_count(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from benchlab.x import _hidden, shown\n"
        "def f():\n    from benchlab import y\n    import json\n    from . import z\n"
    )
    assert _lazy_benchlab_imports(module) == [3, 5]
    assert _unexplained_lazy_imports(module) == [3, 5]
    assert _private_imports(module) == ["1: benchlab.x._hidden"]
    module.write_text(
        "def f():\n    # lazy: numpy\n    from benchlab import y\n    from . import z\n"
        "    import json\n\n    from benchlab import w  # lazy: pydantic\n"
        "    if y:\n        from benchlab import v\n"
    )
    assert _lazy_benchlab_imports(module) == [3, 4, 7, 9]
    assert _unexplained_lazy_imports(module) == [9]
