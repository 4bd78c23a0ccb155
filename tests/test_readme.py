"""The README's and the guide's examples work: the sweep config in docs/running-sweeps.md parses,
and every `bench` verb the README or a guide page names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from benchlab.cli import main
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.expand import expand

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
GUIDE = {p.name: p.read_text() for p in sorted((REPO / "docs").glob("*.md"))}
SWEEPS_PAGE = GUIDE["running-sweeps.md"]
TEXT = "\n".join([README, *GUIDE.values()])


def test_the_sweep_example_is_a_valid_config() -> None:
    [block] = re.findall(r"```yaml\n(.*?)```", SWEEPS_PAGE, re.S)
    config = parse_sweep_config(yaml.safe_load(block), "docs/running-sweeps.md")
    specs = expand(config)
    assert len(specs) == 4 * 2 * 2 * 2
    assert {spec.device for spec in specs} == {"laptop", "pi5", "pod", "wsl"}


@pytest.mark.parametrize("verb", sorted(set(re.findall(r"(?<![\w-])bench ([a-z][a-z-]+)", TEXT))))
def test_every_verb_in_the_readme_and_guide_has_help(
    verb: str, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as done:
        main([verb, "--help"])
    assert done.value.code == 0
    assert "usage: bench" in capsys.readouterr().out
