"""`bench schemas`: write or check the JSON Schemas generated from the models."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schemas",
        help="generate schemas/*.json from the models, or check they are current",
        description="The models in benchlab.models are the source of every file format; "
        "schemas/*.json are generated from them and checked in.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the schema files")
    parser.add_argument("--dir", type=Path, default=Path("schemas"), help="default: schemas/")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.schemas import stale_schemas, write_schemas

    if args.write:
        for path in write_schemas(args.dir):
            print(path)
        return 0
    stale = stale_schemas(args.dir)
    for path in stale:
        print(f"stale: {path} (run `bench schemas --write`)")
    return 1 if stale else 0
