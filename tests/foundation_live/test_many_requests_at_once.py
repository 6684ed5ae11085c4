"""More simultaneous requests than server threads must not stall on the database."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from sqlalchemy.orm import Session

from tests.conftest import LiveServer
from tests.factories import create_connected_store


def test_150_simultaneous_requests_all_answer_promptly(
    live_server: LiveServer, session: Session
) -> None:
    fixture = create_connected_store(session)
    started = time.monotonic()

    def read_settings(_: int) -> int:
        with httpx.Client(timeout=50) as http:
            return http.get(f"{live_server.url}/v1/stores", headers=fixture.auth).status_code

    with ThreadPoolExecutor(max_workers=150) as pool:
        statuses = list(pool.map(read_settings, range(150)))

    assert statuses == [200] * 150
    # Before the database gate, SQLite's one connection and 40 busy threads
    # deadlocked until the 60 s pool timeout.
    assert time.monotonic() - started < 40
