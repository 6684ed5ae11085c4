"""Partner quotas and the RateLimit fields on /v1 (CONTRACT.md §13, tokens/quota.py)."""

from __future__ import annotations

import re
import time
import uuid
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.db.base import utcnow
from partnerlink.partners.service import set_requests_per_minute
from partnerlink.security.request_quota import WINDOW_SECONDS
from partnerlink.settings import Settings
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import issue_access_token, revoke_connection
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body
from tests.waiting import wait_past

POLICY = re.compile(r'^"default";q=(\d+);w=60$')
REMAINING = re.compile(r'^"default";r=(\d+);t=(\d+)$')


def credentials(shop: ConnectedStoreFixture) -> dict[str, str]:
    return {"client_id": shop.partner.client_id, "client_secret": shop.partner.client_secret}


@pytest.fixture(autouse=True)
def one_quota_window() -> None:
    """Each test's requests fall in one quota window: windows are aligned to the clock's
    minutes (security/request_quota.py), and a test that crossed a minute's end saw its
    count start again (remaining 2, 2, 1 for 2, 1, 0). With less than 15 s left in this
    minute, the test waits for the next one."""
    left = WINDOW_SECONDS - time.time() % WINDOW_SECONDS
    if left < 15:
        time.sleep(left + 0.05)


def limit_partner(session: Session, shop: ConnectedStoreFixture, quota: int) -> None:
    set_requests_per_minute(session, shop.partner.partner, quota)
    session.commit()


def remaining(answer: object) -> int:
    found = REMAINING.match(answer.headers["RateLimit"])  # type: ignore[attr-defined]
    assert found, answer.headers  # type: ignore[attr-defined]
    return int(found.group(1))


