"""Comments cite ARCHITECTURE.md, and what they cite is there.

A comment, docstring or test that names a document outside the repository (a design
document, an issue by number, a brief) sends a reader somewhere they cannot go; one that
names a section or an invariant ARCHITECTURE.md does not hold is as bad. Both are checked over
src/, tests/, tools/ and docs/ (test data included), README.md and ARCHITECTURE.md itself;
the comments live in the sources, so this reads text, not imports.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("src", "tests", "tools", "docs")
DOCUMENTS = ("README.md", "ARCHITECTURE.md")  # CHANGELOG.md names issues: it is their log
SUFFIXES = {".py", ".sh", ".md", ".yaml", ".yml", ".toml", ".json"}
# Spelled in two parts so that this file does not match itself.
OUTSIDE = re.compile(
    "DESIGN" + r"\.md|[Ss]eed" + r" 00[0-9]|\b[Ii]ssues?" + r" \d+|\b[Ii]ssue" + r" '"
    r"|\bthe" + r" brief\b|[Ss]tarting" + r" design"
)
CITATION = re.compile(
    r"ARCHITECTURE\.md,\s+(invariants?\s+\d+(?:(?:,|\s+and)\s+\d+)*|[A-Z][A-Za-z ]*?)"
    r"(?=\s*[):;,.\"]|\s*$)"
)


def _texts() -> list[tuple[Path, str]]:
    files = [p for base in SOURCES for p in sorted((ROOT / base).rglob("*"))]
    files += [ROOT / name for name in DOCUMENTS]
    return [
        (p, p.read_text(encoding="utf-8"))
        for p in files
        if p.suffix in SUFFIXES and p.is_file() and "__pycache__" not in p.parts
    ]


def _architecture() -> tuple[set[str], set[int]]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    sections = {line[3:].strip() for line in text.splitlines() if line.startswith("## ")}
    invariants = {int(n) for n in re.findall(r"^(\d+)\. \*\*", text, re.MULTILINE)}
    return sections, invariants


def test_no_comment_cites_a_document_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for path, text in _texts()
        for m in OUTSIDE.finditer(text)
    ]
    assert found == []


def test_every_citation_of_architecture_names_what_it_holds() -> None:
    sections, invariants = _architecture()
    cited = 0
    wrong: list[str] = []
    for path, text in _texts():
        for m in CITATION.finditer(" ".join(text.split())):
            cited += 1
            target = m.group(1)
            numbers = [int(n) for n in re.findall(r"\d+", target)]
            ok = set(numbers) <= invariants if numbers else target in sections
            if not ok:
                wrong.append(f"{path.relative_to(ROOT)}: {target!r}")
    assert wrong == []
    assert cited > 40  # the pattern still reads the way the comments are written
