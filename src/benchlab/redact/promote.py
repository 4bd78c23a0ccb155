"""`bench promote`: publish one private run dir as a redacted, scanned, force-added copy.

The promotion path ("redact it first, then promote it deliberately with `git add -f`":
ARCHITECTURE.md, Publishing and redaction) done by a machine instead of a reviewer's eyes: the run
dir under `runs/by-machine/<machine>/<run-id>/` is copied through one `Redactor` (one mapping for
the whole run, so `<host:1>` means the same host in every file) into
`runs/public/<machine>/<run-id>/`, the copy is scanned with the same policy, and only a clean copy
is force-added with GitPython. Refusals say why and leave nothing behind.

What counts as a private run dir (a `git add -f` of the wrong thing is a leak that history
keeps, so the source is confined before anything is read):

- a real directory: no component from the store root down to the run dir is a symlink, and
  its resolved path lies inside the store's resolved `runs/by-machine/`; a run dir that is a
  symlink to `/etc` is refused, not followed;
- only regular files are read, each opened with O_NOFOLLOW and checked with fstat; a
  symlinked file, a FIFO or a device anywhere under the run dir refuses the whole promotion
  (skipping it quietly would publish a run with a hole nobody asked for);
- a measured run has `record.json` with `status: ok` and its own run id; a run without a
  record is promoted only if it is an import (`bench migrate`): manifest, kernel and batch
  present, the manifest's `mode` is `import` and its `provenance` names a `source` and the
  `sha256` of what was imported. Any other record-less dir is refused: nothing says it is ok.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from benchlab import files as guarded
from benchlab.errors import StoreError, UnsafePathError
from benchlab.ids import check_id
from benchlab.layout import (
    MANIFEST,
    RECORD,
    REQUIRED_RUN_FILES,
    Store,
    atomic_write_bytes,
    canonical_json,
    loads_json,
)
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


def _confined(store: Store, run_dir: Path) -> Path:
    """`run_dir` if it is a real dir inside runs/by-machine, with no symlink on the way."""
    path = store.root
    for part in run_dir.relative_to(store.root).parts:
        path = path / part
        if path.is_symlink():
            raise PromoteRefused(
                f"refused: {path} is a symlink; promote reads real run dirs inside "
                f"{store.by_machine} only"
            )
    if not run_dir.is_dir():
        raise PromoteRefused(f"refused: {run_dir} is not a directory")
    inside = store.by_machine.resolve()
    resolved = run_dir.resolve()
    if not resolved.is_relative_to(inside) or resolved == inside:
        raise PromoteRefused(f"refused: {run_dir} resolves to {resolved}, outside {inside}")
    return run_dir


def find_private_run(store: Store, run_id: str) -> tuple[str, Path]:
    check_id(run_id, "run id")
    matches = sorted(
        p for p in store.by_machine.glob(f"*/{run_id}") if p.is_dir() or p.is_symlink()
    )
    if not matches:
        raise StoreError(
            f"{store.by_machine}: no run {run_id!r} on this clone "
            "(promote publishes a private run dir that exists here)"
        )
    if len(matches) > 1:
        machines = ", ".join(p.parent.name for p in matches)
        raise StoreError(f"run {run_id!r} exists under several machines: {machines}")
    return matches[0].parent.name, _confined(store, matches[0])


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file, by the one guarded reader (`benchlab.files`: O_NOFOLLOW
    on the open itself and fstat of what was opened, so a file swapped for a link between
    the walk and the read is still refused); a refusal is a PromoteRefused."""
    try:
        return guarded.read_bytes(path)
    except UnsafePathError as exc:
        if path.is_symlink():
            raise PromoteRefused(
                f"refused: {path} is a symlink; promote publishes regular files only"
            ) from None
        raise PromoteRefused(f"refused: {exc}; promote publishes regular files only") from None


def _json_object(path: Path) -> dict[str, object]:
    data = loads_json(read_regular(path), path)
    if not isinstance(data, dict):
        raise PromoteRefused(f"refused: {path}: expected a JSON object")
    return data


