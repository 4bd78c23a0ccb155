"""An MkDocs hook of the generated site: the theme's Jinja templates compiled once and kept.

MkDocs Material compiles some forty Jinja templates on every build, a large share of a small
site's build time. Jinja's own bytecode cache keeps each compiled template in a folder, keyed
by the template's name and a checksum of its source, so a changed theme is compiled afresh
and nothing stale is ever used. `bench site build` names the folder (`runs/.cache/
site-templates/` of the store; ARCHITECTURE.md, Caches) in `BENCHLAB_TEMPLATE_CACHE`; without
it the hook does nothing.
"""

from __future__ import annotations

import os
from typing import Any

CACHE_ENV = "BENCHLAB_TEMPLATE_CACHE"


def on_env(env: Any, config: Any, files: Any) -> Any:
    """MkDocs event: give the theme's environment the bytecode cache, if one is named."""
    folder = os.environ.get(CACHE_ENV)
    if folder:
        from jinja2 import FileSystemBytecodeCache

        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return env  # an unwritable store builds as before, only slower
        env.bytecode_cache = FileSystemBytecodeCache(folder)
    return env
