"""The leak scanner: files in, findings out, every excerpt masked.

A finding names the tell class, the detector, the file and where in it (a JSON pointer
for JSON files, a line for the rest) and shows a masked excerpt: the tell itself is
replaced by `[class]`, so a CI log of a leak does not become a second leak.

Sources: paths on disk, every file git tracks (`--tracked`), or the staged blobs in the
index (`--staged`, the pre-commit hook). Binary files are skipped; redaction.yaml's
`allow.paths` are skipped (test corpora full of tells on purpose).
"""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlab.redact.engine import Hit, find
from benchlab.redact.policy import Policy
from benchlab.redact.redactor import is_placeholder

if TYPE_CHECKING:
    import git

_WINDOW = 32
_SNIFF = 8192


@dataclass(frozen=True)
class Finding:
    tell_class: str
    detector: str
    path: str
    where: str
    excerpt: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class ScanReport:
    findings: list[Finding] = field(default_factory=list)
    files_scanned: int = 0
    skipped_binary: list[str] = field(default_factory=list)
    skipped_allowed: int = 0

    @property
    def clean(self) -> bool:
        return not self.findings


def mask(policy: Policy, text: str, hits: Iterable[Hit] | None = None) -> str:
    """`text` with every tell replaced by `[class]`."""
    found = list(hits) if hits is not None else find(policy, [text])
    pieces: list[str] = []
    last = 0
    for hit in sorted(found, key=lambda h: h.start):
        if hit.start < last:
            continue
        pieces.append(text[last : hit.start])
        pieces.append(f"[{hit.tell_class}]")
        last = hit.end
    pieces.append(text[last:])
    return "".join(pieces)


def _excerpt(line: str, line_start: int, hits: list[Hit], hit: Hit) -> str:
    """The line around `hit`, about two windows wide, with every tell in it masked."""
    size = len(line)
    local = sorted(
        (max(h.start - line_start, 0), min(h.end - line_start, size), h.tell_class)
        for h in hits
        if h.end > line_start and h.start < line_start + size
    )
    lo = max(0, hit.start - line_start - _WINDOW)
    hi = min(size, hit.end - line_start + _WINDOW)
    for start, end, _ in local:  # never cut a tell in half: its tail could still tell
        if start < lo < end:
            lo = start
        if start < hi < end:
            hi = end
    pieces: list[str] = []
    position = lo
    for start, end, tell_class in local:
        if end <= lo or start >= hi or start < position:
            continue
        pieces += [line[position:start], f"[{tell_class}]"]
        position = end
    pieces.append(line[position:hi])
    prefix = "…" if lo > 0 else ""
    suffix = "…" if hi < size else ""
    return (prefix + "".join(pieces) + suffix).replace("\t", " ").strip()


def scan_text(policy: Policy, text: str, path: str, hits: list[Hit] | None = None) -> list[Finding]:
    hits = find(policy, [text]) if hits is None else hits
    if not hits:
        return []
    newlines = [i for i, c in enumerate(text) if c == "\n"] if "\n" in text else []
    findings = []
    for hit in hits:
        line_no = bisect.bisect_left(newlines, hit.start)
        line_start = newlines[line_no - 1] + 1 if line_no else 0
        line_end = newlines[line_no] if line_no < len(newlines) else len(text)
        line = text[line_start:line_end]
        findings.append(
            Finding(
                hit.tell_class,
                hit.detector.name,
                path,
                f"line {line_no + 1}",
                _excerpt(line, line_start, hits, hit),
            )
        )
    return findings


def _json_slots(value: Any) -> tuple[list[str], list[str], list[str | None]]:
    """(strings, pointers, owning key) for every key and string value of a JSON document."""
    strings: list[str] = []
    pointers: list[str] = []
    keys: list[str | None] = []
    stack: list[tuple[Any, str, str | None]] = [(value, "", None)]
    while stack:
        node, pointer, key = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                child = f"{pointer}/{str(k).replace('~', '~0').replace('/', '~1')}"
                strings.append(str(k))
                pointers.append(f"{child} (key)")
                keys.append(None)
                stack.append((v, child, str(k)))
        elif isinstance(node, list):
            stack.extend((v, f"{pointer}/{i}", None) for i, v in enumerate(node))
        elif isinstance(node, str):
            strings.append(node)
            pointers.append(pointer or "/")
            keys.append(key)
    return strings, pointers, keys


Slots = tuple[list[str], list[str], list[str | None]]


def _scan_slots(
    policy: Policy, slots: Slots, path: str, hits: list[Hit] | None = None
) -> list[Finding]:
    strings, pointers, keys = slots
    hits = find(policy, strings) if hits is None else hits
    by_index: dict[int, list[Hit]] = {}
    for hit in hits:
        by_index.setdefault(hit.index, []).append(hit)
    findings = []
    for index, group in by_index.items():
        for hit in group:
            findings.append(
                Finding(
                    hit.tell_class,
                    hit.detector.name,
                    path,
                    mask(policy, pointers[index]),
                    _excerpt(strings[index], 0, group, hit),
                )
            )
    for index, key in enumerate(keys):
        private = policy.private_keys.get(key or "")
        text = strings[index]
        if not private or not text or index in by_index or is_placeholder(text):
            continue
        if policy.allowed(private, text):
            continue
        findings.append(
            Finding(
                private,
                f"private-key:{key}",
                path,
                mask(policy, pointers[index]),
                f'"{key}": [{private}]',
            )
        )
    findings.sort(key=lambda f: (f.where, f.tell_class, f.detector))
    return findings


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:_SNIFF]


