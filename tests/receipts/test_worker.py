"""The worker sends due receipts once, through the outbox provider (default)."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from partnerlink.cli import app as cli_app
from partnerlink.db.base import utcnow
from partnerlink.jobs import backoff_seconds
from partnerlink.receipts.models import Receipt
from partnerlink.receipts.tasks import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    send_due_receipts,
)
from partnerlink.settings import Settings
from partnerlink.worker import run_once
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import PHONE, order_body, post, receipts


def test_outbox_records_the_message_as_sent_and_logs_no_link(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    post(client, shop.auth, order_body())
    with caplog.at_level(logging.INFO, logger="partnerlink.receipts"):
        assert run_once(app.state.sessionmaker, settings) == 1
    [receipt] = receipts(session)
    assert receipt.status == "sent" and receipt.provider == "outbox"
    assert receipt.provider_message_id and receipt.sent_at and receipt.attempts == 1
    key = receipt.link.split("?k=")[1]
    assert "A-1001" in caplog.text and "+14*******23" in caplog.text
    assert key not in caplog.text and PHONE not in caplog.text
    assert run_once(app.state.sessionmaker, settings) == 0  # nothing left: sent once


def test_sms_list_shows_messages_newest_first(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, settings: Settings, app: Any
) -> None:
    post(client, shop.auth, order_body("first"))
    post(client, shop.auth, order_body("second"))
    run_once(app.state.sessionmaker, settings)
    env = {
        "PARTNERLINK_DATABASE_URL": settings.database_url,
        "PARTNERLINK_DATA_DIR": str(settings.data_dir),
        "PARTNERLINK_SECRET_KEY": "test-secret-key-not-for-production",
    }
    result = CliRunner().invoke(cli_app, ["sms", "list", "--json"], env=env)
    assert result.exit_code == 0, result.output
    messages = json.loads(result.stdout)
    assert [m["orderId"] for m in messages] == ["second", "first"]
    first = messages[0]
    assert set(first) == {"to", "body", "link", "orderId", "storeId", "status", "createdAt"}
    assert first["to"] == PHONE and first["status"] == "sent"
    assert first["storeId"] == shop.store.id and first["link"] in first["body"]
    assert "/receipts/inv/second?k=" in first["link"]
    limited = CliRunner().invoke(cli_app, ["sms", "list", "--json", "--limit", "1"], env=env)
    assert len(json.loads(limited.stdout)) == 1
    human = CliRunner().invoke(cli_app, ["sms", "list"], env=env)
    assert human.exit_code == 0 and "second" in human.stdout


def test_receipts_not_yet_due_or_leased_are_left_alone(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, app: Any, settings: Settings
) -> None:
    post(client, shop.auth, order_body("later"))
    post(client, shop.auth, order_body("leased"))
    later = utcnow() + timedelta(minutes=5)
    receipt_ids = {r.link.split("/inv/")[1].split("?")[0]: r.id for r in receipts(session)}
    session.execute(
        update(Receipt).where(Receipt.id == receipt_ids["later"]).values(next_attempt_at=later)
    )
    session.execute(
        update(Receipt).where(Receipt.id == receipt_ids["leased"]).values(lease_until=later)
    )
    session.commit()
    assert send_due_receipts(app.state.sessionmaker, settings) == 0
    # A crashed worker's lease runs out: the receipt is claimed again.
    session.execute(
        update(Receipt)
        .where(Receipt.id == receipt_ids["leased"])
        .values(lease_until=utcnow() - timedelta(seconds=1))
    )
    session.commit()
    assert send_due_receipts(app.state.sessionmaker, settings) == 1
    assert {r.status for r in receipts(session)} == {"pending", "sent"}


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    # The receipts' own schedule: 5 s, doubling, capped at an hour (jobs.backoff_seconds).
    assert (BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS) == (5.0, 3600.0)
    wait = {"base": BACKOFF_BASE_SECONDS, "cap": BACKOFF_CAP_SECONDS}
    delays = [backoff_seconds(n, **wait) for n in range(1, 6)]
    for n, delay in enumerate(delays, start=1):
        base = 5.0 * 2 ** (n - 1)
        assert base <= delay <= base * 1.25
    assert backoff_seconds(40, **wait) <= BACKOFF_CAP_SECONDS * 1.25
    assert backoff_seconds(1, retry_after=90, **wait) == 90


def test_one_run_records_a_batch_of_outbox_messages_each_once(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for order_id in ("B-1", "B-2", "B-3"):
        post(client, shop.auth, order_body(order_id))
    with caplog.at_level(logging.INFO, logger="partnerlink.receipts"):
        assert send_due_receipts(app.state.sessionmaker, settings) == 3
        assert send_due_receipts(app.state.sessionmaker, settings) == 0
    session.expire_all()
    sent = receipts(session)
    assert [r.status for r in sent] == ["sent"] * 3
    # The message id the outbox gives, written by the claiming statement itself.
    assert [r.provider_message_id for r in sent] == [f"outbox-{r.id}" for r in sent]
    assert all(r.attempts == 1 and r.lease_until is None and r.sent_at for r in sent)
    assert all("?k=" in r.link and "[redacted]" not in r.link for r in sent)  # kept whole
    assert [caplog.text.count(f"order {order_id} ") for order_id in ("B-1", "B-2", "B-3")] == [
        1,
        1,
        1,
    ]
