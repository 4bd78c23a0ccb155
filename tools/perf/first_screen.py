"""What a reader sees first: where the home page's answer and the pages' controls start.

    python tools/perf/first_screen.py --store experiments/benchmark     # a store's site
    python tools/perf/first_screen.py --fleet 3000 [--seed 0]            # a generated fleet
    python tools/perf/first_screen.py --site site/build                  # a site already built
    python tools/perf/first_screen.py --demo                             # the quick start's demo

In headless Chromium (Debian's /usr/bin/chromium, through playwright), from file:// URLs:

- home page at 1440x900: the top (CSS px from the top of the page) of the fastest-machines
  table (`#fastest`) or of a first demo's results (`#demo-results`), whether that table
  scrolls sideways, and every heading, paragraph and table that starts in the first 900 px
  (what the first screen shows);
- the home page at 390x844: the same table's top;
- Compare and Regressions at 390x844: the top of the first control (a select, an input or
  a sortable table's heading) and how many px of text come before it.

The targets (ARCHITECTURE.md, Publishing and redaction): the answer above 600 px at 1440x900, the
controls within the first screen (844 px) on a phone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]

ANSWER_TOP_JS = """() => {
  const t = document.querySelector('#demo-results') || document.querySelector('#fastest');
  if (!t) { return null; }
  const box = t.closest('.bl-table') || t;
  return {id: t.id, top: Math.round(t.getBoundingClientRect().top + window.scrollY),
          sideways: box.scrollWidth > box.clientWidth + 1};
}"""

FIRST_SCREEN_JS = """(height) => {
  const out = [];
  for (const e of document.querySelectorAll('article h1, article h2, article > p, article table')) {
    const top = Math.round(e.getBoundingClientRect().top + window.scrollY);
    if (top < height) {
      const text = e.tagName === 'TABLE' ? 'table#' + e.id : e.textContent.trim().slice(0, 90);
      out.push([top, e.tagName.toLowerCase(), text]);
    }
  }
  return out;
}"""

CONTROL_TOP_JS = """() => {
  const all = document.querySelectorAll(
    'article select, article input, article table[data-bl-sort] th');
  for (const c of all) {
    const box = c.getBoundingClientRect();
    if (box.width > 0 && box.height > 0) { return Math.round(box.top + window.scrollY); }
  }
  return null;
}"""


def measure(site: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for name, (width, height) in (("desktop", (1440, 900)), ("phone", (390, 844))):
                context = browser.new_context(viewport={"width": width, "height": height})
                page = context.new_page()
                page.goto((site / "index.html").as_uri(), wait_until="load")
                out[f"home_{name}"] = page.evaluate(ANSWER_TOP_JS)
                out[f"home_{name}_first_screen"] = page.evaluate(FIRST_SCREEN_JS, height)
                if name == "phone":
                    for other in ("compare", "regressions"):
                        page.goto((site / f"{other}.html").as_uri(), wait_until="load")
                        out[f"{other}_phone_control_top"] = page.evaluate(CONTROL_TOP_JS)
                context.close()
        finally:
            browser.close()
    return out


def build(store: Path, out: Path) -> Path:
    from benchlab.layout import Store
    from benchlab.publish.build import build_site
    from benchlab.publish.data import load_public

    return build_site(load_public(Store(store)), out)


def fleet_store(root: Path, runs: int, seed: int) -> Path:
    sys.path.insert(0, str(REPO))
    from tests.kit.fleet import load_make_fleet

    from benchlab.catalog.build import build as build_catalog
    from benchlab.layout import Store

    store = root / "experiments" / "benchmark"
    load_make_fleet().make_fleet(store, runs, seed)
    build_catalog(Store(store))
    return store


def demo_store(root: Path) -> Path:
    """The quick start's demo catalog as tests/site/site_factory.py writes it."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "tests" / "site"))
    from site_factory import demo_runs, write_entries

    store = root / "experiments" / "benchmark"
    write_entries(store, demo_runs())
    return store


def report(figures: dict[str, Any]) -> None:
    for name in ("desktop", "phone"):
        answer = figures[f"home_{name}"]
        print(f"home {name}: answer {answer}")
        for top, tag, text in figures[f"home_{name}_first_screen"]:
            print(f"  {top:5d} px  {tag:5s} {text}")
    for other in ("compare", "regressions"):
        print(f"{other} phone: first control at {figures[f'{other}_phone_control_top']} px")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--site", type=Path, help="a built site")
    where.add_argument("--store", type=Path, help="a store with a built catalog")
    where.add_argument("--fleet", type=int, help="generate a fleet of this many runs")
    where.add_argument("--demo", action="store_true", help="the quick start's demo catalog")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bl-first-screen-") as tmp:
        if args.site:
            site = args.site
        elif args.store:
            site = build(args.store, Path(tmp) / "site")
        elif args.demo:
            site = build(demo_store(Path(tmp)), Path(tmp) / "site")
        else:
            site = build(fleet_store(Path(tmp), args.fleet, args.seed), Path(tmp) / "site")
        report(measure(site))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
