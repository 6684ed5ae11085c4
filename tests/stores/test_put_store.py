"""PUT /v1/stores (SPEC.md endpoint 6): every field, every status."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.factories import create_connected_store

FULL_PROFILE = {
    "storeName": "Bistro Central",
    "storeAddress": "1 Main Street",
    "storeCity": "Springfield",
    "storeState": "IL",
    "storeCountryCode": "US",
    "storePostalCode": "62701",
    "storePhoneNumber": "+12175550100",
    "storeCurrency": "USD",
}
MINIMAL_PROFILE = {"storeName": "Bistro", "storeAddress": "2 Side St", "storeCountryCode": "US"}
REQUIRED_FIELDS = ["storeName", "storeAddress", "storeCountryCode"]
OPTIONAL_FIELDS = [
    "storeCity",
    "storeState",
    "storePostalCode",
    "storePhoneNumber",
    "storeCurrency",
]


def stored(session: Session, store_id: str) -> Store:
    session.expire_all()
    store = session.get(Store, store_id)
    assert store is not None
    return store


def assert_problem(response: Any, status: int, code: str, field: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["success"] is False
    if field is not None:
        assert field in [e["field"] for e in body["errors"]], body


def test_full_profile_answers_every_store_field(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    response = client.put("/v1/stores", json=FULL_PROFILE, headers=connected.auth)

    assert response.status_code == 200
    assert response.json() == {
        "store": {
            "id": connected.store.id,
            "name": "Bistro Central",
            "phoneNumber": "+12175550100",
            "address": {
                "addressLine": "1 Main Street",
                "city": "Springfield",
                "state": "IL",
                "country": "US",
                "postalCode": "62701",
            },
            "currency": "USD",
        }
    }


def test_profile_is_stored_on_the_tokens_store(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    client.put("/v1/stores", json=FULL_PROFILE | {"storeName": "Renamed"}, headers=connected.auth)

    store = stored(session, connected.store.id)
    assert (store.name, store.address, store.city, store.state) == (
        "Renamed",
        "1 Main Street",
        "Springfield",
        "IL",
    )
    assert (store.postal_code, store.phone_number, store.country_code, store.currency) == (
        "62701",
        "+12175550100",
        "US",
        "USD",
    )


def test_only_the_tokens_store_changes(client: TestClient, session: Session) -> None:
    first = create_connected_store(session)
    second = create_connected_store(session, email="other@example.com", pos_type="other-pos")

    client.put("/v1/stores", json=FULL_PROFILE | {"storeName": "Mine"}, headers=first.auth)

    assert stored(session, first.store.id).name == "Mine"
    assert stored(session, second.store.id).name == "Bistro Central"


def test_required_fields_alone_answer_200_with_empty_strings_for_unset_ones(
    client: TestClient, session: Session
) -> None:
    connected = create_connected_store(session)
    store = stored(session, connected.store.id)
    store.city = None
    session.commit()

    response = client.put("/v1/stores", json=MINIMAL_PROFILE, headers=connected.auth)

    assert response.status_code == 200
    body = response.json()["store"]
    assert body["phoneNumber"] == ""
    assert body["address"] == {
        "addressLine": "2 Side St",
        "city": "",
        "state": "",
        "country": "US",
        "postalCode": "",
    }


def test_absent_optional_fields_keep_their_stored_values(
    client: TestClient, session: Session
) -> None:
    connected = create_connected_store(session)
    client.put("/v1/stores", json=FULL_PROFILE, headers=connected.auth)

    response = client.put("/v1/stores", json=MINIMAL_PROFILE, headers=connected.auth)

    address = response.json()["store"]["address"]
    assert (address["city"], address["state"], address["postalCode"]) == (
        "Springfield",
        "IL",
        "62701",
    )
    assert response.json()["store"]["phoneNumber"] == "+12175550100"


def test_null_optional_fields_count_as_absent(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    client.put("/v1/stores", json=FULL_PROFILE, headers=connected.auth)

    nulls = dict.fromkeys(OPTIONAL_FIELDS)
    response = client.put("/v1/stores", json=MINIMAL_PROFILE | nulls, headers=connected.auth)

    assert response.status_code == 200
    assert response.json()["store"]["address"]["city"] == "Springfield"
    assert response.json()["store"]["currency"] == "USD"


def test_empty_optional_string_clears_the_field(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    client.put("/v1/stores", json=FULL_PROFILE, headers=connected.auth)

    response = client.put(
        "/v1/stores", json=MINIMAL_PROFILE | {"storeCity": ""}, headers=connected.auth
    )

    assert response.json()["store"]["address"]["city"] == ""


def test_values_are_trimmed(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    response = client.put(
        "/v1/stores",
        json={"storeName": "  Bistro  ", "storeAddress": " 1 Main ", "storeCountryCode": " us "},
        headers=connected.auth,
    )

    body = response.json()["store"]
    assert (body["name"], body["address"]["addressLine"], body["address"]["country"]) == (
        "Bistro",
        "1 Main",
        "US",
    )


def test_unicode_text_round_trips(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session, country_code="JP", currency="JPY")

    response = client.put(
        "/v1/stores",
        json={
            "storeName": "Café 東京 🍣",
            "storeAddress": "渋谷区 1-2-3",
            "storeCountryCode": "JP",
        },
        headers=connected.auth,
    )

    assert response.json()["store"]["name"] == "Café 東京 🍣"
    assert stored(session, connected.store.id).address == "渋谷区 1-2-3"


def test_unknown_fields_are_ignored(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    response = client.put(
        "/v1/stores", json=FULL_PROFILE | {"storeWebsite": "x", "id": "y"}, headers=connected.auth
    )

    assert response.status_code == 200
    assert response.json()["store"]["id"] == connected.store.id


# --- validation matrix -------------------------------------------------------------------


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_missing_required_field_answers_400_missing_field(
    client: TestClient, session: Session, field: str
) -> None:
    connected = create_connected_store(session)
    body = {k: v for k, v in FULL_PROFILE.items() if k != field}

    response = client.put("/v1/stores", json=body, headers=connected.auth)

    assert_problem(response, 400, "missing_field", field)
    assert response.json()["detail"] == f"{field} is required"
    assert response.json()["errors"] == [{"field": field, "message": "required"}]


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
@pytest.mark.parametrize("blank", ["", "   ", None])
def test_blank_or_null_required_field_answers_400_missing_field(
    client: TestClient, session: Session, field: str, blank: str | None
) -> None:
    connected = create_connected_store(session)

    response = client.put("/v1/stores", json=FULL_PROFILE | {field: blank}, headers=connected.auth)

    assert_problem(response, 400, "missing_field", field)


def test_every_missing_field_is_named(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    response = client.put("/v1/stores", json={}, headers=connected.auth)

    assert_problem(response, 400, "missing_field")
    assert [e["field"] for e in response.json()["errors"]] == REQUIRED_FIELDS


@pytest.mark.parametrize("field", REQUIRED_FIELDS + OPTIONAL_FIELDS)
@pytest.mark.parametrize("value", [42, 4.5, True, ["Bistro"], {"name": "Bistro"}, 10**40])
def test_non_string_field_answers_400_invalid_field(
    client: TestClient, session: Session, field: str, value: object
) -> None:
    connected = create_connected_store(session)

    response = client.put("/v1/stores", json=FULL_PROFILE | {field: value}, headers=connected.auth)

    assert_problem(response, 400, "invalid_field", field)


@pytest.mark.parametrize("country", ["XX", "USA", "U", "EU", "UN", "ZZ", "001", "12", "ü", "U S"])
def test_unknown_country_answers_400(client: TestClient, session: Session, country: str) -> None:
    connected = create_connected_store(session)

    response = client.put(
        "/v1/stores", json=FULL_PROFILE | {"storeCountryCode": country}, headers=connected.auth
    )

    assert_problem(response, 400, "invalid_field", "storeCountryCode")


@pytest.mark.parametrize("currency", ["EURO", "XYZ", "US", "123", "€", "usd1"])
def test_unknown_currency_answers_400(client: TestClient, session: Session, currency: str) -> None:
    connected = create_connected_store(session)

    response = client.put(
        "/v1/stores", json=FULL_PROFILE | {"storeCurrency": currency}, headers=connected.auth
    )

    assert_problem(response, 400, "invalid_field", "storeCurrency")


def test_lower_case_country_and_currency_are_accepted_and_upper_cased(
    client: TestClient, session: Session
) -> None:
    connected = create_connected_store(session)

    response = client.put(
        "/v1/stores",
        json=MINIMAL_PROFILE | {"storeCountryCode": "de", "storeCurrency": "eur"},
        headers=connected.auth,
    )

    assert response.status_code == 200
    assert response.json()["store"]["address"]["country"] == "DE"
    assert response.json()["store"]["currency"] == "EUR"
    assert stored(session, connected.store.id).country_code == "DE"


@pytest.mark.parametrize("country", ["JP", "DE", "GB", "kw"])
def test_absent_currency_keeps_the_configured_currency_when_the_country_changes(
    client: TestClient, session: Session, country: str
) -> None:
    connected = create_connected_store(session, country_code="US", currency="USD")

    response = client.put(
        "/v1/stores", json=MINIMAL_PROFILE | {"storeCountryCode": country}, headers=connected.auth
    )

    assert response.status_code == 200
    assert response.json()["store"]["address"]["country"] == country.upper()
    assert response.json()["store"]["currency"] == "USD"
    assert stored(session, connected.store.id).currency == "USD"


def test_absent_currency_keeps_the_stores_configured_currency_in_the_same_country(
    client: TestClient, session: Session
) -> None:
    # A US store the merchant set up to bill in CAD keeps CAD.
    connected = create_connected_store(session, country_code="US", currency="CAD")

    response = client.put("/v1/stores", json=MINIMAL_PROFILE, headers=connected.auth)

    assert response.json()["store"]["currency"] == "CAD"


def test_given_currency_wins_over_the_countrys(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    response = client.put(
        "/v1/stores",
        json=MINIMAL_PROFILE | {"storeCountryCode": "JP", "storeCurrency": "USD"},
        headers=connected.auth,
    )

    assert response.json()["store"]["currency"] == "USD"


@pytest.mark.parametrize(
    ("field", "limit"),
    [("storeName", 300), ("storeAddress", 500), ("storeCity", 200), ("storePostalCode", 50)],
)
def test_over_long_text_answers_400(
    client: TestClient, session: Session, field: str, limit: int
) -> None:
    connected = create_connected_store(session)

    too_long = client.put(
        "/v1/stores", json=FULL_PROFILE | {field: "x" * (limit + 1)}, headers=connected.auth
    )
    at_limit = client.put(
        "/v1/stores", json=FULL_PROFILE | {field: "x" * limit}, headers=connected.auth
    )

    assert_problem(too_long, 400, "invalid_field", field)
    assert at_limit.status_code == 200


@pytest.mark.parametrize("raw", ['"Bis\\u0000tro"', '"Bis\\ud800tro"', '"a\\u001bb"'])
def test_unstorable_text_answers_400(client: TestClient, session: Session, raw: str) -> None:
    connected = create_connected_store(session)
    body = '{"storeName": RAW, "storeAddress": "1 Main", "storeCountryCode": "US"}'
    body = body.replace("RAW", raw)

    response = client.put(
        "/v1/stores",
        content=body.encode(),
        headers=connected.auth | {"Content-Type": "application/json"},
    )

    assert_problem(response, 400, "invalid_field", "storeName")


@pytest.mark.parametrize("body", [b"[]", b'"text"', b"42", b"null", b"{bad json", b"", b"[{}]"])
def test_body_that_is_not_an_object_answers_400(
    client: TestClient, session: Session, body: bytes
) -> None:
    connected = create_connected_store(session)

    response = client.put(
        "/v1/stores", content=body, headers=connected.auth | {"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["code"] in ("missing_field", "invalid_field")


def test_refused_profile_changes_nothing(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    client.put(
        "/v1/stores",
        json=FULL_PROFILE | {"storeName": "Changed", "storeCurrency": "NOPE"},
        headers=connected.auth,
    )

    assert stored(session, connected.store.id).name == "Bistro Central"
