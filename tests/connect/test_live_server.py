"""Against a real `partnerlink serve` process: single use under concurrency, clean logs."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.connect import service
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection, Token
from tests.conftest import LiveServer
from tests.connect.conftest import World, approve, build_world, fetch_all, merchant_headers

CONCURRENCY = 20


@pytest.fixture(scope="module")
def two_worker_server(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """Two server processes, so that racing requests really run at the same time.

    Shared by the module's tests (it keeps no state of its own; each test's
    `settings` fixture empties the tables).
    """
    env = {
        "PARTNERLINK_DATABASE_URL": database_url,
        "PARTNERLINK_SECRET_KEY": "test-secret-key-not-for-production",
        "PARTNERLINK_DATA_DIR": str(tmp_path_factory.mktemp("two-workers")),
        "PARTNERLINK_RUN_WORKER": "false",
    }
    server = LiveServer(env, workers=2)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _pending_token(session: Session, world: World) -> str:
    token = service.create_integration_token(
        session, partner=world.partner.partner, ttl_seconds=3600
    )
    session.commit()
    return token


def _race(request: Callable[[httpx.Client], httpx.Response]) -> list[httpx.Response]:
    """Fires the same request from CONCURRENCY threads released at one instant."""
    barrier = threading.Barrier(CONCURRENCY)

    def one(_: int) -> httpx.Response:
        with httpx.Client(timeout=60) as http:
            barrier.wait()
            return request(http)

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return list(pool.map(one, range(CONCURRENCY)))


@pytest.mark.slow
def test_concurrent_exchanges_answer_one_200_and_410_for_the_rest(
    two_worker_server: LiveServer, session: Session
) -> None:
    world = build_world(session)
    token = _pending_token(session, world)
    approve(session, world, token)
    url = f"{two_worker_server.url}/v1/auth/integration/token"
    params = {**world.creds, "integration_token": token}

    responses = _race(lambda http: http.get(url, params=params))

    assert Counter(r.status_code for r in responses) == {200: 1, 410: CONCURRENCY - 1}
    assert {r.json()["code"] for r in responses if r.status_code == 410} == {"already_exchanged"}
    assert len(fetch_all(session, select(Connection))) == 1
    kinds = Counter(t.kind for t in fetch_all(session, select(Token)))
    assert kinds == {"access": 1, "refresh": 1}


@pytest.mark.slow
def test_concurrent_approvals_finish_the_token_once(
    two_worker_server: LiveServer, session: Session
) -> None:
    world = build_world(session)
    token = _pending_token(session, world)
    headers = merchant_headers(session, world.merchant)
    url = f"{two_worker_server.url}/merchant/api/consents/{token}/approve"
    body = {"clientId": world.partner.client_id, "profileId": world.profile.id}

    responses = _race(lambda http: http.post(url, json=body, headers=headers))

    assert Counter(r.status_code for r in responses) == {200: 1, 410: CONCURRENCY - 1}
    stores = fetch_all(session, select(Store))
    # The manual store of the world plus exactly one created by the winning approval.
    assert len(stores) == 2


def test_legacy_query_token_and_credentials_never_reach_the_log(
    live_server: LiveServer, session: Session
) -> None:
    world = build_world(session)
    base = live_server.url
    with httpx.Client(base_url=base, timeout=30) as http:
        created = http.post("/v1/auth/integration", params=world.creds)
        token = created.json()["integrationToken"]
        approve(session, world, token)
        params = {**world.creds, "integration_token": token}
        assert http.get("/v1/auth/integration", params=params).status_code == 200
        tokens = http.get("/v1/auth/integration/token", params=params).json()
        refreshed = http.post(
            "/v1/auth/token",
            params={**world.creds, "code": tokens["refreshToken"], "grant_type": "refresh_token"},
        )
        assert refreshed.status_code == 200
        legacy = http.get("/v1/stores", params={"access_token": tokens["accessToken"]})
        assert legacy.status_code == 200 and legacy.json() == {"greenInvoices": False}

    time.sleep(0.3)  # let the access log line reach the file
    logs = live_server.logs()
    assert "GET /v1/stores?access_token=[REDACTED]" in logs
    assert "/v1/auth/integration/token" in logs
    secrets = (
        tokens["accessToken"],
        tokens["refreshToken"],
        refreshed.json()["accessToken"],
        token,
        world.partner.client_secret,
    )
    for secret in secrets:
        assert secret not in logs
