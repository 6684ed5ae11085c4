"""Normalization of emails, phones and free text (CONTRACT.md §6)."""

from __future__ import annotations

import phonenumbers
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from partnerlink.customers.normalize import (
    normalize_country_code,
    normalize_email,
    normalize_phone,
    normalize_text,
)
from partnerlink.phones import _parsed_e164


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ann@example.com", "ann@example.com"),
        ("  Ann.Lee@Example.COM \n", "ann.lee@example.com"),
        ("first+tag@sub.example.co.uk", "first+tag@sub.example.co.uk"),
        ("o'brien@example.ie", "o'brien@example.ie"),
        ("user@xn--bcher-kva.de", "user@xn--bcher-kva.de"),
        ("Zoë@Bücher.de", "zoë@bücher.de"),
    ],
)
def test_valid_emails_are_trimmed_and_lower_cased(raw: str, expected: str) -> None:
    assert normalize_email(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "   ",
        "plainaddress",
        "@example.com",
        "ann@",
        "ann@localhost",
        "ann@@example.com",
        "ann..lee@example.com",
        ".ann@example.com",
        "ann.@example.com",
        "ann lee@example.com",
        "ann@-example.com",
        "ann@example-.com",
        "ann@example.c",
        "ann@exa_mple.com",
        '"quoted"@example.com',
        "a" * 65 + "@example.com",
        "ann@" + "a" * 250 + ".com",
        "ann@example.com\x00",
        42,
        ["ann@example.com"],
        {"email": "ann@example.com"},
        True,
    ],
)
def test_invalid_emails_count_as_absent(raw: object) -> None:
    assert normalize_email(raw) is None


@given(st.text(max_size=80))
@example("ann@example.com")
def test_email_normalization_is_idempotent(raw: str) -> None:
    once = normalize_email(raw)
    if once is not None:
        assert normalize_email(once) == once
        assert once == once.strip().lower()


@pytest.mark.parametrize(
    ("raw", "region", "expected"),
    [
        ("+14155552671", "US", "+14155552671"),
        ("(415) 555-2671", "US", "+14155552671"),
        ("415.555.2671", "US", "+14155552671"),
        ("1 (415) 555-2671", "US", "+14155552671"),
        ("+1 415 555 2671", "DE", "+14155552671"),
        ("011 44 7700 900123", "US", "+447700900123"),
        ("0151 12345678", "DE", "+4915112345678"),
        ("+49 (0)151 12345678", "US", "+4915112345678"),
        ("07700 900123", "GB", "+447700900123"),
        ("+39 06 1234 5678", "US", "+390612345678"),
        ("tel:+1-415-555-2671", "US", "+14155552671"),
        ("1-800-FLOWERS", "US", "+18003569377"),
        ("+1 415 555 2671 ext. 12", "US", "+14155552671"),
        ("4155552671", "us", "+14155552671"),
        (4155552671, "US", "+14155552671"),
    ],
)
def test_phones_become_e164_read_in_the_store_country(
    raw: object, region: str, expected: str
) -> None:
    assert normalize_phone(raw, region) == expected


@pytest.mark.parametrize(
    ("raw", "region"),
    [
        (None, "US"),
        ("", "US"),
        ("call me", "US"),
        ("12", "DE"),  # possible only as a local number
        ("555", "US"),
        ("4155552671", None),  # national number and no region to read it in
        ("+999 123456789", "US"),  # no such country code
        ("+1 415 555 2671 9999 9999", "US"),
        ("+" + "9" * 40, "US"),
        (True, "US"),
        (4.155552671e9, "US"),
        (["+14155552671"], "US"),
    ],
)
def test_unusable_phones_count_as_absent(raw: object, region: str | None) -> None:
    assert normalize_phone(raw, region) is None


