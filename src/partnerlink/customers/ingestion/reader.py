"""Reading an uploaded file: streaming JSON parse and normalization, batch by batch.

Memory stays bounded by one batch whatever the file holds: json_stream yields
one array element at a time, built only as far as a customer record needs, and
ends the file at nesting or values no customer file has. An invalid file (not a
JSON array, truncated, a non-object element, nested too deeply) applies nothing
(CONTRACT.md §6, §12), so a first pass checks the whole file before the first
batch is read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, BinaryIO

from partnerlink.customers.ingestion.copy_rows import needs_escaping, row_text
from partnerlink.customers.ingestion.json_stream import UploadFileInvalid, elements
from partnerlink.customers.ingestion.merge import EMAIL, PHONE, NormalizedRecord
from partnerlink.customers.ingestion.upload_emails import EmailsWritten
from partnerlink.customers.normalize import (
    FIELD_LIMITS,
    MAX_POSTAL_CODE_LENGTH,
    MAX_TEXT_LENGTH,
    normalize_country_code,
    normalize_email,
    normalize_phone,
    normalize_postal_code,
    normalize_text,
    record_refusals,
)
from partnerlink.kit.countries import country_codes

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
    """Consecutive array elements [first_index, next_index): valid records and rejections,
    and warnings about records kept without a value they gave."""

    first_index: int
    next_index: int
    records: list[NormalizedRecord] = field(default_factory=list)
    rejections: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[tuple[int, str, str]] = field(default_factory=list)  # index, field, reason
    # With `narrow_emails`: the batch's emails that an earlier batch of the same reading
    # may have written (upload_emails.py), the only ones a first upload looks up.
    # None: every email is looked up.
    maybe_written: set[str] | None = None
    # For each record: whether no other record of the batch holds its email or its phone
    # (merge.plan_batch creates such a record without indexing it), and with
    # `copy_lines` its row in COPY's text format (None: planned and formatted by the
    # worker). Computed here, where the CPU is spare, rather than in the worker.
    singles: list[bool] | None = None
    copy_lines: list[str | None] | None = None


# The fast path below relies on text fields' limits being within their columns' (so
# nothing is cut) and on printable text being storable.
assert all(FIELD_LIMITS[name] <= MAX_TEXT_LENGTH for name in ("firstName", "lastName", "city"))
assert FIELD_LIMITS["postalCode"] <= MAX_POSTAL_CODE_LENGTH


def normalize_record(item: Any, default_region: str | None) -> NormalizedRecord | str:
    """One array element as a normalized record, or the reason it is rejected.

    A value an order would refuse (not text, unstorable text, over its length, an
    unknown country) rejects the record rather than being stored altered (CONTRACT.md §12).
    """
    if not isinstance(item, dict):
        return "not an object"
    plain = _plain_record(item, default_region)
    if plain is not None:
        return plain
    return _normalized_record(item, default_region)


def _plain_record(item: dict[str, Any], default_region: str | None) -> NormalizedRecord | None:
    """The common case in a few steps: every given field printable text within its limit,
    a known country or none, an email or a phone. None: _normalized_record decides. The
    same answer as _normalized_record (tests compare both)."""
    limits = FIELD_LIMITS
    for name, raw in item.items():
        if (
            raw is not None
            and (limit := limits.get(name)) is not None
            and (type(raw) is not str or len(raw) > limit or not raw.isprintable())
        ):
            return None
    country = item.get("countryCode")
    if country is not None:
        country = country.strip().upper()
        if country not in country_codes():
            if country:
                return None  # refused: an unknown country
            country = None
    email = normalize_email(item.get("email"))
    phone = normalize_phone(item.get("phoneNumber"), default_region)
    if email is None and phone is None:
        return None
    first, last, city, postal = (
        item.get("firstName"),
        item.get("lastName"),
        item.get("city"),
        item.get("postalCode"),
    )
    # Printable text within its limit: normalize_text is its stripped value, or None.
    return (
        email,
        phone,
        (first and first.strip()) or None,
        (last and last.strip()) or None,
        (city and city.strip()) or None,
        country,
        (postal and postal.strip()) or None,
    )


def _normalized_record(item: dict[str, Any], default_region: str | None) -> NormalizedRecord | str:
    """normalize_record, field by field."""
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


# A phone that does not parse counts as absent (CONTRACT.md §6): a record with an email is
# kept without it, and the partner is told, since the phone was given.
PHONE_DROPPED = "phoneNumber is not a valid phone number; the record was kept without it"


def _given(raw: object) -> bool:
    return raw is not None and not (isinstance(raw, str) and not raw.strip())


def _phone_given(item: dict[str, Any] | str) -> bool:
    """Whether the element gave a phoneNumber (a string: any other value is refused)."""
    return not isinstance(item, str) and _given(item.get("phoneNumber"))


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
    narrow_emails: bool = False,
    copy_lines: bool = False,
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
        narrow_emails=narrow_emails,
        copy_lines=copy_lines,
    )


def read_batches(
    stream: BinaryIO,
    *,
    default_region: str | None,
    skip: int,
    batch_size: int,
    keep_alive: Callable[[], None] | None = None,
    narrow_emails: bool = False,
    copy_lines: bool = False,
) -> Iterator[ParsedBatch]:
    """Yields the file's records in batches, starting after the first `skip` elements.

    Does not check the file first (see read_checked_batches): a fault raises
    UploadFileInvalid when the reading reaches it. `narrow_emails` (a first upload into
    an empty profile) gives each batch its `maybe_written` emails; computed here, in the
    reader process for a large file, rather than in the worker that waits on the
    database batch by batch.
    """
    written = EmailsWritten() if narrow_emails else None
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
                # A record without a phone seldom gave one: the common case tests one slot.
                if outcome[PHONE] is None and _phone_given(item):
                    batch.warnings.append((index, "phoneNumber", PHONE_DROPPED))
            index += 1
        batch.next_index = index
        if batch.next_index == batch.first_index:
            return
        if written is not None:
            emails = {email for record in batch.records if (email := record[EMAIL]) is not None}
            batch.maybe_written = written.maybe_written(emails)
            written.add(emails)  # a "maybe" too many if the batch is retried: harmless
        batch.singles = _singles(batch.records)
        if copy_lines:
            batch.copy_lines = _copy_lines(batch.records, batch.singles)
        yield batch


def _singles(records: list[NormalizedRecord]) -> list[bool]:
    emails = Counter(record[EMAIL] for record in records)
    phones = Counter(record[PHONE] for record in records)
    emails[None] = phones[None] = 1  # a missing key is shared with nobody
    return [emails[record[EMAIL]] == 1 and phones[record[PHONE]] == 1 for record in records]


def _copy_lines(records: list[NormalizedRecord], singles: list[bool]) -> list[str | None]:
    """The single records' rows in COPY's text format (copy_rows.row_text, in the order of
    merge.NormalizedRecord); None for the others, and for a record with a value COPY
    would need escaped (then batch_queries formats its row)."""
    return [
        row_text(record) if single and not needs_escaping(record) else None
        for record, single in zip(records, singles, strict=True)
    ]
