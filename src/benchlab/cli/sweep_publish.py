"""`bench run --publish`: the sweep's gate verdicts written into its run dirs, then the
catalog built.

In `cli/` because it runs the catalog build, which sits above the gates it shares with the
sweep (ARCHITECTURE.md, Packages and floors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.catalog.build import build
from benchlab.detect.gates import PASSED, apply_gates

if TYPE_CHECKING:
    from benchlab.layout import Store
    from benchlab.models import SweepConfig


def publish_sweep(store: Store, config: SweepConfig) -> list[str]:
    """`bench run --publish`: record the sweep's gate verdicts, then build the catalog.

    Returns the lines to print: one per failed or unknown required gate, then the catalog
    build's summary (the same as `bench catalog build`).
    """

    lines = []
    if config.gates:
        verdicts, warnings = apply_gates(store, experiment=config.experiment, config=config)
        lines += [f"WARNING {w}" for w in warnings]
        failed = [v for v in verdicts if v.gate.required and v.gate.status != PASSED]
        lines.append(
            f"gates: {len(verdicts) - len(failed)} of {len(verdicts)} run(s) pass"
            + "".join(f"\n  {v.gate.status} {v.run_id}: {v.gate.detail}" for v in failed)
        )
    result = build(store)
    lines += [f"warning: {line}" for line in result.warnings]
    lines.append(result.summary())
    return lines