def _check_ok(run_dir: Path, run_id: str) -> None:
    """A record with status ok, or an import with its provenance (module docstring)."""
    record = run_dir / RECORD
    if not record.exists() and not record.is_symlink():
        _check_import(run_dir, run_id)
        return
    data = _json_object(record)
    status = data.get("status")
    if status != "ok":
        kind = data.get("failure_kind")
        detail = f" ({kind} failure)" if kind else ""
        raise PromoteRefused(
            f"refused: run {run_id} is not ok: {RECORD} status is {status!r}{detail}; "
            "only ok runs are published"
        )
    if data.get("run_id", run_id) != run_id:
        raise PromoteRefused(
            f"refused: {record} is the record of {data.get('run_id')!r}, not of {run_id}"
        )


def _check_import(run_dir: Path, run_id: str) -> None:
    missing = [name for name in REQUIRED_RUN_FILES if not (run_dir / name).exists()]
    if missing:
        raise PromoteRefused(
            f"refused: {run_dir} has no {RECORD} and no {', '.join(missing)}: nothing says "
            f"{run_id} ran ok (a measured run needs {RECORD} with status ok; an import needs "
            "manifest, kernel and batch with provenance)"
        )
    manifest = _json_object(run_dir / MANIFEST)
    provenance = manifest.get("provenance")
    if (
        manifest.get("mode") != "import"
        or not isinstance(provenance, dict)
        or not provenance.get("source")
        or not provenance.get("sha256")
    ):
        raise PromoteRefused(
            f"refused: {run_dir} has no {RECORD}, and its {MANIFEST} is not an import with "
            "provenance (mode: import, provenance.source and .sha256); only ok runs and "
            "imports are published"
        )
    if manifest.get("run_id", run_id) != run_id:
        raise PromoteRefused(
            f"refused: {run_dir / MANIFEST} is the manifest of {manifest.get('run_id')!r}, "
            f"not of {run_id}"
        )


def redact_run(run_dir: Path, redactor: Redactor) -> tuple[dict[str, bytes], list[str]]:
    """The redacted files of a run dir, by relative path, and the files left out: binary
    ones, and text that is not UTF-8 (neither can be scrubbed and checked). Raw logs
    (raw/stderr.txt ...) go through the same policy as every other file.

    Symlinks (to files or dirs) and special files refuse the promotion (read_regular).
    """
    files: dict[str, bytes] = {}
    binary: list[str] = []
    for dirpath, dirnames, filenames in os.walk(run_dir):
        dirnames.sort()
        for name in dirnames:
            if (Path(dirpath) / name).is_symlink():
                raise PromoteRefused(
                    f"refused: {Path(dirpath) / name} is a symlink; promote publishes "
                    "regular files only"
                )
        for name in sorted(filenames):
            path = Path(dirpath) / name
            relative = path.relative_to(run_dir).as_posix()
            data = read_regular(path)
            if is_binary(data):
                binary.append(relative)  # cannot be checked, so it is not published
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                # Replacing the bad bytes would split a token or a name around them, and
                # each half could pass the scan: what cannot be read faithfully is left out.
                binary.append(relative)
                continue
            public_name = redactor.text(relative, where=f"{relative} (file name)")
            if name.endswith(".json"):
                try:
                    value = loads_json(data, path)
                except StoreError:
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
        p.relative_to(destination).as_posix(): read_regular(p)
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
    # No link between the repository root and the public copy (ARCHITECTURE.md, One reader and
    # one writer path): a committed link at runs/public would publish outside the repository.
    top = Path(repo.working_tree_dir or store.root)
    guarded.ensure_dir(destination.parent, top)
    guarded.refuse_links(destination, top)  # never removed nor replaced through a link
    staging = destination.parent / f".{run_id}.promoting"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for relative, data in files.items():
            atomic_write_bytes(staging / relative, data, root=top)
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
    relative = destination.resolve().relative_to(top.resolve()).as_posix()
    try:
        repo.git.add("-f", "--", relative)
    except git.GitCommandError as exc:
        raise StoreError(f"{relative}: git add -f failed: {exc.stderr.strip()}") from None
    result.git_added = relative
    return result
