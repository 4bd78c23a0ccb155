"""`bench scan` (the leak scanner) and `bench promote` (publish one redacted run)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchlab.redact.policy import Policy
    from benchlab.redact.scan import ScanReport


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scan = subparsers.add_parser(
        "scan",
        help="find infrastructure tells (hosts, IPs, cloud ids, home paths, secrets) in files",
        description="Scan files for tells that must not reach a public clone. Exit 1 when "
        "anything is found, 0 when clean. Excerpts are masked: a tell shows as [class]. "
        "Without PATH or a flag, scans the files git tracks.",
    )
    scan.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or dirs")
    scan.add_argument("--tracked", action="store_true", help="every file git tracks")
    scan.add_argument(
        "--staged", action="store_true", help="the staged content (a pre-commit hook)"
    )
    scan.add_argument("--format", choices=("table", "json"), default="table")
    scan.set_defaults(handler=run_scan)

    promote = subparsers.add_parser(
        "promote",
        help="publish one private run: redact, scan, then git add -f runs/public/...",
        description="Write a redacted copy of runs/by-machine/*/RUN_ID to "
        "runs/public/<machine>/RUN_ID/, scan it, and force-add it with git. Refuses a run "
        "that is not ok, one already promoted and unchanged, and a copy that scans dirty.",
    )
    promote.add_argument("run_id", metavar="RUN_ID")
    promote.add_argument(
        "--dry-run", action="store_true", help="show what would be replaced; write nothing"
    )
    promote.set_defaults(handler=run_promote)


def _store_root() -> Path | None:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import find_store

    root = find_store()
    return root if root.is_dir() else None


def run_scan(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from itertools import chain

    from benchlab.errors import ConfigError
    from benchlab.redact.policy import load_policy
    from benchlab.redact.scan import (
        path_sources,
        repo_root_of,
        scan_sources,
        staged_sources,
        tracked_sources,
    )

    policy = load_policy(_store_root())
    cwd = Path.cwd()
    repo_root = repo_root_of(cwd)
    tracked = args.tracked or (not args.paths and not args.staged)
    if (tracked or args.staged) and repo_root is None:
        raise ConfigError(f"{cwd}: not inside a git repository (--tracked/--staged need one)")
    for path in args.paths:
        if not path.exists():
            raise ConfigError(f"{path}: no such file or directory")
    sources = []
    if args.paths:
        sources.append(path_sources(args.paths, repo_root or cwd))
    if tracked and repo_root is not None:
        sources.append(tracked_sources(repo_root))
    if args.staged and repo_root is not None:
        sources.append(staged_sources(repo_root))
    report = scan_sources(policy, chain.from_iterable(sources))
    if tracked and repo_root is not None:
        _published(report, policy, repo_root)
    if args.format == "json":
        payload = {
            "clean": report.clean,
            "files_scanned": report.files_scanned,
            "skipped_binary": report.skipped_binary,
            "skipped_allowed": report.skipped_allowed,
            "findings": [f.as_dict() for f in report.findings],
        }
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.query.render import to_json

        sys.stdout.write(to_json(payload))
    else:
        _print_table(report)
    return 0 if report.clean else 1


def _published(report: ScanReport, policy: Policy, repo_root: Path) -> None:
    """The tracked catalog's lines that today's policy would withhold a value of
    (ARCHITECTURE.md, Publishing and redaction): published under an older policy."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.published import withheld_lines
    from benchlab.redact.scan import Finding

    root = _store_root()
    if root is None:
        return
    try:
        shown = root.resolve().relative_to(repo_root.resolve())
    except ValueError:
        shown = root
    for line in withheld_lines(root, policy):
        report.findings.append(
            Finding(
                tell_class="withheld",
                detector="value-shapes",
                path=f"{shown}/{line.path}",
                where=f"entry {line.line}",
                excerpt=f"{line.run_id}: would withhold {', '.join(line.fields)}; "
                "run `bench catalog build --full`",
            )
        )


def _print_table(report: ScanReport) -> None:
    rows = [(f.tell_class, f.path, f.where, f.excerpt) for f in report.findings]
    if rows:
        header = ("CLASS", "FILE", "WHERE", "EXCERPT")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
        for row in [header, *rows]:
            print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])), row[3])
    files = len({f.path for f in report.findings})
    summary = (
        f"{report.files_scanned} files scanned, {len(report.skipped_binary)} binary skipped, "
        f"{report.skipped_allowed} allow-listed"
    )
    if rows:
        print(f"bench scan: {len(rows)} tells in {files} files ({summary})", file=sys.stderr)
    else:
        print(f"bench scan: clean ({summary})", file=sys.stderr)


def _preview(original: str, tell_class: str) -> str:
    """Enough of the original to recognise it on your own screen, not to copy it."""
    if tell_class == "secret" or len(original) <= 3:
        return "*" * min(len(original), 8)
    return original[:2] + "*" * min(len(original) - 2, 12)


def run_promote(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import Store, find_store
    from benchlab.redact.promote import promote

    store = Store(find_store()).require()
    result = promote(store, args.run_id, dry_run=args.dry_run)
    if args.dry_run:
        for r in result.replacements:
            print(
                f"{r.where}  {r.tell_class:<15} {_preview(r.original, r.tell_class)} -> "
                f"{r.placeholder}"
            )
        print(
            f"dry run: {len(result.replacements)} replacements in {len(result.files)} files "
            f"would go to {store.relative(result.destination).rstrip('/')}/; nothing written"
        )
    else:
        print(
            f"promoted {result.run_id}: {len(result.replacements)} replacements in "
            f"{len(result.files)} files; git add -f {result.git_added}"
        )
    for name in result.skipped_binary:
        print(f"left out (binary, cannot be checked): {name}", file=sys.stderr)
    return 0
