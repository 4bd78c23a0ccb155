"""What reaches the terminal: control characters escaped (ARCHITECTURE.md, One reader, one
writer path).

`bench` prints values it read from places it does not control (sysfs and /proc, tool
output, catalog lines another clone pushed, imported results). A value holding an escape
or OSC sequence would otherwise drive the terminal: retitle it, hide text, rewrite what a
previous line said. The CLI wraps stdout and stderr in `SafeStream` for the whole of a verb,
so every verb is covered, not only those that remember to escape: each C0 control but
newline and tab, DEL and each C1 control is written as `\\xNN`, a bidi control as
`\\uNNNN`. Styled output that benchlab
draws itself (rich tables and progress bars, whose cells are escaped before they are drawn)
writes to `raw(stream)`.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 but newline and tab, DEL, C1, and the bidi marks and overrides that reorder a line."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """`text` with every C0 control but newline and tab, DEL, every C1 control and the
    bidi controls escaped."""
    if text.isascii() and text.isprintable():
        return text
    return _CONTROLS.sub(_escape, text)


class SafeStream:
    """A text stream that escapes control characters on their way to `inner`."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(escape_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:  # bounded: the lines given
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self.inner, name)


def raw(stream: Any) -> Any:
    """The stream under a `SafeStream` (for rich, which writes its own styling codes), or
    `stream` itself."""
    return stream.inner if isinstance(stream, SafeStream) else stream
