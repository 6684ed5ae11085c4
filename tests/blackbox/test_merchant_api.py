"""The merchant JSON API of CONTRACT.md §4: sessions, shapes, 401/404/204, isolation."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.blackbox.box import PASSWORD, Box, Connected, Merchant, assert_problem, unique
from tests.blackbox.conftest import Cast

STORE_FIELDS = {
    "id",
    "name",
    "address",
    "city",
    "countryCode",
    "currency",
    "posType",
    "greenInvoices",
    "manual",
}


@pytest.fixture(scope="module")
def mine(box: Box, cast: Cast) -> Connected:
    """A store of `cast.merchant` connected to a partner (so it has a connection)."""
    return box.connect_by_consent(cast.plain, cast.merchant)


# sessions ----------------------------------------------------------------------------


def test_sign_in_answers_session_token_and_expiry(box: Box, cast: Cast) -> None:
    r = box.http.post(
        "/merchant/api/sessions", json={"email": cast.merchant.email, "password": PASSWORD}
    )
    assert r.status_code == 200
    body = r.json()
    assert set(body) >= {"sessionToken", "expiresAt"}
    assert isinstance(body["sessionToken"], str) and body["sessionToken"]
    expires = datetime.fromisoformat(body["expiresAt"].replace("Z", "+00:00"))
    assert expires > datetime.now(UTC)
    profiles = box.http.get(
        "/merchant/api/profiles", headers={"Authorization": f"Bearer {body['sessionToken']}"}
    )
    assert profiles.status_code == 200


def test_wrong_password_and_unknown_email_answer_the_same_401(box: Box, cast: Cast) -> None:
    wrong = box.http.post(
        "/merchant/api/sessions",
        json={"email": cast.other.email, "password": "not the password"},
    )
    unknown = box.http.post(
        "/merchant/api/sessions",
        json={"email": f"{unique('ghost')}@example.com", "password": PASSWORD},
    )
    a = assert_problem(wrong, 401, secrets=("not the password",))
    b = assert_problem(unknown, 401, secrets=(PASSWORD,))
    assert a == b


@pytest.mark.parametrize(
    "body", [{}, {"email": "a@example.com"}, {"password": "x"}, {"email": 1, "password": 2}, []]
)
def test_sign_in_with_malformed_body_answers_400(box: Box, body: Any) -> None:
    assert_problem(box.http.post("/merchant/api/sessions", json=body), 400)


ROUTES = [
    ("GET", "/merchant/api/profiles", None),
    ("POST", "/merchant/api/profiles", {"name": "x"}),
    (
        "POST",
        "/merchant/api/profiles/{profile}/stores",
        {"name": "x", "address": "y", "countryCode": "US"},
    ),
    ("PATCH", "/merchant/api/stores/{store}", {"greenInvoices": True}),
    ("POST", "/merchant/api/stores/{store}/pairing-codes", {"posType": "{pos}"}),
    ("GET", "/merchant/api/stores/{store}/connections", None),
    ("DELETE", "/merchant/api/connections/{connection}", None),
    ("GET", "/merchant/api/stores/{store}/orders", None),
    ("GET", "/merchant/api/profiles/{profile}/customers", None),
    ("GET", "/merchant/api/consents/{token}?client_id={client}", None),
    ("POST", "/merchant/api/consents/{token}/approve", {"clientId": "{client}"}),
    ("POST", "/merchant/api/consents/{token}/decline", {"clientId": "{client}"}),
]


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


@pytest.fixture(scope="module")
def values(box: Box, cast: Cast, mine: Connected) -> dict[str, str]:
    (connection,) = box.connections(cast.merchant, mine.store_id)
    return {
        "profile": mine.profile_id,
        "store": mine.store_id,
        "connection": connection["id"],
        "pos": cast.plain.pos_type,
        "client": cast.plain.client_id,
        "token": box.integration_token(cast.plain),
    }


def _call(
    box: Box, route: tuple[str, str, Any], values: dict[str, str], headers: dict[str, str]
) -> httpx.Response:
    method, path, body = route
    payload = None
    if body is not None:
        payload = {k: _fill(v, values) if isinstance(v, str) else v for k, v in body.items()}
    return box.http.request(method, _fill(path, values), json=payload, headers=headers)


@pytest.mark.parametrize("route", ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-session"}, {"Authorization": "Basic eDp5"}],
    ids=["none", "unknown", "basic"],
)
def test_every_route_needs_a_session(
    box: Box, values: dict[str, str], route: tuple[str, str, Any], headers: dict[str, str]
) -> None:
    assert_problem(_call(box, route, values, headers), 401)


@pytest.mark.parametrize("route", ROUTES[2:9], ids=[f"{m} {p}" for m, p, _ in ROUTES[2:9]])
def test_another_merchants_resources_answer_404(
    box: Box, cast: Cast, values: dict[str, str], route: tuple[str, str, Any]
) -> None:
    assert_problem(_call(box, route, values, cast.other.auth), 404)


@pytest.mark.parametrize("route", ROUTES[2:9], ids=[f"{m} {p}" for m, p, _ in ROUTES[2:9]])
def test_unknown_ids_answer_404(
    box: Box, cast: Cast, values: dict[str, str], route: tuple[str, str, Any]
) -> None:
    unknown = {**values, "profile": "nope", "store": "nope", "connection": "nope"}
    assert_problem(_call(box, route, unknown, cast.merchant.auth), 404)


def test_foreign_resources_are_left_untouched(
    box: Box, cast: Cast, mine: Connected, values: dict[str, str]
) -> None:
    for route in ROUTES[2:9]:
        _call(box, route, values, cast.other.auth)
    assert box.http.get("/v1/stores", headers=mine.auth).json() == {"greenInvoices": False}
    (connection,) = box.connections(cast.merchant, mine.store_id)
    assert connection["revokedAt"] is None
    assert box.profile_stores(cast.merchant, mine.profile_id) == [
        box.store_view(cast.merchant, mine.store_id)
    ]
    assert mine.profile_id not in {
        p["id"]
        for p in box.http.get("/merchant/api/profiles", headers=cast.other.auth).json()["profiles"]
    }


# profiles and stores -------------------------------------------------------------------


def test_profile_creation_and_listing_shapes(box: Box, cast: Cast) -> None:
    name = unique("Bistro Group")
    r = box.http.post("/merchant/api/profiles", json={"name": name}, headers=cast.merchant.auth)
    assert r.status_code == 200
    profile = r.json()["profile"]
    assert set(profile) == {"id", "name", "stores"}
    assert (profile["name"], profile["stores"]) == (name, [])
    listed = box.http.get("/merchant/api/profiles", headers=cast.merchant.auth).json()
    assert list(listed) == ["profiles"]
    found = [p for p in listed["profiles"] if p["id"] == profile["id"]]
    assert found == [profile]


def test_manual_store_shape(box: Box, cast: Cast) -> None:
    profile = box.new_profile(cast.merchant)
    store = box.new_manual_store(cast.merchant, profile["id"], country="FR", currency="EUR")
    assert set(store) == STORE_FIELDS
    assert store["address"] == "1 Main Street"
    assert (store["countryCode"], store["currency"]) == ("FR", "EUR")
    assert store["manual"] is True
    assert store["greenInvoices"] is False
    assert store["posType"] is None
    assert box.profile_stores(cast.merchant, profile["id"]) == [store]


def test_connected_store_from_profile_is_not_manual(box: Box, mine: Connected, cast: Cast) -> None:
    store = box.store_view(cast.merchant, mine.store_id)
    assert set(store) == STORE_FIELDS
    assert store["manual"] is False
    assert store["posType"] == cast.plain.pos_type


def test_patch_store_sets_green_invoices(box: Box, cast: Cast) -> None:
    profile = box.new_profile(cast.merchant)
    store = box.new_manual_store(cast.merchant, profile["id"])
    patched = box.set_green_invoices(cast.merchant, store["id"], True)
    assert set(patched) == STORE_FIELDS
    assert patched["greenInvoices"] is True
    assert box.store_view(cast.merchant, store["id"])["greenInvoices"] is True


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/merchant/api/profiles", {}),
        ("/merchant/api/profiles", {"name": 5}),
        ("/merchant/api/profiles", {"name": ""}),
        ("/merchant/api/profiles/{profile}/stores", {"name": "x", "address": "y"}),
        (
            "/merchant/api/profiles/{profile}/stores",
            {"name": "x", "address": "y", "countryCode": "Atlantis"},
        ),
        (
            "/merchant/api/profiles/{profile}/stores",
            {"name": "x", "address": "y", "countryCode": "US", "currency": "NOPE"},
        ),
    ],
)
def test_invalid_merchant_bodies_answer_400_with_errors(
    box: Box, cast: Cast, mine: Connected, path: str, body: dict[str, Any]
) -> None:
    r = box.http.post(
        path.replace("{profile}", mine.profile_id), json=body, headers=cast.merchant.auth
    )
    problem = assert_problem(r, 400)
    assert problem.get("errors"), problem


@pytest.mark.parametrize("body", [{}, {"greenInvoices": "yes"}, {"greenInvoices": None}])
def test_patch_store_with_invalid_body_answers_400(
    box: Box, cast: Cast, mine: Connected, body: dict[str, Any]
) -> None:
    r = box.http.patch(
        f"/merchant/api/stores/{mine.store_id}", json=body, headers=cast.merchant.auth
    )
    assert_problem(r, 400)


# connections ----------------------------------------------------------------------------


def test_delete_connection_answers_204_and_stops_its_tokens(box: Box, cast: Cast) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    (connection,) = box.connections(cast.merchant, conn.store_id)
    assert set(connection) >= {"id", "posType", "method", "createdAt", "revokedAt"}
    r = box.http.delete(f"/merchant/api/connections/{connection['id']}", headers=cast.merchant.auth)
    assert r.status_code == 204
    assert_problem(box.http.get("/v1/stores", headers=conn.auth), 403, "invalid_token")


def test_connections_of_a_store_without_any_is_empty(box: Box, cast: Cast) -> None:
    profile = box.new_profile(cast.merchant)
    store = box.new_manual_store(cast.merchant, profile["id"])
    assert box.connections(cast.merchant, store["id"]) == []


def test_consent_view_of_unknown_token_answers_404(box: Box, cast: Cast) -> None:
    r = box.http.get(
        f"/merchant/api/consents/{unique('nope')}",
        params={"client_id": cast.plain.client_id},
        headers=cast.merchant.auth,
    )
    assert_problem(r, 404)


def test_session_of_one_merchant_is_not_another(box: Box, cast: Cast) -> None:
    merchant: Merchant = cast.other
    mine_ids = {
        p["id"]
        for p in box.http.get("/merchant/api/profiles", headers=cast.merchant.auth).json()[
            "profiles"
        ]
    }
    theirs = {
        p["id"]
        for p in box.http.get("/merchant/api/profiles", headers=merchant.auth).json()["profiles"]
    }
    assert not mine_ids & theirs
