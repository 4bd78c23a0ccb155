"""A run of this clone's own stamped past what the gate accepts (ARCHITECTURE.md, invariant
11: a date-time from 1970 to 2099): the build names its run dir and the field and publishes
the rest; the site build over that catalog succeeds (no struct.error from a date no chart
can place) and shows every other run."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.kit.fleet import load_make_fleet

ROOT = Path(__file__).resolve().parents[2]
Bench = Callable[..., tuple[int, str, str]]


@pytest.fixture
def make_fleet() -> Callable[..., list[str]]:
    return load_make_fleet().make_fleet


def test_a_run_stamped_2200_is_named_by_the_build_and_the_site_still_builds(
    store: Path, make_fleet: Callable[..., list[str]], bench: Bench, tmp_path: Path
) -> None:
    make_fleet(store, 6, seed=7, step_s=3600)
    manifest = sorted((store / "runs" / "by-machine").glob("*/*/manifest.json"))[0]
    manifest.write_text(manifest.read_text().replace('"timestamp": "20', '"timestamp": "22', 1))
    far = manifest.parent.name

    code, out, err = bench("--store", str(store), "catalog", "build")

    assert code == 2 and "Traceback" not in err  # a bad run dir: named, set aside (exit 2)
    assert far in err and "timestamp" in err and "2099" in err, err
    assert "5 runs" in out
    source = tmp_path / "site"
    shutil.copytree(ROOT / "site", source, ignore=shutil.ignore_patterns("build", "generated"))
    output = tmp_path / "built"

    code, out, err = bench(
        "--store", str(store), "site", "build", "--source", str(source), "--output", str(output)
    )

    assert code == 0 and "Traceback" not in err, err
    assert (output / "index.html").is_file()
    pages = "".join(p.read_text(errors="replace") for p in output.rglob("*.html"))
    assert far not in pages
