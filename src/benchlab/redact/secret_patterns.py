"""detect-secrets' regex plugins as patterns, kept in the user's cache.

Importing detect-secrets (it imports requests) costs a sixth of a second, paid by every
command that redacts, the site build among them (`tells.secret_detectors` builds a detector
from each pattern). So the patterns are kept in `layout.user_cache_dir()`, keyed by where
the package is installed and the size and mtime of its version file and of this file: an
upgrade, or a change to the plugins skipped here, reads the plugins again. Each install (a
venv, a checkout on PYTHONPATH) keeps its own file, named by a digest of where the package
and this file are, so two installs that take turns on one machine never evict each other.
A kept file that is damaged or does not compile is never trusted; one that cannot be written
costs the next command the import, nothing more.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from benchlab.errors import StoreError
from benchlab.files import read_bytes
from benchlab.layout import user_cache_dir

_SKIPPED_PLUGINS = frozenset(
    {
        "IPPublicDetector",  # the ip tell class covers every address, public or not
        # Keyword-assignment patterns for four niche services (cl_password=..., sl_key=...):
        # each costs more than all the other secret plugins together on large files.
        "CloudantDetector",
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "SoftlayerDetector",
        "KeywordDetector",  # "password" in prose; not a key
        "Base64HighEntropyString",  # run ids, hashes and sha256 sums are high-entropy
        "HexHighEntropyString",
    }
)


SecretPattern = tuple[str, str, int, int]
"""A detect-secrets detector as the cache keeps it: name, pattern, flags, group."""


def secret_patterns() -> list[SecretPattern]:
    """The plugins' patterns from the cache where it is for the detect-secrets installed
    and this file, else read from the plugins and kept."""
    stamp = _plugins_stamp()
    path = user_cache_dir() / cache_name(stamp)
    if stamp is not None:
        try:
            kept = json.loads(read_bytes(path, cap=16 * 1024 * 1024))
            if kept.get("stamp") == stamp and _well_formed(kept.get("patterns")):
                return [
                    (name, pattern, flags, group)
                    for name, pattern, flags, group in kept["patterns"]
                ]
        except (StoreError, ValueError, AttributeError):
            pass
    patterns = _read_secret_plugins()
    if stamp is not None:
        temp = path.with_name(f".{path.name}.{os.getpid()}")
        try:  # a cache that cannot be written costs the next command the import, nothing more
            path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_text(json.dumps({"stamp": stamp, "patterns": patterns}), encoding="utf-8")
            os.replace(temp, path)
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink()
    return patterns


def cache_name(stamp: list[object] | None) -> str:
    """The cache file of the install `stamp` describes: `secret-patterns-<digest>.json`, the
    digest of where detect-secrets and this file are (not their sizes and mtimes, so an
    upgrade replaces its install's file rather than adding one)."""
    where = f"{stamp[0] if stamp else ''}\0{Path(__file__).resolve()}"
    return f"secret-patterns-{hashlib.blake2b(where.encode(), digest_size=6).hexdigest()}.json"


def _plugins_stamp() -> list[object] | None:
    """Where detect-secrets is installed, the size and mtime of its version file and of
    this file: found without importing the package. None where it cannot be told."""
    from importlib.util import find_spec

    spec = find_spec("detect_secrets")
    if spec is None or not spec.origin:
        return None
    origin = Path(spec.origin)
    try:
        infos = [f.stat() for f in (origin.parent / "__version__.py", Path(__file__))]
    except OSError:
        return None
    return [str(origin), *([info.st_size, info.st_mtime_ns] for info in infos)]


def _well_formed(rows: object) -> bool:
    """Rows of (name, pattern, flags, group) that compile: a damaged cache is read again
    from the plugins, never trusted."""
    if not isinstance(rows, list) or not rows:
        return False
    for row in rows:
        if not (
            isinstance(row, list)
            and len(row) == 4
            and isinstance(row[0], str)
            and isinstance(row[1], str)
            and type(row[2]) is int
            and type(row[3]) is int
        ):
            return False
        try:
            re.compile(row[1], row[2])
        except (re.error, ValueError, OverflowError):
            return False
    return True


def _read_secret_plugins() -> list[SecretPattern]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector

    patterns: list[SecretPattern] = []
    plugins: Iterable[type[BasePlugin]] = get_mapping_from_secret_type_to_class().values()
    for plugin in sorted(plugins, key=lambda cls: cls.__name__):
        if plugin.__name__ in _SKIPPED_PLUGINS or not issubclass(plugin, RegexBasedDetector):
            continue
        name = "ds-" + plugin.__name__.removesuffix("Detector").lower()
        for index, regex in enumerate(plugin().denylist):
            # The whole match is the secret, except for basic auth in a URL, whose group (the
            # password between the user name and the at sign) is; other plugins' groups are
            # mere prefixes.
            group = -1 if plugin.__name__ == "BasicAuthDetector" else 0
            patterns.append(
                (f"{name}-{index}" if index else name, regex.pattern, regex.flags, group)
            )
    return patterns
