"""Every source file stays readable: none over 1,000 lines, no function over 120.

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
