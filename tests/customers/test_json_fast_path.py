"""The reader's fast path (whole elements by the standard library's decoder) gives exactly
what the event parser gives: the same records, the same faults and reasons, whatever the
file holds and wherever the reads cut it."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest

from partnerlink.customers.ingestion import json_stream
from partnerlink.customers.ingestion.json_plain import NotPlain, plain_elements
from partnerlink.customers.ingestion.json_stream import (
    MAX_RECORD_ITEMS,
    RECORD_FIELDS,
    UploadFileInvalid,
    _expect_array,
    _parsed_elements,
    elements,
)
from partnerlink.customers.normalize import FIELD_LIMITS

PLAIN = [
    {"email": "ann@example.com", "phoneNumber": "(415) 555-2671", "firstName": "Ann"},
    {"email": None, "phoneNumber": 4155552671, "city": "S\u00e3o Paulo", "countryCode": "US"},
    {"email": "b@example.com", "firstName": "Bob \u00e9\U0001f600", "vip": True, "note": "x"},
    {},
    {"email": "e@example.com", "city": "a}, {b} ]"},  # a run cut inside a string fails whole
    {"email": "c@example.com", "email2": "d", "postalCode": "02134", "lastName": '\t\\"q"'},
]


def _outcome(read: Any, body: bytes) -> Any:
    stream = io.BytesIO(body)
    try:
        return list(read(stream))
    except UploadFileInvalid as error:
        return ("invalid", str(error))


def _by_events(stream: io.BytesIO) -> Any:
    _expect_array(stream)
    return _parsed_elements(stream, None)


def _cut(outcome: Any) -> Any:
    """The fast path's outcome as the event parser gives it: a field's text over its limit
    cut to one character over it (json_stream; the record is refused with the same
    reason). The fast path keeps it whole: its elements are at most a read long."""
    if not isinstance(outcome, list):
        return outcome
    return [
        {
            key: value[: FIELD_LIMITS[key] + 1] if isinstance(value, str) else value
            for key, value in record.items()
        }
        if isinstance(record, dict)
        else record
        for record in outcome
    ]


def _assert_same(body: bytes) -> None:
    assert _cut(_outcome(elements, body)) == _outcome(_by_events, body), body[:200]


def _plain_path_takes(body: bytes) -> bool:
    stream = io.BytesIO(body)
    _expect_array(stream)
    try:
        list(
            plain_elements(
                stream,
                None,
                read_size=json_stream.READ_BUFFER_BYTES,
                fields=RECORD_FIELDS,
                max_items=MAX_RECORD_ITEMS,
            )
        )
    except NotPlain:
        return False
    return True


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("indent", [None, 2])
def test_a_plain_file_takes_the_fast_path_and_gives_the_same_records(
    ensure_ascii: bool, indent: int | None
) -> None:
    body = json.dumps(PLAIN * 50, ensure_ascii=ensure_ascii, indent=indent).encode()
    assert _plain_path_takes(body)
    _assert_same(body)
    _assert_same(b"\xef\xbb\xbf \n" + body + b"\n\n")
    assert _plain_path_takes(b"[]") and _plain_path_takes(b" [ \n ] ")


@pytest.mark.parametrize(
    "body",
    [
        b'[{"email": "a@example.com", "city": 1.5}]',
        b'[{"email": "a@example.com", "city": NaN}]',
        b'[{"email": "a@example.com", "city": -Infinity}]',
        b'[{"email": "a@example.com", "tags": [1, {"a": []}]}]',
        b'[{"email": "a@example.com", "city": {"name": "x"}}]',
        b'[{"email": "a@example.com", "city": "\\ud800"}]',
        b'[{"email": "a@example.com", "city": "\\udc00x\\ud83d\\ude00"}]',
        b'[{"email": "a@example.com", "city": "\\\\ud800"}]',
        b'[{"email": "a@example.com", "city": "a\x01b"}]',
        b'[{"email": "a@example.com", "city": "\xff\xfe"}]',
        b'[{"email": "a@example.com", "n": 1' + b"0" * 5000 + b"}]",
        b'[{"email": "a@example.com"},]',
        b'[{"email": "a@example.com"}] x',
        b'[{"email": "a@example.com"}][]',
        b'[{"email": "a@example.com"} {"email": "b@example.com"}]',
        b'[{"email": "a@example.com"}, 1]',
        b'[{"email": "a@example.com"}, [{"email": "b@example.com"}]]',
        b'[{"email": "a@example.com"}, "text"]',
        b'[{"email": "a@example.com", "email": "b@example.com", "email": null}]',
        b'[{"email": "a@example.com", "city": "' + b"x" * 70_000 + b'"}]',
        b"[{" + b",".join(b'"k%d": 1' % n for n in range(12_000)) + b"}]",
        b'[{"email": "a@example.com"}, {' + b",".join([b'"a":1'] * 10_001) + b"}]",
        b'[{"email": "a@example.com"}, {' + b",".join([b'"a":1'] * 9_999) + b"}]",
        b'[{"email": "a@example.com", "url": "http://x"}, {"email": "b@example.com"}]',
        b'[{"email": "a@example.com", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}]",
        b"[{\"email\": 'a'}]",
        b'[{email: "a"}]',
        b'[{"email": "a@example.com"}',
        b"[",
        b"",
        b"{}",
        b"[1]",
        b"[]]",
    ],
)
def test_what_the_fast_path_leaves_gets_the_event_parsers_answer(body: bytes) -> None:
    _assert_same(body)


def test_every_cut_of_the_reads_and_every_truncation_gives_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = json.dumps(PLAIN[:3], ensure_ascii=False).encode()
    for size in (1, 2, 3, 7, 64):
        monkeypatch.setattr(json_stream, "READ_BUFFER_BYTES", size)
        assert _plain_path_takes(body)
        _assert_same(body)
    monkeypatch.setattr(json_stream, "READ_BUFFER_BYTES", 5)
    for end in range(len(body)):
        _assert_same(body[:end])


def test_random_damage_gives_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_stream, "READ_BUFFER_BYTES", 16)
    rng = random.Random(7)
    body = json.dumps(PLAIN * 2).encode()
    alphabet = b'{}[],:"\\ u0123456789dD8abefnrtNl.-+eE\x00\x1f\xc3\xa9\xff'
    for _ in range(3000):
        damaged = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.choice(alphabet)
        _assert_same(bytes(damaged))
