"""The one gate for pulled catalog data (`catalog.gate`): shards and catalog.json that came
from another clone through git. Each fault is injected for real (a symlink to /dev/zero, a
FIFO, a symlinked catalog/ dir, traversal ids through a real `bench site build`, NUL and
U+202E, an oversized line, a bad `retracted`, misfiled and unsorted lines on a clone with
no run dirs); commands that could hang or read without end run in a subprocess with a
timeout, so a regression fails instead of hanging."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlab.catalog import gate
from benchlab.catalog.read import load_catalog
from benchlab.catalog.shards import iter_shards, shard_name
from benchlab.catalog.validate import BUILD_FIXES, _shard_problems
from benchlab.errors import SchemaError, StoreError
from benchlab.ids import hidden_character
from benchlab.publish.site import series_file
from benchlab.query.render import cell, csv_cell, to_json

Bench = Callable[..., tuple[int, str, str]]
TIMEOUT = 120
ROOT_SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def cli(store: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`bench --store STORE ARGV` in its own process, bounded: a reader that blocks on a FIFO
    or reads /dev/zero without end fails the test by its timeout instead of hanging it."""
    environ = {k: v for k, v in os.environ.items() if k != "BENCHLAB_STORE"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "benchlab", "--store", str(store), *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environ,
    )


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def built(store: Path, make_fleet: Callable[..., list[str]], bench: Bench) -> Path:
    """A v3 store of 12 runs on several machines, built."""
    make_fleet(store, 12, seed=7, step_s=3600)
    code, _, err = bench("--store", str(store), "catalog", "build")
    assert code == 0, err
    return store


def shards(store: Path) -> dict[str, Path]:
    return dict(iter_shards(store / "catalog.json"))


def first_shard(store: Path) -> tuple[str, Path]:
    """The shard with the most lines (the first such by name)."""
    return max(shards(store).items(), key=lambda item: (len(read_lines(item[1])), item[0]))


def listed(out: str) -> set[str]:
    return {word for line in out.splitlines() for word in line.split() if "-" in word}


def write_lines(path: Path, entries: list[Any]) -> None:
    path.write_bytes(
        b"".join(orjson.dumps(e, option=orjson.OPT_SORT_KEYS) + b"\n" for e in entries)
    )


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line]


def clone_without_runs(built: Path, tmp_path: Path) -> Path:
    """What `git clone` of the store gives: the tracked catalog, no run dirs, no caches."""
    other = tmp_path / "clone" / "experiments" / "benchmark"
    other.mkdir(parents=True)
    shutil.copy2(built / "catalog.json", other / "catalog.json")
    shutil.copytree(built / "catalog", other / "catalog")
    return other


# --- files that are no regular files ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dev-zero-link", "fifo"])
def test_shard_that_is_no_regular_file_is_set_aside_by_readers_refused_by_build(
    built: Path, kind: str
) -> None:
    name, _ = first_shard(built)
    machine = name.split("/")[1]
    bad_name = f"catalog/{machine}/2099-W01.{machine}.jsonl"
    bad = built / bad_name
    if kind == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to("/dev/zero")
    before = cli(built, "list", "--format", "json", env={"BENCHLAB_QUERY_COLUMNS": "never"})
    assert before.returncode == 0, before.stderr
    assert len(json.loads(before.stdout)) == 12  # the rest of the catalog still serves
    warning = [line for line in before.stderr.splitlines() if bad_name in line]
    assert len(warning) == 1 and "set aside" in warning[0] and "Traceback" not in before.stderr
    columns = cli(built, "best", env={"BENCHLAB_QUERY_COLUMNS": "always"})
    assert columns.returncode == 0 and bad_name in columns.stderr
    build = cli(built, "catalog", "build")
    assert build.returncode == 2
    message = one_error(build.stderr)
    assert bad_name in message
    assert ("FIFO" if kind == "fifo" else "a symbolic link (never followed)") in message
    validate = cli(built, "catalog", "validate")
    assert validate.returncode == 2 and bad_name in one_error(validate.stderr)


