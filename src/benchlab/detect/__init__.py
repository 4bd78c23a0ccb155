"""The regression detector and the gates: a catalog's series and the metrics each is judged
in (`history`), a series' noise (`noise`, `repeats`), its segmentation into levels
(`segment`), the tests on one history (`cuts`), its steps as records (`steps`), the report over
a whole catalog (`regress`), latest against baseline (`baseline`), the repeats' interval
(`stats`) and a sweep's pass/fail gates (`gates`). Below the catalog and the sweep, which both
judge runs with it (ARCHITECTURE.md, Packages and floors)."""
