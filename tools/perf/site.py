"""Prove the site's performance targets, and measure `asv publish` on the same results.

    python tools/perf/site.py [--runs 10000 100000] [--repeat 3] [--skip-asv]
    python tools/perf/site.py --store /tmp/bl-perf-1m/store --repeat 1    # and a built store
    python tools/perf/site.py --runs 0 --store /tmp/bl-perf-1m/store       # that store only
    python tools/perf/site.py --bytecode    # benchlab byte-compiled first, as pip installs it

`--store` also times the site of a store that already holds a built catalog (the
1,000,000-run store tools/perf/catalog.py leaves behind: generating and building it here
again would take most of an hour), with its columns query cache brought up to date first and
not counted (the first query after a build pays that), and skips asv there, whose publish of
a million one-commit results is not practical; the asv anchor is the 10,000 and 100,000
sizes of the same invocation.

For each --runs size:
1. A synthetic fleet of that many runs (tools/perf/make_fleet.py), then `bench catalog build`.
2. `bench site build` (render + mkdocs build --strict) --repeat times: the median must be
   <= 60 s; every page with everything it loads (scripts, styles, chart data, plotly
   included; the run and compare pages with the largest data file they load) must be
   <= 1.5 MB. Prints the heaviest page and the home page.
3. The same ok results as an asv results dir (machine.json per machine, one result file per
   run, benchmarks.json, asv.conf.json over a git repo with one commit per run), then
   `asv publish` --repeat times, each right after one of the site builds (the two take turns,
   so both see the same minutes of a shared machine's load). Prints the medians, the ratio
   asv / benchlab, both sites' size on disk and page counts, and a Markdown table row (wall
   medians, then CPU medians: user + system of every process, what a shared machine's load
   moves least):
   | runs | bench | asv | asv/bench | bench CPU | asv CPU | asv/bench CPU | bench MB | asv MB |
   bench pages | asv pages |
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SITE_LIMIT_S = 60.0
"""The target up to 100,000 runs; 120 s is allowed at 1,000,000 (LARGE_SITE_LIMIT_S)."""
LARGE_SITE_LIMIT_S = 120.0
PAGE_LIMIT_BYTES = 1_500_000


def bench_command() -> str:
    """`bench` beside this interpreter, as asv is run (`python -m asv`): a version manager's
    shim on PATH (pyenv's is a bash script that starts `pyenv exec`) would add its own CPU
    to benchlab's side only."""
    beside = Path(sys.executable).parent / "bench"
    return str(beside) if beside.is_file() else "bench"


def make_store(root: Path, runs: int) -> Path:
    store = root / "experiments" / "benchmark"
    fleet = REPO / "tools" / "perf" / "make_fleet.py"
    subprocess.run(
        [sys.executable, str(fleet), "--runs", str(runs), "--out", str(store)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [bench_command(), "--store", str(store), "catalog", "build"],
        check=True,
        capture_output=True,
    )
    return store


def time_site(store: Path, out: Path, repeat: int) -> tuple[list[float], int, list[float]]:
    """Wall times of `bench site build`, the largest peak RSS (bytes) of those runs, and
    their CPU seconds (user + system, its worker processes and mkdocs included): on a
    machine shared with other work the CPU time says what the wall time cannot."""
    times = []
    cpu = []
    peak = 0
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [bench_command(), "--store", str(store), "site", "build", "--output", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"bench site build failed: {err.decode()[-2000:]}")
        peak = max(peak, usage.ru_maxrss * 1024)  # KiB on Linux
        cpu.append(usage.ru_utime + usage.ru_stime)
    return times, peak, cpu


def page_weight(site: Path, page: Path) -> int:
    """Bytes of a page's HTML plus every local script and stylesheet it loads (the same
    measure as tests/site/test_browser.py::page_weight)."""
    text = page.read_text(encoding="utf-8")
    total = len(text.encode())
    refs = re.findall(r'<script[^>]+src="([^"#?]+)"', text)
    refs += re.findall(r'<link[^>]+rel="stylesheet"[^>]+href="([^"#?]+)"', text)
    refs += re.findall(r'<link[^>]+href="([^"#?]+)"[^>]+rel="stylesheet"', text)
    for ref in sorted(set(refs)):
        path = site / ref.lstrip("/") if ref.startswith("/") else (page.parent / ref).resolve()
        if path.is_file():
            total += path.stat().st_size
    loads = {"run.html": "bl/runs", "compare.html": "bl/compare", "series.html": "bl/series"}
    if page.name in loads and page.parent == site:
        total += max((p.stat().st_size for p in (site / loads[page.name]).glob("*.js")), default=0)
    return total


def heaviest_page(site: Path) -> tuple[str, int, int]:
    """(name, bytes) of the heaviest page, and the number of pages."""
    weights = {p.relative_to(site).as_posix(): page_weight(site, p) for p in site.rglob("*.html")}
    name = max(weights, key=lambda k: weights[k])
    return name, weights[name], len(weights)


def home_weight(site: Path) -> tuple[int, dict[str, int]]:
    """Bytes of index.html and every local file it loads (scripts, styles, chart data, the
    search index the search worker fetches), except plotly.min.js."""
    html = (site / "index.html").read_text(encoding="utf-8")
    refs = set(re.findall(r'(?:src|href)="([^"#?]+)"', html))
    files = {"index.html": len(html.encode())}
    for ref in sorted(refs):
        path = site / ref
        if ref.startswith(("http:", "https:")) or not path.is_file() or ref.endswith(".html"):
            continue
        if path.name == "plotly.min.js" or path.suffix not in (".js", ".css", ".json", ".png"):
            continue
        files[ref] = path.stat().st_size
    index = site / "search" / "search_index.js"
    if index.is_file():
        files["search/search_index.js"] = index.stat().st_size
    return sum(files.values()), files


# --- asv --------------------------------------------------------------------------------------


def make_asv(catalog_path: Path, root: Path) -> tuple[Path, int]:
    """An asv project holding the catalog's ok runs as asv results; returns (conf, results)."""
    from benchlab.catalog.read import load_catalog

    runs = sorted(
        (
            r
            for r in load_catalog(catalog_path).runs
            if r.get("status", "ok") == "ok" and r.get("peak_tok_per_sec")
        ),
        key=lambda r: (r["timestamp"], r["run_id"]),
    )
    repo = root / "project"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    # One commit per run, written with fast-import (seconds for 10,000 commits).
    stream = []
    for n, run in enumerate(runs):
        stamp = int(time.mktime(time.strptime(run["timestamp"], "%Y-%m-%dT%H:%M:%SZ")))
        message = f"run {n}".encode()
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"mark :%d\n" % (n + 1))
        stream.append(b"committer perf <perf@benchlab.invalid> %d +0000\n" % stamp)
        stream.append(b"data %d\n%s\n" % (len(message), message))
    subprocess.run(
        ["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(stream), check=True
    )
    hashes = (
        subprocess.run(
            ["git", "-C", str(repo), "rev-list", "--reverse", "main"],
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()
    )
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)
    results = root / "results"
    benchmarks: dict[str, object] = {}
    machines: dict[str, dict[str, object]] = {}
    for run, commit in zip(runs, hashes, strict=True):
        name = f"fleet.{re.sub(r'[^a-z0-9]+', '_', run['model_id'])}_{run['precision']}"
        benchmarks[name] = {
            "code": "def track(): ...",
            "name": name,
            "param_names": [],
            "params": [],
            "type": "track",
            "unit": "tok/s",
            "version": "1",
            "timeout": 60,
        }
        machine = run["machine_id"]
        folder = results / machine
        if machine not in machines:
            folder.mkdir(parents=True)
            machines[machine] = {
                "arch": "x86_64",
                "cpu": machine,
                "machine": machine,
                "num_cpu": "8",
                "os": "Linux",
                "ram": "16GB",
                "version": 1,
            }
            (folder / "machine.json").write_text(json.dumps(machines[machine]))
        stamp = int(time.mktime(time.strptime(run["timestamp"], "%Y-%m-%dT%H:%M:%SZ"))) * 1000
        data = {
            "commit_hash": commit,
            "env_name": "existing-py",
            "date": stamp,
            "params": {"machine": machine, "python": "3.11"},
            "python": "3.11",
            "requirements": {},
            "env_vars": {},
            "result_columns": ["result", "params", "version", "started_at", "duration"],
            "results": {name: [[run["peak_tok_per_sec"]], [], "1", stamp, 1.0]},
            "durations": {},
            "version": 2,
        }
        (folder / f"{commit[:8]}-existing-py.json").write_text(json.dumps(data))
    benchmarks["version"] = 2
    (results / "benchmarks.json").write_text(json.dumps(benchmarks))
    conf = root / "asv.conf.json"
    conf.write_text(
        json.dumps(
            {
                "version": 1,
                "project": "benchlab-perf",
                "project_url": "https://example.invalid/",
                "repo": str(repo),
                "branches": ["main"],
                "dvcs": "git",
                "environment_type": "existing",
                "results_dir": str(results),
                "html_dir": str(root / "html"),
            }
        )
    )
    return conf, len(runs)


def time_asv(conf: Path, repeat: int) -> tuple[list[float], list[float]]:
    """Wall times of `asv publish` and its CPU seconds (user + system, children included),
    measured as `time_site` measures ours."""
    times = []
    cpu = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "asv", "publish", "--config", str(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=conf.parent,
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - start)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"asv publish failed: {err.decode().strip().splitlines()[-1:]}")
        cpu.append(usage.ru_utime + usage.ru_stime)
    return times, cpu


def measure(runs: int, repeat: int, skip_asv: bool) -> bool:
    with tempfile.TemporaryDirectory(prefix="benchlab-perf-site-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        store = make_store(root, runs)
        print(f"\n== {runs} runs (fleet and catalog made in {time.perf_counter() - started:.1f} s)")
        if skip_asv:
            return report_site(store, root / "site", repeat, SITE_LIMIT_S)[0]
        conf, results = make_asv(store / "catalog.json", root / "asv")
        # One of each in turn: a shared machine's load changes by the minute, and both sides
        # of a ratio should see the same minutes.
        site_runs: tuple[list[float], int, list[float]] = ([], 0, [])
        asv_times: list[float] = []
        asv_cpu: list[float] = []
        for _ in range(repeat):
            times, peak, cpu = time_site(store, root / "site", 1)
            site_runs = (site_runs[0] + times, max(site_runs[1], peak), site_runs[2] + cpu)
            times, cpu = time_asv(conf, 1)
            asv_times += times
            asv_cpu += cpu
        ok, site_median = report_site(store, root / "site", repeat, SITE_LIMIT_S, site_runs)
        asv_median = statistics.median(asv_times)
        html = root / "asv" / "html"
        asv_size = sum(p.stat().st_size for p in html.rglob("*") if p.is_file())
        asv_pages = sum(1 for _ in html.rglob("*.html"))
        print(
            f"asv publish ({results} results, one commit each): median {asv_median:.2f} s "
            f"(runs: {', '.join(f'{t:.2f}' for t in asv_times)}); {asv_pages} pages, "
            f"{asv_size / 1e6:.1f} MB on disk"
        )
        print(f"ratio asv publish / bench site build: {asv_median / site_median:.2f}")
        asv_cpu_median = statistics.median(asv_cpu)
        print(
            f"CPU (user + system, all processes): asv {asv_cpu_median:.2f} s "
            f"(runs: {', '.join(f'{t:.2f}' for t in asv_cpu)}), bench {CPU[-1]:.2f} s, "
            f"ratio asv / bench {asv_cpu_median / CPU[-1]:.2f} (what a shared machine's load "
            "moves least)"
        )
        print(
            f"| {runs:,} | {site_median:.2f} s | {asv_median:.2f} s | "
            f"{asv_median / site_median:.2f} | {CPU[-1]:.2f} s | {asv_cpu_median:.2f} s | "
            f"{asv_cpu_median / CPU[-1]:.2f} | {SIZES[-1] / 1e6:.1f} MB | "
            f"{asv_size / 1e6:.1f} MB | {PAGES[-1]} | {asv_pages} |"
        )
    return ok


SIZES: list[int] = []
PAGES: list[int] = []
CPU: list[float] = []
"""The last site's size, page count and CPU seconds, for the lines beside asv's."""


def report_site(
    store: Path,
    out: Path,
    repeat: int,
    limit_s: float,
    measured: tuple[list[float], int, list[float]] | None = None,
) -> tuple[bool, float]:
    """Build the site `repeat` times (unless `measured` holds those builds' `time_site`
    figures, the last one's site in `out`) and print its time, size, heaviest page and peak
    RSS."""
    site_times, peak, cpu = measured or time_site(store, out, repeat)
    site_median = statistics.median(site_times)
    name, heaviest, pages = heaviest_page(out)
    home = page_weight(out, out / "index.html")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    SIZES.append(size)
    CPU.append(statistics.median(cpu))
    PAGES.append(pages)
    print(
        f"bench site build: median {site_median:.2f} s over {repeat} "
        f"(runs: {', '.join(f'{t:.2f}' for t in site_times)}); {pages} pages, "
        f"{size / 1e6:.1f} MB on disk; peak RSS {peak / 2**30:.2f} GiB; "
        f"CPU {statistics.median(cpu):.2f} s (runs: {', '.join(f'{t:.2f}' for t in cpu)}; "
        "user + system, all processes); "
        f"target <= {limit_s:.0f} s: {'OK' if site_median <= limit_s else 'FAIL'}"
    )
    print(
        f"heaviest page: {name} {heaviest / 1e6:.3f} MB with what it loads "
        f"(home {home / 1e6:.3f} MB); target <= {PAGE_LIMIT_BYTES / 1e6:.1f} MB: "
        f"{'OK' if heaviest <= PAGE_LIMIT_BYTES else 'FAIL'}"
    )
    shutil.rmtree(out, ignore_errors=True)
    return site_median <= limit_s and heaviest <= PAGE_LIMIT_BYTES, site_median


def measure_store(store: Path, repeat: int) -> bool:
    from benchlab.catalog.read import load_catalog
    from benchlab.query.colcache import open_columns

    started = time.perf_counter()
    columns = open_columns(store, min_bytes=0)  # the site reads it too: warm it first
    runs = columns.n if columns is not None else len(load_catalog(store / "catalog.json").runs)
    print(
        f"\n== {store}: {runs} runs (columns cache brought up to date first, in "
        f"{time.perf_counter() - started:.1f} s, as the first query after a build would; "
        "not part of the site's time)"
    )
    limit = SITE_LIMIT_S if runs <= 100_000 else LARGE_SITE_LIMIT_S
    with tempfile.TemporaryDirectory(prefix="benchlab-perf-site-") as tmp:
        return report_site(store, Path(tmp) / "site", repeat, limit)[0]


def use_bytecode() -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (as in some sandboxes), an editable benchlab
    compiles its modules from source in every process (~0.25 s a build here), while asv,
    installed by pip, reads the bytecode pip wrote. Any install of benchlab keeps its
    bytecode too (pip writes it, or the first import does), so compare like with like."""
    import benchlab

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(benchlab.__file__).parent)],
        check=True,
    )
    print("benchlab byte-compiled; PYTHONDONTWRITEBYTECODE unset for the timed runs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-asv", action="store_true")
    parser.add_argument(
        "--store",
        type=Path,
        action="append",
        default=[],
        help="also (with --runs 0: only) time the site of this built store",
    )
    parser.add_argument(
        "--bytecode",
        action="store_true",
        help="byte-compile benchlab first and unset PYTHONDONTWRITEBYTECODE for the timed runs",
    )
    args = parser.parse_args(argv)
    if args.bytecode:
        use_bytecode()
    elif os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("PYTHONDONTWRITEBYTECODE is set: benchlab's modules compile in every build")
    results = [measure(runs, args.repeat, args.skip_asv) for runs in args.runs if runs > 0]
    results += [measure_store(store, args.repeat) for store in args.store]
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
