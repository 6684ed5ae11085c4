"""One normalization for the files and the syncs, checked against published examples;
Google's by Google's own formatter (CONTRACT §8), its digests computed here with hashlib."""

from __future__ import annotations

import hashlib

from partnerlink.audiences.hashing import (
    google_email,
    google_line,
    google_postal_code,
    meta_city,
    meta_hashes,
    meta_line,
    meta_phone,
    normalized_name,
)
from partnerlink.destinations.identifiers import (
    Identity,
    google_user_data,
    has_match_key,
    meta_row,
    meta_user_data,
    rows_basis,
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


PERSON = Identity(
    email="john_smith@gmail.com",
    phone="+16169547888",
    first_name="Mary-Ann",
    last_name="O'Neil Smith",
    city="St. Louis",
    country="US",
    postal_code=" 63101-1234 ",
)


def test_published_examples_hash_alike() -> None:
    # Meta's Conversions API "customer information parameters" examples:
    # John_Smith@gmail.com → john_smith@gmail.com → 62a14e44…; Mary → mary → 6915771b….
    em, ph, fn, *_ = meta_row(
        Identity(email="john_smith@gmail.com", phone="+16169547888", first_name="Mary")
    )
    assert em == "62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f"
    assert fn == "6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec"
    assert ph == sha("16169547888")
    # Snap's published example of the same email rule: person@example.com → 542d2401….
    (em2, *_) = meta_row(Identity(email="person@example.com"))
    assert em2 == "542d240129883c019e106e3b1b2d3f3cb3537c43c425364de8e951d5a3083345"
    # And the phone rule: +44 844 412 4653 → 448444124653 → dc008fda….
    assert sha(meta_phone("+448444124653") or "") == (
        "dc008fda46e2e64002cf2f82a4906236282d431c4f75e5b60bfe79fc48546383"
    )


def test_names_and_cities_lose_whitespace_and_punctuation_and_keep_every_script() -> None:
    assert normalized_name("  Mary-Ann ") == "maryann"
    assert normalized_name("O'Neil Smith") == "oneilsmith"
    assert normalized_name("Zoë") == "zoë"
    assert normalized_name("Zoe\u0308") == "zoë"  # decomposed, composed before hashing
    assert normalized_name("Łukasz") == "łukasz"
    assert normalized_name("Иван") == "иван"
    assert normalized_name("山田 太郎") == "山田太郎"
    assert normalized_name("देवनागरी") == "देवनागरी"  # combining marks kept
    assert normalized_name("محمد") == "محمد"
    assert normalized_name(" - . ") is None
    assert meta_city("São Paulo") == "sãopaulo"
    assert meta_city("St. Louis") == "stlouis"
    assert meta_city("Saint-Étienne") == "saintétienne"


def test_meta_row_is_the_six_hashes_of_the_export() -> None:
    row = meta_row(PERSON)
    assert row == (
        sha("john_smith@gmail.com"),
        sha("16169547888"),
        sha("maryann"),
        sha("oneilsmith"),
        sha("stlouis"),
        sha("us"),
    )
    assert meta_line(PERSON.row()) == ",".join(row)
    assert meta_row(Identity(phone="+33612345678")) == ("", sha("33612345678"), "", "", "", "")


def test_meta_user_data_holds_one_element_lists_and_leaves_the_unknown_out() -> None:
    assert meta_user_data(Identity(email="a@b.co", country="FR")) == {
        "em": [sha("a@b.co")],
        "country": [sha("fr")],
    }
    assert set(meta_user_data(PERSON)) == {"em", "ph", "fn", "ln", "ct", "country"}


def test_google_user_data_hashes_e164_with_plus_and_sends_region_and_postal_plain() -> None:
    assert google_user_data(PERSON) == {
        "userIdentifiers": [
            {"emailAddress": sha("john_smith@gmail.com")},
            {"phoneNumber": sha("+16169547888")},
            {
                "address": {
                    # Google's formatter: trimmed and lower-cased, inner marks kept.
                    "givenName": sha("mary-ann"),
                    "familyName": sha("o'neil smith"),
                    "regionCode": "US",
                    "postalCode": "63101",
                }
            },
        ]
    }


def test_an_address_only_when_names_country_and_postal_code_are_all_known() -> None:
    for missing in ("first_name", "last_name", "country", "postal_code"):
        fields: dict[str, str | None] = {
            "email": "a@b.co",
            "first_name": "Ann",
            "last_name": "Lee",
            "country": "GB",
            "postal_code": "SW1A 1AA",
        }
        fields[missing] = None
        identifiers = google_user_data(Identity(**fields))["userIdentifiers"]
        assert identifiers == [{"emailAddress": sha("a@b.co")}], missing
    full = google_user_data(
        Identity(
            email="a@b.co", first_name="Ann", last_name="Lee", country="GB", postal_code="SW1A 1AA"
        )
    )
    assert full["userIdentifiers"][1]["address"]["postalCode"] == "SW1A 1AA"


def test_postal_codes_plain_trimmed_us_five_digits_and_nothing_odd() -> None:
    assert google_postal_code(" 94105-1234 ", "US") == "94105"
    assert google_postal_code("94105", "us") == "94105"
    assert google_postal_code(" 75008 ", "FR") == "75008"
    assert google_postal_code("=HYPERLINK(1)", "GB") is None
    assert google_postal_code("12,34", "DE") is None
    assert google_postal_code("   ", "DE") is None


def test_the_google_file_row_carries_the_zip() -> None:
    line = google_line(PERSON.row())
    assert line == ",".join(
        (
            sha("john_smith@gmail.com"),
            sha("+16169547888"),
            sha("mary-ann"),
            sha("o'neil smith"),
            "US",
            "63101",
        )
    )
    assert google_line(Identity(email="a@b.co").row()).endswith(",,")


def test_a_match_key_is_an_email_or_a_phone() -> None:
    assert has_match_key(Identity(phone="+447700900123"))
    assert not has_match_key(
        Identity(first_name="Ann", last_name="Lee", country="GB", postal_code="N1")
    )


def test_meta_line_is_the_meta_hashes_joined() -> None:
    """meta_line is written for speed; meta_hashes states the rules: they agree on every
    kind of value, stored or not (spaces, case, scripts, punctuation, odd phones)."""
    emails = [None, "", "  ", " Ann@Example.COM ", "zoë@exämple.de", "a\ud800b@x.io"]
    phones = [None, "", "+", "+16505551212", "+1 650-555-1212", "0044 20 7946 0958", "+１２"]
    names = [None, "", " ", "Mary-Ann", "O'Neil Smith", "Zoë", "São Paulo", "李小龍", "St. Louis"]
    countries = [None, "", " us ", "FR", "de"]
    rows = [
        (email, phone, first, last, city, country, None)
        for email in emails
        for phone in phones
        for first, last, city in zip(names, reversed(names), names[3:] + names[:3], strict=True)
        for country in countries
    ]
    for row in rows:
        assert meta_line(row) == ",".join(meta_hashes(row)), row


def test_google_folds_gmail_dots_and_tags_as_its_formatter_does() -> None:
    person = Identity(email="Jane.Doe+ads@GoogleMail.com", first_name="x")
    expected = hashlib.sha256(b"janedoe@googlemail.com").hexdigest()
    assert google_user_data(person)["userIdentifiers"] == [{"emailAddress": expected}]
    assert google_line(person.row()).split(",")[0] == expected
    gmail = google_user_data(Identity(email=" J.O.H.N+shop@gmail.com "))
    assert gmail["userIdentifiers"] == [{"emailAddress": sha("john@gmail.com")}]
    # Meta's rule is ours, unchanged: the dots and the tag stay.
    assert meta_row(person)[0] == sha("jane.doe+ads@googlemail.com")


def test_other_domains_keep_their_dots_and_tags() -> None:
    for email in ("Jane.Doe+ads@example.com", "jane.doe+ads@gmail.co.uk"):
        identifiers = google_user_data(Identity(email=email))["userIdentifiers"]
        assert identifiers == [{"emailAddress": sha(email.lower())}]


def test_google_names_keep_inner_spaces_and_hyphens() -> None:
    person = Identity(
        email="a@b.co",
        first_name="  Mary Ann ",
        last_name="O'Neil-Smith",
        country="ie",
        postal_code="D02 X285",
    )
    address = google_user_data(person)["userIdentifiers"][1]["address"]
    assert address == {
        "givenName": hashlib.sha256(b"mary ann").hexdigest(),
        "familyName": hashlib.sha256(b"o'neil-smith").hexdigest(),
        "regionCode": "IE",
        "postalCode": "D02 X285",
    }
    cells = google_line(person.row()).split(",")
    assert cells[2:] == [address["givenName"], address["familyName"], "IE", "D02 X285"]


def test_a_value_the_formatter_refuses_is_left_out_never_a_crash() -> None:
    person = Identity(email="jane doe@example.com", phone="+16505551212")
    assert google_email(person.email) is None
    assert google_user_data(person)["userIdentifiers"] == [{"phoneNumber": sha("+16505551212")}]
    assert google_line(person.row()).startswith(",")
    for email in ("no-at-sign", "@example.com", "a@", "+@gmail.com", "a@b@c"):
        assert google_email(email) is None, email
    # A country that is not two letters leaves no region, hence no address.
    odd = Identity(email="a@b.co", first_name="A", last_name="B", country="USA", postal_code="1")
    assert google_user_data(odd)["userIdentifiers"] == [{"emailAddress": sha("a@b.co")}]


def test_googles_rows_basis_names_the_formatter_and_its_version() -> None:
    assert rows_basis("meta") is None
    basis = rows_basis("google")
    assert basis is not None and basis.startswith("google-ads-datamanager-util ")
