"""The one kit of test factories; every test dir imports from here instead of keeping a copy.

Import a piece by its module (`from tests.kit.runs import write_run`): pytest's importlib
mode makes `tests` a namespace package wherever it is started from, so no `sys.path` setup
is needed.

- `tests.kit.runs`: `write_run`, a run dir in the run-file format (manifest, kernel, batch) with
  an optional record.json filled the way the runner fills it (`benchlab.metrics.derive`,
  `benchlab.identity.derive`); `SEED_RUN_ID`, the example run's id.
- `tests.kit.entries`: `make_entry`, a v2 catalog entry dict with every identity field and
  its `series` (`benchlab.identity.series_id`).
- `tests.kit.configs`: `sweep_dict`, `sweep_yaml`, `write_sweep`, `parse_sweep`: one sweep
  config from keyword arguments (experiment, devices, matrix, policies), as a dict, YAML
  text, a file or a parsed `SweepConfig`.
- `tests.kit.backend`: `FakeBackend` (no numpy, scripted failures) and `envelope` /
  `ok_stdout`, what a device answers.
- `tests.kit.transport`: `FakeTransport`, a transport that answers from a script.
- `tests.kit.scheduler`: `real_runner`, `fleet_factory` (FakeDevice per device id),
  `Events` (a progress sink that keeps what it was told) and `LightRunner` (attempts that
  write nothing), the scheduler's doubles.
- `tests.kit.cli`: `run_cli`, `bench ARGS` in-process, returning (exit code, stdout,
  stderr); the `bench` fixture in tests/conftest.py binds it to capsys.
- `tests.kit.catalog`: `catalog_doc`, a built catalog (v2 or sharded v3) as one document
  with every entry under `runs`, read through `load_catalog`.
- `tests.kit.fleet`: `load_make_fleet`, tools/perf/make_fleet.py loaded by path (the
  synthetic fleet of many runs, shared with the perf scripts).
- `tests.kit.plugins`: `install_plugin`, a real distribution (dist-info, entry point, module)
  in a site dir, for backends and order policies registered by an installed package.
"""
