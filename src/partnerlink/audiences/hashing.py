"""Identifier normalization and SHA-256 for the ad platforms' customer-list files.

Meta Custom Audiences (header `email,phone,fn,ln,ct,country`): every value hashed;
phone as digits with the country code and no `+`; names lower-cased and trimmed;
city lower-cased with spaces removed; country lower-case ISO 3166-1 alpha-2.
Google Customer Match (header `Email,Phone,First Name,Last Name,Country,Zip`):
email, phone (E.164 with `+`) and names hashed; country plain alpha-2; zip empty.
Hashes are lower-case hex SHA-256 of the UTF-8 bytes (CONTRACT.md §8).

Customers are stored normalized already (email trimmed and lower-cased, phone in
E.164, CONTRACT §6), so each rule here is the last step only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from partnerlink.kit.digests import sha256_hex

META_HEADER = "email,phone,fn,ln,ct,country"
GOOGLE_HEADER = "Email,Phone,First Name,Last Name,Country,Zip"

_WHITESPACE = re.compile(r"\s+")

# A customer row as exported: email, phone (E.164), first name, last name, city, country.
CustomerRow = Sequence[str | None]


def _hashed(value: str | None) -> str:
    return sha256_hex(value) if value else ""


@lru_cache(maxsize=65_536)
def _hashed_common(value: str | None) -> str:
    """For values many customers share (first names, cities, countries): hashed once."""
    return sha256_hex(value) if value else ""


def normalized_email(email: str | None) -> str | None:
    value = (email or "").strip().lower()
    return value or None


def meta_phone(e164: str | None) -> str | None:
    """`+1 650-555-1212` → `16505551212`: digits only, country code first, no `+`."""
    if not e164:
        return None
    if e164[0] == "+" and e164[1:].isdigit():  # the stored form: the common case
        return e164[1:]
    digits = "".join(ch for ch in e164 if ch.isdigit()).lstrip("0")
    return digits or None


def google_phone(e164: str | None) -> str | None:
    digits = meta_phone(e164)
    return f"+{digits}" if digits else None


def normalized_name(name: str | None) -> str | None:
    value = (name or "").strip().lower()
    return value or None


def meta_city(city: str | None) -> str | None:
    value = _WHITESPACE.sub("", city or "").lower()
    return value or None


def meta_country(country: str | None) -> str | None:
    value = (country or "").strip().lower()
    return value or None


def _hashed_person(row: CustomerRow, phone: Callable[[str | None], str | None]) -> list[str]:
    """The four columns both files share: email, phone (in the file's own form), names."""
    email, phone_number, first_name, last_name = row[:4]
    return [
        _hashed(normalized_email(email)),
        _hashed(phone(phone_number)),
        _hashed_common(normalized_name(first_name)),
        _hashed(normalized_name(last_name)),
    ]


def meta_line(row: CustomerRow) -> str:
    city, country = row[4], row[5]
    return ",".join(
        [
            *_hashed_person(row, meta_phone),
            _hashed_common(meta_city(city)),
            _hashed_common(meta_country(country)),
        ]
    )


def google_line(row: CustomerRow) -> str:
    country = row[5]
    return ",".join([*_hashed_person(row, google_phone), (country or "").strip().upper(), ""])


FORMATS: dict[str, tuple[str, Callable[[CustomerRow], str]]] = {
    "meta": (META_HEADER, meta_line),
    "google": (GOOGLE_HEADER, google_line),
}
