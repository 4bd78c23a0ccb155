"""One error tree for benchlab, caught once by the CLI.

    BenchlabError                 anything benchlab refuses or cannot do (exit 2)
    ├── ConfigError               a sweep config, policy or CLI argument is wrong
    ├── StoreError                the store is missing, unsafe or inconsistent
    │   ├── SchemaError           a file on disk does not match its schema
    │   └── UnsafePathError       a file read or written is a link, FIFO, device or too big
    ├── QueryError                a query cannot be answered (unknown metric, no run)
    │   └── NoMatchError          nothing matches what was asked (exit 1)
    ├── ParseError                a benchmark ran but its output could not be parsed
    ├── MeasurementError          a benchmark ran on a live device and said no
    └── DeviceError               transport: the device could not be reached or kept

"No" and "I could not look" are different answers: a probe that cannot reach a
device raises ``DeviceError``; it never returns False.

Usage::

    try:
        catalog = load_catalog(path)
    except BenchlabError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
"""

from __future__ import annotations


class BenchlabError(Exception):
    """Base of every error benchlab raises on purpose; the CLI prints it as one line."""

    exit_code = 2


class ConfigError(BenchlabError):
    """A sweep config, policy or argument is invalid; nothing was run or written."""


class StoreError(BenchlabError):
    """The store is missing, unsafe (an id escaping it) or inconsistent."""


class SchemaError(StoreError):
    """A file does not match its schema; the message names the file and the JSON path."""


class UnsafePathError(StoreError):
    """A file benchlab reads or writes is not a regular file inside its root: a symbolic
    link on the way, a FIFO, a device or a socket, or larger than its cap. Refused before a
    byte is read or written (ARCHITECTURE.md, One reader, one writer path)."""


class QueryError(BenchlabError):
    """A query cannot be answered as asked."""


class NoMatchError(QueryError):
    """Nothing matches what was asked (an unknown run id): an answer, not a fault (exit 1,
    as every query verb exits when no run matches; ARCHITECTURE.md, Errors and exit codes)."""

    exit_code = 1


class ParseError(BenchlabError):
    """The run happened and the parser broke; the raw output is kept."""


class MeasurementError(BenchlabError):
    """The run happened on a live device and came back saying no (did not fit, timed out)."""


class DeviceError(BenchlabError):
    """Transport failure: ssh dropped, the pod went away, the agent never answered.

    The only failure class the scheduler retries.
    """

    def __init__(self, message: str, device: str | None = None) -> None:
        super().__init__(message)
        self.device = device
