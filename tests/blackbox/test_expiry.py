"""Settings of CONTRACT.md §2 on one server: every lifetime at 10 seconds, a small upload
limit, and the receipt address moved to the connect address (SPEC.md's older variant).

Everything that must expire is arranged first, then the module waits once, until the
last of them has expired. The lifetime is what the arranging may take: each consent
is approved and exchanged before its token expires, even on a busy machine (2
seconds were not always enough there).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.blackbox.box import Box, Connected, assert_problem, unique
from tests.blackbox.conftest import DEFAULT_ENV, Cast, start_box
from tests.waiting import wait_past

TTL = 10
SHORT_ENV = {
    **DEFAULT_ENV,
    "PARTNERLINK_INTEGRATION_TOKEN_TTL_SECONDS": str(TTL),
    "PARTNERLINK_PAIRING_CODE_TTL_SECONDS": str(TTL),
    "PARTNERLINK_ACCESS_TOKEN_TTL_SECONDS": str(TTL),
    "PARTNERLINK_UPLOAD_URL_TTL_SECONDS": str(TTL),
    "PARTNERLINK_MAX_UPLOAD_BYTES": "300",
    "PARTNERLINK_RECEIPT_URL": "{url}/connect",
}


@pytest.fixture(scope="module")
def short(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    yield from start_box(database_url, tmp_path_factory, SHORT_ENV)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class Expired:
    started: datetime
    pending_token: str
    code: int
    code_expires_at: str
    consent: Connected
    paired: Connected
    upload_url: str
    approved_token: str
    exchanged_token: str


@pytest.fixture(scope="module")
def expired(short: Box, cast: Cast) -> Expired:
    started = datetime.now(UTC)
    pending = short.integration_token(cast.plain)
    consent = short.connect_by_consent(cast.plain, cast.merchant)
    paired = short.connect_by_pairing(cast.plain2, cast.merchant)
    profile = short.new_profile(cast.merchant)
    store = short.new_manual_store(cast.merchant, profile["id"])
    reserved = short.reserve_code(cast.merchant, store["id"], cast.plain.pos_type)
    r = short.http.get("/v1/customers", headers=consent.auth)
    assert r.status_code == 200, r.text
    upload_url = r.json()["uploadUrl"]
    approved = short.integration_token(cast.plain)
    assert short.approve(cast.merchant, cast.plain, approved, profile_id=profile["id"])
    exchanged = short.integration_token(cast.plain)
    assert short.approve(cast.merchant, cast.plain, exchanged, profile_id=profile["id"])
    done = short.http.get(
        "/v1/auth/integration/token", params={**cast.plain.creds, "integration_token": exchanged}
    )
    assert done.status_code == 200, done.text
    wait_past(datetime.now(UTC) + timedelta(seconds=TTL))  # all made by now expire by then
    return Expired(
        started,
        pending,
        reserved["code"],
        reserved["expiresAt"],
        consent,
        paired,
        upload_url,
        approved,
        exchanged,
    )


def test_lifetimes_are_reported_from_settings(expired: Expired) -> None:
    expiration = _at(expired.consent.exchange["expiration"])
    assert 0 < (expiration - expired.started).total_seconds() < TTL + 15
    code_expiry = _at(expired.code_expires_at)
    assert 0 < (code_expiry - expired.started).total_seconds() < TTL + 15


def test_expired_integration_token_reads_cancelled(
    short: Box, cast: Cast, expired: Expired
) -> None:
    r = short.http.get(
        "/v1/auth/integration",
        params={**cast.plain.creds, "integration_token": expired.pending_token},
    )
    assert r.status_code == 200
    assert r.json()["status"] == "cancelled"


def test_expired_integration_token_cannot_be_approved_or_exchanged(
    short: Box, cast: Cast, expired: Expired
) -> None:
    profile = short.new_profile(cast.merchant)
    approved = short.approve(
        cast.merchant, cast.plain, expired.pending_token, profile_id=profile["id"]
    )
    assert_problem(approved, 410, "integration_token_gone", secrets=(expired.pending_token,))
    exchanged = short.http.get(
        "/v1/auth/integration/token",
        params={**cast.plain.creds, "integration_token": expired.pending_token},
    )
    assert_problem(exchanged, 400, "not_finished", secrets=(expired.pending_token,))


def test_expired_pairing_code_answers_410(short: Box, expired: Expired) -> None:
    r = short.http.post("/v1/auth/integration/pair", json={"code": expired.code})
    assert_problem(r, 410, "code_expired")


def test_expired_access_token_answers_403_and_refresh_works(
    short: Box, cast: Cast, expired: Expired
) -> None:
    stale = short.http.get("/v1/stores", headers=expired.consent.auth)
    assert_problem(stale, 403, "invalid_token", secrets=(expired.consent.access_token,))
    assert expired.consent.refresh_token
    refreshed = short.http.post(
        "/v1/auth/token",
        params={
            **cast.plain.creds,
            "code": expired.consent.refresh_token,
            "grant_type": "refresh_token",
        },
    )
    assert refreshed.status_code == 200, refreshed.text
    token = refreshed.json()["accessToken"]
    fresh = short.http.get("/v1/stores", headers={"Authorization": f"Bearer {token}"})
    assert fresh.status_code == 200


def test_pairing_access_token_has_no_fixed_expiry(short: Box, expired: Expired) -> None:
    assert short.http.get("/v1/stores", headers=expired.paired.auth).status_code == 200


def test_expired_upload_url_answers_403(expired: Expired) -> None:
    r = httpx.put(expired.upload_url, json=[{"email": "late@example.com"}], timeout=30)
    assert_problem(r, 403)


def test_upload_larger_than_the_limit_answers_413(short: Box, expired: Expired) -> None:
    r = short.http.get("/v1/customers", headers=expired.paired.auth)
    big = [{"email": f"user{i}@example.com"} for i in range(50)]
    put = httpx.put(r.json()["uploadUrl"], json=big, timeout=30)
    assert_problem(put, 413, "payload_too_large")


def test_expired_unexchanged_finished_token_counts_as_cancelled(
    short: Box, cast: Cast, expired: Expired
) -> None:
    params = {**cast.plain.creds, "integration_token": expired.approved_token}
    assert short.http.get("/v1/auth/integration", params=params).json()["status"] == "cancelled"
    exchange = short.http.get("/v1/auth/integration/token", params=params)
    assert_problem(exchange, 400, "not_finished", secrets=(expired.approved_token,))


def test_exchanged_token_still_answers_410_after_its_lifetime(
    short: Box, cast: Cast, expired: Expired
) -> None:
    params = {**cast.plain.creds, "integration_token": expired.exchanged_token}
    exchange = short.http.get("/v1/auth/integration/token", params=params)
    assert_problem(exchange, 410, "already_exchanged")


def test_receipt_link_uses_the_configured_receipt_address(
    short: Box, cast: Cast, expired: Expired
) -> None:
    conn = expired.paired
    short.set_green_invoices(cast.merchant, conn.store_id, True)
    order_id = unique("legacy-link")
    order = {
        "orderId": order_id,
        "orderPrice": "990",
        "orderCurrency": "USD",
        "createdAt": "2024-05-01T12:00:00Z",
        "customerPhoneNumber": "+15035550190",
        "orderDetails": {"orderStatus": "CLOSED"},
    }
    assert short.http.post("/v1/orders", json=order, headers=conn.auth).status_code == 200
    url = short.sms_link(order_id)
    assert url.startswith(f"{short.url}/connect/inv/{order_id}?k=")
    assert httpx.get(url, timeout=30).status_code == 200
    assert httpx.get(url.split("?")[0], timeout=30).status_code == 404