@pytest.mark.slow
def test_catalog_json_as_fifo_is_one_error_not_a_hang(built: Path) -> None:
    head = built / "catalog.json"
    head.unlink()
    os.mkfifo(head)
    for argv in (["list"], ["catalog", "validate"], ["catalog", "build"]):
        done = cli(built, *argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert "catalog.json: cannot read: not a regular file (a FIFO)" in one_error(done.stderr)


def test_shard_over_the_size_cap_is_set_aside_unread(built: Path) -> None:
    name, path = first_shard(built)
    with path.open("ab") as handle:  # sparse: no 48 MB written, st_size past the cap
        handle.truncate(gate.MAX_SHARD_BYTES + 1)
    loaded = load_catalog(built / "catalog.json")
    assert any(name in p and "cap" in p for p in loaded.problems)
    assert len(loaded.runs) < 12


@pytest.mark.slow
def test_symlinked_catalog_dir_makes_the_build_refuse(
    built: Path, tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    target = tmp_path / "elsewhere"
    shutil.move(built / "catalog", target)
    (built / "catalog").symlink_to(target, target_is_directory=True)
    make_fleet(built, 4, seed=7, first=12, step_s=3600)  # runs the build would file
    shutil.rmtree(built / "runs" / ".catalog-cache", ignore_errors=True)
    before = sorted((p.relative_to(target), p.stat().st_mtime_ns) for p in target.rglob("*"))
    done = cli(built, "catalog", "build")
    assert done.returncode == 2
    assert "catalog: a symbolic link" in one_error(done.stderr)
    after = sorted((p.relative_to(target), p.stat().st_mtime_ns) for p in target.rglob("*"))
    assert after == before  # nothing written through the link
    assert cli(built, "list").returncode == 2


# --- bad lines: named, set aside, the rest serves ------------------------------------------


def _bad_lines(store: Path) -> dict[str, str]:
    """Rewrite three lines of the first shard: NUL in the model, U+202E in the machine id, a
    30-digit integer; append a line over the line cap. Returns {run id: the field named}."""
    name, path = first_shard(store)
    entries = read_lines(path)
    assert len(entries) >= 3
    entries[0]["model"] = "Llama\x00-evil"
    entries[1]["machine_id"] = "gpu1\u202e2kcab"
    entries[2]["threads"] = 10**30
    huge = dict(entries[0], run_id="z-huge", model="m", padding="x" * gate.MAX_LINE_BYTES)
    lines = [orjson.dumps(e, option=orjson.OPT_SORT_KEYS) for e in entries[:2]]
    lines.append(json.dumps(entries[2], sort_keys=True, separators=(",", ":")).encode())
    lines += [orjson.dumps(e, option=orjson.OPT_SORT_KEYS) for e in entries[3:]]
    lines.append(orjson.dumps(huge))
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return {
        f"{name}:1: model": entries[0]["run_id"],
        f"{name}:2: machine_id": entries[1]["run_id"],
        f"{name}:3: threads": entries[2]["run_id"],
        f"{name}:{len(lines)}: a line of": "z-huge",
    }


@pytest.mark.parametrize("columns", ["never", "always"])
def test_bad_lines_are_named_and_set_aside(built: Path, columns: str) -> None:
    bad = _bad_lines(built)
    done = cli(built, "list", "--format", "json", env={"BENCHLAB_QUERY_COLUMNS": columns})
    assert done.returncode == 0, done.stderr
    ids = {row["run_id"] for row in json.loads(done.stdout)}
    assert len(ids) == 12 - 3 and not ids & set(bad.values())
    warnings = done.stderr.strip().splitlines()
    assert len(warnings) == 4, done.stderr
    for where, warning in zip(sorted(bad), sorted(warnings), strict=True):
        assert where in warning
    assert "\x00" not in done.stderr + done.stdout and "\u202e" not in done.stderr + done.stdout
    again = cli(built, "best", env={"BENCHLAB_QUERY_COLUMNS": columns})  # from the caches
    assert again.returncode == 0 and len(again.stderr.strip().splitlines()) == 4


@pytest.mark.slow
def test_a_bad_pulled_line_never_stops_publishing(
    built: Path, make_fleet: Callable[..., list[str]]
) -> None:
    """The build keeps each refused line byte for byte where it was, names file:LINE, why
    and the one command that fixes it, publishes every other run and exits 0 (a
    collaborator's line must not fail `dvc repro`); validate exits 2 on it. A line of a run
    this clone holds is rebuilt from its run dir by `--full`. (It used to exit 2 on every
    build, `--full` too, until the line was deleted by hand.)"""
    bad = _bad_lines(built)
    name = next(iter(bad)).split(":")[0]
    held = bad[f"{name}:1: model"]  # this clone's run: its dir stays
    for run_id in set(bad.values()) - {held}:  # another clone's runs: no dir here
        for run_dir in built.glob(f"runs/by-machine/*/{run_id}"):
            shutil.rmtree(run_dir)
    kept = [line for line in (built / name).read_bytes().split(b"\n") if line]
    refused = [line for line in kept if gate.gate_lines(line, "x")[2]]
    assert len(refused) == 4
    added = make_fleet(built, 3, seed=7, first=12, step_s=3600)
    for argv in (["catalog", "build"], ["catalog", "build", "--full"]):
        done = cli(built, *argv)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        ids = {e["run_id"] for e in load_catalog(built / "catalog.json").runs}
        assert set(added) <= ids
        written = (built / name).read_bytes().split(b"\n")
        warnings = [w for w in done.stderr.splitlines() if "set aside, kept as it is" in w]
        # Another clone's three lines are kept and named by every build; this clone's own
        # run's line is rebuilt from its run dir wherever the build reads the dir again.
        assert len(warnings) in (3, 4)
        for warning in warnings:
            where = warning.split("not published: ", 1)[1]
            file, line = where.split(":")[:2]
            assert file == name and written[int(line) - 1] in refused  # byte for byte
            assert "; fix: " in warning
        fixes = " ".join(warnings)
        assert fixes.count("delete it (`sed -i '") == 3
        if len(warnings) == 4:
            assert "`bench catalog build --full` rebuilds it" in fixes
        else:
            assert held in ids
    assert held in ids  # `--full` rebuilt it from its run dir
    validate = cli(built, "catalog", "validate")
    assert validate.returncode == 2
    assert "fix or delete that line (and 2 more problems)" in one_error(validate.stderr)


def test_warnings_are_capped(built: Path) -> None:
    _, path = first_shard(built)
    good = path.read_bytes()
    path.write_bytes(good + b"".join(b'{"run_id": %d}\n' % i for i in range(50)))
    loaded = load_catalog(built / "catalog.json")
    assert len(loaded.problems) == 50
    done = cli(built, "list", env={"BENCHLAB_QUERY_COLUMNS": "never"})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 0 and len(lines) == gate.WARN_LIMIT + 1
    assert lines[-1].endswith(f"and {50 - gate.WARN_LIMIT} more set aside")


# --- the head -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [["list"], ["best"], ["table"], ["summary"], ["show", "x"], ["catalog", "validate"]],
)
def test_bad_retracted_is_one_error_naming_the_field(
    built: Path, bench: Bench, argv: list[str]
) -> None:
    head = json.loads((built / "catalog.json").read_text())
    head["retracted"] = [[1]]
    (built / "catalog.json").write_text(json.dumps(head))
    code, _, err = bench("--store", str(built), *argv)
    assert code == 2
    assert "catalog.json: $.retracted[0]: expected a string, got array" in one_error(err)


def test_head_with_traversal_machine_key_is_refused(built: Path, bench: Bench) -> None:
    head = json.loads((built / "catalog.json").read_text())
    head["machines"]["../../etc"] = {"os": "linux"}
    (built / "catalog.json").write_text(json.dumps(head))
    code, _, err = bench("--store", str(built), "catalog", "validate")
    assert code == 2 and "catalog.json: $.machines.../../etc: " in one_error(err)
    # The build leaves the refused machine out of the head it writes, named (exit 0).
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 0 and "$.machines.../../etc: " in err and "Traceback" not in err
    assert "../../etc" not in (built / "catalog.json").read_text()


# --- validate and build agree, on a clone without run dirs --------------------------------


def test_misfiled_and_unsorted_lines_are_fixed_by_one_build_without_run_dirs(
    built: Path, tmp_path: Path, bench: Bench
) -> None:
    clone = clone_without_runs(built, tmp_path)
    want = load_catalog(clone / "catalog.json").runs
    listing = list(shards(clone).items())
    (one, one_path), (other, other_path) = (
        listing[0],
        next(item for item in listing if item[0].split("/")[1] != listing[0][0].split("/")[1]),
    )
    moved = read_lines(one_path)
    write_lines(one_path, moved[1:])
    write_lines(other_path, [*read_lines(other_path), moved[0]])  # misfiled, and unsorted
    reversed_name, reversed_path = next(
        (n, p) for n, p in listing if n not in (one, other) and len(read_lines(p)) > 1
    )
    write_lines(reversed_path, read_lines(reversed_path)[::-1])

    code, _, err = bench("--store", str(clone), "catalog", "validate")
    assert code == 2
    message = one_error(err)
    assert "run `bench catalog build`" in message and "(and 1 more problems)" in message
    found = [p for n, p in shards(clone).items() for p in _shard_problems(n, p)]
    assert len(found) == 2 and all(BUILD_FIXES in p for p in found)
    assert any(p.startswith(f"{other}:") and f"belongs in {one}" in p for p in found)
    assert any(p == f"{reversed_name}: not sorted or not canonical; {BUILD_FIXES}" for p in found)

    code, _, err = bench("--store", str(clone), "catalog", "build")
    assert code == 0, err
    code, _, err = bench("--store", str(clone), "catalog", "validate")
    assert code == 0, err
    assert shard_name(moved[0]) == one and moved[0]["run_id"] in {
        e["run_id"] for e in read_lines(clone / one)
    }
    assert load_catalog(clone / "catalog.json").runs == want
    assert (clone / reversed_name).read_bytes() == (built / reversed_name).read_bytes()


# --- the site names files only after checked ids ------------------------------------------


@pytest.mark.slow
def test_traversal_series_never_names_a_site_file(built: Path, tmp_path: Path) -> None:
    name, path = first_shard(built)
    entries = read_lines(path)
    entries[0]["series"] = "../../../../PWNED"  # docs/bl/series/../../../../ is tmp_path
    write_lines(path, entries)
    docs = tmp_path / "out" / "docs"
    done = cli(built, "site", "build", "--no-mkdocs", "--docs", str(docs))
    assert done.returncode == 0, done.stderr
    assert f"{name}:1: series: " in done.stderr
    everything = [p for p in Path(tmp_path).rglob("*PWNED*")]
    assert everything == []
    assert all(docs in p.parents for p in docs.rglob("*"))
    series = docs / "bl" / "series"
    assert (series / "index.json").is_file() and len(list(series.glob("s*.js"))) > 0
    assert "PWNED" not in (series / "index.json").read_text()


@pytest.mark.parametrize("sid", ["../../../tmp/PWNED", "s12", "/etc/x", "S0123456789AB", None])
def test_site_names_a_series_file_only_after_a_series_id(sid: Any) -> None:
    with pytest.raises(StoreError, match="not a series id"):
        series_file(sid, ".md")
    assert series_file("s0123456789ab", ".js") == "s0123456789ab.js"


# --- output never prints hidden characters ------------------------------------------------


def test_query_output_escapes_control_and_bidi_characters() -> None:
    nasty = "gpu1\u202e2kcab\x00\x1b[31m\x7f\U000e0001"
    shown = (cell(nasty), cell([nasty]), csv_cell(nasty), to_json({"m": nasty}).replace("\n", ""))
    for text in shown:
        assert all(hidden_character(c) is None for c in text), ascii(text)
    assert cell(nasty) == "gpu1\\u202e2kcab\\x00\\x1b[31m\\x7f\\U000e0001"
    assert json.loads(to_json({"m": nasty})) == {"m": nasty}  # the same JSON value
    assert cell("Llama-3.2-1B é") == "Llama-3.2-1B é"


# --- the checker: reusable, one rule, equal to the schemas ---------------------------------


def test_check_line_names_where_and_field() -> None:
    entry = {"run_id": "r", "machine_id": "m", "timestamp": "t", "model": "x", "precision": "q"}
    gate.check_line("import.json: $.runs[3]", entry)
    with pytest.raises(SchemaError, match=r"^import\.json: \$\.runs\[3\]: spec_id: "):
        gate.check_line("import.json: $.runs[3]", {**entry, "spec_id": "a/../b"})
    with pytest.raises(SchemaError, match=r"peak_tok_per_sec: .* out of range"):
        gate.check_line("x", {**entry, "peak_tok_per_sec": 1e300})


def test_hidden_ranges_are_ids_hidden_character() -> None:
    pattern = gate.hidden_pattern()
    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) == "Cn" and pattern.match(char):
            continue  # a format character of a newer Unicode than this Python's (3.10: U+0890)
        assert (pattern.match(char) is not None) == (hidden_character(char) is not None), (
            f"U+{code:04X} {unicodedata.category(char)}"
        )


