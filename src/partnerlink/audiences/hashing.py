"""Identifier normalization and SHA-256 for the ad platforms, written once (CONTRACT §8, §11).

The customer-list files (`audiences` export) and the platforms' APIs (`destinations`)
both take their values from here, so that a person hashes the same way in a file a
merchant uploads by hand and in a sync.

Meta:
- email: trimmed, lower-cased.
- phone: the digits with the country code and no `+`.
- first and last name, city: lower-cased, whitespace and punctuation (and symbols)
  removed, letters of every script kept (Unicode NFC, hashed as UTF-8):
  `Mary-Ann` → `maryann`, `São Paulo` → `sãopaulo`, `Zoë` → `zoë`.
- country: ISO 3166-1 alpha-2, lower case, hashed.

Google (CONTRACT §8: Google's own formatter, `google.ads.datamanager_util.Formatter`
of the google-ads-datamanager-util package, not its rules written again):
- email: trimmed, lower-cased; for gmail.com and googlemail.com the dots and the
  `+suffix` of the user part removed (`Jane.Doe+ads@GoogleMail.com` →
  `janedoe@googlemail.com`); other domains keep theirs.
- phone: E.164 with `+`.
- first and last name: trimmed, lower-cased; inner spaces, hyphens and apostrophes kept
  (`Mary Ann` → `mary ann`, `O'Neil-Smith` → `o'neil-smith`).
- country: ISO 3166-1 alpha-2, upper case, plain (`regionCode`, the file's `Country`).
- postal code: ours (the formatter only trims): plain, trimmed; a US code keeps its
  first five digits.
A value the formatter refuses (ValueError: an email with inner whitespace, no `@`)
is left out, as an unknown one is.

Hashes are lower-case hex SHA-256 of the UTF-8 bytes.

Customers are stored normalized already (email trimmed and lower-cased, phone in
E.164, CONTRACT §6), so the email and phone rules are the last step only.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from hashlib import sha256
from importlib.metadata import version
from typing import TYPE_CHECKING

from partnerlink.kit.digests import sha256_hex

if TYPE_CHECKING:
    from google.ads.datamanager_util import Formatter

META_HEADER = "email,phone,fn,ln,ct,country"
GOOGLE_HEADER = "Email,Phone,First Name,Last Name,Country,Zip"

# A customer row as exported: email, phone (E.164), first name, last name, city,
# country, postal code.
CustomerRow = Sequence[str | None]

# Unicode categories a name or city keeps: letters, combining marks (which many
# scripts need to spell a letter) and digits. Whitespace (Z*), punctuation (P*),
# symbols (S*) and control characters (C*) go.
_KEPT = frozenset({"L", "M", "N"})


def hashed(value: str | None) -> str:
    return sha256_hex(value) if value else ""


@lru_cache(maxsize=65_536)
def hashed_common(value: str | None) -> str:
    """For values many customers share (first names, cities, countries): hashed once."""
    return sha256_hex(value) if value else ""


def normalized_email(email: str | None) -> str | None:
    value = (email or "").strip().lower()
    return value or None


def meta_phone(e164: str | None) -> str | None:
    """`+1 650-555-1212` → `16505551212`: digits only, country code first, no `+`."""
    if not e164:
        return None
    if e164[0] == "+" and e164[1:].isascii() and e164[1:].isdigit():  # the stored form
        return e164[1:]
    digits = "".join(ch for ch in e164 if ch.isascii() and ch.isdigit()).lstrip("0")
    return digits or None


def google_phone(e164: str | None) -> str | None:
    """E.164 with `+`, by our rule: the suppression list's phone (audiences/choices.py).
    Google's identifier is google_phone_number, by Google's formatter."""
    digits = meta_phone(e164)
    return f"+{digits}" if digits else None


def _letters_only(text: str) -> str:
    """The common case first, uncached (last names are mostly each their own, and a
    cache miss cost more than the work): ASCII letters and digits, which NFC leaves as
    they are, only lower-cased."""
    if text.isascii():
        folded = text.lower()
        if folded.isalnum():
            return folded
    return _letters_only_folded(text)


@lru_cache(maxsize=65_536)
def _letters_only_folded(text: str) -> str:
    folded = unicodedata.normalize("NFC", text).lower()
    if folded.isascii() and folded.isalnum():
        return folded
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in _KEPT)


def normalized_name(name: str | None) -> str | None:
    """`  Mary-Ann O'Neil ` → `maryannoneil`; letters of every script kept."""
    if not name:
        return None
    return _letters_only(name) or None


def meta_city(city: str | None) -> str | None:
    """`São Paulo` → `sãopaulo`, `St. Louis` → `stlouis`."""
    return normalized_name(city)


def meta_country(country: str | None) -> str | None:
    value = (country or "").strip().lower()
    return value or None


def google_country(country: str | None) -> str | None:
    value = (country or "").strip().upper()
    return value or None


def google_postal_code(postal_code: str | None, country: str | None) -> str | None:
    """Plain, trimmed; a US code keeps its first five digits (`94105-1234` → `94105`).
    No country's postal code holds anything but letters, digits, spaces and hyphens: a
    value with other characters is no postal code and is left out (so none can turn
    into a spreadsheet formula or a second CSV cell)."""
    value = (postal_code or "").strip()
    if not all(ch.isascii() and (ch.isalnum() or ch in " -") for ch in value):
        return None
    if value and google_country(country) == "US":
        value = "".join(ch for ch in value if ch.isascii() and ch.isdigit())[:5]
    return value or None


def meta_hashes(row: CustomerRow) -> tuple[str, str, str, str, str, str]:
    """The six values of Meta's schema EMAIL, PHONE, FN, LN, CT, COUNTRY; "" when unknown."""
    email, phone_number, first_name, last_name, city, country = row[:6]
    return (
        hashed(normalized_email(email)),
        hashed(meta_phone(phone_number)),
        hashed_common(normalized_name(first_name)),
        hashed(normalized_name(last_name)),
        hashed_common(meta_city(city)),
        hashed_common(meta_country(country)),
    )


