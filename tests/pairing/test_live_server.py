"""Endpoint 5 on a real server process: one code, many terminals at once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.tokens.models import Connection, Token
from tests.conftest import LiveServer
from tests.pairing.builders import Shop, pair, reserve


@pytest.fixture
def roomy_server(live_env: dict[str, str]) -> Iterator[LiveServer]:
    """A server whose failure budgets let every losing redemption answer 404."""
    server = LiveServer({**live_env, "PARTNERLINK_PAIRING_FAILURES_PER_IP": "1000/hour"})
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
def test_twenty_concurrent_redemptions_mint_exactly_one_token(
    roomy_server: LiveServer, session: Session, shop: Shop
) -> None:
    with httpx.Client(base_url=roomy_server.url, timeout=30) as client:
        code = reserve(client, shop)

    def redeem(_: int) -> httpx.Response:
        with httpx.Client(base_url=roomy_server.url, timeout=30) as own:
            return pair(own, code)

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(redeem, range(20)))
    statuses = Counter(a.status_code for a in answers)
    assert statuses == {200: 1, 404: 19}, statuses
    winner = next(a.json() for a in answers if a.status_code == 200)
    assert winner["storeId"] == shop.store.id
    assert session.scalar(select(func.count()).select_from(Connection)) == 1
    assert session.scalar(select(func.count()).select_from(Token)) == 1
    assert (
        str(code) not in roomy_server.logs() and winner["access_token"] not in roomy_server.logs()
    )
