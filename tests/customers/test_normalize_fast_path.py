"""normalize_record's fast path for plain records gives _normalized_record's answer, on
bench-like records and on values at every edge of its shortcuts."""

from __future__ import annotations

import random
from typing import Any

from partnerlink.customers.ingestion.reader import (
    _normalized_record,
    _plain_record,
    normalize_record,
)

VALUES: dict[str, list[Any]] = {
    "email": [
        "ann@example.com",
        "  ANN@Example.COM ",
        "bad@",
        "",
        "   ",
        None,
        7,
        "a\x00@example.com",
        "é@example.com",
        "a@" + "x" * 330 + ".com",
    ],
    "phoneNumber": [
        "(415) 555-2671",
        "+44 7700 900123",
        "12",
        "call me",
        "",
        None,
        4155552671,
        True,
        "+1 415\t555 2671",
        "1" * 60,
    ],
    "firstName": ["Ann", "  Ann ", "", "  ", None, "A\tB", "A\nB", "x" * 200, "x" * 201, 5, "\x7f"],
    "lastName": ["O'Brien", "Müller", None, "\U0001f600", "a\u2028b", "\ud800"],
    "city": ["São Paulo", " ", None, [], "c" * 199 + " "],
    "countryCode": ["US", " us ", "", "  ", "XX", "EU", None, 1, "U\tS", " " * 49 + "US", "US\x00"],
    "postalCode": ["02134", " 02134 ", "1" * 16, "1" * 17, "", None, 2134],
    "other": ["kept out", None, {"a": 1}],
}


def test_every_edge_value_gives_the_same_answer() -> None:
    rng = random.Random(3)
    for _ in range(20_000):
        record = {name: rng.choice(values) for name, values in VALUES.items() if rng.random() < 0.8}
        for region in ("US", None):
            plain = _plain_record(record, region)
            slow = _normalized_record(record, region)
            if plain is not None:
                assert plain == slow, record
            assert normalize_record(record, region) == slow, record


def test_plain_records_take_the_fast_path() -> None:
    record = {
        "email": " Ann@Example.com",
        "phoneNumber": "(415) 555-2671",
        "firstName": "Ann ",
        "lastName": "Smith",
        "city": "Austin",
        "countryCode": "us",
        "postalCode": "78701",
    }
    expected = ("ann@example.com", "+14155552671", "Ann", "Smith", "Austin", "US", "78701")
    assert _plain_record(record, "US") == expected
    assert _plain_record({"phoneNumber": "+44 7700 900123"}, None) == (
        None,
        "+447700900123",
        None,
        None,
        None,
        None,
        None,
    )
