"""`partners create|update --webhook-url`, `partners rotate-webhook-secret`, `webhooks list`."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.settings import Settings
from partnerlink.webhooks.events import STORE_SETTINGS_UPDATED, record_event
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.registration import set_webhook_url
from tests.cli.conftest import RunCli
from tests.factories import create_partner

PUBLIC = "https://93.184.215.14/partnerlink/hooks"  # a public address: no DNS needed


def test_webhook_secret_is_shown_once_kept_on_update_and_rotated(
    cli: RunCli, cli_json: Callable[..., Any]
) -> None:
    created = cli_json(
        "partners", "create", "--name", "Hooked", "--pos-type", "hooked", "--webhook-url", PUBLIC
    )
    assert created["webhookUrl"] == PUBLIC
    secret = created["webhookSecret"]
    assert secret.startswith("whsec_") and len(secret) > 40
    updated = cli_json("partners", "update", created["clientId"], "--webhook-url", PUBLIC + "/v2")
    assert updated == {"clientId": created["clientId"], "webhookUrl": PUBLIC + "/v2"}
    rotated = cli_json("partners", "rotate-webhook-secret", created["clientId"])
    assert rotated["webhookSecret"].startswith("whsec_") and rotated["webhookSecret"] != secret
    # A partner registered without one gets a secret with its first URL.
    plain = cli_json("partners", "create", "--name", "Plain", "--pos-type", "plain")
    assert "webhookSecret" not in plain
    first = cli_json("partners", "update", plain["clientId"], "--webhook-url", PUBLIC)
    assert first["webhookSecret"].startswith("whsec_")
    listed = cli("partners", "list")
    assert secret not in listed.stdout and rotated["webhookSecret"] not in listed.stdout
    assert cli_json("webhooks", "list") == []
    assert cli_json("webhooks", "list", "--failed") == []


def test_private_or_odd_webhook_urls_are_refused_and_nothing_is_stored(
    cli: RunCli, cli_json: Callable[..., Any]
) -> None:
    for url in ("http://10.0.0.7/hooks", "ftp://pos.example.com"):
        done = cli(
            "partners",
            "create",
            "--name",
            "Bad",
            "--pos-type",
            "bad",
            "--webhook-url",
            url,
            "--json",
        )
        assert done.returncode != 0
        assert json.loads(done.stdout)["code"] == "invalid_field"
    assert cli_json("partners", "list") == []
    unknown = cli("partners", "update", "plk_ci_nobody", "--webhook-url", PUBLIC, "--json")
    assert unknown.returncode != 0 and json.loads(unknown.stdout)["code"] == "unknown_client"


def test_webhooks_retry_makes_a_failed_or_pending_event_due_now(
    cli: RunCli, cli_json: Callable[..., Any], session: Session, settings: Settings
) -> None:
    partner = create_partner(session, pos_type="hooked").partner
    set_webhook_url(session, settings, partner=partner, url=PUBLIC)

    def recorded(number: int) -> str:
        event_id = record_event(
            session,
            partner_id=partner.id,
            connection_id=f"connection-{number}",
            event_type=STORE_SETTINGS_UPDATED,
            data={"storeId": "store-1", "greenInvoices": True},
        )
        assert event_id is not None  # the partner has a webhook URL
        return event_id

    given_up, waiting, delivered = (recorded(number) for number in range(3))
    later = utcnow() + timedelta(hours=1)
    for event_id, status in ((given_up, "failed"), (waiting, "pending"), (delivered, "delivered")):
        session.execute(
            update(WebhookEvent)
            .where(WebhookEvent.event_id == event_id)
            .values(status=status, attempts=5, next_attempt_at=later)
        )
    session.commit()

    before = utcnow()
    for event_id in (given_up, waiting):
        retried = cli_json("webhooks", "retry", event_id)
        assert retried["eventId"] == event_id and retried["status"] == "pending"
        assert datetime.fromisoformat(retried["nextAttemptAt"]) < later
    stored = {e.event_id: e for e in session.scalars(select(WebhookEvent))}
    assert {stored[e].status for e in (given_up, waiting)} == {"pending"}
    assert all(before <= stored[e].next_attempt_at <= utcnow() for e in (given_up, waiting))
    assert stored[delivered].status == "delivered"
    session.rollback()  # the database back to the commands (SQLite has one writer)

    for event_id in (delivered, "evt_nobody"):
        refused = cli("webhooks", "retry", event_id)
        assert refused.returncode == 1 and refused.stdout == ""
        assert len(refused.stderr.strip().splitlines()) == 1 and event_id in refused.stderr
    as_json = cli("webhooks", "retry", "evt_nobody", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["code"] == "unknown_event"


def test_a_new_webhook_url_makes_pending_events_due_now(
    cli_json: Callable[..., Any], session: Session, settings: Settings
) -> None:
    created = cli_json(
        "partners", "create", "--name", "Hooked", "--pos-type", "hooked", "--webhook-url", PUBLIC
    )
    partner_id = session.scalar(select(Partner.id).where(Partner.client_id == created["clientId"]))
    assert partner_id is not None
    event_id = record_event(
        session,
        partner_id=partner_id,
        connection_id=None,
        event_type=STORE_SETTINGS_UPDATED,
        data={"storeId": "store-1", "greenInvoices": True},
    )
    session.execute(
        update(WebhookEvent)
        .where(WebhookEvent.event_id == event_id)
        .values(attempts=3, next_attempt_at=utcnow() + timedelta(hours=1))
    )
    session.commit()
    cli_json("partners", "update", created["clientId"], "--webhook-url", PUBLIC + "/fixed")
    update_answered_at = utcnow()
    [event] = session.scalars(select(WebhookEvent)).all()
    assert event.next_attempt_at <= update_answered_at
