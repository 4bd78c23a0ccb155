#!/usr/bin/env python3
"""Build a real `llama-bench` and `llama-quantize` from PyPI, without the internet.

Only the package registries are reachable here, not GitHub. The `llama-cpp-python` source
distribution vendors a whole llama.cpp tree (`vendor/llama.cpp/`, with `tools/llama-bench`,
`tools/quantize` and `scripts/compare-llama-bench.py`), so each of its versions is one
pinned llama.cpp commit we can build with cmake, ninja and g++ from Debian.

    python tools/llama/build.py                     # the default version
    python tools/llama/build.py --version 0.3.16    # the older build, to compare two commits
    python tools/llama/build.py --print bin         # just the bin dir (for PATH=...)

Cached by version under `~/.cache/benchlab/llama/<version>/` (`--cache-dir` or
$BENCHLAB_LLAMA_CACHE move it): a second call with the binaries present builds nothing and
prints where they are. The cache holds `bin/` (static binaries), `scripts/` (llama.cpp's own
scripts, compare-llama-bench.py among them, kept as an oracle for tests) and `build.json`.

Build numbers: the sdist's llama.cpp is a shallow git checkout, so `git rev-list --count`
answers 1 for every version and the real release number (bNNNN) cannot be known offline.
Rather than invent a plausible bNNNN, the build number is the commit's date as YYYYMMDD
(`--build-number` overrides it): it orders builds by age and differs between versions,
and the commit hash, which is what compare-llama-bench.py keys on, stays the real one.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_VERSION = "0.3.36"
"""llama.cpp 0c1e570 (2026-10-01): the current build."""
OLDER_VERSION = "0.3.16"
"""llama.cpp 4227c9b (2025-08-14): about 14 months older; has `-d` depth and `-fa 0|1`."""

TARGETS = ("llama-bench", "llama-quantize")
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    # Static: the binaries then run from the cache dir (and survive the source tree's removal).
    "-DBUILD_SHARED_LIBS=OFF",
)
MANIFEST = "build.json"

Log = Callable[[str], None]


def default_cache_dir() -> Path:
    """$BENCHLAB_LLAMA_CACHE, else ~/.cache/benchlab/llama (per user, outside any repo)."""
    env = os.environ.get("BENCHLAB_LLAMA_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "benchlab" / "llama"


@dataclass(frozen=True)
class Build:
    """One cached build: where its binaries and scripts are, and what llama.cpp it is."""

    version: str
    root: Path
    commit: str
    build_number: int
    commit_date: str
    build_seconds: float
    built_now: bool = False

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def llama_bench(self) -> Path:
        return self.bin_dir / "llama-bench"

    @property
    def llama_quantize(self) -> Path:
        return self.bin_dir / "llama-quantize"

    @property
    def scripts_dir(self) -> Path:
        return self.root / "scripts"

    @property
    def compare_script(self) -> Path:
        return self.scripts_dir / "compare-llama-bench.py"


def _load(root: Path, version: str) -> Build | None:
    """The cached build at `root`, or None when any part of it is missing."""
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    build = Build(
        version=version,
        root=root,
        commit=str(data["commit"]),
        build_number=int(data["build_number"]),
        commit_date=str(data["commit_date"]),
        build_seconds=float(data["build_seconds"]),
    )
    needed = [build.llama_bench, build.llama_quantize, build.compare_script]
    return build if all(p.is_file() for p in needed) else None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock so a test and a script never build one version twice at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: list[str], log: Log, cwd: Path | None = None) -> str:
    """Run a build step; on failure raise with the tail of its output (the useful part)."""
    log("+ " + " ".join(argv))
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(f"{argv[0]} failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def download_sdist(version: str, dest: Path, log: Log) -> Path:
    """The llama-cpp-python sdist for `version`, fetched from the package index into `dest`.

    `--no-binary llama-cpp-python` (not `:all:`): pip still prepares the sdist's metadata,
    and with `:all:` it would also build scikit-build-core and its whole build chain from
    source first, which takes minutes and fails on some of them.
    """
    dest.mkdir(parents=True, exist_ok=True)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-binary",
            "llama-cpp-python",
            f"llama-cpp-python=={version}",
            "-d",
            str(dest),
        ],
        log,
    )
    found = sorted(dest.glob(f"llama_cpp_python-{version}.tar.gz"))
    if not found:
        raise RuntimeError(f"pip download left no llama_cpp_python-{version}.tar.gz in {dest}")
    return found[0]


def unpack(sdist: Path, dest: Path) -> Path:
    """Unpack the sdist; return its vendored llama.cpp tree."""
    with tarfile.open(sdist) as archive:
        archive.extractall(dest, filter="data")
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    tree = top / "vendor" / "llama.cpp"
    if not (tree / "tools" / "llama-bench").is_dir():
        raise RuntimeError(f"{sdist.name}: no vendor/llama.cpp/tools/llama-bench")
    return tree


def commit_info(tree: Path) -> tuple[str, str]:
    """(short commit, commit date YYYY-MM-DD) of the vendored tree.

    The sdist carries the submodule's shallow git dir, so git can read its one commit; the
    lookup is pinned to that dir so a tree unpacked inside another repo never reports the
    outer repo's commit.
    """
    done = subprocess.run(
        ["git", "--git-dir", str(_git_dir(tree)), "log", "-1", "--format=%h %cs", "--abbrev=7"],
        capture_output=True,
        text=True,
    )
    match = re.fullmatch(r"([0-9a-f]{7,}) (\d{4}-\d{2}-\d{2})", done.stdout.strip())
    if done.returncode != 0 or not match:
        raise RuntimeError(f"{tree}: cannot read the vendored commit: {done.stderr.strip()}")
    return match.group(1), match.group(2)


def _git_dir(tree: Path) -> Path:
    marker = tree / ".git"
    if marker.is_file():
        text = marker.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            return (tree / text.split(":", 1)[1].strip()).resolve()
    return marker


def ensure_build(
    version: str = DEFAULT_VERSION,
    *,
    cache_dir: Path | None = None,
    jobs: int = 2,
    build_number: int | None = None,
    log: Log = print,
) -> Build:
    """The cached build of `version`, building it first when it is not there yet."""
    cache = (cache_dir or default_cache_dir()).expanduser().resolve()
    root = cache / version
    cached = _load(root, version)
    if cached is not None:
        return cached
    with _locked(cache / f".{version}.lock"):
        cached = _load(root, version)  # another process may have built it while we waited
        if cached is not None:
            return cached
        work = cache / f".{version}.work"
        shutil.rmtree(work, ignore_errors=True)
        try:
            return _build(version, root, work, jobs, build_number, log)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _build(
    version: str, root: Path, work: Path, jobs: int, build_number: int | None, log: Log
) -> Build:
    started = time.monotonic()
    sdist = download_sdist(version, work / "sdist", log)
    tree = unpack(sdist, work / "src")
    commit, date = commit_info(tree)
    number = build_number if build_number is not None else int(date.replace("-", ""))
    build_dir = work / "build"
    _run(
        [
            "cmake",
            "-S",
            str(tree),
            "-B",
            str(build_dir),
            "-G",
            "Ninja",
            *CMAKE_FLAGS,
            f"-DLLAMA_BUILD_NUMBER={number}",
            f"-DLLAMA_BUILD_COMMIT={commit}",
        ],
        log,
    )
    _run(["cmake", "--build", str(build_dir), "--target", *TARGETS, f"-j{jobs}"], log)
    staged = work / "out"
    (staged / "bin").mkdir(parents=True)
    for target in TARGETS:
        shutil.copy2(build_dir / "bin" / target, staged / "bin" / target)
    shutil.copytree(tree / "scripts", staged / "scripts")
    seconds = round(time.monotonic() - started, 1)
    manifest = {
        "version": version,
        "commit": commit,
        "commit_date": date,
        "build_number": number,
        "build_number_source": "--build-number" if build_number is not None else "commit date",
        "build_seconds": seconds,
        "cmake_flags": list(CMAKE_FLAGS),
    }
    (staged / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(root, ignore_errors=True)
    staged.rename(root)
    build = _load(root, version)
    if build is None:
        raise RuntimeError(f"{root}: build finished but the cache is incomplete")
    return Build(**{**asdict(build), "built_now": True})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=DEFAULT_VERSION, help="llama-cpp-python version")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: see module doc")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--build-number", type=int, default=None)
    parser.add_argument(
        "--print",
        choices=("bin", "llama-bench", "llama-quantize", "scripts", "json"),
        help="print only this (building first if needed; build log to stderr)",
    )
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr if args.print else sys.stdout, flush=True)

    try:
        build = ensure_build(
            args.version,
            cache_dir=args.cache_dir,
            jobs=args.jobs,
            build_number=args.build_number,
            log=log,
        )
    except (RuntimeError, OSError) as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 1
    if args.print:
        paths = {
            "bin": build.bin_dir,
            "llama-bench": build.llama_bench,
            "llama-quantize": build.llama_quantize,
            "scripts": build.scripts_dir,
        }
        if args.print == "json":
            print(json.dumps(asdict(build), default=str))
        else:
            print(paths[args.print])
        return 0
    state = f"built in {build.build_seconds:.1f} s" if build.built_now else "cached, nothing built"
    log(
        f"llama.cpp {build.commit} (b{build.build_number}, {build.commit_date}) "
        f"from llama-cpp-python {build.version}: {state} (first build took "
        f"{build.build_seconds:.1f} s)"
    )
    log(f"  llama-bench:    {build.llama_bench}")
    log(f"  llama-quantize: {build.llama_quantize}")
    log(f"  scripts:        {build.scripts_dir} (compare-llama-bench.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
