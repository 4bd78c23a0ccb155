"""The synthetic fleet generator, tools/perf/make_fleet.py, for tests that need many runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
MAKE_FLEET = REPO / "tools" / "perf" / "make_fleet.py"
_MODULE = "benchlab_tools_make_fleet"


def load_make_fleet() -> ModuleType:
    """The script as a module, loaded once by path: tools/ is not a package, and the perf
    scripts and the tests must write the very same fleet."""
    if _MODULE in sys.modules:
        return sys.modules[_MODULE]
    spec = importlib.util.spec_from_file_location(_MODULE, MAKE_FLEET)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE] = module
    spec.loader.exec_module(module)
    return module
