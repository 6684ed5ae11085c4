"""Endpoints 1–4 of SPEC.md (consent-screen flow) and the consent side of CONTRACT.md §4."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from tests.blackbox.box import Box, Connected, Merchant, Partner, assert_problem, unique
from tests.blackbox.conftest import Cast


@dataclass
class World:
    partner: Partner
    ereceipt_partner: Partner
    merchant: Merchant
    other_merchant: Merchant


@pytest.fixture(scope="module")
def world(cast: Cast) -> World:
    return World(cast.plain, cast.ereceipt, cast.merchant, cast.other)


def _status(box: Box, partner: Partner, token: str) -> str:
    r = box.http.get("/v1/auth/integration", params={**partner.creds, "integration_token": token})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"status", "success"}
    assert body["success"] is True
    return str(body["status"])


def _exchange(box: Box, partner: Partner, token: str):  # type: ignore[no-untyped-def]
    return box.http.get(
        "/v1/auth/integration/token", params={**partner.creds, "integration_token": token}
    )


def _parse(ts: str) -> datetime:
    parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None, f"{ts} carries no offset"
    return parsed


# 1. POST /v1/auth/integration ------------------------------------------------------


def test_create_answers_integration_token_and_success(box: Box, world: World) -> None:
    r = box.http.post("/v1/auth/integration", params=world.partner.creds)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"integrationToken", "success"}
    assert isinstance(body["integrationToken"], str) and body["integrationToken"]
    assert body["success"] is True
    assert _status(box, world.partner, body["integrationToken"]) == "pending"


def test_each_created_token_is_distinct(box: Box, world: World) -> None:
    assert box.integration_token(world.partner) != box.integration_token(world.partner)


@pytest.mark.parametrize("missing", ["client_id", "client_secret"])
def test_create_without_a_parameter_answers_400(box: Box, world: World, missing: str) -> None:
    params = dict(world.partner.creds)
    del params[missing]
    r = box.http.post("/v1/auth/integration", params=params)
    body = assert_problem(r, 400, secrets=(world.partner.client_secret,))
    assert any(e["field"] == missing for e in body.get("errors", [])), body


def test_create_with_no_parameters_answers_400(box: Box) -> None:
    assert_problem(box.http.post("/v1/auth/integration"), 400)


def test_wrong_client_id_and_wrong_secret_answer_the_same_403(box: Box, world: World) -> None:
    wrong_secret = "wrong-secret-" + unique("s")
    by_secret = box.http.post(
        "/v1/auth/integration",
        params={"client_id": world.partner.client_id, "client_secret": wrong_secret},
    )
    by_id = box.http.post(
        "/v1/auth/integration",
        params={"client_id": unique("nobody"), "client_secret": world.partner.client_secret},
    )
    secrets = (wrong_secret, world.partner.client_secret)
    a = assert_problem(by_secret, 403, "invalid_credentials", secrets=secrets)
    b = assert_problem(by_id, 403, "invalid_credentials", secrets=secrets)
    assert a == b


def test_secret_of_another_partner_answers_403(box: Box, world: World) -> None:
    params = {
        "client_id": world.partner.client_id,
        "client_secret": world.ereceipt_partner.client_secret,
    }
    r = box.http.post("/v1/auth/integration", params=params)
    assert_problem(r, 403, "invalid_credentials", secrets=(params["client_secret"],))


# 2. GET /v1/auth/integration ------------------------------------------------------


def test_status_of_unknown_token_answers_404(box: Box, world: World) -> None:
    token = "unknown-" + unique("it")
    r = box.http.get(
        "/v1/auth/integration", params={**world.partner.creds, "integration_token": token}
    )
    assert_problem(
        r, 404, "unknown_integration_token", secrets=(token, world.partner.client_secret)
    )


def test_status_with_wrong_credentials_answers_403(box: Box, world: World) -> None:
    token = box.integration_token(world.partner)
    r = box.http.get(
        "/v1/auth/integration",
        params={
            "client_id": world.partner.client_id,
            "client_secret": "nope",
            "integration_token": token,
        },
    )
    assert_problem(r, 403, "invalid_credentials", secrets=(token,))


@pytest.mark.parametrize("missing", ["client_id", "client_secret", "integration_token"])
def test_status_without_a_parameter_answers_400(box: Box, world: World, missing: str) -> None:
    token = box.integration_token(world.partner)
    params = {**world.partner.creds, "integration_token": token}
    del params[missing]
    r = box.http.get("/v1/auth/integration", params=params)
    assert_problem(r, 400, secrets=(token, world.partner.client_secret))


def test_declined_token_reads_cancelled_and_cannot_be_exchanged(box: Box, world: World) -> None:
    token = box.integration_token(world.partner)
    r = box.http.post(
        f"/merchant/api/consents/{token}/decline",
        json={"clientId": world.partner.client_id},
        headers=world.merchant.auth,
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "cancelled"}
    assert _status(box, world.partner, token) == "cancelled"
    assert_problem(_exchange(box, world.partner, token), 400, "not_finished", secrets=(token,))
    profile = box.new_profile(world.merchant)
    late = box.approve(world.merchant, world.partner, token, profile_id=profile["id"])
    assert_problem(late, 410, "integration_token_gone", secrets=(token,))


# 3. GET /v1/auth/integration/token ---------------------------------------------------


def test_pending_token_exchange_answers_400_not_finished(box: Box, world: World) -> None:
    token = box.integration_token(world.partner)
    r = _exchange(box, world.partner, token)
    assert_problem(r, 400, "not_finished", secrets=(token, world.partner.client_secret))
    assert _status(box, world.partner, token) == "pending"


def test_approved_token_exchanges_once_then_410(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    token = box.integration_token(world.partner)
    approved = box.approve(world.merchant, world.partner, token, profile_id=profile["id"])
    assert approved.status_code == 200, approved.text
    assert approved.json()["status"] == "finished"
    assert isinstance(approved.json()["storeId"], str)
    assert _status(box, world.partner, token) == "finished"

    first = _exchange(box, world.partner, token)
    assert first.status_code == 200, first.text
    body = first.json()
    assert set(body) == {"accessToken", "refreshToken", "expiration", "success", "ereceipt"}
    assert isinstance(body["accessToken"], str) and body["accessToken"]
    assert isinstance(body["refreshToken"], str) and body["refreshToken"]
    assert body["accessToken"] != body["refreshToken"]
    assert body["success"] is True
    assert body["ereceipt"] is False
    expiration = _parse(body["expiration"])
    one_year = datetime.now(UTC) + timedelta(days=365)
    assert abs((expiration - one_year).total_seconds()) < 3600

    second = _exchange(box, world.partner, token)
    assert_problem(
        second,
        410,
        "already_exchanged",
        secrets=(token, body["accessToken"], body["refreshToken"]),
    )
    assert _status(box, world.partner, token) == "finished"
    assert box.http.get("/v1/stores", headers={"Authorization": f"Bearer {body['accessToken']}"})


def test_exchange_of_unknown_token_answers_404(box: Box, world: World) -> None:
    r = _exchange(box, world.partner, "unknown-" + unique("it"))
    assert_problem(r, 404, "unknown_integration_token")


def test_refused_exchange_does_not_consume_the_token(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    token = box.integration_token(world.partner)
    assert box.approve(world.merchant, world.partner, token, profile_id=profile["id"])
    refused = box.http.get(
        "/v1/auth/integration/token",
        params={
            "client_id": world.partner.client_id,
            "client_secret": "wrong",
            "integration_token": token,
        },
    )
    assert_problem(refused, 403, "invalid_credentials", secrets=(token,))
    assert _exchange(box, world.partner, token).status_code == 200


@pytest.mark.parametrize("missing", ["client_id", "client_secret", "integration_token"])
def test_exchange_without_a_parameter_answers_400(box: Box, world: World, missing: str) -> None:
    params = {**world.partner.creds, "integration_token": "x"}
    del params[missing]
    assert_problem(box.http.get("/v1/auth/integration/token", params=params), 400)


def test_token_of_another_partner_is_not_exchanged(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    token = box.integration_token(world.partner)
    assert box.approve(world.merchant, world.partner, token, profile_id=profile["id"])
    r = _exchange(box, world.ereceipt_partner, token)
    assert r.status_code in (400, 403, 404), r.text
    assert_problem(r, r.status_code, secrets=(token,))
    assert _exchange(box, world.partner, token).status_code == 200


def test_ereceipt_is_true_for_ereceipt_partner_when_merchant_opts_in(
    box: Box, world: World
) -> None:
    conn = box.connect_by_consent(world.ereceipt_partner, world.merchant, green=True)
    assert conn.exchange["ereceipt"] is True
    r = box.http.get("/v1/stores", headers=conn.auth)
    assert r.status_code == 200 and r.json() == {"greenInvoices": True}


def test_ereceipt_is_false_when_merchant_declines_receipts(box: Box, world: World) -> None:
    conn = box.connect_by_consent(world.ereceipt_partner, world.merchant, green=False)
    assert conn.exchange["ereceipt"] is False
    assert box.http.get("/v1/stores", headers=conn.auth).json() == {"greenInvoices": False}


def test_green_invoices_ignored_for_partner_without_ereceipt(box: Box, world: World) -> None:
    conn = box.connect_by_consent(world.partner, world.merchant, green=True)
    assert conn.exchange["ereceipt"] is False
    assert box.http.get("/v1/stores", headers=conn.auth).json() == {"greenInvoices": False}
    assert box.store_view(world.merchant, conn.store_id)["greenInvoices"] is False


def test_approval_with_profile_creates_a_new_store_under_it(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    conn = box.connect_by_consent(world.partner, world.merchant, profile_id=profile["id"])
    store = box.store_view(world.merchant, conn.store_id)
    assert box.profile_of(world.merchant, conn.store_id) == profile["id"]
    assert store["posType"] == world.partner.pos_type


def test_approval_with_manual_store_connects_that_store(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    manual = box.new_manual_store(world.merchant, profile["id"])
    conn = box.connect_by_consent(world.partner, world.merchant, store_id=manual["id"])
    assert conn.store_id == manual["id"]
    assert box.store_view(world.merchant, manual["id"])["posType"] == world.partner.pos_type
    stores = box.profile_stores(world.merchant, profile["id"])
    assert [s["id"] for s in stores] == [manual["id"]]


def test_approving_a_finished_token_again_answers_410(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    token = box.integration_token(world.partner)
    assert box.approve(world.merchant, world.partner, token, profile_id=profile["id"])
    again = box.approve(world.merchant, world.partner, token, profile_id=profile["id"])
    assert_problem(again, 410, "integration_token_gone", secrets=(token,))


def test_merchant_cannot_approve_into_another_merchants_profile(box: Box, world: World) -> None:
    foreign = box.new_profile(world.other_merchant)
    token = box.integration_token(world.partner)
    r = box.approve(world.merchant, world.partner, token, profile_id=foreign["id"])
    assert_problem(r, 404, secrets=(token,))
    assert _status(box, world.partner, token) == "pending"


def test_merchant_cannot_approve_into_another_merchants_store(box: Box, world: World) -> None:
    foreign_profile = box.new_profile(world.other_merchant)
    foreign = box.new_manual_store(world.other_merchant, foreign_profile["id"])
    token = box.integration_token(world.partner)
    r = box.approve(world.merchant, world.partner, token, store_id=foreign["id"])
    assert_problem(r, 404, secrets=(token,))
    assert _status(box, world.partner, token) == "pending"


def test_consent_view_names_partner_status_and_own_profiles(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    token = box.integration_token(world.ereceipt_partner)
    r = box.http.get(
        f"/merchant/api/consents/{token}",
        params={"client_id": world.ereceipt_partner.client_id},
        headers=world.merchant.auth,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["partner"] == {
        "name": world.ereceipt_partner.name,
        "posType": world.ereceipt_partner.pos_type,
        "ereceiptOffered": True,
    }
    assert body["status"] == "pending"
    assert profile["id"] in {p["id"] for p in body["profiles"]}
    plain_token = box.integration_token(world.partner)
    plain = box.http.get(
        f"/merchant/api/consents/{plain_token}",
        params={"client_id": world.partner.client_id},
        headers=world.merchant.auth,
    )
    assert plain.json()["partner"]["ereceiptOffered"] is False
    for p in body["profiles"]:
        assert {"id", "name", "stores"} <= set(p)


def test_consent_screen_page_loads_for_a_valid_link(box: Box, world: World) -> None:
    token = box.integration_token(world.partner)
    r = box.http.get(
        "/connect/", params={"client_id": world.partner.client_id, "integration_token": token}
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")


# 4. POST /v1/auth/token ------------------------------------------------------------


def _refresh(box: Box, partner: Partner, code: str, grant_type: str | None = "refresh_token"):  # type: ignore[no-untyped-def]
    params = {**partner.creds, "code": code}
    if grant_type is not None:
        params["grant_type"] = grant_type
    return box.http.post("/v1/auth/token", params=params)


@pytest.fixture(scope="module")
def connected(box: Box, world: World) -> Connected:
    return box.connect_by_consent(world.partner, world.merchant)


def test_refresh_answers_a_new_working_access_token(
    box: Box, world: World, connected: Connected
) -> None:
    assert connected.refresh_token
    r = _refresh(box, world.partner, connected.refresh_token)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"accessToken", "expiration", "success"}
    assert body["success"] is True
    assert isinstance(body["accessToken"], str) and body["accessToken"]
    assert body["accessToken"] != connected.access_token
    one_year = datetime.now(UTC) + timedelta(days=365)
    assert abs((_parse(body["expiration"]) - one_year).total_seconds()) < 3600
    stores = box.http.get("/v1/stores", headers={"Authorization": f"Bearer {body['accessToken']}"})
    assert stores.status_code == 200


def test_refresh_token_can_be_used_again(box: Box, world: World, connected: Connected) -> None:
    assert connected.refresh_token
    assert _refresh(box, world.partner, connected.refresh_token).status_code == 200
    assert _refresh(box, world.partner, connected.refresh_token).status_code == 200


@pytest.mark.parametrize("grant_type", [None, "", "authorization_code", "REFRESH_TOKEN"])
def test_refresh_with_wrong_or_absent_grant_type_answers_400(
    box: Box, world: World, connected: Connected, grant_type: str | None
) -> None:
    assert connected.refresh_token
    r = _refresh(box, world.partner, connected.refresh_token, grant_type)
    assert_problem(r, 400, secrets=(connected.refresh_token, world.partner.client_secret))


def test_refresh_with_unknown_refresh_token_answers_403(box: Box, world: World) -> None:
    code = "unknown-" + unique("rt")
    assert_problem(_refresh(box, world.partner, code), 403, secrets=(code,))


def test_refresh_with_wrong_credentials_answers_403(
    box: Box, world: World, connected: Connected
) -> None:
    assert connected.refresh_token
    r = box.http.post(
        "/v1/auth/token",
        params={
            "client_id": world.partner.client_id,
            "client_secret": "wrong",
            "code": connected.refresh_token,
            "grant_type": "refresh_token",
        },
    )
    assert_problem(r, 403, "invalid_credentials", secrets=(connected.refresh_token,))


def test_refresh_token_of_another_partner_answers_403(
    box: Box, world: World, connected: Connected
) -> None:
    assert connected.refresh_token
    r = _refresh(box, world.ereceipt_partner, connected.refresh_token)
    assert_problem(r, 403, secrets=(connected.refresh_token,))


@pytest.mark.parametrize("missing", ["client_id", "client_secret", "code"])
def test_refresh_without_a_parameter_answers_400(
    box: Box, world: World, connected: Connected, missing: str
) -> None:
    assert connected.refresh_token
    params = {**world.partner.creds, "code": connected.refresh_token, "grant_type": "refresh_token"}
    del params[missing]
    r = box.http.post("/v1/auth/token", params=params)
    assert_problem(r, 400, secrets=(connected.refresh_token, world.partner.client_secret))


def test_access_token_is_not_a_refresh_token(box: Box, world: World, connected: Connected) -> None:
    assert_problem(_refresh(box, world.partner, connected.access_token), 403)


def test_refresh_token_is_not_an_access_token(box: Box, connected: Connected) -> None:
    r = box.http.get("/v1/stores", headers={"Authorization": f"Bearer {connected.refresh_token}"})
    assert_problem(r, 403, "invalid_token", secrets=(str(connected.refresh_token),))


# revocation and reconnection ---------------------------------------------------------


def test_revoked_connection_stops_access_and_refresh_tokens(box: Box, world: World) -> None:
    conn = box.connect_by_consent(world.partner, world.merchant)
    assert conn.refresh_token
    refreshed = _refresh(box, world.partner, conn.refresh_token).json()["accessToken"]
    (live,) = box.connections(world.merchant, conn.store_id)
    assert live["method"] == "consent" and live["revokedAt"] is None
    assert live["posType"] == world.partner.pos_type

    r = box.http.delete(f"/merchant/api/connections/{live['id']}", headers=world.merchant.auth)
    assert r.status_code == 204
    assert r.content == b""

    for token in (conn.access_token, refreshed):
        got = box.http.get("/v1/stores", headers={"Authorization": f"Bearer {token}"})
        assert_problem(got, 403, "invalid_token", secrets=(token,))
    assert_problem(_refresh(box, world.partner, conn.refresh_token), 403)
    (revoked,) = box.connections(world.merchant, conn.store_id)
    assert revoked["revokedAt"] is not None
    _parse(revoked["revokedAt"])


def test_new_consent_for_same_store_revokes_the_older_connection(box: Box, world: World) -> None:
    profile = box.new_profile(world.merchant)
    store = box.new_manual_store(world.merchant, profile["id"])
    first = box.connect_by_consent(world.partner, world.merchant, store_id=store["id"])
    second = box.connect_by_consent(world.partner, world.merchant, store_id=store["id"])
    assert second.store_id == first.store_id == store["id"]

    assert_problem(box.http.get("/v1/stores", headers=first.auth), 403, "invalid_token")
    assert first.refresh_token
    assert_problem(_refresh(box, world.partner, first.refresh_token), 403)
    assert box.http.get("/v1/stores", headers=second.auth).status_code == 200
    connections = box.connections(world.merchant, store["id"])
    assert len(connections) == 2
    assert sorted(c["revokedAt"] is None for c in connections) == [False, True]
    for c in connections:
        assert {"id", "posType", "method", "createdAt", "revokedAt"} <= set(c)
        assert c["method"] == "consent"
        _parse(c["createdAt"])


def test_connecting_another_partner_keeps_the_first_and_moves_pos_type(
    box: Box, world: World
) -> None:
    profile = box.new_profile(world.merchant)
    store = box.new_manual_store(world.merchant, profile["id"])
    first = box.connect_by_consent(world.partner, world.merchant, store_id=store["id"])
    second = box.connect_by_consent(world.ereceipt_partner, world.merchant, store_id=store["id"])
    assert box.http.get("/v1/stores", headers=first.auth).status_code == 200
    assert box.http.get("/v1/stores", headers=second.auth).status_code == 200
    view = box.store_view(world.merchant, store["id"])
    assert view["posType"] == world.ereceipt_partner.pos_type


def test_logs_hold_no_secret_or_token(box: Box, world: World, connected: Connected) -> None:
    logs = box.server.logs()
    for secret in (
        world.partner.client_secret,
        world.ereceipt_partner.client_secret,
        connected.access_token,
        connected.refresh_token,
    ):
        assert secret and secret not in logs


@pytest.mark.parametrize("target", [{}, {"profileId": None}, {"profileId": 5}, {"storeId": ["x"]}])
def test_approval_without_a_valid_target_answers_400(
    box: Box, world: World, target: dict[str, object]
) -> None:
    token = box.integration_token(world.partner)
    r = box.http.post(
        f"/merchant/api/consents/{token}/approve",
        json={"clientId": world.partner.client_id, **target},
        headers=world.merchant.auth,
    )
    assert_problem(r, 400, secrets=(token,))
    assert _status(box, world.partner, token) == "pending"


def test_consent_view_without_client_id_answers_400(box: Box, world: World) -> None:
    token = box.integration_token(world.partner)
    r = box.http.get(f"/merchant/api/consents/{token}", headers=world.merchant.auth)
    assert_problem(r, 400, secrets=(token,))
