"""Reading an uploaded file: streaming JSON parse and normalization, batch by batch.

Memory stays bounded by one batch whatever the file's size: ijson (yajl2_c)
yields one array element at a time. An invalid file (not a JSON array,
truncated, a non-object element) applies nothing (CONTRACT.md §6), so a first
pass checks the whole file before the first batch is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, BinaryIO

import ijson

from partnerlink.customers.merge import NormalizedRecord
from partnerlink.customers.normalize import (
    normalize_country_code,
    normalize_email,
    normalize_phone,
    normalize_text,
)

READ_BUFFER_BYTES = 256 * 1024
# The check calls its keep-alive every so many elements (a fraction of a second's parsing).
KEEP_ALIVE_EVERY = 20_000
_UTF8_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\r\n"


class UploadFileInvalid(Exception):
    """The file is not a JSON array of objects (or breaks off); the reason is safe to show."""


@dataclass
class ParsedBatch:
    """Consecutive array elements [first_index, next_index): valid records and rejections."""

    first_index: int
    next_index: int
    records: list[NormalizedRecord] = field(default_factory=list)
    rejections: list[tuple[int, str]] = field(default_factory=list)


def normalize_record(item: Any, default_region: str | None) -> NormalizedRecord | str:
    """One array element as a normalized record, or the reason it is rejected."""
    if not isinstance(item, dict):
        return "not an object"
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
    """The first pass: raises UploadFileInvalid unless the whole file is a JSON array of
    objects. Parses without normalizing (a fraction of the second pass's cost);
    `keep_alive` is called every KEEP_ALIVE_EVERY elements."""
    _expect_array(stream)
    index = 0
    try:
        for item in ijson.items(stream, "item", buf_size=READ_BUFFER_BYTES):
            if not isinstance(item, dict):
                raise UploadFileInvalid(f"element {index} is not an object; nothing was applied")
            index += 1
            if index % KEEP_ALIVE_EVERY == 0:
                keep_alive()
    except ijson.JSONError as error:
        raise UploadFileInvalid(_describe_json_error(error, index)) from None


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
    yield from read_batches(stream, default_region=default_region, skip=skip, batch_size=batch_size)


def read_batches(
    stream: BinaryIO, *, default_region: str | None, skip: int, batch_size: int
) -> Iterator[ParsedBatch]:
    """Yields the file's records in batches, starting after the first `skip` elements.

    Does not check the file first (see read_checked_batches): a fault raises
    UploadFileInvalid when the reading reaches it.
    """
    _expect_array(stream)
    items = ijson.items(stream, "item", buf_size=READ_BUFFER_BYTES)
    index = skip
    try:
        # Already-applied elements are parsed again (ijson cannot seek), but not normalized.
        for _ in islice(items, skip):
            pass
        while True:
            batch = ParsedBatch(first_index=index, next_index=index)
            for item in islice(items, batch_size):
                outcome = normalize_record(item, default_region)
                if isinstance(outcome, str):
                    batch.rejections.append((index, outcome))
                else:
                    batch.records.append(outcome)
                index += 1
            batch.next_index = index
            if batch.next_index == batch.first_index:
                return
            yield batch
    except ijson.JSONError as error:
        raise UploadFileInvalid(_describe_json_error(error, index)) from None


def _expect_array(stream: BinaryIO) -> None:
    """Fails early unless the first non-blank character opens an array (skips a UTF-8 BOM)."""
    offset = len(_UTF8_BOM) if stream.read(len(_UTF8_BOM)) == _UTF8_BOM else 0
    stream.seek(offset)
    while True:
        chunk = stream.read(65536)
        if not chunk:
            raise UploadFileInvalid("the file is empty; expected a JSON array of customer records")
        stripped = chunk.lstrip(_WHITESPACE)
        if stripped:
            break
    if not stripped.startswith(b"["):
        raise UploadFileInvalid("the file is not a JSON array of customer records")
    stream.seek(offset)


def _describe_json_error(error: Exception, index: int) -> str:
    """A reason without the parser's excerpt of the file (it could quote customer data)."""
    message = error.args[0] if error.args else ""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    first_line = str(message).splitlines()[0] if message else ""
    if "premature EOF" in first_line:
        what = "the file ends before the JSON array is complete (truncated upload?)"
    elif "trailing garbage" in first_line:
        what = "unexpected content after the JSON array"
    else:
        what = f"invalid JSON ({first_line.strip() or type(error).__name__})"
    return f"{what} (at element {index}); nothing was applied"
