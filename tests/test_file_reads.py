"""Every file read in src/ goes through the one guarded reader (ARCHITECTURE.md, One reader
and one writer path).

The sources are walked with `ast`, not grepped: a read is a call of `open()` or
`Path.open()` in a read mode, `os.open()` without a write flag, `os.fdopen()` in a read
mode, `os.read()`, `.read_text()` / `.read_bytes()` on anything but the guarded module,
or `json.load` / `marshal.load` / `pickle.load` on an open file. Each must sit in
`files.py` or `agent/readfile.py` (the reader itself), or be named in ALLOWED with why it is
safe; an entry that no longer matches a read fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "benchlab"

READERS = {"files.py", "agent/readfile.py"}
"""The guarded reader and the agent's copy of its rules."""

GUARDED_MODULES = {"files", "guarded"}
"""Names the guarded module is imported as (`from benchlab import files as guarded`)."""

ALLOWED: dict[tuple[str, str], str] = {
    # (module relative to src/benchlab, enclosing function): why the read is safe.
    ("catalog/extract.py", "read_run_dir"): (
        "opens the run dir O_NOFOLLOW|O_DIRECTORY to read its files relative to it"
    ),
    ("catalog/extract.py", "_open_regular"): (
        "the run-file reader: O_NOFOLLOW|O_NONBLOCK relative to the dir fd, fstat S_ISREG, "
        "capped at MAX_JSON_BYTES: files.py's rules with an Unreadable per file, hot path"
    ),
    ("catalog/extract.py", "_read_fd"): "reads the descriptor _open_regular checked, capped",
    ("catalog/scan.py", "_stat_names"): "opens a run dir to list it; reads no file's bytes",
    ("layout.py", "_atomic_write"): "opens the dir it just wrote into, to fsync it",
    ("catalog/buildcache.py", "load"): "the private build cache under runs/ (never tracked)",
    ("catalog/buildcache.py", "group"): "the private build cache under runs/ (never tracked)",
    ("catalog/read.py", "_read_cache"): "the private query cache under runs/ (never tracked)",
    ("query/level.py", "load_memo"): "the private level memo under runs/ (never tracked)",
    ("query/colcache/arrays.py", "__init__"): "the private columnar cache (never tracked)",
    ("query/colcache/arrays.py", "read_rows"): (
        "shards the columnar cache has just read through gate.read_regular (same stat key)"
    ),
    ("catalog/views.py", "_holds"): "a view this clone's build wrote (private, under runs/)",
    ("publish/hooks.py", "on_page_context"): (
        "MkDocs' hook, run in MkDocs' process: slots this build rendered into its temp dir"
    ),
    ("publish/hooks.py", "on_post_build"): "MkDocs' search index and slots this build wrote",
    ("sweep/history.py", "read_history"): "this clone's private machine history (runs/)",
    ("sweep/history.py", "_count_lines"): "this clone's private machine history (runs/)",
    ("sweep/inject.py", "_read_new"): "this clone's private injected points (runs/)",
    ("devices/bundle.py", "verified_file"): (
        "the agent zipapp cache: O_NOFOLLOW|O_NONBLOCK, fstat and a digest check (shipped as "
        "source to the device, so it cannot import files.py)"
    ),
    ("devices/bundle.py", "agent_sources"): "benchlab's own agent/*.py, in the package",
    ("devices/exec.py", "_app"): "the zipapp this process built in its own cache",
    ("devices/ssh.py", "_agent_on_device"): "the zipapp this process built in its own cache",
    ("devices/ssh.py", "_connection"): "paramiko's conn.open(): a connection, not a file",
}


def _guarded_receiver(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in GUARDED_MODULES


def _mode(call: ast.Call, position: int) -> str | None:
    """The literal mode argument of an open call ("r" when absent, None when not literal)."""
    for keyword in call.keywords:
        if keyword.arg == "mode":
            value = keyword.value
            return value.value if isinstance(value, ast.Constant) else None
    if len(call.args) > position:
        value = call.args[position]
        return value.value if isinstance(value, ast.Constant) else None
    return "r"


def _reads(mode: str | None) -> bool:
    return mode is None or not any(flag in mode for flag in "wax")


def _names(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name)
    }


def _read_kind(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open":
        return "open()" if _reads(_mode(call, 1)) else None
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value
    owner_name = owner.id if isinstance(owner, ast.Name) else None
    if func.attr in ("read_text", "read_bytes") and not _guarded_receiver(owner):
        return f".{func.attr}()"
    if func.attr == "open" and owner_name == "os":
        flags = _names(call.args[1]) if len(call.args) > 1 else set()
        return None if flags & {"O_WRONLY", "O_RDWR", "O_CREAT"} else "os.open()"
    if func.attr == "open" and owner_name != "webbrowser":
        if call.args and not (
            isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
        ):
            return None  # Path.open's first argument is its mode: another object's open
        return "Path.open()" if _reads(_mode(call, 0)) else None
    if func.attr == "fdopen" and owner_name == "os":
        return "os.fdopen()" if _reads(_mode(call, 1)) else None
    if func.attr == "read" and owner_name == "os":
        return "os.read()"
    if func.attr == "load" and owner_name in ("json", "marshal", "pickle"):
        return f"{owner_name}.load()"
    return None


def _found() -> Iterator[tuple[str, str, int, str]]:
    """(module, function, line, kind) of every read outside the reader."""
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in READERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
        while stack:  # bounded: each node once
            node, function = stack.pop()
            for child in ast.iter_child_nodes(node):
                inner = function
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = child.name
                if isinstance(child, ast.Call) and (kind := _read_kind(child)) is not None:
                    yield rel, inner, child.lineno, kind
                stack.append((child, inner))


def test_every_file_read_goes_through_the_guarded_reader() -> None:
    stray = [
        f"src/benchlab/{rel}:{line}: {kind} in {function}()"
        for rel, function, line, kind in _found()
        if (rel, function) not in ALLOWED
    ]
    assert not stray, (
        "read these through benchlab.files (or say in ALLOWED why it is safe):\n"
        + "\n".join(sorted(stray))
    )


def test_every_allowed_entry_still_names_a_read() -> None:
    used = {(rel, function) for rel, function, _, _ in _found()}
    assert set(ALLOWED) <= used, sorted(set(ALLOWED) - used)


def test_the_walk_finds_each_kind_of_read(tmp_path: Path) -> None:
    """The detector itself: each form of read is found, writes and guarded reads are not."""
    source = """
import json, os
from benchlab import files as guarded
def f(p):
    open(p)
    open(p, "rb")
    p.open()
    p.read_text()
    p.read_bytes()
    os.open(p, os.O_RDONLY)
    os.fdopen(3)
    os.read(3, 10)
    json.load(h)
    open(p, "w")
    p.open("a")
    os.open(p, os.O_WRONLY | os.O_CREAT)
    guarded.read_bytes(p)
"""
    tree = ast.parse(source)
    kinds = [
        kind
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (kind := _read_kind(node)) is not None
    ]
    assert kinds == [
        "open()",
        "open()",
        "Path.open()",
        ".read_text()",
        ".read_bytes()",
        "os.open()",
        "os.fdopen()",
        "os.read()",
        "json.load()",
    ]
