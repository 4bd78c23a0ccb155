"""What the home page names, on generated histories with known answers.

    python tools/perf/home_open.py [--seed 20261203] [--noise 144] [--planted 20]

The histories are tools/perf/regress.py's draw: noise-only series under seven noise models,
and per kind (old step, recent step, pulse: a step later undone) `--planted` series with a
step of 10, 20 or 30 % either way. The home page is rendered from them as the site renders it
(`SiteContext`, `pages.home.home_page`), and its tables read back:

- open named: regressions still in effect at the newest run (truth: an open step down, or
  the fall of an upward pulse) named within 2 runs of their first bad run in the home page's
  open-regressions table (confirmed), and in it or its suspects table;
- window: the same, in the "what changed in the last 14 days" table (what the home page led
  with before);
- fixed listed: regressions later undone (downward pulses) listed as open;
- noise listed: noise-only series in the open-regressions table, and in the suspects table.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from benchlab.catalog.read import LoadedCatalog
from benchlab.publish.build import expand
from benchlab.publish.context import SiteContext
from benchlab.publish.data import PublicData
from benchlab.publish.pages.home import home_page


def _regress_perf() -> Any:
    """tools/perf/regress.py, loaded by path (the draw and its catalog entries)."""
    path = Path(__file__).with_name("regress.py")
    spec = importlib.util.spec_from_file_location("perf_regress", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _named(text: str, table: str) -> list[tuple[int, int]]:
    """(series number, first bad day) of each row of a home page table."""
    body = re.search(rf'<table[^>]*id="{table}".*?<tbody>(.*?)</tbody>', text, re.S)
    if not body:
        return []
    return [
        (int(number), int(day))
        for number, day in re.findall(r"r=s(\d{4})-(\d{3})", html.unescape(body.group(1)))
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--noise", type=int, default=144)
    parser.add_argument("--planted", type=int, default=20)
    args = parser.parse_args(argv)
    perf = _regress_perf()
    series = perf.draw(args.seed, args.noise, args.planted)
    runs = perf.entries(series)
    site = SiteContext(PublicData(LoadedCatalog(Path("generated"), runs)), workers=1)
    home_page(site)
    text = expand(site.files, "index.md")
    tables = {t: _named(text, t) for t in ("open-regressions", "open-suspects", "what-changed")}

    def near(number: int, at: int | None, table: str) -> bool:
        return at is not None and any(
            n == number and abs(day - at) <= 2 for n, day in tables[table]
        )

    opened = [(i, s.open_regression) for i, s in enumerate(series) if s.open_regression is not None]
    fixed = [
        (i, s.fixed_regression) for i, s in enumerate(series) if s.fixed_regression is not None
    ]
    noise = {i for i, s in enumerate(series) if not s.planted}
    confirmed = sum(near(i, at, "open-regressions") for i, at in opened)
    either = sum(
        near(i, at, "open-regressions") or near(i, at, "open-suspects") for i, at in opened
    )
    window = sum(near(i, at, "what-changed") for i, at in opened)
    fixed_listed = sum(near(i, at, "open-regressions") or near(i, at, "open-suspects")
                       for i, at in fixed)  # fmt: skip
    noise_confirmed = len({n for n, _ in tables["open-regressions"]} & noise)
    noise_suspects = len({n for n, _ in tables["open-suspects"]} & noise)
    print(f"seed {args.seed}: {len(series)} series ({len(noise)} noise-only), "
          f"{len(opened)} open regressions, {len(fixed)} fixed ones")  # fmt: skip
    print("| figure | home page |")
    print("|---|--:|")
    print(f"| open regressions named, open-regressions table | {confirmed} of {len(opened)} |")
    print(f"| open regressions named, open or suspects table | {either} of {len(opened)} |")
    print(f"| open regressions in the 14-day what-changed table | {window} of {len(opened)} |")
    print(f"| fixed regressions listed as open | {fixed_listed} of {len(fixed)} |")
    print(f"| noise-only series in open-regressions | {noise_confirmed} of {len(noise)} |")
    print(f"| noise-only series in suspects | {noise_suspects} of {len(noise)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
