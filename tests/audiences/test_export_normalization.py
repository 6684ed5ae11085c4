"""§8's normalization as the files carry it, and the customers' postal code (CONTRACT §8, §11)."""

from __future__ import annotations

import csv
import hashlib
import io

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from tests.audiences.helpers import add_customer
from tests.factories import ConnectedStoreFixture


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _export(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], fmt: str
) -> list[list[str]]:
    response = client.get(
        f"/merchant/api/profiles/{shop.profile.id}/audiences/all/export",
        params={"format": fmt},
        headers=owner,
    )
    assert response.status_code == 200, response.text
    return list(csv.reader(io.StringIO(response.text)))


def test_names_and_cities_lose_inner_spaces_and_punctuation_keeping_every_script(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(
        session,
        shop.store,
        email="ann@example.com",
        first_name="Mary-Ann",
        last_name="O'Neil Smith",
        city="St. Louis",
    )
    add_customer(
        session,
        shop.store,
        email="joao@example.com",
        first_name="João",
        last_name="Zoë Łukasz",
        city="São Paulo",
        country_code="BR",
    )
    meta = _export(client, shop, owner, "meta")
    assert [row[2:5] for row in meta[1:]] == [
        [_sha("maryann"), _sha("oneilsmith"), _sha("stlouis")],
        [_sha("joão"), _sha("zoëłukasz"), _sha("sãopaulo")],
    ]
    # Google's names as Google's formatter has them: trimmed, lower-cased, inner marks kept.
    google = _export(client, shop, owner, "google")
    assert [row[2:4] for row in google[1:]] == [
        [_sha("mary-ann"), _sha("o'neil smith")],
        [_sha("joão"), _sha("zoë łukasz")],
    ]


def test_the_google_file_normalizes_as_googles_formatter(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    """CONTRACT §8: gmail.com and googlemail.com addresses lose their dots and `+tag`;
    other domains keep theirs; names keep inner spaces and hyphens. Meta's file keeps
    its own rules."""
    add_customer(
        session,
        shop.store,
        email="jane.doe+ads@googlemail.com",
        first_name=" Mary Ann ",
        last_name="O'Neil-Smith",
    )
    add_customer(session, shop.store, email="jane.doe+ads@example.com")
    google = _export(client, shop, owner, "google")
    assert google[1][:4] == [
        hashlib.sha256(b"janedoe@googlemail.com").hexdigest(),
        "",
        hashlib.sha256(b"mary ann").hexdigest(),
        hashlib.sha256(b"o'neil-smith").hexdigest(),
    ]
    assert google[2][0] == hashlib.sha256(b"jane.doe+ads@example.com").hexdigest()
    meta = _export(client, shop, owner, "meta")
    assert meta[1][:4] == [
        _sha("jane.doe+ads@googlemail.com"),
        "",
        _sha("maryann"),
        _sha("oneilsmith"),
    ]


def test_googles_zip_is_the_postal_code_plain_and_five_digits_in_the_us(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(session, shop.store, email="a@example.com", postal_code="94105-1234")
    add_customer(
        session, shop.store, email="b@example.com", country_code="GB", postal_code="SW1A 1AA"
    )
    add_customer(session, shop.store, email="c@example.com", country_code="FR")
    add_customer(session, shop.store, email="d@example.com", country_code="DE", postal_code="=1+1")
    rows = _export(client, shop, owner, "google")
    assert rows[0] == ["Email", "Phone", "First Name", "Last Name", "Country", "Zip"]
    assert [(row[4], row[5]) for row in rows[1:]] == [
        ("US", "94105"),
        ("GB", "SW1A 1AA"),
        ("FR", ""),
        ("DE", ""),  # not a postal code: left out, never a formula in a spreadsheet
    ]


def test_the_person_export_shows_the_postal_code_and_erasure_takes_it(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(session, shop.store, email="ada@example.com", postal_code="94105")
    path = f"/merchant/api/profiles/{shop.profile.id}/customers"
    export = f"/merchant/api/profiles/{shop.profile.id}/audiences/all/export"

    found = client.get(f"{path}/export", params={"email": "ada@example.com"}, headers=owner).json()
    assert found["customers"][0]["customer"]["postalCode"] == "94105"

    erased = client.post(f"{path}/erase", json={"email": "ada@example.com"}, headers=owner)
    assert erased.json() == {"erased": 1}
    session.expire_all()
    assert session.scalars(select(Customer.postal_code)).all() == []
    session.rollback()  # SQLite's one connection goes back to the app
    rows = client.get(export, params={"format": "google"}, headers=owner).text.splitlines()
    assert rows == ["Email,Phone,First Name,Last Name,Country,Zip"]
