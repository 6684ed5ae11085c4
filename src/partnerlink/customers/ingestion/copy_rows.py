"""Customers' values in PostgreSQL COPY's text format, shared by the reader, which renders
the rows of most records of an upload (reader._copy_lines), and by the write
(batch_queries._copy_text). Imports nothing heavy: the reader process loads it.

The fast form writes values as they are, so it only takes values holding none of what
the format escapes (backslash, tab, newline, carriage return; "\\N" is its NULL).
Normalized names and cities hardly ever hold one; a row that does goes through
psycopg's write_row."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

COPY_SPECIAL = re.compile(r"[\\\t\n\r]")


def needs_escaping(values: Iterable[str | None]) -> bool:
    """Whether any of the values holds what COPY's text format escapes."""
    return (
        COPY_SPECIAL.search("".join([value for value in values if value is not None])) is not None
    )


def row_text(values: Sequence[str | None]) -> str:
    """The values tab-separated, NULL as \\N (none of them may need escaping)."""
    return "\t".join(["\\N" if value is None else value for value in values])


def row_values(text: str) -> list[str | None]:
    """row_text's values back."""
    return [None if value == "\\N" else value for value in text.split("\t")]
