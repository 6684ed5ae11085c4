"""Which text a database can store: one rule, with its legitimate variations named.

Always refused: NUL (PostgreSQL refuses it in text) and lone surrogates (UTF-8 cannot
encode them). A field may also refuse the other control characters (tab is never
refused), line breaks (LF, CR: one-line fields) and DEL. Each check is one
regular-expression search: customer files check a million records with it.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=8)
def unstorable_characters(
    *, controls: bool, line_breaks: bool, delete: bool = False
) -> re.Pattern[str]:
    """The characters a field refuses, as one character class: NUL and lone surrogates,
    plus the C0 controls but tab and line breaks (`controls`), LF and CR
    (`line_breaks`), DEL (`delete`)."""
    ranges = "\x00"
    if controls:
        ranges += "\x01-\x08\x0b\x0c\x0e-\x1f"
    if line_breaks:
        ranges += "\n\r"
    if delete:
        ranges += "\x7f"
    return re.compile(f"[{ranges}\ud800-\udfff]")


# One-line fields (names, cities, ids, lookups): no control character, no line break.
_ONE_LINE = unstorable_characters(controls=True, line_breaks=True)


def storable_text(value: str) -> bool:
    """False for text a one-line field refuses: NUL, control characters but tab, line
    breaks, lone surrogates."""
    return _ONE_LINE.search(value) is None
