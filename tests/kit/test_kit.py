"""The domain-free rules of partnerlink.kit, each written once."""

from __future__ import annotations

import hashlib

import pytest

from partnerlink.kit.currencies import NO_MINOR_UNIT, currency_codes, minor_units
from partnerlink.kit.digests import hmac_sha256, sha256_hex, unpadded_base64url
from partnerlink.kit.text import storable_text, unstorable_characters


def test_sha256_hex_is_lower_case_hex_of_the_utf8_bytes() -> None:
    assert sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256_hex("é") == hashlib.sha256(b"\xc3\xa9").hexdigest()
    # A lone surrogate (no stored text holds one) hashes rather than raising.
    assert len(sha256_hex("\ud800")) == 64


def test_hmac_sha256_matches_rfc_4231() -> None:
    # RFC 4231, test case 2.
    mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?")
    assert mac.hex() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert unpadded_base64url(mac) == "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM"


@pytest.mark.parametrize(
    ("text", "one_line", "free_text", "cleaned"),
    [
        ("Ada Lovelace", True, True, True),
        ("tab\there", True, True, True),
        ("two\nlines", False, True, True),
        ("carriage\rreturn", False, True, True),
        ("nul\x00", False, False, False),
        ("bell\x07", False, True, False),
        ("form\x0cfeed", False, True, False),
        ("delete\x7f", True, True, False),
        ("lone \ud800", False, False, False),
        ("emoji 😀", True, True, True),
    ],
)
def test_each_text_policy_is_one_rule_with_named_differences(
    text: str, one_line: bool, free_text: bool, cleaned: bool
) -> None:
    """One-line fields (stores, accounts), an order's free text, and the customer-file
    cleaner differ only where their parameters say."""
    assert storable_text(text) is one_line
    order_text = unstorable_characters(controls=False, line_breaks=False)
    assert (order_text.search(text) is None) is free_text
    customer_file = unstorable_characters(controls=True, line_breaks=False, delete=True)
    assert (customer_file.search(text) is None) is cleaned


def test_currencies_come_from_one_list_with_iso_minor_units() -> None:
    assert {"USD", "JPY", "KWD", "XTS", "XXX"} <= currency_codes()
    assert "ABC" not in currency_codes()
    assert currency_codes() >= NO_MINOR_UNIT
    assert (minor_units("USD"), minor_units("JPY"), minor_units("KWD")) == (2, 0, 3)
    assert minor_units("XTS") == minor_units("XXX") == 0
