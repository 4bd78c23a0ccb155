"""tools/llama's modules for the tests, and the cache they share (read once, at import).

The cache is the developer's real one (~/.cache/benchlab/llama or $BENCHLAB_LLAMA_CACHE),
read here at import time: the suite's autouse fixture points HOME at a temp dir for every
test, and a build that took minutes must survive the session.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
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


@functools.cache
def portable_args(binary: Path) -> tuple[str, ...]:
    """llama-bench settings that run one code path on every CPU, for tests (benchmarks keep
    the defaults): `--repack 0` where the build has the option. Repacking rearranges
    quantized weights for the CPU's widest kernels, and the pinned build crashes doing so
    on AMX CPUs (q8_0 and q4_0 models segfault on Sapphire Rapids); without it, the same
    model runs through the plain kernels."""
    done = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    return ("--repack", "0") if "--repack" in done.stdout + done.stderr else ()
