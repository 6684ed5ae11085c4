"""Failure budgets of pairing redemption (CONTRACT.md §2) and the 429 problem (§3)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import httpx
import pytest

from tests.blackbox.box import Box, assert_problem
from tests.blackbox.conftest import Cast, start_box

BUDGET = 3


@pytest.fixture(scope="module")
def per_ip(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    env = {
        "PARTNERLINK_PAIRING_FAILURES_PER_IP": f"{BUDGET}/minute",
        "PARTNERLINK_PAIRING_FAILURES_GLOBAL": "100000/hour",
    }
    yield from start_box(database_url, tmp_path_factory, env)


@pytest.fixture(scope="module")
def global_budget(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    env = {
        "PARTNERLINK_PAIRING_FAILURES_PER_IP": "100000/minute",
        "PARTNERLINK_PAIRING_FAILURES_GLOBAL": f"{BUDGET}/hour",
    }
    yield from start_box(database_url, tmp_path_factory, env)


def _fail_until_429(box: Box) -> httpx.Response:
    for _ in range(BUDGET + 3):
        r = box.http.post(
            "/v1/auth/integration/pair", json={"code": random.randint(100000, 999999)}
        )
        if r.status_code == 429:
            return r
        assert_problem(r, 404, "unknown_code")
    raise AssertionError("no 429 after the failure budget was spent")


def test_spent_per_address_budget_answers_429_with_retry_after(per_ip: Box) -> None:
    r = _fail_until_429(per_ip)
    body = assert_problem(r, 429, "rate_limited")
    assert body["status"] == 429
    assert 1 <= int(r.headers["Retry-After"]) <= 60


def test_spent_global_budget_refuses_even_a_valid_code(global_budget: Box, cast: Cast) -> None:
    profile = global_budget.new_profile(cast.merchant)
    store = global_budget.new_manual_store(cast.merchant, profile["id"])
    code = global_budget.reserve_code(cast.merchant, store["id"], cast.plain.pos_type)["code"]
    _fail_until_429(global_budget)
    r = global_budget.http.post("/v1/auth/integration/pair", json={"code": code})
    assert_problem(r, 429, "rate_limited")
    assert int(r.headers["Retry-After"]) >= 1
