"""Handing the alerts to a real SMTP server: STARTTLS with a log-in, TLS from the start;
a server that refuses, hangs or is not there (the alert is tried again with backoff,
the syncs go on, and it is sent once when the server works); two workers at once never
send one twice; the password shows nowhere."""

from __future__ import annotations

import logging
import ssl
import threading
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pydantic
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations.alerts import tasks
from partnerlink.destinations.alerts.tasks import (
    BACKOFF_BASE_SECONDS,
    alert_destinations,
    move_alert_states,
    send_due_alerts,
    wait_for_alerts,
)
from partnerlink.settings import Settings
from tests.conftest import free_port
from tests.destinations.alerts.conftest import (
    add_destination,
    alerts_of,
    broken,
    due_now,
    run_alerts,
    with_smtp,
)
from tests.destinations.alerts.mail_servers import (
    PASSWORD,
    USER,
    MailServer,
    SilentServer,
    self_signed,
    smtps_server,
    starttls_server,
)
from tests.destinations.sync_helpers import Syncing, meta_audience
from tests.factories import ConnectedStoreFixture


@pytest.fixture
def trusted_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A self-signed certificate for 127.0.0.1, trusted as the system's authorities are
    (OpenSSL reads SSL_CERT_FILE whenever a default context is made)."""
    context, cert_file = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    return context


@pytest.mark.parametrize("password", [PASSWORD, f"not-{PASSWORD}"])
def test_starttls_and_a_log_in(
    app: FastAPI,
    session: Session,
    settings: Settings,
    shop: ConnectedStoreFixture,
    trusted_tls: ssl.SSLContext,
    caplog: pytest.LogCaptureFixture,
    password: str,
) -> None:
    """The right password: sent over TLS, logged in. A wrong one: tried again later, and
    the password (either) is never in the alert's error nor in the logs."""
    caplog.set_level(logging.DEBUG)
    with starttls_server(trusted_tls, f"{USER}:{quote(password)}@") as mail:
        mailing = with_smtp(settings, mail.url)
        assert password not in repr(mailing)
        destination = add_destination(session, mailing, shop, **broken())
        run_alerts(app, mailing)
        received = mail.recorder.received
    [alert] = alerts_of(session, destination)
    if password == PASSWORD:
        [message] = received
        assert message.over_tls and message.logged_in
        assert message.recipients == ["owner@example.com"] and alert.sent_at is not None
    else:
        assert received == [] and alert.sent_at is None and alert.attempts == 1
        assert alert.last_error.startswith(
            "The mail server refused the user name and password: 535"
        )
    for shown in (PASSWORD, quote(PASSWORD)):
        assert shown not in caplog.text and shown not in str(alert.last_error)


def test_no_password_goes_in_clear(
    app: FastAPI, session: Session, settings: Settings, shop: ConnectedStoreFixture
) -> None:
    with MailServer(userinfo=f"{USER}:{quote(PASSWORD)}@") as mail:
        mailing = with_smtp(settings, mail.url)
        destination = add_destination(session, mailing, shop, **broken())
        run_alerts(app, mailing)
        [alert] = alerts_of(session, destination)
        assert mail.recorder.received == []
    assert alert.sent_at is None and "does not offer STARTTLS" in alert.last_error


def test_tls_from_the_start(
    app: FastAPI,
    session: Session,
    settings: Settings,
    shop: ConnectedStoreFixture,
    trusted_tls: ssl.SSLContext,
) -> None:
    with smtps_server(trusted_tls) as mail:
        assert mail.url.startswith("smtps://")
        add_destination(session, settings, shop, **broken())
        run_alerts(app, with_smtp(settings, mail.url))
        [received] = mail.recorder.received
        assert received.over_tls


def test_an_untrusted_certificate_is_not_sent_to(
    app: FastAPI, session: Session, settings: Settings, shop: ConnectedStoreFixture, tmp_path: Path
) -> None:
    context, _ = self_signed(tmp_path)  # not in SSL_CERT_FILE
    with smtps_server(context) as mail:
        destination = add_destination(session, settings, shop, **broken())
        run_alerts(app, with_smtp(settings, mail.url))
        assert mail.recorder.received == []
    [alert] = alerts_of(session, destination)
    assert "certificate was not trusted" in alert.last_error


def test_a_refusing_server_leaves_the_sync_alone_and_gets_the_alert_once_it_takes_it(
    syncing: Syncing, mail: MailServer
) -> None:
    meta, api, app = syncing.meta, syncing.api, syncing.app
    alerting = with_smtp(syncing.settings, mail.url)
    mail.recorder.refusal = "550 5.7.1 Relaying denied"
    refused = api.create(meta_audience())
    meta.expired_token_next()
    syncing.run()
    healthy = api.create(meta_audience(segment="buyers"))

    before = utcnow()
    run_alerts(app, alerting)
    session = app.state.sessionmaker()
    [alert] = alerts_of(session, refused["id"])
    assert alert.sent_at is None and alert.attempts == 1
    assert alert.last_error == "The mail server refused the recipient: 550 5.7.1 Relaying denied."
    assert alert.next_attempt_at >= before + timedelta(seconds=BACKOFF_BASE_SECONDS)
    # The syncs go on.
    syncing.run()
    assert api.get(healthy["id"])["status"] == "active"

    # Not before its backoff ran out; then sent once, and never again.
    mail.recorder.refusal = None
    run_alerts(app, alerting)
    assert mail.recorder.received == []
    due_now(session)
    for _ in range(3):
        run_alerts(app, alerting)
    assert len(mail.recorder.received) == 1
    [alert] = alerts_of(session, refused["id"])
    assert alert.sent_at is not None and alert.attempts == 2 and alert.next_attempt_at is None
    session.close()


