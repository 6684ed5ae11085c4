"""Endpoints 6–7 of SPEC.md (store profile and settings), access-token rules, legacy token."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.blackbox.box import Box, Connected, assert_problem
from tests.blackbox.conftest import Cast

FULL_PROFILE = {
    "storeName": "Harbour Bistro",
    "storeAddress": "12 Quay Street",
    "storeCountryCode": "US",
    "storeCity": "Portland",
    "storeState": "OR",
    "storePostalCode": "97201",
    "storePhoneNumber": "+15035550100",
    "storeCurrency": "USD",
}
REQUIRED = ("storeName", "storeAddress", "storeCountryCode")


@pytest.fixture(scope="module")
def conn(box: Box, cast: Cast) -> Connected:
    return box.connect_by_consent(cast.plain, cast.merchant)


@pytest.fixture(scope="module")
def paired(box: Box, cast: Cast) -> Connected:
    return box.connect_by_pairing(cast.plain2, cast.merchant)


def _put(box: Box, conn: Connected, body: Any) -> httpx.Response:
    return box.http.put("/v1/stores", json=body, headers=conn.auth)


def test_put_store_answers_the_store_object(box: Box, conn: Connected) -> None:
    r = _put(box, conn, FULL_PROFILE)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    store = r.json()["store"]
    assert store["id"] == conn.store_id
    assert store["name"] == "Harbour Bistro"
    assert store["phoneNumber"] == "+15035550100"
    assert store["address"] == {
        "addressLine": "12 Quay Street",
        "city": "Portland",
        "state": "OR",
        "country": "US",
        "postalCode": "97201",
    }
    assert store["currency"] == "USD"


def test_put_store_is_seen_by_the_merchant(box: Box, cast: Cast, conn: Connected) -> None:
    assert _put(box, conn, {**FULL_PROFILE, "storeName": "Renamed Bistro"}).status_code == 200
    view = box.store_view(cast.merchant, conn.store_id)
    assert view["name"] == "Renamed Bistro"
    assert view["address"] == "12 Quay Street"
    assert view["city"] == "Portland"
    assert view["countryCode"] == "US"
    assert view["currency"] == "USD"


def test_pairing_token_updates_its_store(box: Box, paired: Connected) -> None:
    r = _put(box, paired, FULL_PROFILE)
    assert r.status_code == 200, r.text
    assert r.json()["store"]["id"] == paired.store_id


def test_currency_defaults_to_the_store_configured_currency(box: Box, cast: Cast) -> None:
    profile = box.new_profile(cast.merchant)
    manual = box.new_manual_store(cast.merchant, profile["id"], country="DE", currency="EUR")
    conn = box.connect_by_consent(cast.plain, cast.merchant, store_id=manual["id"])
    body = {k: v for k, v in FULL_PROFILE.items() if k != "storeCurrency"}
    r = _put(box, conn, {**body, "storeCountryCode": "DE"})
    assert r.status_code == 200, r.text
    assert r.json()["store"]["currency"] == "EUR"


@pytest.mark.parametrize("missing", REQUIRED)
def test_put_store_without_a_required_field_answers_400(
    box: Box, conn: Connected, missing: str
) -> None:
    body = {k: v for k, v in FULL_PROFILE.items() if k != missing}
    problem = assert_problem(_put(box, conn, body), 400, "missing_field")
    assert missing in {e["field"] for e in problem["errors"]}


def test_put_store_lists_every_missing_field(box: Box, conn: Connected) -> None:
    problem = assert_problem(_put(box, conn, {}), 400, "missing_field")
    assert set(REQUIRED) <= {e["field"] for e in problem["errors"]}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("storeName", 12),
        ("storeName", ["x"]),
        ("storeAddress", {"line": "x"}),
        ("storeCountryCode", "Narnia"),
        ("storeCountryCode", 1),
        ("storeCurrency", "NOTACURRENCY"),
        ("storeCity", 5),
        ("storePhoneNumber", True),
    ],
)
def test_put_store_with_an_invalid_field_answers_400(
    box: Box, conn: Connected, field: str, value: Any
) -> None:
    problem = assert_problem(_put(box, conn, {**FULL_PROFILE, field: value}), 400)
    assert problem["code"] in ("invalid_field", "missing_field")
    assert field in {e["field"] for e in problem["errors"]}


@pytest.mark.parametrize("body", [[FULL_PROFILE], "store", 42, None])
def test_put_store_with_a_non_object_body_answers_400(box: Box, conn: Connected, body: Any) -> None:
    assert_problem(_put(box, conn, body), 400)


def test_refused_put_stores_nothing(box: Box, cast: Cast, conn: Connected) -> None:
    assert _put(box, conn, {**FULL_PROFILE, "storeName": "Kept Name"}).status_code == 200
    assert_problem(
        _put(box, conn, {**FULL_PROFILE, "storeName": "Lost", "storeCurrency": "X"}), 400
    )
    assert box.store_view(cast.merchant, conn.store_id)["name"] == "Kept Name"


def test_get_store_answers_green_invoices_flag(box: Box, cast: Cast, conn: Connected) -> None:
    r = box.http.get("/v1/stores", headers=conn.auth)
    assert r.status_code == 200
    assert r.json() == {"greenInvoices": False}
    box.set_green_invoices(cast.merchant, conn.store_id, True)
    assert box.http.get("/v1/stores", headers=conn.auth).json() == {"greenInvoices": True}
    box.set_green_invoices(cast.merchant, conn.store_id, False)
    assert box.http.get("/v1/stores", headers=conn.auth).json() == {"greenInvoices": False}


# access-token rules (Authentication, rule 2) ---------------------------------------


def _data_calls(box: Box, headers: dict[str, str], params: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    yield box.http.get("/v1/stores", headers=headers, params=params)
    yield box.http.put("/v1/stores", json=FULL_PROFILE, headers=headers, params=params)
    yield box.http.get("/v1/customers", headers=headers, params=params)
    yield box.http.post(
        "/v1/orders",
        json={
            "orderId": "o-1",
            "orderPrice": "100",
            "orderCurrency": "USD",
            "createdAt": "2024-01-01T10:00:00Z",
        },
        headers=headers,
        params=params,
    )
    yield box.http.get("/v1/orders", headers=headers, params={**(params or {}), "orderId": "o-1"})


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-real-token"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "not-a-real-token"},
        {"Authorization": "Bearer " + "x" * 5000},
    ],
)
def test_missing_or_invalid_access_token_answers_403_everywhere(
    box: Box, headers: dict[str, str]
) -> None:
    for response in _data_calls(box, headers):
        assert_problem(response, 403, "invalid_token", secrets=("not-a-real-token",))


def test_client_secret_is_not_an_access_token(box: Box, cast: Cast) -> None:
    headers = {"Authorization": f"Bearer {cast.plain.client_secret}"}
    for response in _data_calls(box, headers):
        assert_problem(response, 403, "invalid_token", secrets=(cast.plain.client_secret,))


def test_legacy_query_access_token_is_accepted_and_never_logged(box: Box, cast: Cast) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    params = {"access_token": conn.access_token}
    r = box.http.get("/v1/stores", params=params)
    assert r.status_code == 200 and r.json() == {"greenInvoices": False}
    put = box.http.put("/v1/stores", json=FULL_PROFILE, params=params)
    assert put.status_code == 200, put.text
    assert box.http.get("/v1/customers", params=params).status_code == 200
    order = {
        "orderId": "legacy-1",
        "orderPrice": "100",
        "orderCurrency": "USD",
        "createdAt": "2024-01-01T10:00:00Z",
    }
    assert box.http.post("/v1/orders", json=order, params=params).json() == {"statusCode": 200}
    wrong = box.http.get("/v1/stores", params={"access_token": "wrong-legacy-token"})
    assert_problem(wrong, 403, "invalid_token", secrets=("wrong-legacy-token",))
    logs = box.server.logs()
    assert "/v1/stores" in logs
    assert conn.access_token not in logs
    assert "wrong-legacy-token" not in logs


def test_bearer_header_wins_over_legacy_query(box: Box, conn: Connected) -> None:
    r = box.http.get("/v1/stores", headers=conn.auth, params={"access_token": "garbage"})
    assert r.status_code == 200
