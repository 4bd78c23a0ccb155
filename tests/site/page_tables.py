"""Reading a rendered page's HTML tables as text, for the site tests that check what a
table says rather than how a browser lays it out."""

from __future__ import annotations

import html
import re


def table_rows(text: str, table_id: str, *, required: bool = False) -> list[list[str]]:
    """The cells (as text, whitespace collapsed) of the table `table_id` of a rendered page;
    [] where it is absent, or a failed assertion with `required`."""
    body = re.search(rf'<table[^>]*id="{table_id}".*?<tbody>(.*?)</tbody>', text, re.S)
    if not body:
        assert not required, table_id
        return []
    return [
        [
            " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)
    ]
