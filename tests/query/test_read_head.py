"""`catalog.read.read_head`: catalog.json's head through the pulled-data gate, for the
readers that keep their own view of the entries (the columnar query cache, the site's
light entries). They used to parse catalog.json themselves, following a link there; now a
link, a FIFO or a head the gate refuses is one error naming the file, as for every other
reader."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.kit.cli import run_cli

from benchlab.catalog.read import read_head
from benchlab.errors import SchemaError, StoreError
from benchlab.layout import Store
from benchlab.publish.data import load_site
from benchlab.query.colcache import CACHE_NAME, MODE_ENV, open_columns

from .conftest import golden_entries
from .test_columns import write_v3


def _runs() -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in golden_entries()]


def _link_catalog(store: Path) -> Path:
    """catalog.json as a real symbolic link to a valid head beside it."""
    path = write_v3(store, _runs())
    target = path.with_name("elsewhere.json")
    os.replace(path, target)
    path.symlink_to(target.name)
    return path


def test_the_head_comes_back_as_written(store: Path) -> None:
    path = write_v3(store, _runs()[1:], pending=_runs()[:1], retracted=["gone"])
    head = read_head(path)
    assert head == orjson.loads(path.read_bytes())
    assert head["retracted"] == ["gone"] and len(head["runs"]) == 1


def test_a_missing_catalog_says_to_build_it(store: Path) -> None:
    with pytest.raises(StoreError, match="file not found; run `bench catalog build` first"):
        read_head(Store(store).catalog_path)


def test_broken_json_is_one_error_naming_the_file(store: Path) -> None:
    path = Store(store).catalog_path
    path.write_bytes(b'{"$schema": ')
    with pytest.raises(SchemaError, match=rf"^{path}: line 1 column"):
        read_head(path)


def test_a_head_the_gate_refuses_names_the_field(store: Path) -> None:
    path = write_v3(store, _runs())
    head = orjson.loads(path.read_bytes())
    head["machines"] = ["pi5"]
    path.write_bytes(orjson.dumps(head))
    with pytest.raises(SchemaError, match=rf"^{path}: \$\.machines: expected an object"):
        read_head(path)


def test_a_link_is_refused_never_followed(store: Path) -> None:
    path = _link_catalog(store)
    with pytest.raises(StoreError, match="a symbolic link"):
        read_head(path)


def test_a_fifo_is_refused_without_waiting(store: Path) -> None:
    path = Store(store).catalog_path
    os.mkfifo(path)
    raised: list[BaseException] = []

    def read() -> None:
        try:
            read_head(path)
        except BaseException as exc:
            raised.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # unblock it: a writer end opened and closed
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=10)
        pytest.fail("read_head waited on a FIFO")
    assert len(raised) == 1 and isinstance(raised[0], StoreError)
    assert "a FIFO" in str(raised[0])


# --- the readers that use it ---------------------------------------------------------------


def test_the_columns_cache_does_not_answer_through_a_link(store: Path) -> None:
    """Before, the cache parsed catalog.json itself and followed the link: `bench best`
    answered there while every other verb refused the file."""
    _link_catalog(store)
    assert open_columns(store, min_bytes=0) is None
    assert not (Store(store).query_cache.parent / CACHE_NAME).exists()


def test_bench_best_through_a_link_is_one_line_error(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _link_catalog(store)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.setenv(MODE_ENV, "always")
    code, out, err = run_cli(capsys, "best")
    assert code != 0 and out == ""
    assert err.strip().count("\n") == 0 and str(path) in err and "symbolic link" in err
    assert "Traceback" not in err


def test_the_site_reads_no_head_through_a_link(store: Path) -> None:
    path = _link_catalog(store)
    with pytest.raises(StoreError, match=rf"^{path}: cannot read: a symbolic link"):
        load_site(Store(store), min_bytes=0)


def test_the_site_reads_the_head_it_checked(store: Path) -> None:
    runs = _runs()
    write_v3(store, runs[1:], pending=runs[:1])
    data = load_site(Store(store), min_bytes=0)
    assert data.fetch is not None  # the light path answered
    assert sorted(r["run_id"] for r in data.runs) == sorted(r["run_id"] for r in runs)
