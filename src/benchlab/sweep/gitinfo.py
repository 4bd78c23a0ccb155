"""The git state a run was measured at (manifest.git): rev, branch, dirty.

Read once per sweep with GitPython. A detached HEAD (CI checkouts) has no branch, which is
recorded as null rather than guessed; outside a repository, or where git is missing, every
field is null: a run is still worth keeping without it.
"""

from __future__ import annotations

from pathlib import Path

from benchlab.models import GitInfo


def read_git_info(path: Path | str) -> GitInfo:
    """GitInfo for the repository containing `path` (all None when there is none)."""
    try:
        import git
    except ImportError:  # GitPython refuses to import without a git executable
        return GitInfo()
    try:
        repo = git.Repo(Path(path), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError):
        return GitInfo()
    try:
        try:
            rev: str | None = repo.head.commit.hexsha[:7]
        except ValueError:  # a repository without any commit yet
            rev = None
        try:
            branch: str | None = repo.active_branch.name
        except TypeError:  # detached HEAD
            branch = None
        try:
            dirty: bool | None = repo.is_dirty(untracked_files=False)
        except git.GitCommandError:
            dirty = None
        return GitInfo(rev=rev, branch=branch, dirty=dirty)
    finally:
        repo.close()
