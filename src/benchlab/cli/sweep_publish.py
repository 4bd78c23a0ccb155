"""`bench run --publish`: the sweep's gate verdicts written into its run dirs, then the
catalog built.

Apart from `sweep.gates` because the catalog build evaluates gates itself (it imports
`sweep.gates`), so the gates module must not import the build back (tests/test_import_cycles.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.sweep.gates import PASSED, apply_gates

if TYPE_CHECKING:
    from benchlab.layout import Store
    from benchlab.models import SweepConfig


def publish_sweep(store: Store, config: SweepConfig) -> list[str]:
    """`bench run --publish`: record the sweep's gate verdicts, then build the catalog.

    Returns the lines to print: one per failed or unknown required gate, then the catalog
    build's summary (the same as `bench catalog build`).
    """
    from benchlab.catalog.build import build

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
