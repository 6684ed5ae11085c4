"""Phone numbers in E.164 (CONTRACT.md §6), for customers, touches, receipts and stores.

A number is parsed with a default region (the store's country), and kept in E.164
when it is a possible number; unparseable counts as absent (None). Customer lists
carry millions of numbers, so the common shapes take a fast path that gives the
same answer as the full parse (tests compare both).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import phonenumbers
from phonenumbers import (
    COUNTRY_CODE_TO_REGION_CODE,
    REGION_CODE_FOR_NON_GEO_ENTITY,
    UNKNOWN_REGION,
    NumberParseException,
    PhoneMetadata,
    region_code_for_country_code,
)
from phonenumbers.phonenumberutil import _test_number_length

NON_GEOGRAPHIC_REGION = REGION_CODE_FOR_NON_GEO_ENTITY

MAX_PHONE_INPUT = 64
MAX_E164_LENGTH = 16  # "+" and at most 15 digits (ITU-T E.164)


def normalize_phone(raw: object, default_region: str | None) -> str | None:
    """Returns the number in E.164, or None when absent, unparseable or impossible.

    A number without a leading `+` is read in `default_region` (the store's
    country). "Possible" (right length for its country) rather than "valid"
    (an allocated range): lists carry fresh ranges the metadata may not know
    yet, and a possible number is enough to match a person by.
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        raw = str(raw)
    if not isinstance(raw, str):
        return None
    value = raw.strip()
    if not value or len(value) > MAX_PHONE_INPUT:
        return None
    region = default_region.upper() if default_region else None
    fast = _fast_e164(value, region)
    if fast is not _UNDECIDED:
        return fast
    return _parsed_e164(value, region)


def _parsed_e164(value: str, region: str | None) -> str | None:
    """The full libphonenumber parse: any format, letters, extensions, IDD prefixes.

    Only a number whose E.164 form reads back as itself: libphonenumber does not always
    read its own output so ("0000000" in AU gives "+61000000", which reads as
    "+6100000"), and a stored number that normalizes to another could never match the
    same person again (an order giving the stored form would miss the customer).
    """
    e164 = _libphonenumber_e164(value, region)
    if e164 is None:
        return None
    # Read back through the fast path where it decides (it agrees with the full parse):
    # only a national number with a leading zero (Italy's, say) is parsed a second time.
    again = _fast_e164(e164, None)
    if again is _UNDECIDED:
        again = _libphonenumber_e164(e164, None)
    return e164 if again == e164 else None


def _libphonenumber_e164(value: str, region: str | None) -> str | None:
    try:
        number = phonenumbers.parse(value, region)
    except NumberParseException:
        return None
    reason = phonenumbers.is_possible_number_with_reason(number)
    # IS_POSSIBLE_LOCAL_ONLY ("12" read as +49 12) is not a number that reaches anyone.
    if reason != phonenumbers.ValidationResult.IS_POSSIBLE:
        return None
    e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return e164 if len(e164) <= MAX_E164_LENGTH else None


# The fast path: the common shapes ("+14155552671", "(415) 555-2671", "+44 7700
# 900123") give the same answer as the full parse in a fifth of the time (the
# parse spends most of its time normalizing digits one character at a time).
# Anything it is not sure about (national or international prefixes, a leading
# zero, an unknown country code, other characters) goes to the full parse;
# tests compare both on many generated numbers.
_UNDECIDED: Any = object()
_SIMPLE_NUMBER = re.compile(r"(\+?)[0-9(][0-9 ().-]*")
_SEPARATORS = str.maketrans("", "", " ().-")


def _fast_e164(value: str, region: str | None) -> str | None:
    match = _SIMPLE_NUMBER.fullmatch(value)
    if match is None:
        return _UNDECIDED
    digits = value.translate(_SEPARATORS)
    if match.group(1):
        found = _split_country_code(digits[1:])
        if found is None:
            return _UNDECIDED
        country_code, national = found
        parse_metadata = _main_metadata(country_code)
    else:
        if region is None:
            return _UNDECIDED
        parse_metadata = _region_metadata(region)
        if parse_metadata is None:
            return _UNDECIDED
        idd = parse_metadata.international_prefix
        country_code = parse_metadata.country_code
        if idd and _pattern(idd).match(digits):
            return _UNDECIDED
        national = digits
        if digits.startswith(str(country_code)):
            # "1 415 555 2671" in the US: the parse takes the leading digits for the
            # country code when the whole is too long for a national number.
            if _length_check(len(digits), parse_metadata) != _TOO_LONG:
                return _UNDECIDED
            national = digits[len(str(country_code)) :]
    if parse_metadata is None or not national or national[0] == "0":
        return _UNDECIDED
    prefix = parse_metadata.national_prefix_for_parsing
    if prefix and _pattern(prefix).match(national):
        return _UNDECIDED
    main = _main_metadata(country_code)
    if main is None:
        return _UNDECIDED
    if _length_check(len(national), main) != _IS_POSSIBLE:
        return None
    e164 = f"+{country_code}{national}"
    return e164 if len(e164) <= MAX_E164_LENGTH else None


def _split_country_code(digits: str) -> tuple[int, str] | None:
    if not digits or digits[0] == "0":
        return None
    for length in (1, 2, 3):
        code = int(digits[:length])
        if code in COUNTRY_CODE_TO_REGION_CODE:
            return code, digits[length:]
    return None


@lru_cache(maxsize=512)
def _main_metadata(country_code: int) -> Any:
    region = region_code_for_country_code(country_code)
    if region in (NON_GEOGRAPHIC_REGION, UNKNOWN_REGION):
        return None
    return PhoneMetadata.metadata_for_region_or_calling_code(country_code, region)


_IS_POSSIBLE = phonenumbers.ValidationResult.IS_POSSIBLE
_TOO_LONG = phonenumbers.ValidationResult.TOO_LONG


_LENGTH_CHECKS: dict[tuple[int, int], int] = {}


def _length_check(length: int, metadata: Any) -> int:
    """libphonenumber's length test; it depends on nothing but the length and the metadata.

    Metadata objects are loaded once and kept, so their identity is a stable key.
    """
    key = (id(metadata), length)
    found = _LENGTH_CHECKS.get(key)
    if found is None:
        found = _LENGTH_CHECKS[key] = int(_test_number_length("0" * length, metadata))
    return found


@lru_cache(maxsize=512)
def _region_metadata(region: str) -> Any:
    return PhoneMetadata.metadata_for_region(region, None)


@lru_cache(maxsize=512)
def _pattern(expression: str) -> re.Pattern[str]:
    return re.compile(expression)
