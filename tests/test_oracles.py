"""A test whose oracle is missing skips on a developer's machine and fails in CI
(tests/kit/oracle.py): CI that skips its oracle tests has not run them."""

from __future__ import annotations

import pytest
from tests.kit.oracle import need_modules, need_programs


def test_a_missing_oracle_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        need_programs("no-such-oracle-x7", reason="no-such-oracle-x7 absent")


def test_a_missing_oracle_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"tools/ci-setup\.sh must install it"):
        need_programs("no-such-oracle-x7", reason="no-such-oracle-x7 absent")
    with pytest.raises(pytest.fail.Exception):
        need_modules("no_such_module_x7", reason="no_such_module_x7 absent")


def test_the_dev_extra_brings_the_oracles() -> None:
    """tools/ci-setup.sh installs `.[dev]`: asv and compare-llama-bench.py's imports."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    dev = re.search(r"^dev = \[(.*?)^\]", text, re.S | re.M)
    assert dev is not None
    for name in ("asv", "tabulate", "gitpython"):
        assert re.search(rf'^\s*"{name}[>=<]', dev[1], re.M | re.I), name
