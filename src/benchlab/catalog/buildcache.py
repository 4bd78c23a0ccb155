"""The private build cache (`runs/.catalog-cache/`): per run-dir group its dirs' stats and
shards, per shard its stat, points and run-id hashes (see `catalog.build`)."""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.layout import atomic_write_bytes, cache_readable

CACHE_DIR = ".catalog-cache"


CACHE_FORMAT = f"benchlab-catalog-build-cache/5 marshal{marshal.version}"


def stat_of(path: Path | str) -> list[int] | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


@dataclass
class GroupCache:
    """What the cache keeps of one run-dir group (`runs/<base>/<machine>/`), names in the
    dir's own order.

    `sig` holds (mtime, ctime, inode) per dir; `shards` the id of the shard its entry went
    to (-1: none, read it next time); `ids` the run ids that differ from their dir's name;
    `racy` the files' signatures of dirs modified just before the scan."""

    names: list[str] = field(default_factory=list)
    sig: np.ndarray = field(default_factory=lambda: np.empty((0, 3), np.int64))
    shards: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    ids: dict[str, str] = field(default_factory=dict)
    racy: dict[str, list[int]] = field(default_factory=dict)

    def dump(self, key: str) -> bytes:
        return marshal.dumps(
            (
                CACHE_FORMAT,
                key,
                "\0".join(self.names),
                np.ascontiguousarray(self.sig, np.int64).tobytes(),
                np.ascontiguousarray(self.shards, np.int32).tobytes(),
                self.ids,
                self.racy,
            )
        )

    @classmethod
    def load(cls, data: bytes, key: str) -> GroupCache | None:
        try:
            fmt, stored, names, sig, shards, ids, racy = marshal.loads(data)
            if fmt != CACHE_FORMAT or stored != key:
                return None
            listed = names.split("\0") if names else []
            out = cls(
                listed,
                np.frombuffer(sig, np.int64).reshape(-1, 3),
                np.frombuffer(shards, np.int32),
                ids,
                racy,
            )
        except (EOFError, ValueError, TypeError):
            return None
        if len(out.sig) != len(listed) or len(out.shards) != len(listed):
            return None
        return out


def _group_file(key: str) -> str:
    return f"g-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:20]}.marshal"


class BuildCache:
    """The private build cache under runs/ (gitignored with the rest of runs/): trusted
    like a `.pyc`, written by benchlab alone; anything damaged or stale is ignored, which
    only costs the reads it would have saved."""

    def __init__(self, runs_dir: Path, root: Path | None = None) -> None:
        self.dir = runs_dir / CACHE_DIR
        self.root = root  # the store's: never read nor written through a link below it
        self.index: dict[str, Any] = {}

    def load(self) -> bool:
        if not cache_readable(self.dir / "index.marshal", self.root):
            return False
        try:
            index = marshal.loads((self.dir / "index.marshal").read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return False
        if not isinstance(index, dict) or index.get("format") != CACHE_FORMAT:
            return False
        if not isinstance(index.get("shards"), list) or not isinstance(index.get("groups"), dict):
            return False
        self.index = index
        return True

    def group(self, key: str) -> GroupCache | None:
        where = self.index.get("groups", {}).get(key)
        if not where:
            return None
        path = self.dir / where[0]
        if not cache_readable(path, self.root):
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if stat_of(path) != list(where[1:]):
            return None  # not the file the index was written with
        return GroupCache.load(data, key)

    def save(
        self,
        head_digest: str,
        shards: list[list[Any] | None],
        groups: dict[str, GroupCache | None],
    ) -> None:
        """Write changed groups first, then the index naming them (a crash in between leaves
        group files the index does not vouch for: they are ignored)."""
        if not cache_readable(self.dir, self.root):
            return  # a link on the way: only costs the next build its reads
        self.dir.mkdir(parents=True, exist_ok=True)
        listed = dict(self.index.get("groups", {}))
        for key, group in groups.items():
            if group is None:
                continue
            name = _group_file(key)
            path = self.dir / name
            atomic_write_bytes(path, group.dump(key), durable=False, root=self.root)
            stat = stat_of(path)
            if stat is not None:
                listed[key] = [name, *stat]
        listed = {k: v for k, v in listed.items() if k in groups}
        for stale in {p.name for p in self.dir.glob("g-*.marshal")} - {
            v[0] for v in listed.values()
        }:
            with contextlib.suppress(OSError):
                (self.dir / stale).unlink()
        index = {"format": CACHE_FORMAT, "head": head_digest, "shards": shards, "groups": listed}
        atomic_write_bytes(
            self.dir / "index.marshal", marshal.dumps(index), durable=False, root=self.root
        )