_REGIONS = ["US", "CA", "DE", "GB", "FR", "IT", "BR", "IN", "AU", "JP", "MX", "AR", "NL", "HU"]
_DIGITISH = st.text(alphabet="0123456789 ().-+", min_size=1, max_size=24)


def _example_numbers() -> list[str]:
    out = []
    for region in _REGIONS:
        for kind in (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE):
            number = phonenumbers.example_number_for_type(region, kind)
            if number is not None:
                for style in (
                    phonenumbers.PhoneNumberFormat.E164,
                    phonenumbers.PhoneNumberFormat.INTERNATIONAL,
                    phonenumbers.PhoneNumberFormat.NATIONAL,
                ):
                    out.append(phonenumbers.format_number(number, style))
    return out


@settings(max_examples=3000, deadline=None)
@given(st.one_of(_DIGITISH, st.sampled_from(_example_numbers())), st.sampled_from(_REGIONS))
def test_fast_path_agrees_with_the_full_parse(raw: str, region: str) -> None:
    assert normalize_phone(raw, region) == _parsed_e164(raw.strip(), region)


@given(st.one_of(_DIGITISH, st.text(max_size=30)), st.sampled_from(_REGIONS))
@example(raw="0000000", region="AU")
def test_a_normalized_phone_normalizes_to_itself_in_any_region(raw: str, region: str) -> None:
    once = normalize_phone(raw, region)
    if once is not None:
        assert once.startswith("+") and once[1:].isdigit() and len(once) <= 16
        assert normalize_phone(once, "JP") == once


def test_a_number_libphonenumber_reads_back_as_another_is_refused() -> None:
    # libphonenumber itself, the independent source: its E.164 for "0000000" in Australia
    # reads back as another number (found by the property above).
    e164 = phonenumbers.PhoneNumberFormat.E164
    first = phonenumbers.format_number(phonenumbers.parse("0000000", "AU"), e164)
    assert first == "+61000000"
    assert phonenumbers.format_number(phonenumbers.parse(first, None), e164) == "+6100000"
    assert normalize_phone("0000000", "AU") is None
    # What it reads "+61000000" as does read back as itself, so that is kept.
    assert normalize_phone("+61000000", "AU") == "+6100000"
    assert normalize_phone("+6100000", None) == "+6100000"
    assert normalize_phone("06 6982 1234", "IT") == "+390669821234"


def test_free_text_is_trimmed_cut_and_cleaned() -> None:
    assert normalize_text("  Ann  ") == "Ann"
    assert normalize_text("") is None
    assert normalize_text("   ") is None
    assert normalize_text(5) is None
    assert normalize_text("a\x00b") == "ab"
    assert normalize_text("x" * 500) == "x" * 200


def test_country_codes_must_be_two_letters() -> None:
    assert normalize_country_code(" us ") == "US"
    assert normalize_country_code("USA") is None
    assert normalize_country_code("1A") is None
    assert normalize_country_code("ÄÖ") is None
    assert normalize_country_code(None) is None


_SPECIAL_USE = ("arpa", "invalid", "local", "localhost", "onion", "test")
_EMAILISH = st.text(alphabet="abcXYZ019.-_+@!#'", min_size=3, max_size=20)


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        _EMAILISH,
        st.builds(
            lambda local, domain: f"{local.replace('@', '')}@{domain}",
            _EMAILISH,
            st.sampled_from(["x.com", "a-b.co", "x.c", "x.co.uk", "ex.test", "-x.org", "x..org"]),
        ),
    )
)
def test_fast_email_check_agrees_with_email_validator(raw: str) -> None:
    from email_validator import EmailNotValidError, validate_email

    try:
        validate_email(raw, check_deliverability=False)
        library = True
    except EmailNotValidError:
        library = False
    tld = raw.rsplit(".", 1)[-1]
    ours = normalize_email(raw) is not None
    if library and tld.isalpha() and len(tld) >= 2:
        assert ours
    if ours and tld not in _SPECIAL_USE:
        assert library
