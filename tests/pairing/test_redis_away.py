"""The pairing failure budget when Redis goes away: it fails closed, says so once, counts
the refusals, and counts failures again once Redis is back (CONTRACT §10, issue 17).

Uses a redis-server of its own, on a port of its own, which it stops and starts again;
the shared one is never touched."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest
import redis
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from tests.conftest import free_port
from tests.pairing.builders import Shop, pair, reserve
from tests.waiting import wait_for

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class OwnRedis:
    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        wait_for(lambda: _pings(client), timeout=10, what="redis-server to answer")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis()
    server.start()
    yield server
    server.stop()


def _refusals(budget: str) -> float:
    value = REGISTRY.get_sample_value(
        "partnerlink_rate_limit_storage_errors_total", {"budget": budget}
    )
    return value or 0.0


def test_redis_away_fails_closed_then_counts_again(
    client_with: Callable[..., TestClient],
    shop: Shop,
    own_redis: OwnRedis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = client_with(
        rate_limit_storage=own_redis.url,
        pairing_failures_per_ip="3/hour",
        pairing_failures_global="1000/hour",
    )
    valid = reserve(client, shop)
    assert pair(client, 111_111).status_code == 404  # counted in Redis

    own_redis.stop()
    before = _refusals("pairing-global")
    with caplog.at_level(logging.WARNING, logger="partnerlink.security"):
        for code in (111_111, valid, 222_222):
            refused = pair(client, code)
            assert refused.status_code == 429, refused.text
            assert refused.json()["code"] == "rate_limited"
            assert refused.headers["Retry-After"] == "5"
    assert _refusals("pairing-global") >= before + 3
    warnings = [r.getMessage() for r in caplog.records if r.name == "partnerlink.security"]
    assert len(warnings) == 1, warnings  # one line, not one per request
    assert "failing closed" in warnings[0] and "pairing-global" in warnings[0]
    assert "partnerlink_rate_limit_storage_errors_total" in client.get("/metrics").text
    caplog.clear()

    own_redis.start()  # an empty Redis: the budget starts again
    with caplog.at_level(logging.WARNING, logger="partnerlink.security"):
        assert pair(client, 111_111).status_code == 404
    assert any("reachable again" in r.getMessage() for r in caplog.records)
    assert pair(client, 111_111).status_code == 404
    assert pair(client, 111_111).status_code == 404
    assert pair(client, valid).status_code == 429  # the budget holds again: 3 failures
