"""/metrics under `partnerlink serve --workers 2` counts every server process (CONTRACT §10)."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy.orm import Session

from tests.conftest import LiveServer
from tests.factories import create_connected_store
from tests.process_tree import server_processes

REQUESTS = 40
READYZ = re.compile(
    r'^partnerlink_http_requests_total\{method="GET",route="/readyz",status="200"\} (\S+)$',
    re.MULTILINE,
)


@pytest.fixture
def two_processes(live_env: dict[str, str]) -> Iterator[LiveServer]:
    server = LiveServer(live_env, workers=2)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _fresh_connection_get(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    # A new connection each time: the kernel spreads connections over both processes.
    with httpx.Client(timeout=30) as client:
        return client.get(url, headers=headers)


def _pids_serving(server: LiveServer) -> set[int]:
    """The server processes (the forkserver's children; not multiprocessing's resource tracker)."""
    assert server.process is not None
    return server_processes(server.process.pid)


@pytest.mark.slow
def test_every_scrape_sees_the_requests_of_both_processes(two_processes: LiveServer) -> None:
    for _ in range(REQUESTS):
        assert _fresh_connection_get(f"{two_processes.url}/readyz").status_code == 200
    seen = []
    for _ in range(12):
        response = _fresh_connection_get(f"{two_processes.url}/metrics")
        assert response.status_code == 200
        match = READYZ.search(response.text)
        assert match, response.text
        seen.append(float(match.group(1)))
    assert seen == [float(REQUESTS)] * len(seen)


@pytest.mark.slow
def test_a_replaced_process_keeps_its_count_in_the_total(two_processes: LiveServer) -> None:
    for _ in range(REQUESTS):
        assert _fresh_connection_get(f"{two_processes.url}/readyz").status_code == 200
    # A process counts a request just after its answer went out: wait until every one
    # is counted before killing, so the kill cannot land between answer and count.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        counted = READYZ.search(_fresh_connection_get(f"{two_processes.url}/metrics").text)
        if counted and float(counted.group(1)) == REQUESTS:
            break
        time.sleep(0.1)
    # Counters are totals since the run began: a server process that dies (and is
    # replaced) does not take its requests out of them.
    first, *_ = sorted(_pids_serving(two_processes))
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and first in _pids_serving(two_processes):
        time.sleep(0.1)
    while time.monotonic() < deadline and len(_pids_serving(two_processes)) < 2:
        time.sleep(0.1)
    for _ in range(6):
        response = _fresh_connection_get(f"{two_processes.url}/metrics")
        match = READYZ.search(response.text)
        assert match, response.text
        assert float(match.group(1)) == REQUESTS


@pytest.mark.slow
def test_a_revocation_holds_on_every_process_at_once(
    two_processes: LiveServer, session: Session
) -> None:
    """No process keeps a token alive after it is revoked: each reads the connection
    from the database on every request (issue 16: revocation is immediate everywhere)."""
    shop = create_connected_store(session)
    session.commit()
    partner = shop.partner
    stores = f"{two_processes.url}/v1/stores"
    bearer = {"Authorization": f"Bearer {shop.access_token}"}
    for _ in range(10):
        assert _fresh_connection_get(stores, bearer).status_code == 200
    revoked = httpx.post(
        f"{two_processes.url}/v1/auth/revoke",
        params={
            "client_id": partner.client_id,
            "client_secret": partner.client_secret,
            "token": shop.access_token,
        },
        timeout=30,
    )
    assert revoked.json() == {"success": True}
    for _ in range(20):  # new connections, spread over both processes by the kernel
        assert _fresh_connection_get(stores, bearer).status_code == 403
