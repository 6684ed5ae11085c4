"""Page cursors (kit/cursors.py): opaque, URL-safe, and refused when malformed."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime

import pytest

from partnerlink.kit.cursors import MAX_CURSOR_LENGTH, decode_cursor, encode_cursor

MOMENT = datetime(2026, 11, 26, 0, 45, 1, 123456, tzinfo=UTC)


def test_a_cursor_round_trips_its_key_and_is_url_safe() -> None:
    cursor = encode_cursor([MOMENT, "c0ffee-id", 42])

    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
    assert decode_cursor(cursor, [datetime, str, int]) == (MOMENT, "c0ffee-id", 42)


def test_an_integer_key_round_trips() -> None:
    assert decode_cursor(encode_cursor([7]), [int]) == (7,)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "!!!",
        "a",
        "x" * (MAX_CURSOR_LENGTH + 1),
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b'{"a": 1}').decode(),
        base64.urlsafe_b64encode(b"[1, 2]").decode(),  # wrong arity
        base64.urlsafe_b64encode(b'["7"]').decode(),  # a string where an id is a number
        base64.urlsafe_b64encode(b"[true]").decode(),
        base64.urlsafe_b64encode(b"[1.5]").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "\u2603",
    ],
)
def test_a_malformed_cursor_raises_value_error(cursor: str) -> None:
    with pytest.raises(ValueError):
        decode_cursor(cursor, [int])


@pytest.mark.parametrize(
    "key",
    [['"2026-11-26T00:45:01"', "id"], ['"yesterday"', "id"], ["12", "id"]],
)
def test_a_timestamp_must_be_one_with_its_offset(key: list[str]) -> None:
    raw = f'[{key[0]}, "{key[1]}"]'.encode()
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    with pytest.raises(ValueError):
        decode_cursor(cursor, [datetime, str])
