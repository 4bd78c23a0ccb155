"""The regression detector and the gates: a series' noise (`noise`), its segmentation into
levels (`segment`), the tests and reports over a whole catalog (`regress`), the repeats'
interval (`stats`) and a sweep's pass/fail gates (`gates`). Below the catalog and the sweep,
which both judge runs with it (ARCHITECTURE.md, Packages and floors)."""
