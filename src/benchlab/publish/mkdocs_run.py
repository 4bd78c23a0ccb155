"""MkDocs run in a process started before its config exists (`bench site build`).

Importing MkDocs, its theme and their plugins takes about half a second of CPU: started
first, the process imports while benchlab imports and renders the pages, then waits for one
line on stdin (the config path, SOURCE_DATE_EPOCH, the template cache folder) and builds.
Standard library only at import, so `bench site build` can start it before anything else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.publish.template_cache import CACHE_ENV

_MKDOCS_ENV = {"NO_MKDOCS_2_WARNING": "1", "PYTHONHASHSEED": "0"}

_RUNNER = """
import os, sys
from mkdocs.__main__ import cli
for name in ("mkdocs.commands.build", "mkdocs.contrib.search", "material.plugins.search.plugin",
             "material.plugins.offline.plugin", "markdown", "jinja2", "pymdownx"):
    try:
        __import__(name)
    except ImportError:
        pass
import jinja2


def list_templates(self):  # Jinja's own, less dot folders: MkDocs drops every file under one
    found = set()
    for root in self.searchpath:
        for folder, dirs, names in os.walk(root, followlinks=self.followlinks):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = os.path.relpath(folder, root).replace(os.sep, "/")
            found.update(n if rel == "." else f"{rel}/{n}" for n in names)
    return sorted(found)


jinja2.FileSystemLoader.list_templates = list_templates
line = sys.stdin.readline().rstrip("\\n").split("\\t")
if len(line) != 3:
    sys.exit(0)
os.environ["SOURCE_DATE_EPOCH"] = line[1]
if line[2]:
    os.environ["BENCHLAB_TEMPLATE_CACHE"] = line[2]
cli(["build", "--strict", "--quiet", "-f", line[0]])
"""
"""`mkdocs build --strict --quiet -f CONFIG`, in a process started before the config
exists: MkDocs, the theme and their plugins are imported while the pages are rendered, and
the build starts when the config path and SOURCE_DATE_EPOCH arrive on stdin.

MkDocs lists every file of the theme to find its static files and then drops each one under
a dot folder (its theme filter's `.*` and `*/.*`); Material's `.icons` holds some 14,000,
and listing and filtering them was a fifth of a small site's build. The runner's Jinja
loader does not descend into dot folders, so the same files come out (tests/site/
test_pages.py holds the built tree to stock `mkdocs build`'s)."""


class MkdocsProcess:
    """One `mkdocs build`, its interpreter started early (`_RUNNER`)."""

    def __init__(self) -> None:
        env = {**os.environ, **_MKDOCS_ENV}
        env.pop(CACHE_ENV, None)  # only the build's own store names a cache
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _RUNNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.config_path: Path | None = None

    def build(
        self, config: dict[str, Any], work: Path, epoch: int, cache: Path | None = None
    ) -> None:
        """Write the config and let the waiting process build it (with the theme's compiled
        templates kept in `cache`, `publish.template_cache`)."""
        import yaml

        self.config_path = work / "mkdocs.yml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=True), encoding="utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{self.config_path}\t{epoch}\t{cache or ''}\n")
        self.proc.stdin.close()

    def wait(self) -> None:
        """The build's end; a failed build raises naming the config and MkDocs' last line."""
        assert self.proc.stdout is not None
        output = self.proc.stdout.read()
        self.proc.wait()
        if self.proc.returncode != 0:
            lines = [ln for ln in output.splitlines() if ln.strip()]
            reason = lines[-1] if lines else f"exit {self.proc.returncode}"
            raise StoreError(f"{self.config_path}: mkdocs build --strict failed: {reason}")

    def stop(self) -> None:
        """End the process if it is still waiting or building (a render that failed)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()


def run_mkdocs(config: dict[str, Any], work: Path, epoch: int) -> None:
    runner = MkdocsProcess()
    try:
        runner.build(config, work, epoch)
        runner.wait()
    finally:
        runner.stop()