def test_answers_that_name_a_partner_carry_both_fields(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    answers = [
        client.get("/v1/stores", headers=shop.auth),
        client.post("/v1/orders", headers=shop.auth, json=order_body("Q-1")),  # the fast lane
        client.post("/v1/orders", headers=shop.auth, json={"orderId": "bad"}),  # its refusal
        client.get("/v1/connections", params=credentials(shop)),
        client.get("/v1/stores", params={"access_token": shop.access_token}),
    ]
    for answer in answers:
        policy = POLICY.match(answer.headers["RateLimit-Policy"])
        assert policy and policy.group(1) == "60000", answer.headers
        t = int(REMAINING.match(answer.headers["RateLimit"]).group(2))  # type: ignore[union-attr]
        assert 1 <= t <= 60
    assert [remaining(a) for a in answers] == [59999, 59998, 59997, 59996, 59995]
    assert answers[1].status_code == 200 and answers[2].status_code == 400


def test_oauth_form_credentials_count_and_reach_the_endpoint_unchanged(
    client: TestClient, session: Session
) -> None:
    """client_secret_post (RFC 6749 §2.3.1): the form's credentials name the partner; the
    form read ahead is still the endpoint's, which answers as it would without the quota."""
    shop = create_connected_store(session)
    form = credentials(shop) | {"grant_type": "refresh_token", "refresh_token": "plk_rt_nope"}
    answer = client.post("/v1/oauth/token", data=form)
    assert answer.json()["error"] == "invalid_grant", answer.text
    assert remaining(answer) == 59999
    introspected = client.post("/v1/oauth/introspect", data=credentials(shop) | {"token": "x"})
    assert introspected.status_code == 200 and introspected.json() == {"active": False}
    assert remaining(introspected) == 59998
    wrong = client.post("/v1/oauth/token", data=form | {"client_secret": "wrong"})
    assert wrong.status_code == 401 and "RateLimit" not in wrong.headers


def test_answers_that_name_no_partner_carry_neither_and_count_nothing(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    limit_partner(session, shop, 1)
    unnamed = [
        client.get("/v1/stores"),
        client.get("/v1/stores", headers={"Authorization": "Bearer plk_at_unknown"}),
        client.get("/v1/connections", params=credentials(shop) | {"client_secret": "wrong"}),
        client.get("/v1/connections", params={"client_id": shop.partner.client_id}),
    ]
    for answer in unnamed:
        assert answer.status_code in (400, 403)
        assert "RateLimit" not in answer.headers and "RateLimit-Policy" not in answer.headers
    merchant = client.get("/merchant/api/profiles")
    assert "RateLimit" not in merchant.headers
    # The one request of its quota is still there: wrong secrets spent nothing.
    assert client.get("/v1/stores", headers=shop.auth).status_code == 200


def test_over_the_quota_answers_429_with_retry_after_and_the_fields(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    limit_partner(session, shop, 3)

    allowed = [client.get("/v1/stores", headers=shop.auth) for _ in range(3)]
    refused = client.post("/v1/orders", headers=shop.auth, json=order_body("Q-9"))
    by_credentials = client.get("/v1/connections", params=credentials(shop))

    assert [a.status_code for a in allowed] == [200, 200, 200]
    assert [remaining(a) for a in allowed] == [2, 1, 0]
    for answer in (refused, by_credentials):
        assert answer.status_code == 429
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["code"] == "rate_limited"
        assert answer.json()["success"] is False
        assert POLICY.match(answer.headers["RateLimit-Policy"]).group(1) == "3"  # type: ignore[union-attr]
        assert remaining(answer) == 0
        t = int(REMAINING.match(answer.headers["RateLimit"]).group(2))  # type: ignore[union-attr]
        assert answer.headers["Retry-After"] == str(t)
    # Nothing of the refused order was stored; another partner is not limited.
    assert client.get("/v1/orders", headers=other.auth, params={"orderId": "Q-9"}).status_code in (
        403,
        404,
    )
    assert client.get("/v1/stores", headers=other.auth).status_code == 200


def test_a_redis_storage_shares_the_count_between_two_app_instances(
    settings: Settings, session: Session
) -> None:
    shared = settings.model_copy(
        update={"rate_limit_storage": "redis://127.0.0.1:6379/0", "run_worker": False}
    )
    shop = create_connected_store(session, pos_type=f"pos-{uuid.uuid4().hex[:8]}")
    limit_partner(session, shop, 4)
    with TestClient(create_app(shared)) as first, TestClient(create_app(shared)) as second:
        codes = [
            first.get("/v1/stores", headers=shop.auth).status_code,
            second.get("/v1/stores", headers=shop.auth).status_code,
            first.get("/v1/stores", headers=shop.auth).status_code,
            second.get("/v1/stores", headers=shop.auth).status_code,
        ]
        over = second.get("/v1/stores", headers=shop.auth)
        over_too = first.get("/v1/stores", headers=shop.auth)
    assert codes == [200, 200, 200, 200]
    assert over.status_code == over_too.status_code == 429
    assert over.json()["code"] == "rate_limited" and "Retry-After" in over.headers


@pytest.mark.parametrize("name", ["access%5Ftoken", "%61ccess_token", "ACCESS_TOKEN"])
def test_a_token_counts_under_whatever_name_the_route_reads_it(
    client: TestClient, session: Session, name: str
) -> None:
    """The quota reads the query as the route does (percent-decoded names): a spelling the
    route takes for the token counts, one it does not take (`ACCESS_TOKEN`) names nobody."""
    shop = create_connected_store(session)
    limit_partner(session, shop, 2)
    answers = [client.get(f"/v1/stores?{name}={shop.access_token}") for _ in range(3)]
    if name == "ACCESS_TOKEN":
        assert [a.status_code for a in answers] == [403, 403, 403]
        assert all("RateLimit" not in a.headers for a in answers)
        return
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert [remaining(a) for a in answers] == [1, 0, 0]


def test_client_credentials_count_under_percent_encoded_names(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    limit_partner(session, shop, 2)
    query = f"client%5Fid={shop.partner.client_id}&client%5Fsecret={shop.partner.client_secret}"
    answers = [client.get(f"/v1/connections?{query}") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert [remaining(a) for a in answers] == [1, 0, 0]


def connection_of(session: Session, shop: ConnectedStoreFixture) -> Connection:
    return session.query(Connection).filter_by(store_id=shop.store.id).one()


def assert_names_nobody(answers: list[object]) -> None:
    for answer in answers:
        assert answer.status_code == 403, answer.text  # type: ignore[attr-defined]
        assert answer.json()["code"] == "invalid_token"  # type: ignore[attr-defined]
        assert "RateLimit" not in answer.headers  # type: ignore[attr-defined]


def test_a_token_revoked_after_it_was_seen_spends_nothing_of_its_partners_quota(
    client: TestClient, session: Session
) -> None:
    """Whoever still holds a revoked token cannot lock the partner out: the quota had
    already seen the token live, and counts its refused requests for nothing."""
    shop = create_connected_store(session)
    limit_partner(session, shop, 3)
    assert remaining(client.get("/v1/stores", headers=shop.auth)) == 2
    connection = connection_of(session, shop)
    unseen, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=3600)
    revoke_connection(session, connection, reason="merchant")
    session.commit()

    assert_names_nobody([client.get("/v1/stores", headers=shop.auth) for _ in range(6)])
    assert_names_nobody(
        [client.get(f"/v1/stores?access%5Ftoken={shop.access_token}") for _ in range(2)]
        + [
            client.get("/v1/stores", headers={"Authorization": f"Bearer {unseen}"})
            for _ in range(3)
        ]
    )
    honest = client.get("/v1/connections", params=credentials(shop))
    assert honest.status_code == 200 and remaining(honest) == 1


def test_an_expired_token_names_nobody(client: TestClient, session: Session) -> None:
    shop = create_connected_store(session)
    limit_partner(session, shop, 3)
    issued_at = utcnow()
    short, _ = issue_access_token(
        session, connection_id=connection_of(session, shop).id, ttl_seconds=5
    )
    session.commit()
    bearer = {"Authorization": f"Bearer {short}"}
    assert client.get("/v1/stores", headers=bearer).status_code == 200  # known live, then
    wait_past(issued_at + timedelta(seconds=5))

    assert_names_nobody(
        [client.get("/v1/stores", headers=bearer) for _ in range(5)]
        + [client.get(f"/v1/stores?access_token={short}")]
    )
    honest = client.get("/v1/stores", headers=shop.auth)
    # 3 - the short token's one live request - this one (a minute's end may have passed
    # while the token expired: the count then starts again).
    assert honest.status_code == 200 and remaining(honest) in (1, 2)