def test_a_hanging_server_holds_neither_the_worker_nor_the_alert(
    app: FastAPI, session: Session, settings: Settings, shop: ConnectedStoreFixture
) -> None:
    with SilentServer() as silent, MailServer() as mail:
        hanging = with_smtp(settings, silent.url, smtp_timeout_seconds=3.0)
        destination = add_destination(session, settings, shop, **broken())
        started = time.monotonic()
        alert_destinations(app.state.sessionmaker, hanging)
        assert time.monotonic() - started < 2.5  # the worker loop goes on meanwhile
        wait_for_alerts(timeout=60)
        [alert] = alerts_of(session, destination)
        assert alert.sent_at is None and alert.attempts == 1
        assert alert.last_error == f"The mail server {silent.url[7:]} did not answer within 3 s."

        due_now(session)
        run_alerts(app, with_smtp(settings, mail.url))
        assert len(mail.recorder.received) == 1


def test_nothing_listening_is_retried(
    app: FastAPI, session: Session, settings: Settings, shop: ConnectedStoreFixture
) -> None:
    nowhere = with_smtp(settings, f"smtp://127.0.0.1:{free_port()}")
    first = add_destination(session, settings, shop, **broken())
    second = add_destination(session, settings, shop, **broken())
    run_alerts(app, nowhere)
    alerts = alerts_of(session, first) + alerts_of(session, second)
    # The first try found no server: the other waits too, untried.
    assert sorted(alert.last_error.split(":")[0] for alert in alerts) == [
        "Not tried",
        "Nothing answered at 127.0.0.1",
    ]
    assert all(alert.sent_at is None and alert.next_attempt_at > utcnow() for alert in alerts)


def test_an_alert_is_given_up_after_three_days(
    app: FastAPI, session: Session, settings: Settings, shop: ConnectedStoreFixture
) -> None:
    nowhere = with_smtp(settings, f"smtp://127.0.0.1:{free_port()}")
    destination = add_destination(session, settings, shop, **broken())
    move_alert_states(app.state.sessionmaker, nowhere)
    session.execute(
        text("UPDATE destination_alerts SET created_at = :then"),
        {"then": utcnow() - timedelta(days=3, minutes=1)},
    )
    session.commit()
    run_alerts(app, nowhere)
    [alert] = alerts_of(session, destination)
    assert alert.next_attempt_at is None and alert.sent_at is None
    assert alert.last_error.startswith("Given up after 1 try. Nothing answered")


def test_two_workers_at_once_never_send_an_alert_twice(
    app: FastAPI,
    session: Session,
    settings: Settings,
    shop: ConnectedStoreFixture,
    mail: MailServer,
) -> None:
    mailing = with_smtp(settings, mail.url)
    destinations = [add_destination(session, settings, shop, **broken()) for _ in range(12)]
    mail.recorder.delay = 0.05  # each send takes a while: the workers overlap
    sessions = app.state.sessionmaker
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            barrier.wait()
            move_alert_states(sessions, mailing)
            while send_due_alerts(sessions, mailing):
                pass
        except BaseException as error:  # reported by the test, not lost in the thread
            errors.append(error)

    workers = [threading.Thread(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not errors
    bodies = [message.get_content() for message in mail.recorder.messages]
    assert len(bodies) == len(destinations)  # one each: none twice, none lost
    for destination in destinations:
        [alert] = alerts_of(session, destination)
        assert alert.sent_at is not None and alert.attempts == 1


def test_a_failure_on_the_alerts_thread_is_logged_and_the_alert_taken_again(
    app: FastAPI,
    session: Session,
    mailing: Settings,
    shop: ConnectedStoreFixture,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fails(*_: object) -> int:
        raise RuntimeError("the database went away")

    add_destination(session, mailing, shop, **broken())
    monkeypatch.setattr(tasks, "send_due_alerts", fails)
    assert run_alerts(app, mailing) == 1
    assert "sending alerts failed" in caplog.text and "the database went away" in caplog.text


@pytest.mark.parametrize(
    "url",
    [
        "http://alerts:secret-pw@mail.example.com",
        "smtp://alerts:secret-pw@",
        "smtp://alerts:secret-pw@mail.example.com:port",
    ],
)
def test_a_wrong_smtp_url_is_refused_at_start_without_its_password(url: str) -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        Settings(smtp_url=url)
    assert "secret-pw" not in str(refused.value)
    assert "smtp_url" in str(refused.value)


def test_the_sender_must_be_an_address() -> None:
    with pytest.raises(pydantic.ValidationError):
        Settings(mail_from="PartnerLink")
    assert Settings(smtp_url="smtp://mail.example.com").effective_mail_from.endswith(
        "<noreply@localhost>"
    )
