"""PARTNERLINK_AD_RETRY_SECONDS (CONTRACT §11): the wait before a destination's first
retry after a 5xx (or 429, timeout, refused connection), doubling after that; the
destination stays active and the retry sends what the refused try did not."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations.models import Destination
from partnerlink.settings import Settings
from tests.destinations.sync_helpers import Syncing, meta_audience, run_worker


def _wait(session: Session, destination_id: str) -> float:
    next_attempt_at = session.scalar(
        select(Destination.next_attempt_at).where(Destination.id == destination_id)
    )
    session.rollback()
    assert next_attempt_at is not None
    return (next_attempt_at - utcnow()).total_seconds()


def test_the_first_retry_waits_the_setting_then_doubles(syncing: Syncing, session: Session) -> None:
    settings = syncing.settings.model_copy(update={"ad_retry_seconds": 600.0})
    created = syncing.api.create(meta_audience())
    syncing.meta.server_error_next(503, times=2)
    run_worker(syncing.app, settings)
    # 600 s plus up to a quarter of jitter; the default (30 s) would be well below.
    assert 590 <= _wait(session, created["id"]) <= 760
    syncing.api.sync(created["id"])  # a sync asked for now: refused again
    run_worker(syncing.app, settings)
    assert 1190 <= _wait(session, created["id"]) <= 1510
    syncing.api.sync(created["id"])
    run_worker(syncing.app, settings)  # Meta answers again: everyone added, nothing dropped
    assert syncing.api.get(created["id"])["status"] == "active"
    assert len(syncing.meta.audiences[meta_audience()["target"]["audienceId"]]) == 1


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARTNERLINK_AD_RETRY_SECONDS", "1.5")
    assert Settings().ad_retry_seconds == 1.5
    monkeypatch.delenv("PARTNERLINK_AD_RETRY_SECONDS")
    assert Settings().ad_retry_seconds == 30
