"""Import results people already have: llama-bench outputs and asv result directories.

Each imported result becomes an ordinary run dir (manifest, kernel, batch, record, raw/) in
the private store, with its provenance in the manifest, so every query, chart and regression
check treats it like a measured run. The record's metrics and identity come from the same
derivations a live sweep uses (`benchlab.metrics`, `benchlab.identity`, and for llama-bench
`benchmarks.llama_bench.results_from_rows`), so an imported llama-bench file and a live sweep
of the same configuration are the same measurement in the catalog. Run ids hash the imported
content: re-importing the same file finds its runs already there and changes nothing.
"""

from benchlab.importers.asv import import_asv
from benchlab.importers.llama import import_llama_bench
from benchlab.importers.store import ImportReport

__all__ = ["ImportReport", "import_asv", "import_llama_bench"]
