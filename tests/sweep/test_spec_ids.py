"""Spec ids are long enough for large matrices, and a collision is named, never merged.

Before: a 32-bit hash. The 100,489-point matrix below has two different points whose first
8 hex chars agree, so expand refused it as "the same measurement"; with 16 hex chars every
point has its own id, and a forced collision names both points.
"""

from __future__ import annotations

from collections import Counter

import pytest

from benchlab.errors import ConfigError
from benchlab.ids import LEGACY_HASH_CHARS, SPEC_HASH_CHARS, check_id
from benchlab.models import SweepConfig
from benchlab.redact.public_ids import public_spec_id
from benchlab.sweep import expand as expand_module
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.expand import expand

SIDE = 317
"""317 x 317 = 100,489 points: past the ~100k where 32-bit ids start to collide."""


def square(side: int) -> SweepConfig:
    return parse_sweep_config(
        {
            "experiment": "big",
            "devices": {"box": {"transport": "local"}},
            "matrix": {
                "backend": "reference",
                "model": "tiny",
                "precision": "f32",
                "threads": list(range(1, side + 1)),
                "params": [{"m": i} for i in range(side)],
            },
        },
        "big.yaml",
        max_points=None,  # past the default cap on purpose
    )


@pytest.mark.slow
def test_a_100k_point_matrix_has_one_id_per_point() -> None:
    specs = expand(square(SIDE))
    assert len(specs) == SIDE * SIDE > 100_000
    assert len({spec.spec_id for spec in specs}) == len(specs)
    hashes = [spec.spec_id.rsplit("-", 1)[1] for spec in specs]
    assert {len(h) for h in hashes} == {SPEC_HASH_CHARS}
    # The same points under the old 8-hex ids: at least one pair collides (the fault).
    legacy = Counter(h[:LEGACY_HASH_CHARS] for h in hashes)
    assert max(legacy.values()) >= 2


def test_a_forced_collision_names_both_points(monkeypatch: pytest.MonkeyPatch) -> None:
    def one_hex_char(*args: object, **kwargs: object) -> str:
        return public_spec_id(*args, **kwargs)[: -(SPEC_HASH_CHARS - 1)]  # type: ignore[arg-type]

    monkeypatch.setattr(expand_module, "public_spec_id", one_hex_char)
    with pytest.raises(ConfigError) as info:
        expand(square(5))  # 25 points, 16 possible ids: two must share one
    message = str(info.value)
    assert "hash collision" in message and "different measurements" in message
    assert message.count("threads=") == 2 and message.count("params=") == 2
    assert "\n" not in message


def test_a_true_duplicate_is_still_called_a_duplicate(monkeypatch: pytest.MonkeyPatch) -> None:
    config = square(2)
    first = expand(config)[0]
    monkeypatch.setattr(expand_module, "make_spec", lambda config, point, **kw: first)
    with pytest.raises(ConfigError, match="are the same measurement"):
        expand(config)


def test_old_8_hex_ids_still_pass_check_id_and_imports_keep_them() -> None:
    old = "pi5-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z"
    assert check_id(old, "run id") == old
    short = public_spec_id("pi5", "m", "q8", "import", {"a": 1})
    long = public_spec_id("pi5", "m", "q8", "batch", {"a": 1}, hash_chars=SPEC_HASH_CHARS)
    assert len(short.rsplit("-", 1)[1]) == LEGACY_HASH_CHARS
    assert long.rsplit("-", 1)[1].startswith(short.rsplit("-", 1)[1])
