"""What a slow receiver can do to deliveries (CONTRACT.md §12): an attempt lasts at most
10 s from connect to the receiver's last byte, an event is never sent again while an
earlier attempt of it is open, and one partner's slow receiver does not hold up another
partner's events by more than 15 s. The receivers are real local servers; the bounds
are the service's own, not shortened for the tests."""

from __future__ import annotations

import socket
import time

import httpcore
import pytest
from fastapi import FastAPI
from sqlalchemy.orm import Session

from partnerlink.settings import Settings
from partnerlink.webhooks.addresses import AttemptStream
from partnerlink.webhooks.events import STORE_SETTINGS_UPDATED, record_event
from partnerlink.webhooks.registration import set_webhook_url
from partnerlink.webhooks.tasks import (
    PER_PARTNER_DELIVERIES,
    POOL_THREADS,
    deliver_due_webhooks,
    wait_for_deliveries,
)
from tests.factories import create_partner
from tests.webhooks.conftest import events
from tests.webhooks.receiver import Receiver, start_trickler


def a_partner_with_events(
    session: Session, settings: Settings, *, pos_type: str, url: str, queues: int
) -> str:
    """A partner whose webhook URL is `url`, with one due event in each of `queues`
    connections' queues; its id."""
    partner = create_partner(session, pos_type=pos_type).partner
    set_webhook_url(session, settings, partner=partner, url=url)
    for number in range(queues):
        record_event(
            session,
            partner_id=partner.id,
            connection_id=f"{pos_type}-connection-{number}",
            event_type=STORE_SETTINGS_UPDATED,
            data={"storeId": f"store-{number}", "greenInvoices": True},
        )
    session.commit()
    return partner.id


@pytest.mark.slow
def test_a_trickling_receiver_is_cut_off_at_10_s_and_retried_never_twice_at_once(
    app: FastAPI, session: Session, hook_settings: Settings
) -> None:
    trickler = start_trickler(byte_seconds=1.0)  # its whole answer would take 70 s
    try:
        a_partner_with_events(session, hook_settings, pos_type="slow", url=trickler.url, queues=1)
        give_up_at = time.monotonic() + 16
        while len(trickler.accepted) < 2:  # as the worker polls, but more often
            assert time.monotonic() < give_up_at, "the first attempt was not cut off"
            deliver_due_webhooks(app.state.sessionmaker, hook_settings)
            time.sleep(0.05)
        first_attempt = trickler.closed_after[0]
        assert 9.0 < first_attempt < 11.0
        assert trickler.accepted[1] - trickler.accepted[0] >= first_attempt  # after it ended
        assert trickler.most_open == 1  # never two attempts of the event at once
        [event] = events(session)
        assert event.status == "pending" and event.attempts == 2
        assert "cut off" in (event.last_error or "")
    finally:
        trickler.close()  # the open attempt sees the answer end, and is recorded
        wait_for_deliveries()
    assert max(trickler.closed_after) < 11.0


def test_a_slow_partner_does_not_hold_up_another_partners_event(
    app: FastAPI, session: Session, hook_settings: Settings, receiver: Receiver
) -> None:
    trickler = start_trickler(byte_seconds=1.0)
    try:
        # More of the slow partner's connections waiting than the pool has threads,
        # every one older than the quick partner's event.
        a_partner_with_events(
            session, hook_settings, pos_type="slow", url=trickler.url, queues=POOL_THREADS + 8
        )
        a_partner_with_events(session, hook_settings, pos_type="quick", url=receiver.url, queues=1)
        started = time.monotonic()
        while not receiver.received:
            assert time.monotonic() - started < 15, "the quick partner waited for the slow one"
            deliver_due_webhooks(app.state.sessionmaker, hook_settings)
            time.sleep(0.05)
        assert 0 < trickler.most_open <= PER_PARTNER_DELIVERIES
    finally:
        trickler.close()
        wait_for_deliveries()


def test_at_the_deadline_the_connection_is_shut_whatever_it_waits_in() -> None:
    """The backstop behind the per-read limit: a wait the limit does not cover (a TLS
    record or handshake trickled a byte at a time) ends at the deadline too."""
    ours, theirs = socket.socketpair()
    stream = AttemptStream(ours, time.monotonic() + 1.0)
    try:
        started = time.monotonic()
        ours.settimeout(None)  # a wait with no limit of its own
        assert ours.recv(1) == b""  # woken: the connection is shut
        assert 0.9 < time.monotonic() - started < 2.0
        with pytest.raises(httpcore.ReadTimeout):
            stream.read(1)
    finally:
        stream.close()
        theirs.close()
    assert ours.fileno() == -1
