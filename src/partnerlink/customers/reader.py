"""Reading an uploaded file: streaming JSON parse and normalization, batch by batch.

Memory stays bounded by one batch whatever the file holds: json_stream yields
one array element at a time, built only as far as a customer record needs, and
ends the file at nesting or values no customer file has. An invalid file (not a
JSON array, truncated, a non-object element, nested too deeply) applies nothing
(CONTRACT.md §6, §12), so a first pass checks the whole file before the first
batch is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, BinaryIO

from partnerlink.customers.json_stream import UploadFileInvalid, elements
from partnerlink.customers.merge import NormalizedRecord
from partnerlink.customers.normalize import (
    normalize_country_code,
    normalize_email,
    normalize_phone,
    normalize_postal_code,
    normalize_text,
    record_refusals,
)

__all__ = [
    "ParsedBatch",
    "UploadFileInvalid",
    "check_file",
    "normalize_record",
    "read_batches",
    "read_checked_batches",
]


@dataclass
class ParsedBatch:
    """Consecutive array elements [first_index, next_index): valid records and rejections."""

    first_index: int
    next_index: int
    records: list[NormalizedRecord] = field(default_factory=list)
    rejections: list[tuple[int, str]] = field(default_factory=list)


def normalize_record(item: Any, default_region: str | None) -> NormalizedRecord | str:
    """One array element as a normalized record, or the reason it is rejected.

    A value an order would refuse (not text, unstorable text, over its length, an
    unknown country) rejects the record rather than being stored altered (CONTRACT.md §12).
    """
    if not isinstance(item, dict):
        return "not an object"
    refusals = record_refusals(item)
    if refusals:
        return "; ".join(refusals)
    raw_email = item.get("email")
    raw_phone = item.get("phoneNumber")
    email = normalize_email(raw_email)
    phone = normalize_phone(raw_phone, default_region)
    if email is None and phone is None:
        return _rejection_reason(raw_email, raw_phone)
    return (
        email,
        phone,
        normalize_text(item.get("firstName")),
        normalize_text(item.get("lastName")),
        normalize_text(item.get("city")),
        normalize_country_code(item.get("countryCode")),
        normalize_postal_code(item.get("postalCode")),
    )


def _given(raw: object) -> bool:
    return raw is not None and not (isinstance(raw, str) and not raw.strip())


def _rejection_reason(raw_email: object, raw_phone: object) -> str:
    email_given, phone_given = _given(raw_email), _given(raw_phone)
    if email_given and phone_given:
        return "email and phoneNumber are both invalid"
    if email_given:
        return "email is invalid and there is no phoneNumber"
    if phone_given:
        return "phoneNumber is invalid and there is no email"
    return "neither email nor phoneNumber given"


def check_file(stream: BinaryIO, keep_alive: Callable[[], None]) -> None:
    """The first pass: raises UploadFileInvalid unless the whole file can be ingested.
    Parses without normalizing (a fraction of the second pass's cost); `keep_alive`
    is called at every read of the file."""
    for _ in elements(stream, keep_alive):
        pass


def read_checked_batches(
    stream: BinaryIO,
    *,
    default_region: str | None,
    skip: int,
    batch_size: int,
    keep_alive: Callable[[], None],
) -> Iterator[ParsedBatch]:
    """read_batches after check_file: an invalid file raises before its first batch.

    A resumed upload (`skip` > 0) is not checked again: its first batches were
    applied only after the whole file had passed the check.
    """
    if skip == 0:
        check_file(stream, keep_alive)
        stream.seek(0)
    yield from read_batches(
        stream,
        default_region=default_region,
        skip=skip,
        batch_size=batch_size,
        keep_alive=keep_alive,
    )


def read_batches(
    stream: BinaryIO,
    *,
    default_region: str | None,
    skip: int,
    batch_size: int,
    keep_alive: Callable[[], None] | None = None,
) -> Iterator[ParsedBatch]:
    """Yields the file's records in batches, starting after the first `skip` elements.

    Does not check the file first (see read_checked_batches): a fault raises
    UploadFileInvalid when the reading reaches it.
    """
    items = elements(stream, keep_alive)
    index = skip
    # Already-applied elements are parsed again (the parse cannot seek), but not normalized.
    for _ in islice(items, skip):
        pass
    while True:
        batch = ParsedBatch(first_index=index, next_index=index)
        for item in islice(items, batch_size):
            outcome = item if isinstance(item, str) else normalize_record(item, default_region)
            if isinstance(outcome, str):
                batch.rejections.append((index, outcome))
            else:
                batch.records.append(outcome)
            index += 1
        batch.next_index = index
        if batch.next_index == batch.first_index:
            return
        yield batch
