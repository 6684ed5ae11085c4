"""One email for each change of a destination's state (CONTRACT §15, "Alerts"): on
entering `needs_attention`, or after PARTNERLINK_AD_STALE_HOURS with no successful sync;
never one per retry or per run; a new one after it recovers and breaks again."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.destinations import fake_meta
from tests.destinations.alerts.conftest import (
    SENDER,
    add_destination,
    alert_state,
    alerts_of,
    broken,
    change,
    hours_ago,
    run_alerts,
    with_smtp,
)
from tests.destinations.alerts.mail_servers import MailServer
from tests.destinations.sync_helpers import Syncing, meta_audience
from tests.factories import ConnectedStoreFixture
from tests.web.conftest import sign_in_console


def _refused_sync(syncing: Syncing, destination_id: str) -> None:
    """A sync asked for, whose token Meta refuses."""
    syncing.meta.expired_token_next()
    syncing.api.sync(destination_id)
    syncing.run()
    assert syncing.api.get(destination_id)["status"] == "needs_attention"


def test_a_refused_token_emails_the_merchant_once_and_again_only_after_a_recovery(
    syncing: Syncing, mail: MailServer, shop: ConnectedStoreFixture, session: Session
) -> None:
    meta, api, app = syncing.meta, syncing.api, syncing.app
    alerting = with_smtp(syncing.settings, mail.url)
    created = api.create(meta_audience())
    meta.expired_token_next()
    syncing.run()
    assert api.get(created["id"])["status"] == "needs_attention"

    assert run_alerts(app, alerting) == 1
    [received] = mail.recorder.received
    assert received.sender == "alerts@partnerlink.example"
    assert received.recipients == ["owner@example.com"]
    message = received.message
    assert message["To"] == "owner@example.com" and message["From"] == SENDER
    assert message["Message-ID"].endswith("@partnerlink.example>") and message["Date"]
    assert message["Auto-Submitted"] == "auto-generated"
    subject = str(message["Subject"])
    assert "Meta audience" in subject and "Bistro Group" in subject
    body = message.get_content()
    assert "Bistro Group" in body and 'Meta audience (segment "all")' in body
    assert "Meta answered HTTP 401" in body  # what happened, in lastError's words
    assert "give new credentials" in body.lower()  # what to do
    assert f"http://testserver/merchant/profiles/{shop.profile.id}/ad-platforms" in body
    whole = message.as_string()
    assert fake_meta.ACCESS_TOKEN not in whole and "someone@example.com" not in whole

    # Still refused on the next tries, and more runs of the task: no second email.
    for _ in range(2):
        _refused_sync(syncing, created["id"])
        assert run_alerts(app, alerting) == 0
    assert len(mail.recorder.received) == 1

    # New credentials, a sync that goes through: the state clears, no email.
    api.patch(created["id"], {"credentials": {"accessToken": fake_meta.ACCESS_TOKEN}})
    syncing.run()
    assert api.get(created["id"])["status"] == "active"
    assert run_alerts(app, alerting) == 1
    assert len(mail.recorder.received) == 1

    # Broken again (a new customer to send, refused): a new email.
    add_customer(session, shop.store, email="newcomer@example.com")
    session.commit()
    _refused_sync(syncing, created["id"])
    assert run_alerts(app, alerting) == 1
    assert len(mail.recorder.received) == 2
    assert "newcomer@example.com" not in mail.recorder.messages[1].as_string()


def test_no_sync_for_the_stale_hours_and_a_failed_try_since_is_one_email(
    app: FastAPI, session: Session, mailing: Settings, mail: MailServer, shop: ConnectedStoreFixture
) -> None:
    failing = add_destination(session, mailing, shop, last_sync_at=hours_ago(23), attempts=3)
    never = add_destination(
        session,
        mailing,
        shop,
        status="pending",
        last_sync_at=None,
        attempts=1,
        kind="conversions",
        segment=None,
        created_at=hours_ago(30),
    )
    assert run_alerts(app, mailing) == 1  # never synced in 30 hours; 23 hours is not yet 24
    assert alert_state(session, failing) is None

    change(session, failing, last_sync_at=hours_ago(25))
    assert run_alerts(app, mailing) == 1
    assert run_alerts(app, mailing) == 0
    assert {alert_state(session, failing), alert_state(session, never)} == {"stale"}
    subjects = sorted(str(m["Subject"]) for m in mail.recorder.messages)
    assert subjects == [
        "Bistro Group: your Meta audience has not synced for 24 hours",
        "Bistro Group: your Meta sales destination has not synced for 24 hours",
    ]
    assert all("keeps trying by itself" in m.get_content() for m in mail.recorder.messages)

    # It syncs again: cleared without an email; it then breaks for good: a new one.
    change(session, failing, last_sync_at=hours_ago(0), attempts=0)
    assert run_alerts(app, mailing) == 1
    assert alert_state(session, failing) is None
    change(session, failing, **broken())
    assert run_alerts(app, mailing) == 1
    assert alert_state(session, failing) == "needs_attention"
    assert len(mail.recorder.messages) == 3
    assert "Action needed" in str(mail.recorder.messages[-1]["Subject"])


def test_a_destination_not_tried_yet_is_not_stale(
    app: FastAPI, session: Session, mailing: Settings, mail: MailServer, shop: ConnectedStoreFixture
) -> None:
    """Synced less often than the stale hours, or just given new credentials (attempts
    reset, the sync due now): no failed try since the last sync, so nothing to tell."""
    slow = add_destination(
        session, mailing, shop, last_sync_at=hours_ago(30), next_attempt_at=hours_ago(-18)
    )
    fixed = add_destination(
        session,
        mailing,
        shop,
        status="pending",
        last_sync_at=hours_ago(40),
        next_attempt_at=hours_ago(0),
    )
    # ... unless the sync it waits for was due the stale hours ago and never ran.
    forgotten = add_destination(
        session, mailing, shop, last_sync_at=hours_ago(50), next_attempt_at=hours_ago(26)
    )
    assert run_alerts(app, mailing) == 1
    assert alert_state(session, slow) is None and alert_state(session, fixed) is None
    assert alert_state(session, forgotten) == "stale"
    assert len(mail.recorder.messages) == 1


def test_the_stale_hours_are_a_setting(
    app: FastAPI, session: Session, mailing: Settings, mail: MailServer, shop: ConnectedStoreFixture
) -> None:
    destination = add_destination(session, mailing, shop, last_sync_at=hours_ago(3), attempts=1)
    assert run_alerts(app, mailing) == 0
    assert run_alerts(app, mailing.model_copy(update={"ad_stale_hours": 2.5})) == 1
    assert alert_state(session, destination) == "stale"
    [message] = mail.recorder.messages
    assert "has not synced for 2.5 hours" in str(message["Subject"])


def test_without_smtp_the_banner_alone_and_old_news_is_never_sent(
    app: FastAPI,
    client: TestClient,
    session: Session,
    settings: Settings,
    mail: MailServer,
    shop: ConnectedStoreFixture,
) -> None:
    page_path = f"/merchant/profiles/{shop.profile.id}/ad-platforms"
    refused = add_destination(session, settings, shop, **broken())
    stale = add_destination(
        session,
        settings,
        shop,
        last_sync_at=hours_ago(48),
        attempts=2,
        kind="conversions",
        segment=None,
    )
    assert settings.smtp_url is None
    assert run_alerts(app, settings) == 2
    assert alerts_of(session, refused) == [] and alerts_of(session, stale) == []
    assert alert_state(session, refused) == "needs_attention"

    sign_in_console(client)
    page = client.get(page_path).text
    assert 'data-banner="sync-trouble"' in page
    assert "PartnerLink could not sync the Meta audience (segment all)" in page
    assert "PartnerLink has not been able to sync the Meta sales" in page

    # SMTP set up later: the merchant was shown these already; nothing is sent for them.
    assert run_alerts(app, with_smtp(settings, mail.url)) == 0
    assert mail.recorder.received == []


def test_an_email_not_yet_sent_is_dropped_when_the_state_moves_on(
    app: FastAPI, session: Session, settings: Settings, shop: ConnectedStoreFixture
) -> None:
    with MailServer() as mail:
        mail.recorder.refusal = "451 4.3.0 Try again later"
        mailing = with_smtp(settings, mail.url)
        destination = add_destination(session, mailing, shop, **broken())
        run_alerts(app, mailing)
        [alert] = alerts_of(session, destination)
        assert alert.sent_at is None and alert.attempts == 1

        change(
            session, destination, status="pending", last_error=None, next_attempt_at=hours_ago(0)
        )
        mail.recorder.refusal = None
        run_alerts(app, mailing)
        [alert] = alerts_of(session, destination)
        assert alert.sent_at is None and alert.next_attempt_at is None
        assert "state changed" in alert.last_error
        assert mail.recorder.received == []
