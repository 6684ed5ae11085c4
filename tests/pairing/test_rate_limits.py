"""Brute-force protection of endpoint 5: per-address and global failure budgets."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from sqlalchemy.orm import Session

from tests.pairing.builders import Shop, pair, reserve

LOOSE = "1000/hour"
TRUSTING = {"trusted_proxies": "testclient"}


def _lockouts(scope: str) -> float:
    value = REGISTRY.get_sample_value("partnerlink_pairing_lockouts_total", {"scope": scope})
    return value or 0.0


def _fail(client: TestClient, times: int, *, forwarded_for: str | None = None) -> None:
    for _ in range(times):
        assert pair(client, 111_111, forwarded_for=forwarded_for).status_code == 404


def test_spent_address_budget_answers_429_even_for_a_valid_code(
    client_with: Callable[..., TestClient], shop: Shop
) -> None:
    client = client_with(pairing_failures_per_ip="3/minute", pairing_failures_global=LOOSE)
    valid = reserve(client, shop)
    _fail(client, 3)
    for body in ({"code": valid}, {"code": 111_111}, {"code": "junk"}):
        refused = client.post("/v1/auth/integration/pair", json=body)
        assert refused.status_code == 429
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["code"] == "rate_limited"
        assert 1 <= int(refused.headers["Retry-After"]) <= 60


def test_locked_out_valid_code_is_not_consumed(
    client_with: Callable[..., TestClient], shop: Shop
) -> None:
    client = client_with(
        pairing_failures_per_ip="2/minute", pairing_failures_global=LOOSE, **TRUSTING
    )
    valid = reserve(client, shop)
    _fail(client, 2, forwarded_for="203.0.113.9")
    assert pair(client, valid, forwarded_for="203.0.113.9").status_code == 429
    answer = pair(client, valid, forwarded_for="198.51.100.7")
    assert answer.status_code == 200
    assert answer.json()["storeId"] == shop.store.id


def test_successes_and_malformed_bodies_spend_no_budget(
    client_with: Callable[..., TestClient], shop: Shop
) -> None:
    client = client_with(pairing_failures_per_ip="2/minute", pairing_failures_global=LOOSE)
    for _ in range(4):
        assert pair(client, reserve(client, shop)).status_code == 200
        assert pair(client, "123456").status_code == 400
    _fail(client, 2)
    assert pair(client, 111_111).status_code == 429


def test_expired_codes_count_as_failures(
    client_with: Callable[..., TestClient], session: Session, shop: Shop
) -> None:
    client = client_with(
        pairing_failures_per_ip="2/minute",
        pairing_failures_global=LOOSE,
        pairing_code_ttl_seconds=1,
    )
    code = reserve(client, shop)
    time.sleep(1.1)
    assert [pair(client, code).status_code for _ in range(3)] == [410, 410, 429]


def test_spent_global_budget_answers_429_to_every_address(
    client_with: Callable[..., TestClient], shop: Shop
) -> None:
    client = client_with(
        pairing_failures_per_ip=LOOSE, pairing_failures_global="4/minute", **TRUSTING
    )
    valid = reserve(client, shop)
    for i in range(4):
        _fail(client, 1, forwarded_for=f"203.0.113.{i}")
    refused = pair(client, valid, forwarded_for="198.51.100.250")
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1


def test_forwarded_for_is_ignored_from_an_untrusted_peer(
    client_with: Callable[..., TestClient], shop: Shop
) -> None:
    client = client_with(pairing_failures_per_ip="3/minute", pairing_failures_global=LOOSE)
    for i in range(3):
        _fail(client, 1, forwarded_for=f"203.0.113.{i}")
    # Every guess came from the socket address "testclient", whatever the header says.
    assert pair(client, 111_111, forwarded_for="198.51.100.1").status_code == 429


def test_forwarded_for_is_believed_from_a_trusted_proxy(
    client_with: Callable[..., TestClient], shop: Shop
) -> None:
    client = client_with(
        pairing_failures_per_ip="3/minute", pairing_failures_global=LOOSE, **TRUSTING
    )
    _fail(client, 3, forwarded_for="203.0.113.1")
    assert pair(client, 111_111, forwarded_for="203.0.113.1").status_code == 429
    # A client behind the proxy with another address keeps its own budget; the
    # left-most hops (client-written) do not matter, the proxy's view does.
    assert pair(client, 111_111, forwarded_for="203.0.113.1, 198.51.100.2").status_code == 404


def test_lockout_logs_one_warning_and_counts_by_scope(
    client_with: Callable[..., TestClient], shop: Shop, caplog: pytest.LogCaptureFixture
) -> None:
    client = client_with(
        pairing_failures_per_ip="2/minute", pairing_failures_global="3/minute", **TRUSTING
    )
    ip_before, global_before = _lockouts("ip"), _lockouts("global")
    with caplog.at_level(logging.WARNING, logger="partnerlink.pairing"):
        _fail(client, 2, forwarded_for="203.0.113.1")
        assert pair(client, 111_111, forwarded_for="203.0.113.1").status_code == 429
        assert _lockouts("ip") == ip_before + 1
        _fail(client, 1, forwarded_for="203.0.113.2")
        for _ in range(3):
            assert pair(client, 111_111, forwarded_for="203.0.113.3").status_code == 429
    assert _lockouts("ip") == ip_before + 1
    assert _lockouts("global") == global_before + 1
    warnings = [r.getMessage() for r in caplog.records if r.name == "partnerlink.pairing"]
    assert len(warnings) == 2
    assert "203.0.113.1" in warnings[0] and "global" in warnings[1]
    assert not any("111111" in w for w in warnings)
    assert 'partnerlink_pairing_lockouts_total{scope="global"}' in client.get("/metrics").text


def test_budgets_are_shared_through_redis(
    client_with: Callable[..., TestClient], shop: Shop
) -> None:
    # A window length of its own keeps this run's Redis keys apart from any other run's.
    window = random.randint(3_600, 86_400)
    changes = {
        "rate_limit_storage": "redis://127.0.0.1:6379",
        "pairing_failures_per_ip": f"2/{window}seconds",
        "pairing_failures_global": f"1000/{window}seconds",
    }
    first, second = client_with(**changes), client_with(**changes)
    try:
        valid = reserve(first, shop)
        _fail(first, 1)
        _fail(second, 1)
        # Two apps (as two server processes would) spent one budget together.
        for client in (first, second):
            refused = pair(client, valid)
            assert refused.status_code == 429
            assert int(refused.headers["Retry-After"]) > 3_000
    finally:
        first.app.state.pairing_guard.reset("testclient")  # type: ignore[attr-defined]
