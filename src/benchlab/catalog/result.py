"""What a build did (`BuildResult`, for the one-line summary and `--format json`), and the
progress callback a build reports to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from benchlab.redact.shapes import withheld_summary

Progress = Callable[[int], None]


@dataclass
class BuildResult:
    """What a build did, for the one-line summary and `--format json`."""

    new: int = 0
    changed: int = 0
    kept: int = 0
    total: int = 0
    dirs_read: int = 0
    dirs_unchanged: int = 0
    skipped: int = 0
    set_aside: int = 0
    """Pulled shard lines this version refuses, kept as they are and not published (exit 0:
    ARCHITECTURE.md, Errors and exit codes)."""
    head_refused: int = 0
    """Fields (or items) of catalog.json the gate refuses, left out of the head the build
    writes (exit 0, named: ARCHITECTURE.md, Errors and exit codes)."""
    views_written: int = 0
    views_removed: int = 0
    catalog_written: bool = False
    concurrent_merged: int = 0
    specs_published: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"catalog: {self.new} new, {self.changed} changed, {self.kept} kept, "
            f"{self.total} runs ({self.dirs_read} run dirs read, {self.dirs_unchanged} unchanged)"
        )
        if self.skipped:
            text += f"; {self.skipped} bad run dir(s) skipped, see the warnings"
        if self.set_aside:
            text += f"; {self.set_aside} pulled line(s) refused, kept unpublished (see warnings)"
        if self.head_refused:
            text += f"; {self.head_refused} refused part(s) of catalog.json left out (see warnings)"

        return text + withheld_summary(self.warnings)