@lru_cache(maxsize=65_536)
def _hashed_name(name: str | None) -> str:
    """A first name's or a city's hash, by the value as stored (many share it)."""
    return hashed_common(normalized_name(name))


@lru_cache(maxsize=1_024)
def _hashed_meta_country(country: str | None) -> str:
    return hashed_common(meta_country(country))


def meta_line(row: CustomerRow) -> str:
    """`",".join(meta_hashes(row))`, a million times a sync: the same rules with one call
    a customer rather than a dozen (tests/destinations/test_identifiers.py holds them
    equal)."""
    email, phone, first_name, last_name, city, country = row[:6]
    if email:
        email = email.strip().lower()
    if phone:
        digits = phone[1:]  # the stored form, +digits; meta_phone's rules for any other
        stored = phone[0] == "+" and digits.isascii() and digits.isdigit()
        phone = digits if stored else meta_phone(phone)
    if last_name:
        last_name = _letters_only(last_name)
    return ",".join(
        (
            sha256(email.encode("utf-8", "surrogatepass")).hexdigest() if email else "",
            sha256(phone.encode("utf-8", "surrogatepass")).hexdigest() if phone else "",
            _hashed_name(first_name),
            sha256(last_name.encode("utf-8", "surrogatepass")).hexdigest() if last_name else "",
            _hashed_name(city),
            _hashed_meta_country(country),
        )
    )


# -- Google: its own formatter ------------------------------------------------------


@cache
def google_formatter() -> Formatter:
    """Google's formatter, imported on first use: the package's import pulls tink and
    Cloud KMS for its Encrypter (about 0.5 s), which the server's start need not pay
    (it imports this module, and the worker's sync, at start)."""
    from google.ads.datamanager_util import Formatter

    return Formatter()


@cache
def google_rules() -> str:
    """What Google's rows depend on besides the customer's columns: the formatter's
    version. A destination's sync basis holds it (destinations/identifiers.py), so that
    held rows made under other rules are compared and replaced once."""
    return f"google-ads-datamanager-util {version('google-ads-datamanager-util')}"


def _formatted(format_value: Callable[[str], str], value: str | None) -> str | None:
    if not value:
        return None
    try:
        return format_value(value) or None
    except ValueError:  # the formatter refuses it: left out, like an unknown value
        return None


def google_email(email: str | None) -> str | None:
    return _formatted(google_formatter().format_email_address, email)


def google_phone_number(phone: str | None) -> str | None:
    return _formatted(google_formatter().format_phone_number, phone)


def google_given_name(name: str | None) -> str | None:
    return _formatted(google_formatter().format_given_name, name)


def google_family_name(name: str | None) -> str | None:
    return _formatted(google_formatter().format_family_name, name)


def google_region(country: str | None) -> str | None:
    return _formatted(google_formatter().format_region_code, country)


@lru_cache(maxsize=65_536)
def google_given_name_hash(name: str | None) -> str:
    """A given name's hash by the value as stored (many share it)."""
    return hashed(google_given_name(name))


def google_hashes(row: CustomerRow) -> tuple[str, str, str, str, str, str]:
    """The Google file's six cells: email, phone, first and last name hashed; country
    and postal code plain; "" when unknown or refused by the formatter."""
    email, phone, first_name, last_name, _city, country, postal_code = row[:7]
    return (
        hashed(google_email(email)),
        hashed(google_phone_number(phone)),
        google_given_name_hash(first_name),
        hashed(google_family_name(last_name)),
        google_region(country) or "",
        google_postal_code(postal_code, country) or "",
    )


def google_line(row: CustomerRow) -> str:
    return ",".join(google_hashes(row))


FORMATS: dict[str, tuple[str, Callable[[CustomerRow], str]]] = {
    "meta": (META_HEADER, meta_line),
    "google": (GOOGLE_HEADER, google_line),
}
