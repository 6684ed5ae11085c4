"""The worker's alerts task tells of a destination that entered `needs_attention` within
seconds (CONTRACT §15, "Alerts"), not after half a minute: a merchant, or a black-box
test watching the mailbox after a refused token, gets the one email promptly."""

from __future__ import annotations

import time

from fastapi import FastAPI
from sqlalchemy.orm import Session

from partnerlink.destinations.alerts.tasks import alert_destinations
from partnerlink.settings import Settings
from partnerlink.worker import BackgroundWorker
from tests.destinations.alerts.conftest import add_destination, broken, change
from tests.destinations.alerts.mail_servers import MailServer
from tests.factories import ConnectedStoreFixture


def test_the_worker_emails_a_destination_that_needs_attention_within_seconds(
    app: FastAPI, session: Session, mailing: Settings, mail: MailServer, shop: ConnectedStoreFixture
) -> None:
    destination_id = add_destination(session, mailing, shop)
    worker = BackgroundWorker(app.state.sessionmaker, mailing)
    worker.tasks = [("ad alerts", alert_destinations)]
    worker.next_run = {"ad alerts": 0.0}
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while worker.next_run["ad alerts"] == 0.0 and time.monotonic() < deadline:
            time.sleep(0.05)  # the first pass: nothing to tell yet
        assert worker.next_run["ad alerts"] > 0.0 and not mail.recorder.received

        change(session, destination_id, **broken())  # the sync found the token refused
        entered = time.monotonic()
        while not mail.recorder.received and time.monotonic() - entered < 15:
            time.sleep(0.05)
        waited = time.monotonic() - entered
    finally:
        worker.stop()
    assert len(mail.recorder.received) == 1
    assert waited < 8, f"the email came {waited:.1f} s after the destination broke"