def _validator(name: str) -> jsonschema.protocols.Validator:
    """The checked-in schema, with JSON's integers as the gate reads them: 1.0 is a number,
    not an integer (orjson gives a float; JSON Schema alone would call it an integer)."""
    schema = json.loads((ROOT_SCHEMAS / name).read_text())
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", lambda _, value: type(value) is int)
    return jsonschema.validators.extend(base, type_checker=checker)(schema)


LINE = _validator("catalog-line.v3.json")
HEAD = _validator("catalog.v3.json")
GOOD = {
    "run_id": "a100-box-llama-3.2-1b-bf16-batch-95ff48f0-20250106T000000Z",
    "machine_id": "a100-box",
    "timestamp": "2025-01-06T00:00:00Z",
    "model": "Llama-3.2-1B",
    "model_id": "llama-3.2-1b",
    "precision": "bf16",
    "series": "s2dc6e9018cf6",
    "spec_id": "a100-box-llama-3.2-1b-bf16-batch-95ff48f0",
    "status": "ok",
    "tags": ["batch"],
    "threads": 128,
    "peak_tok_per_sec": 97480.64,
    "batch_curve": [[1, 510.71], [4, 1937.12]],
    "axes": {"ctx": 512},
}
_text = st.text(
    st.one_of(
        st.sampled_from(list("aZ09.-_+/ sé")),
        st.sampled_from(["\x00", "\u202e", "\n", "\x7f", "\U000e0001", "\u200b"]),
    ),
    max_size=8,
) | st.sampled_from(["s2dc6e9018cf6", "s2DC6e9018cf6", "a..b", "a" * 1025, "x" * 201, "abc\n"])
_number = st.one_of(
    st.integers(-(2**60), 2**60),
    st.sampled_from([2**53, 2**53 + 1, -(2**53), 10**30, 1e12, 1e12 + 1, -0.5, 0]),
    st.floats(allow_nan=False, allow_infinity=False),
)
_value = st.recursive(
    st.one_of(st.none(), st.booleans(), _number, _text),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A good line with a few fields replaced by random values (or removed, or added)."""
    entry: dict[str, Any] = json.loads(json.dumps(GOOD))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from([*gate.LINE_FIELDS, "conflict", "extra", "bad key", "$x"]))
        if draw(st.booleans()) and key in entry:
            del entry[key]
        else:
            entry[key] = draw(_value)
    return entry


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_fast_checker_equals_the_line_schema(entry: dict[str, Any]) -> None:
    problem = gate.line_problem(entry)
    assert (problem is None) == LINE.is_valid(entry), (problem, entry)
    line = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    kept, _, problems = gate.gate_lines(line + b"\n", "s")  # the plain-line fast path too
    assert bool(kept) == (problem is None), problems


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["retracted", "machines", "version", "runs", "shards", "x", "bad key"]),
        _value,
        max_size=3,
    ),
)
def test_fast_head_checker_equals_the_head_schema(fields: dict[str, Any]) -> None:
    doc = {"$schema": "benchmark/catalog.v3", "machines": {"a100-box": {"os": "linux"}}}
    doc.update(fields)
    problem = gate.head_problem(doc)
    assert (problem is None) == HEAD.is_valid(doc), (problem, doc)


def test_conflict_lines_pass_with_their_copies_checked() -> None:
    copy = dict(GOOD, batch_curve=None)
    line = {"run_id": GOOD["run_id"], "conflict": [copy, dict(copy, threads=64)]}
    assert gate.line_problem(line) is None and LINE.is_valid(line)
    bad = {"run_id": GOOD["run_id"], "conflict": [copy, dict(copy, series="../x")]}
    assert gate.line_problem(bad) == "conflict[1].series: '../x' is not a valid id here"
