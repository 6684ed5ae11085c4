"""Receipt keys at rest (CONTRACT §12): only digests once Twilio has the message.

Migration 0016 takes the key out of the stored texts of receipts Twilio had before the
worker began to strip it; the outbox's texts and unsent receipts keep theirs."""

from __future__ import annotations

from typing import Any

from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.db.migrate import alembic_config
from partnerlink.receipts.models import Receipt
from partnerlink.receipts.tasks import send_due_receipts
from partnerlink.security.secrets import digest
from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, post, receipts
from tests.receipts.fake_twilio import FakeTwilio


def run_migration_0016(database_url: str, session: Session) -> None:
    """Only migration 0016's upgrade, on the database as it is (whatever the chain)."""
    script = ScriptDirectory.from_config(alembic_config(database_url)).get_revision("0016")
    assert script is not None and script.module is not None
    connection = session.connection()
    with Operations.context(MigrationContext.configure(connection)):
        script.module.upgrade()
    session.commit()


def test_migration_0016_removes_the_key_from_texts_twilio_already_has(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
    database_url: str,
) -> None:
    for order_id in ("T-1", "T-2", "T-3"):
        post(client, shop.auth, order_body(order_id, customerPhoneNumber="+14155550123"))
    whole = {r.id: (r.link, r.body) for r in receipts(session)}
    sent_id, delivered_id, pending_id = sorted(whole)
    # T-1 and T-2 went to Twilio; T-3 waits for its first attempt.
    session.execute(update(Receipt).where(Receipt.id == pending_id).values(status="on-hold"))
    session.commit()
    assert send_due_receipts(app.state.sessionmaker, twilio_settings) == 2
    # As a row written before the worker stripped keys: the text Twilio had, key and all.
    for receipt_id, status in (
        (sent_id, "sent"),
        (delivered_id, "delivered"),
        (pending_id, "pending"),
    ):
        link, body = whole[receipt_id]
        session.execute(
            update(Receipt)
            .where(Receipt.id == receipt_id)
            .values(link=link, body=body, status=status)
        )
    session.commit()

    run_migration_0016(database_url, session)

    session.expire_all()
    after = {r.id: r for r in receipts(session)}
    for receipt_id in (sent_id, delivered_id):
        link, body = whole[receipt_id]
        key = link.split("?k=")[1]
        assert after[receipt_id].link == link.replace(key, "[redacted]")
        assert after[receipt_id].body == body.replace(key, "[redacted]")
        assert after[receipt_id].key_hash == digest(key)
        assert client.get(link).status_code == 200  # the customer's link still opens
    assert (after[pending_id].link, after[pending_id].body) == whole[pending_id]


def test_migration_0016_keeps_the_outbox_messages_whole(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    settings: Settings,
    database_url: str,
) -> None:
    post(client, shop.auth, order_body("O-1"))
    assert send_due_receipts(app.state.sessionmaker, settings) == 1
    [before] = receipts(session)

    run_migration_0016(database_url, session)

    session.expire_all()
    [after] = receipts(session)
    assert (after.link, after.body, after.status) == (before.link, before.body, "sent")
    assert "?k=" in after.link and "[redacted]" not in after.link
