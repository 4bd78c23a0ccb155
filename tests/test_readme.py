"""The README's examples work: its sweep config parses and every `bench` verb it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from benchlab.cli import main
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.expand import expand

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_the_sweep_example_is_a_valid_config() -> None:
    [block] = re.findall(r"```yaml\n(.*?)```", README, re.S)
    config = parse_sweep_config(yaml.safe_load(block), "README.md")
    specs = expand(config)
    assert len(specs) == 4 * 2 * 2 * 2
    assert {spec.device for spec in specs} == {"laptop", "pi5", "pod", "wsl"}


@pytest.mark.parametrize("verb", sorted(set(re.findall(r"(?<![\w-])bench ([a-z][a-z-]+)", README))))
def test_every_verb_in_the_readme_has_help(verb: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as done:
        main([verb, "--help"])
    assert done.value.code == 0
    assert "usage: bench" in capsys.readouterr().out
