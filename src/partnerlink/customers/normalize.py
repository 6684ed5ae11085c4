"""Normalization of customer identifiers and fields (CONTRACT.md §6).

Email: trimmed, lower-cased, strict syntax; invalid counts as absent.
Phone: parsed with a default region (the store's country), kept in E.164 when
it is a possible number; unparseable counts as absent (partnerlink.phones, shared
with store profiles).

Bulk ingestion calls these a million times a file, so the common case takes a
fast path: a plain ASCII address is checked by one compiled regex (measured: a
small fraction of email-validator's time, bench/README.md; the library stays for
the rare internationalized address).
"""

from __future__ import annotations

import re

from email_validator import EmailNotValidError, validate_email

from partnerlink.kit.countries import country_codes
from partnerlink.kit.text import storable_text, unstorable_characters
from partnerlink.phones import normalize_phone

__all__ = [
    "normalize_country_code",
    "normalize_email",
    "normalize_phone",
    "normalize_postal_code",
    "normalize_text",
    "record_refusals",
]

MAX_EMAIL_LENGTH = 254
MAX_LOCAL_PART_LENGTH = 64

# RFC 5322 dot-atom local part (no quoted strings) at a hostname of LDH labels.
# Compared with email-validator on 400,000 generated ASCII strings, it differs
# only where it is stricter about the top-level label (letters, 2+, or punycode,
# as every real one is: "a@x.c" is refused) and where it accepts special-use
# names (".test", ".local") that the library refuses for deliverability.
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_EMAIL_RE = re.compile(
    rf"(?P<local>{_ATEXT}(?:\.{_ATEXT})*)@(?P<domain>(?:{_LABEL}\.)+(?:[A-Za-z]{{2,63}}|xn--[A-Za-z0-9-]{{1,59}}))"
)

# Characters a database refuses (NUL on PostgreSQL, lone surrogates in UTF-8) or
# that have no place in a name: dropped from free text.
_UNSTORABLE = unstorable_characters(controls=True, line_breaks=False, delete=True)
MAX_TEXT_LENGTH = 200
MAX_POSTAL_CODE_LENGTH = 16
# The longest value an order takes for each field of a customer record (an order's
# customer fields, orders/schemas.py; the city and country of its store snapshot,
# stores/schemas.py), in characters as given.
FIELD_LIMITS = {
    "email": 320,
    "phoneNumber": 50,
    "firstName": MAX_TEXT_LENGTH,
    "lastName": MAX_TEXT_LENGTH,
    "city": MAX_TEXT_LENGTH,
    "countryCode": 50,
    "postalCode": MAX_POSTAL_CODE_LENGTH,
}


def normalize_email(raw: object) -> str | None:
    """Returns the trimmed, lower-cased address, or None when absent or invalid."""
    if not isinstance(raw, str):
        return None
    value = raw.strip()
    if not value or len(value) > MAX_EMAIL_LENGTH:
        return None
    if value.isascii():
        match = _EMAIL_RE.fullmatch(value)
        if match is None or len(match.group("local")) > MAX_LOCAL_PART_LENGTH:
            return None
        return value.lower()
    return _normalize_international_email(value)


def _normalize_international_email(value: str) -> str | None:
    try:
        result = validate_email(
            value, check_deliverability=False, allow_smtputf8=True, allow_quoted_local=False
        )
    except (EmailNotValidError, ValueError, UnicodeError):
        return None
    normalized = result.normalized.lower()
    return normalized if len(normalized) <= MAX_EMAIL_LENGTH else None


def normalize_text(raw: object, max_length: int = MAX_TEXT_LENGTH) -> str | None:
    """A trimmed non-empty string cut to the column's length, else None."""
    if not isinstance(raw, str):
        return None
    # Printable text (the common case) holds none of the unstorable characters.
    value = (raw if raw.isprintable() else _UNSTORABLE.sub("", raw)).strip()
    if not value:
        return None
    return value[:max_length]


def normalize_postal_code(raw: object) -> str | None:
    """A customer's postal code (CONTRACT §8): trimmed, at most 16 characters, as given
    otherwise (the ad-platform rules shape it where it is sent, audiences/hashing.py)."""
    return normalize_text(raw, MAX_POSTAL_CODE_LENGTH)


def normalize_country_code(raw: object) -> str | None:
    """An ISO 3166-1 alpha-2 code (stores' list), upper-cased; anything else counts as absent."""
    if not isinstance(raw, str):
        return None
    value = raw.strip().upper()
    return value if value in country_codes() else None


def record_refusals(record: dict[str, object]) -> list[str]:
    """Why an order would refuse the record's values (CONTRACT.md §12): a field that is
    not text, text a database cannot store as given (kit's storable_text: NUL,
    control characters, lone surrogates), text over the field's limit, an unknown
    country. Empty when none; null and blank values count as absent."""
    refusals = []
    for name, limit in FIELD_LIMITS.items():
        raw = record.get(name)
        if raw is None:
            continue
        if type(raw) is str and raw.isprintable() and len(raw) <= limit and name != "countryCode":
            continue  # the common case: printable text (so storable) within its limit
        if not isinstance(raw, str):
            refusals.append(f"{name} must be a string")
        elif len(raw) > limit:
            refusals.append(f"{name} must be at most {limit} characters")
        elif not storable_text(raw):
            refusals.append(
                f"{name} must be printable text (no NUL, control character or lone surrogate)"
            )
        elif name == "countryCode" and raw.strip() and normalize_country_code(raw) is None:
            refusals.append(f"{name} must be an ISO 3166-1 alpha-2 country code, e.g. US")
    return refusals
