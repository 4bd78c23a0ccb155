"""`bench promote`: publish one private run dir as a redacted, scanned, force-added copy.

Seed 002's promotion path ("redact it first, then promote it deliberately with
`git add -f`") done by a machine instead of a reviewer's eyes: the run dir under
`runs/by-machine/<machine>/<run-id>/` is copied through one `Redactor` (one mapping for
the whole run, so `<host:1>` means the same host in every file) into
`runs/public/<machine>/<run-id>/`, the copy is scanned with the same policy, and only a
clean copy is force-added with GitPython. Refusals say why and leave nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from benchlab.errors import StoreError
from benchlab.ids import check_id
from benchlab.layout import RECORD, Store, atomic_write_bytes, canonical_json
from benchlab.redact.policy import Policy, load_policy
from benchlab.redact.redactor import Redactor, Replacement
from benchlab.redact.scan import Finding, is_binary, path_sources, scan_sources


@dataclass
class PromoteResult:
    run_id: str
    machine_id: str
    source: Path
    destination: Path
    dry_run: bool
    files: list[str] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)
    skipped_binary: list[str] = field(default_factory=list)
    git_added: str | None = None


class PromoteRefused(StoreError):
    """Promotion refused: the run is not ok, already published, or its copy is not clean."""


def find_private_run(store: Store, run_id: str) -> tuple[str, Path]:
    check_id(run_id, "run id")
    matches = sorted(p for p in store.by_machine.glob(f"*/{run_id}") if p.is_dir())
    if not matches:
        raise StoreError(
            f"{store.by_machine}: no run {run_id!r} on this clone "
            "(promote publishes a private run dir that exists here)"
        )
    if len(matches) > 1:
        machines = ", ".join(p.parent.name for p in matches)
        raise StoreError(f"run {run_id!r} exists under several machines: {machines}")
    return matches[0].parent.name, matches[0]


def _check_ok(run_dir: Path, run_id: str) -> None:
    record = run_dir / RECORD
    if not record.is_file():
        return  # an imported or hand-made run dir without a record counts as ok
    try:
        data = json.loads(record.read_bytes())
    except ValueError:
        raise PromoteRefused(
            f"{record}: not valid JSON; cannot tell whether {run_id} is ok"
        ) from None
    status = data.get("status") if isinstance(data, dict) else None
    if status != "ok":
        kind = data.get("failure_kind") if isinstance(data, dict) else None
        detail = f" ({kind} failure)" if kind else ""
        raise PromoteRefused(
            f"refused: run {run_id} is not ok: {RECORD} status is {status!r}{detail}; "
            "only ok runs are published"
        )


def redact_run(run_dir: Path, redactor: Redactor) -> tuple[dict[str, bytes], list[str]]:
    """The redacted files of a run dir, by relative path, and the binary files left out."""
    files: dict[str, bytes] = {}
    binary: list[str] = []
    for dirpath, dirnames, filenames in os.walk(run_dir):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            relative = path.relative_to(run_dir).as_posix()
            data = path.read_bytes()
            if is_binary(data):
                binary.append(relative)  # cannot be checked, so it is not published
                continue
            public_name = redactor.text(relative, where=f"{relative} (file name)")
            text = data.decode("utf-8", errors="replace")
            if name.endswith(".json"):
                try:
                    value = json.loads(text)
                except ValueError:
                    pass
                else:
                    redacted = redactor.json(value, where=f"{relative}#")
                    files[public_name] = canonical_json(redacted).encode("utf-8")
                    continue
            files[public_name] = redactor.text(text, where=relative).encode("utf-8")
    return files, binary


def _current(destination: Path) -> dict[str, bytes] | None:
    if not destination.is_dir():
        return None
    return {
        p.relative_to(destination).as_posix(): p.read_bytes()
        for p in sorted(destination.rglob("*"))
        if p.is_file()
    }


def _describe(findings: list[Finding]) -> str:
    shown = "; ".join(f"{f.tell_class} in {f.path} at {f.where}" for f in findings[:5])
    more = f"; and {len(findings) - 5} more" if len(findings) > 5 else ""
    return shown + more


def promote(
    store: Store, run_id: str, *, dry_run: bool = False, policy: Policy | None = None
) -> PromoteResult:
    """Redact, scan and force-add one run; raise PromoteRefused (with the reason) otherwise."""
    import git

    machine_id, run_dir = find_private_run(store, run_id)
    _check_ok(run_dir, run_id)
    policy = policy if policy is not None else load_policy(store.root)
    redactor = Redactor(policy)
    files, binary = redact_run(run_dir, redactor)
    destination = store.public_run_dir(machine_id, run_id)
    result = PromoteResult(
        run_id,
        machine_id,
        run_dir,
        destination,
        dry_run,
        sorted(files),
        list(redactor.replacements),
        binary,
    )
    if dry_run:
        return result
    if _current(destination) == files:
        raise PromoteRefused(
            f"refused: {run_id} is already promoted and unchanged at {destination}"
        )
    try:
        repo = git.Repo(store.root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise StoreError(f"{store.root}: not inside a git repository; cannot git add") from None
    staging = destination.parent / f".{run_id}.promoting"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for relative, data in files.items():
            atomic_write_bytes(staging / relative, data)
        report = scan_sources(policy, path_sources([staging], staging), use_path_allow=False)
        if not report.clean:
            raise PromoteRefused(
                f"refused: the redacted copy of {run_id} still scans dirty "
                f"({_describe(report.findings)}); the copy was removed, fix the run "
                "or redaction.yaml and promote again"
            )
        if destination.exists():
            shutil.rmtree(destination)
        os.replace(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    top = Path(repo.working_tree_dir or store.root)
    relative = destination.resolve().relative_to(top.resolve()).as_posix()
    try:
        repo.git.add("-f", "--", relative)
    except git.GitCommandError as exc:
        raise StoreError(f"{relative}: git add -f failed: {exc.stderr.strip()}") from None
    result.git_added = relative
    return result
