"""`bench site build`: render the site's pages from the public catalog and build it."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "site",
        help="build the static results site (MkDocs Material)",
        description="Pages are rendered from the public catalog.json and machine inventory "
        "only, then `mkdocs build --strict` builds them into a static site that works "
        "offline and from file://.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="render the pages and build the site")
    build.add_argument("--output", type=Path, help="the built site (default: site/build/)")
    build.add_argument(
        "--no-mkdocs",
        action="store_true",
        help="only render the Markdown pages (into --docs, default site/docs/generated/)",
    )
    build.add_argument("--docs", type=Path, help="where to render the Markdown pages")
    build.add_argument(
        "--source",
        type=Path,
        help="the site sources: mkdocs.yml, overrides/, docs/ (default: the repo's site/)",
    )
    build.set_defaults(handler=run_build)


def run_build(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.publish.mkdocs_run import MkdocsProcess

    # MkDocs' interpreter first: it imports while the site's code loads and renders.
    runner = None if args.no_mkdocs else MkdocsProcess()
    try:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.layout import Store, find_store
        from benchlab.publish.build import build_site, default_source
        from benchlab.publish.data import load_site

        store = Store(find_store()).require()
        data = load_site(store)  # light entries from the columns cache on a large catalog
        source = args.source or default_source(store.root)
        output = args.output or source / "build"
        result = build_site(data, output, source, args.docs, run_build=not args.no_mkdocs,
                            runner=runner)  # fmt: skip
    finally:
        if runner is not None:
            runner.stop()
    print(result)
    return 0
