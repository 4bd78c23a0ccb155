"""Backends register themselves: benchlab's own in `benchmarks.BUILT_IN`, a package's in the
`benchlab.backends` entry point group, as order plug-ins do."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.kit.plugins import install_plugin

from benchlab.benchmarks import BUILT_IN, ENTRY_POINT_GROUP, get_backend, known_backends
from benchlab.errors import ConfigError

TOY = """
from benchlab.benchmarks.reference import ReferenceBackend


class ToyBackend(ReferenceBackend):
    name = "toy"
"""


def test_each_built_in_backend_is_found_by_its_name() -> None:
    for name in BUILT_IN:
        assert get_backend(name).name == name


def test_an_installed_package_registers_a_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real distribution (dist-info with entry_points.txt) on sys.path, as pip leaves one."""
    site = tmp_path / "site-packages"
    entry = "toy = lab_toy_backend_mod:ToyBackend"
    install_plugin(site, "lab-toy-backend", ENTRY_POINT_GROUP, entry, "lab_toy_backend_mod", TOY)
    monkeypatch.syspath_prepend(str(site))
    assert "toy" in known_backends()
    assert get_backend("toy").name == "toy"


def test_an_unknown_backend_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        get_backend("vllm-nope")
    text = str(caught.value)
    assert "\n" not in text and "'vllm-nope'" in text
    assert all(name in text for name in BUILT_IN)
