"""Redaction figures: recall and false positives on the labelled corpus, and scan speed.

    python tools/perf/redact.py [--runs 10000] [--repeat 3] [--keep DIR]

1. Scores the policy on tests/data/redact/corpus.json (tuned: the detectors were written
   against it) and on corpus_holdout.json (held out: each batch of its cases was written
   before the detectors of its issue, and is never tuned on), per class recall and false
   positives on the clean part, with the corpus sizes. Each sample is scanned alone, as a
   public value is. Target on the tuned corpus: recall >= 99%, 0 FP, at least 450 tells
   and 450 clean strings (benign build tags, commits, model names, rates, versions,
   public URLs, plain paths: what false positives are measured on); the held-out figures
   are the honest estimate of what the detectors do on text nobody fitted them to.
2. Writes a synthetic fleet of `--runs` run dirs (tools/perf/make_fleet.py) with tells
   injected into every tenth manifest, then times `scan_sources` over all of it (the work
   `bench scan runs/` does) and prints the median of `--repeat` passes, wall clock and CPU
   time of this process (on a shared machine the CPU time is the figure to compare).
   Target: 10,000 run dirs in <= 30 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

# A sibling script: `python tools/perf/redact.py` puts tools/perf first on sys.path.
import make_fleet

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "redact" / "corpus.json"
HOLDOUT = REPO / "tests" / "data" / "redact" / "corpus_holdout.json"
MIN_SIZE = 450
INJECTED = "cwd /home/qzhang/bench on ip-10-0-0-7.ec2.internal (us-east-1a, p4d.24xlarge)"


def corpus_figures(path: Path = CORPUS, label: str = "corpus (tuned)") -> None:
    from benchlab.redact.corpus import evaluate

    score = evaluate(path)
    print(
        f"{label}: {score.tells} tells in {len(score.per_class)} classes, {score.clean} clean "
        f"({path.name})"
    )
    for tell_class, (found, total) in sorted(score.per_class.items()):
        print(f"  {tell_class:<16} {found}/{total}")
    if path == CORPUS and (score.tells < MIN_SIZE or score.clean < MIN_SIZE):
        print(f"  corpus too small: at least {MIN_SIZE} tells and {MIN_SIZE} clean strings")
    print(f"recall: {score.recall:.2%} (target >= 99%)")
    print(f"false positives on clean: {len(score.false_positives)} (target 0)")
    for line in score.false_positives + [f"missed {c}: {t!r}" for c, t in score.missed]:
        print(f"  {line}")


def scan_figures(runs: int, repeat: int, keep: Path | None) -> None:
    from benchlab.redact.policy import load_policy
    from benchlab.redact.scan import path_sources, scan_sources

    with tempfile.TemporaryDirectory(prefix="redact-perf-") as tmp:
        store = (keep or Path(tmp)) / "experiments" / "benchmark"
        store.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        run_ids = make_fleet.make_fleet(store, runs)
        manifests = sorted(store.glob("runs/by-machine/*/*/manifest.json"))
        for manifest in manifests[::10]:
            doc = json.loads(manifest.read_text())
            doc["notes"] = INJECTED
            manifest.write_text(json.dumps(doc))
        files = sum(1 for p in store.joinpath("runs").rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in store.joinpath("runs").rglob("*") if p.is_file())
        print(
            f"fleet: {len(run_ids)} run dirs, {files} files, {size / 1e6:.1f} MB "
            f"(written in {time.perf_counter() - started:.1f} s)"
        )
        policy = load_policy(store)
        times = []
        cpu = []
        for _ in range(repeat):
            began, began_cpu = time.perf_counter(), time.process_time()
            report = scan_sources(policy, path_sources([store / "runs"], store))
            times.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
        dirty = len({f.path.rsplit("/", 1)[0] for f in report.findings})
        print(
            f"scan: median {statistics.median(times):.2f} s over {repeat} passes "
            f"(min {min(times):.2f}, max {max(times):.2f}) for {len(run_ids)} run dirs, "
            f"{report.files_scanned} files; target <= 30 s"
        )
        print(f"  cpu: median {statistics.median(cpu):.2f} s of this process per pass")
        print(f"  {len(report.findings)} findings in {dirty} places (tells injected on purpose)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the fleet here and keep it")
    parser.add_argument("--corpus-only", action="store_true")
    args = parser.parse_args(argv)
    corpus_figures()
    if HOLDOUT.is_file():
        corpus_figures(HOLDOUT, "held-out corpus (never tuned on)")
    if not args.corpus_only:
        scan_figures(args.runs, args.repeat, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
