"""Opaque page cursors: the sort key of the last item a page showed, as URL-safe text.

A cursor is keyset pagination's bookmark (CONTRACT.md §13 "Lists page with cursors"):
the next page is "items whose key comes after this one", so an item added between two
pages never shifts the others and no item is shown twice or skipped. The text is base64url
of a JSON array; it is opaque to callers, who only hand it back. Decoding checks the shape
the list expects and raises `ValueError` for anything else, which the list answers as
400 `invalid_field` (db/pages.py).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime

from partnerlink.kit.digests import unpadded_base64url

CursorValue = int | str | datetime

# A key of a few ids and timestamps fits well within this; longer text is not ours.
MAX_CURSOR_LENGTH = 512


def encode_cursor(key: Sequence[CursorValue]) -> str:
    """The cursor naming `key` (the last shown item's sort key, in sort order)."""
    values = [value.isoformat() if isinstance(value, datetime) else value for value in key]
    raw = json.dumps(values, separators=(",", ":"), ensure_ascii=True).encode()
    return unpadded_base64url(raw)


def decode_cursor(cursor: str, types: Sequence[type]) -> tuple[CursorValue, ...]:
    """The sort key a cursor names, each value of the type the list sorts by.

    Raises ValueError for text no `encode_cursor` of this shape made (wrong alphabet,
    length, JSON, arity or value types, a timestamp without its offset).
    """
    if not cursor or len(cursor) > MAX_CURSOR_LENGTH:
        raise ValueError("cursor: not a cursor of this list")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw.decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise ValueError("cursor: not a cursor of this list") from error
    if not isinstance(values, list) or len(values) != len(types):
        raise ValueError("cursor: not a cursor of this list")
    return tuple(_value_of(value, kind) for value, kind in zip(values, types, strict=True))


def _value_of(value: object, kind: type) -> CursorValue:
    if kind is datetime and isinstance(value, str):
        moment = datetime.fromisoformat(value)  # ValueError for a malformed timestamp
        if moment.tzinfo is None:
            raise ValueError("cursor: not a cursor of this list")
        return moment
    # bool is an int to Python, never a key of ours.
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is str and isinstance(value, str):
        return value
    raise ValueError("cursor: not a cursor of this list")
