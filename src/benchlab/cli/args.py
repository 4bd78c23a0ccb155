"""argparse `type=` validators shared by the verbs: nonsense is refused, not answered.

A value argparse refuses through `ArgumentTypeError` is one line naming the flag on stderr
and exit 2, before anything is read or written (ARCHITECTURE.md, Errors and exit codes).
`--limit 0` asks for no rows, `--threads 0` for a run no one can make, `--alpha 5` for a
confidence of -400%, `--threshold 500%` for a change no throughput can drop by: each is a
typo, and an answer to it ("the catalog has no runs", 539 "confirmed" steps) misleads.

Only the standard library at module level: every verb module imports this at start-up.
"""

from __future__ import annotations

import argparse
import math
from typing import NoReturn


def _whole(text: str, low: int, high: int | None, expected: str) -> int:
    """`text` as a whole number in [low, high], else one line saying what was `expected`."""
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def _finite(text: str, above: float, inclusive: bool, expected: str) -> float:
    """`text` as a finite number above `above` (or equal, where `inclusive`), else one line."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < above or (value == above and not inclusive):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def count(text: str) -> int:
    """A count of 1 or more (`--limit`, `--keep`, `--workers` ...)."""
    return _whole(text, 1, None, "a whole number of 1 or more")


def thread_count(text: str) -> int:
    """A thread count: 1 or more (a run is made with at least one thread)."""
    return _whole(text, 1, None, "a thread count of 1 or more")


def index(text: str) -> int:
    """An index of 0 or more (a repeat index)."""
    return _whole(text, 0, None, "a whole number of 0 or more")


def positive(text: str) -> float:
    """A finite number above 0 (seconds, days)."""
    return _finite(text, 0.0, False, "a number above 0")


MAX_DAYS = 100_000
"""A window in days (some 270 years): past it date arithmetic leaves the calendar."""


def days(text: str) -> float:
    """A window in days: a finite number above 0, at most MAX_DAYS."""
    value = _finite(text, 0.0, False, f"a number of days above 0, at most {MAX_DAYS}")
    if value > MAX_DAYS:
        raise argparse.ArgumentTypeError(
            f"expected a number of days above 0, at most {MAX_DAYS}, got {text!r}"
        )
    return value


def non_negative(text: str) -> float:
    """A finite number of 0 or more (a cost)."""
    return _finite(text, 0.0, True, "a number of 0 or more")


def alpha(text: str) -> float:
    """A significance level strictly between 0 and 1 (0.01 is a 99% confidence)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a significance level between 0 and 1 such as 0.01, got {text!r}"
        )
    return value


def threshold(text: str) -> str:
    """A relative change strictly between 0% and 100% (`5%` or `0.05`); returned as written,
    for `regress.parse_threshold`, which reads it."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a percentage such as 5% or a fraction such as 0.05, got {text!r}"
        ) from None
    if not raw.endswith("%") and value >= 1 and math.isfinite(value):
        # 5 read as a fraction is 500%, read as 5% surprises whoever meant a fraction
        raise argparse.ArgumentTypeError(
            f"{text!r} is ambiguous: write {raw}% for {raw} percent "
            f"or {value / 100:g} as a fraction"
        )
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a change between 0% and 100% (exclusive) such as 5% or 0.05, got {text!r}"
        )
    return raw


def port(text: str) -> int:
    """A TCP port: 1 to 65535, or 0 for one the system picks."""
    return _whole(text, 0, 65535, "a port from 0 to 65535")


def date_or_time(text: str) -> str:
    """`--since/--until`: YYYY-MM-DD, or an ISO date-time (`2025-07-04T12:00`, with or
    without seconds, `Z` or an offset), as `query.filters.parse_date` reads it (imported
    here, when the flag is given: the one definition)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.errors import QueryError
    from benchlab.query.filters import parse_date

    try:
        return parse_date(text, "")
    except QueryError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(": ")) from None


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose refusal is one line (`bench list: error: argument --limit:
    ...`) and exit 2, without the usage block: the flag, the value and what was expected
    say it all, and `--help` shows the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def point_cap(text: str) -> int:
    """`--max-points N`: a whole number, 0 for no cap (argparse prints the one-line error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 (no cap) or more, got {value}")
    return value