def scan_name(policy: Policy, relative: str, hits: list[Hit] | None = None) -> list[Finding]:
    """A file's own name can leak (raw/gpu-box-7.corp-topo.txt)."""
    hits = find(policy, [relative]) if hits is None else hits
    return [
        Finding(
            h.tell_class,
            h.detector.name,
            mask(policy, relative),
            "file name",
            mask(policy, relative),
        )
        for h in hits
    ]


Source = tuple[str, Callable[[], bytes]]
"""(path relative to the scan's base, a loader of the file's bytes)."""


_BATCH_CHARS = 1 << 18
"""Files are scanned in batches of about this many characters: one regex pass per detector
per batch instead of per file (10,000 run dirs are ~40,000 small files)."""


@dataclass
class _Unit:
    kind: str  # "name", "text" or "json"
    path: str
    payload: Any
    strings: list[str]


def _unit(data: bytes, path: str) -> _Unit | None:
    if is_binary(data):
        return None
    text = data.decode("utf-8", errors="replace")
    if path.endswith(".json"):
        try:
            value = json.loads(text)
        except ValueError:
            pass
        else:
            slots = _json_slots(value)
            return _Unit("json", path, slots, slots[0])
    return _Unit("text", path, text, [text])


def _scan_batch(policy: Policy, units: list[_Unit]) -> list[Finding]:
    """One `find` over every string of every unit, then findings per unit.

    A user name learned from a home path in one file is hunted in the whole batch.
    """
    strings = [text for unit in units for text in unit.strings]
    starts: list[int] = []
    total = 0
    for unit in units:
        starts.append(total)
        total += len(unit.strings)
    per_unit: list[list[Hit]] = [[] for _ in units]
    for hit in find(policy, strings):
        number = bisect.bisect_right(starts, hit.index) - 1
        per_unit[number].append(replace(hit, index=hit.index - starts[number]))
    findings: list[Finding] = []
    for unit, hits in zip(units, per_unit, strict=True):
        if unit.kind == "name":
            findings.extend(scan_name(policy, unit.path, hits))
        elif unit.kind == "text":
            findings.extend(scan_text(policy, unit.payload, unit.path, hits))
        else:
            findings.extend(_scan_slots(policy, unit.payload, unit.path, hits))
    return findings


def scan_sources(
    policy: Policy, sources: Iterable[Source], *, use_path_allow: bool = True
) -> ScanReport:
    """Scan every source; `use_path_allow=False` ignores redaction.yaml's path allow list."""
    report = ScanReport()
    batch: list[_Unit] = []
    size = 0
    for relative, load in sources:
        if use_path_allow and policy.path_allowed(relative):
            report.skipped_allowed += 1
            continue
        try:
            data = load()
        except OSError:
            continue  # vanished between listing and reading: nothing to publish
        batch.append(_Unit("name", relative, None, [relative]))
        unit = _unit(data, relative)
        if unit is None:
            report.skipped_binary.append(relative)
        else:
            report.files_scanned += 1
            batch.append(unit)
            size += len(data)
        if size >= _BATCH_CHARS:
            report.findings.extend(_scan_batch(policy, batch))
            batch, size = [], 0
    if batch:
        report.findings.extend(_scan_batch(policy, batch))
    return report


def _loader(path: Path) -> Callable[[], bytes]:
    return path.read_bytes


def _blob_loader(repo: git.Repo, binsha: bytes) -> Callable[[], bytes]:
    def load() -> bytes:
        blob: bytes = repo.odb.stream(binsha).read()
        return blob

    return load


def path_sources(paths: Iterable[Path], base: Path) -> Iterator[Source]:
    """Files under each path (directories walked, `.git` skipped), named relative to base."""
    for root in paths:
        if root.is_file():
            yield _relative(root, base), _loader(root)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            for name in sorted(filenames):
                full = Path(dirpath) / name
                if full.is_file() and not full.is_symlink():
                    yield _relative(full, base), _loader(full)


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def tracked_sources(repo_root: Path) -> Iterator[Source]:
    """Every file git tracks, read from the working tree (what the next commit holds)."""
    import git

    repo = git.Repo(repo_root, search_parent_directories=True)
    top = Path(repo.working_tree_dir or repo_root)
    for name in sorted(n for n in repo.git.ls_files("-z").split("\0") if n):
        full = top / name
        if full.is_file() and not full.is_symlink():
            yield name, _loader(full)


def staged_sources(repo_root: Path) -> Iterator[Source]:
    """The staged content (index blobs) of every added, copied, modified or renamed file."""
    import git

    repo = git.Repo(repo_root, search_parent_directories=True)
    names = repo.git.diff("--cached", "--name-only", "-z", "--diff-filter=ACMR").split("\0")
    entries = repo.index.entries
    for name in sorted(n for n in names if n):
        entry = entries.get((name, 0))
        if entry is None or entry.mode & 0o170000 == 0o120000:
            continue  # a conflict stage or a symlink: nothing to read as a file
        yield name, _blob_loader(repo, entry.binsha)


def repo_root_of(path: Path) -> Path | None:
    import git

    try:
        repo = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    return Path(repo.working_tree_dir) if repo.working_tree_dir else None
