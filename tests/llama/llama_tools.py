"""tools/llama's modules for the tests, and the cache they share (read once, at import).

The cache is the developer's real one (~/.cache/benchlab/llama or $BENCHLAB_LLAMA_CACHE),
read here at import time: the suite's autouse fixture points HOME at a temp dir for every
test, and a build that took minutes must survive the session.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "llama"


def tool(name: str) -> ModuleType:
    """tools/llama/<name>.py, loaded once under the same key the tools use for each other."""
    key = f"benchlab_tools_llama_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, TOOLS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


build_tool = tool("build")
models_tool = tool("models")
CACHE = build_tool.default_cache_dir().expanduser().resolve()
