"""The alerts' tests: a real SMTP server per test, and destinations put in a state by
writing their columns as the sync would."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations.alerts.tasks import alert_destinations, wait_for_alerts
from partnerlink.destinations.models import Destination, DestinationAlert
from partnerlink.destinations.service import seal_credentials
from partnerlink.settings import Settings
from tests.destinations import fake_meta
from tests.destinations.alerts.mail_servers import MailServer
from tests.factories import ConnectedStoreFixture

SENDER = "PartnerLink <alerts@partnerlink.example>"


@pytest.fixture
def mail() -> Iterator[MailServer]:
    with MailServer() as server:
        yield server


def with_smtp(settings: Settings, url: str | None, **more: Any) -> Settings:
    return settings.model_copy(
        update={"smtp_url": url, "mail_from": SENDER, "smtp_timeout_seconds": 2.0, **more}
    )


@pytest.fixture
def mailing(settings: Settings, mail: MailServer) -> Settings:
    return with_smtp(settings, mail.url)


def run_alerts(app: FastAPI, settings: Settings) -> int:
    """One worker pass of the alerts' task, its sends waited for; answers how many
    destinations' states moved."""
    moved, _again = alert_destinations(app.state.sessionmaker, settings)
    wait_for_alerts(timeout=60)
    return moved


def add_destination(
    session: Session, settings: Settings, shop: ConnectedStoreFixture, **columns: Any
) -> str:
    """A Meta audience destination of the shop's profile (the `all` segment), with the
    columns given (status, last_sync_at, attempts, ...) as a sync would leave them."""
    values: dict[str, Any] = {
        "profile_id": shop.profile.id,
        "platform": "meta",
        "kind": "audience",
        "segment": "all",
        "target": {"audienceId": fake_meta.AUDIENCE_ID},
        "credentials_sealed": "",
        "status": "active",
        "last_sync_at": utcnow(),
        "next_attempt_at": utcnow() + timedelta(minutes=15),
        **columns,
    }
    destination = Destination(**values)
    session.add(destination)
    session.flush()
    destination.credentials_sealed = seal_credentials(
        settings.signing_key, destination.id, {"accessToken": fake_meta.ACCESS_TOKEN}
    )
    session.commit()
    return destination.id


def change(session: Session, destination_id: str, **columns: Any) -> None:
    """Writes the destination's columns behind the application's back, and commits."""
    destination = session.get(Destination, destination_id)
    assert destination is not None
    for name, value in columns.items():
        setattr(destination, name, value)
    session.commit()


def broken(message: str = "Meta answered HTTP 401, error 190/463.") -> dict[str, Any]:
    """The columns of a destination whose credentials the platform refused."""
    return {
        "status": "needs_attention",
        "next_attempt_at": None,
        "last_error": {
            "code": "credentials_refused",
            "message": f"{message} Connect again with a new access token.",
        },
    }


def hours_ago(hours: float) -> datetime:
    return utcnow() - timedelta(hours=hours)


def alerts_of(session: Session, destination_id: str) -> list[Any]:
    """The destination's alert rows (plain rows: nothing to reload later), oldest first."""
    rows = session.execute(
        select(DestinationAlert.__table__)
        .where(DestinationAlert.destination_id == destination_id)
        .order_by(DestinationAlert.id)
    ).all()
    session.rollback()  # the SQLite test database has one connection: give it back
    return list(rows)


def alert_state(session: Session, destination_id: str) -> str | None:
    state = session.scalar(select(Destination.alert_state).where(Destination.id == destination_id))
    session.rollback()
    return state


def due_now(session: Session) -> None:
    """Every unsent alert waiting out its backoff is due at once."""
    for alert in session.scalars(
        select(DestinationAlert).where(
            DestinationAlert.sent_at.is_(None), DestinationAlert.next_attempt_at.is_not(None)
        )
    ):
        alert.next_attempt_at = utcnow() - timedelta(seconds=1)
    session.commit()
