"""`bench best --predict MACHINE --model M`: decode t/s on a machine that has not run the
model, from its memory bandwidth and the fleet's (ARCHITECTURE.md, "How close to the
hardware"). A handler of `bench best`, kept apart because it answers a different question:
not which series is best, but what a machine would do."""

from __future__ import annotations

import argparse
import json
import sys

from benchlab.metrics import DECODE


def run_predict(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.read import load_catalog
    from benchlab.errors import ConfigError
    from benchlab.layout import Store, find_store
    from benchlab.query.filters import Filters, select
    from benchlab.query.roofline import fleet_specs, predict_decode

    if not args.model:
        raise ConfigError("--predict needs --model: the model whose decode to predict")
    store = Store(find_store()).require()
    runs = select(load_catalog(store.catalog_path).runs, Filters(model=args.model))
    model_ids = sorted({str(e.get("model_id")) for e in runs})
    if len(model_ids) != 1:
        found = ", ".join(model_ids) or "none"
        raise ConfigError(f"--model {args.model}: expected one model in the catalog, found {found}")
    prediction, per_token = predict_decode(runs, fleet_specs(store), args.predict, model_ids[0])
    answer = {
        "machine_id": args.predict,
        "model_id": model_ids[0],
        DECODE.name: round(prediction.tok_per_sec, 2),
        "low": round(prediction.low, 2),
        "high": round(prediction.high, 2),
        "ceiling_tok_per_sec": round(prediction.ceiling_tok_per_sec, 2),
        "median_mbu_pct": round(prediction.median_mbu_pct, 1),
        "machines": prediction.machines,
        "bytes_per_token": int(per_token),
    }
    if args.format == "json":
        print(json.dumps(answer, indent=2))
        return 0
    print(
        f"{args.predict}: {model_ids[0]} decode about {prediction.tok_per_sec:,.1f} t/s "
        f"({prediction.low:,.1f}-{prediction.high:,.1f}, the fleet's MBU range)"
    )
    print(
        f"  ceiling {prediction.ceiling_tok_per_sec:,.1f} t/s x median MBU "
        f"{prediction.median_mbu_pct:.1f}% of {prediction.machines} machines that ran it",
        file=sys.stderr,
    )
    return 0
