"""Hostile input: alias bombs, deep nesting, NaN and hidden characters, each through the CLI.

Every case must end the same way: a non-zero exit, one line naming the file, no traceback,
nothing written. The bad inputs are real files; nothing is mocked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep

from benchlab.cli import main
from benchlab.errors import SchemaError, StoreError
from benchlab.ids import check_id, check_name, slug
from benchlab.layout import loads_json, read_json

HIDDEN = {
    "nul": "\x00",
    "rlo": "\u202e",
    "lre": "\u202a",
    "pdf": "\u202c",
    "lri": "\u2066",
    "pdi": "\u2069",
    "lrm": "\u200e",
    "rlm": "\u200f",
    "newline": "\n",
    "escape": "\x1b",
}

BOMB = """experiment: bomb
devices: {local: {transport: local}}
matrix:
  backend: reference
  model: tiny
  params:
    a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
    i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def one_line_error(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith("bench: error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err + captured.out
    assert str(path) in err
    return err


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# --- YAML ------------------------------------------------------------------------------------


def test_alias_bomb_in_matrix_params_is_refused_before_it_expands(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB)
    before = files_under(store)
    assert main(["run", str(config)]) == 2
    err = one_line_error(capsys, config)
    assert "aliases expand to more than" in err
    assert files_under(store) == before


def test_a_few_aliases_still_load(tmp_path: Path) -> None:
    from benchlab.sweep.config import load_sweep_config

    config = tmp_path / "ok.yaml"
    config.write_text(
        "experiment: ok\ndevices: {local: {transport: local}}\n"
        "matrix: {backend: reference, precision: f32, model: &m tiny, params: {label: *m}}\n"
    )
    assert load_sweep_config(config).matrix["params"] == {"label": "tiny"}


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("matrix: " + "[" * 100_000, id="flow-100k"),
        pytest.param("matrix:\n" + "".join(f"{' ' * i}k{i}:\n" for i in range(1, 200)), id="block"),
        pytest.param("matrix: &a [*a]\n", id="self-alias"),
    ],
)
def test_deep_or_recursive_yaml_is_one_line(
    body: str, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text("experiment: deep\ndevices: {local: {transport: local}}\n" + body)
    assert main(["--store", str(store), "run", str(config)]) == 2
    one_line_error(capsys, config)


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_hidden_characters_in_a_model_name_are_refused(
    name: str, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_sweep(
        tmp_path / "names.yaml", experiment="names", matrix={"model": f"tiny{HIDDEN[name]}x"}
    )
    before = files_under(store)
    assert main(["--store", str(store), "run", str(config), "--dry-run"]) == 2
    err = one_line_error(capsys, config)
    assert "matrix.model" in err and "U+" in err
    assert files_under(store) == before


def test_hidden_characters_in_a_device_name_are_refused(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_sweep(
        tmp_path / "dev.yaml", experiment="dev", devices={"gpu1\u202e2kcab": {"transport": "local"}}
    )
    assert main(["--store", str(store), "run", str(config), "--dry-run"]) == 2
    assert "U+202E" in one_line_error(capsys, config)


# --- ids and names ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_ids_slugs_and_names_refuse_hidden_characters(name: str) -> None:
    value = f"gpu1{HIDDEN[name]}b"
    for check in (check_id, check_name, slug):
        with pytest.raises(StoreError):
            check(value)


def test_a_trailing_newline_no_longer_passes_check_id() -> None:
    # `$` in the old pattern matched before a final newline.
    with pytest.raises(StoreError, match=r"unsafe run id 'a\\n'"):
        check_id("a\n", "run id")
    assert check_id("gpu1-smollm2-135m-q8") == "gpu1-smollm2-135m-q8"
    assert slug("SmolLM2-135M Instruct") == "smollm2-135m-instruct"


# --- JSON ------------------------------------------------------------------------------------

HOSTILE_JSON = {
    "deep-array": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "unterminated": b"[" * 100_000,
    "nan": b'{"machines": {"m": {"cost_per_hour": NaN}}}',
    "infinity": b'{"machines": {"m": {"cost_per_hour": Infinity}}}',
    "overflow": b'{"machines": {"m": {"cost_per_hour": 1e999}}}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE_JSON))
def test_hostile_json_is_one_schema_error_naming_the_file(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.json"
    path.write_bytes(HOSTILE_JSON[name])
    with pytest.raises(SchemaError) as caught:
        read_json(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message


@pytest.mark.parametrize("name", sorted(HOSTILE_JSON))
def test_hostile_inventory_through_the_cli(
    name: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = store / "machines" / "catalog.json"
    inventory.parent.mkdir()
    inventory.write_bytes(HOSTILE_JSON[name])
    before = files_under(store)
    assert main(["--store", str(store), "machines", "--format", "json"]) == 2
    one_line_error(capsys, inventory)
    assert files_under(store) == before


def test_ordinary_json_still_reads(tmp_path: Path) -> None:
    assert loads_json(b'{"a": [1, 2.5, -3e2, "NaN", null]}', "x") == {
        "a": [1, 2.5, -300.0, "NaN", None]
    }


def test_orjson_pin_does_not_crash_on_deep_nesting() -> None:
    # orjson before 3.9.15 overflowed the stack on deep input (CVE-2024-27454); run it in a
    # child so a crash fails this test instead of killing the run.
    code = (
        "import orjson\n"
        "try:\n    orjson.loads(b'{\"a\":' * 100000 + b'1' + b'}' * 100000)\n"
        "except orjson.JSONDecodeError:\n    print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "refused", done
