"""Counting a partner's requests a minute (security/request_quota.py)."""

from __future__ import annotations

import uuid

import pytest

from partnerlink.security.request_quota import RequestQuota

START = 1_800_000_000.0 - 1_800_000_000.0 % 60  # the start of a minute


def quota() -> RequestQuota:
    return RequestQuota(f"test-{uuid.uuid4().hex}", "memory://")


def test_the_quota_allows_exactly_its_requests_then_resets_with_the_minute() -> None:
    counter = quota()
    verdicts = [counter.count("p", 3, now=START + 1 + i) for i in range(4)]
    assert [(v.allowed, v.remaining) for v in verdicts] == [
        (True, 2),
        (True, 1),
        (True, 0),
        (False, 0),
    ]
    assert verdicts[0].reset_seconds == 59 and verdicts[3].reset_seconds == 56
    fresh = counter.count("p", 3, now=START + 60)
    assert fresh.allowed and fresh.remaining == 2 and fresh.reset_seconds == 60


def test_a_large_quota_reaches_the_storage_once_per_hundredth_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = quota()
    calls = 0
    incr = counter.storage.incr

    def counting(key: str, expiry: int, amount: int = 1) -> int:
        nonlocal calls
        calls += 1
        return incr(key, expiry, amount)

    monkeypatch.setattr(counter.storage, "incr", counting)
    for i in range(10_000):  # within 0.1 s: only the count of 600 (1%) sends them on
        counter.count("p", 60_000, now=START + i * 0.00001)
    assert calls == 10_000 // 600
    assert counter.count("p", 60_000, now=START + 1).remaining == 60_000 - 10_001


def test_two_counters_on_one_storage_see_each_others_requests_near_the_quota() -> None:
    name = f"shared-{uuid.uuid4().hex}"
    first, second = RequestQuota(name, "memory://"), RequestQuota(name, "memory://")
    assert first.count("p", 4, now=START).allowed
    assert second.count("p", 4, now=START).allowed
    assert first.count("p", 4, now=START).allowed
    assert second.count("p", 4, now=START).remaining == 0
    assert not first.count("p", 4, now=START).allowed


def test_a_request_given_back_counts_for_nothing_in_any_process() -> None:
    name = f"given-back-{uuid.uuid4().hex}"
    first, second = RequestQuota(name, "memory://"), RequestQuota(name, "memory://")
    assert first.count("p", 3, now=START).remaining == 2
    first.give_back("p", now=START)
    assert first.count("p", 3, now=START).remaining == 2  # the first no longer counts
    assert second.count("p", 3, now=START).remaining == 1  # first's one, and this one
    first.give_back("p", now=START + 60)  # another window's: nothing to take back
    assert second.count("p", 3, now=START).remaining == 0
