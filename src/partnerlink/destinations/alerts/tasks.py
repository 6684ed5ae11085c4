"""The worker task that emails a merchant when a destination needs them (CONTRACT §15).

Each run first compares every destination's state (queries.alert_state: needs
attention, stale, or neither) with `alert_state`, the one the merchant was last told
of, and moves it in one statement; a move into a state to tell of queues one email
(`destination_alerts`) in the same transaction, and drops any unsent email of the
state before. The email is tied to the change of state, not to a sync: retries and
later runs of a destination that stays broken queue nothing, and one that recovers
and breaks again gets a new email.

Without PARTNERLINK_SMTP_URL no email is queued, but `alert_state` still moves (the
console's banner reads it): an operator who sets up SMTP later does not have every
merchant emailed at once about old states; each is told at its next change.

Then a thread of its own (so that a mail server that refuses or hangs never holds the
worker loop, nor any sync) claims the due emails with a lease (partnerlink.jobs) and
sends them one by one, recording each at once: `sent_at` is written only while the
lease is held, in one statement, so two workers never both send one, and a sent one is
never claimed again. A refused or failed send is tried again with backoff, and given up
after GIVE_UP_SECONDS. The lease outlasts every step of every send of a batch at
PARTNERLINK_SMTP_TIMEOUT_SECONDS; only a worker killed between the server's answer and
its record leaves an email that may go out twice.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from partnerlink import jobs
from partnerlink.db.base import utcnow
from partnerlink.destinations.alerts import queries
from partnerlink.destinations.alerts.letters import compose
from partnerlink.destinations.alerts.mail import MailServer, NotSent, send
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.destinations.alerts")

STATE_BATCH = 500  # destinations whose state one run moves
SEND_BATCH = 5  # emails one claim takes
# An SMTP exchange's steps (connect, greeting, EHLO, STARTTLS, EHLO, AUTH, MAIL, RCPT,
# DATA, the message, QUIT), each waiting at most the timeout: the lease covers a batch.
STEPS_A_SEND = 12
# How often the states are compared: a destination that enters needs_attention is told
# of within seconds (one statement over `destinations` that moves only the rows that
# differ; at 30 s a merchant or a test watching the mailbox waited up to half a minute).
LOOK_AGAIN_SECONDS = 5.0
BACKOFF_BASE_SECONDS = 60.0
BACKOFF_CAP_SECONDS = 3600.0
GIVE_UP_SECONDS = 3 * 86400.0

_threads = jobs.JobThreads(1, name="ad-alerts")


def alert_destinations(sessions: sessionmaker[Session], settings: Settings) -> tuple[int, float]:
    """Moves the destinations' alert states and, with SMTP set, starts sending the due
    emails on the alerts' thread (unless it is still busy); answers how many states
    moved, and to look again in LOOK_AGAIN_SECONDS."""
    moved = move_alert_states(sessions, settings)
    if settings.smtp_url and _threads.idle() > 0:
        _threads.start(_send_logged, sessions, settings)
    return moved, LOOK_AGAIN_SECONDS


def _send_logged(sessions: sessionmaker[Session], settings: Settings) -> int:
    """send_due_alerts on the alerts' thread, whose failure nobody else would see (its
    claimed emails are taken again once their lease runs out)."""
    try:
        return send_due_alerts(sessions, settings)
    except Exception:
        log.exception("sending alerts failed; will retry")
        return 0


def wait_for_alerts(timeout: float = 60.0) -> None:
    """Until the sends started so far have ended (tests, the CLI)."""
    _threads.wait(timeout)


def move_alert_states(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Moves `alert_state` where the destination's state changed, queuing an email for
    each new state to tell of when SMTP is set; answers how many moved."""
    now = utcnow()
    with sessions.begin() as session:
        moved = queries.move_states(
            session, now=now, stale_hours=settings.ad_stale_hours, limit=STATE_BATCH
        )
        if moved and settings.smtp_url:
            queries.queue(session, moved, now=now)
    for row in moved:
        log.info("destination %s: alert state %s", row.id, row.alert_state or "cleared")
    return len(moved)


def send_due_alerts(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Claims up to SEND_BATCH due emails and sends them; answers how many were sent."""
    if not settings.smtp_url:
        return 0
    server = MailServer.from_url(settings.smtp_url)
    timeout = settings.smtp_timeout_seconds
    lease_seconds = SEND_BATCH * STEPS_A_SEND * timeout + 60
    with sessions.begin() as session:
        claimed = queries.claim(
            session, now=utcnow(), limit=SEND_BATCH, lease_seconds=lease_seconds
        )
        letters = queries.letters(session, [row.id for row in claimed]) if claimed else {}
    sent = 0
    down: str | None = None  # the server's failure: the rest of the batch is not tried
    for row in claimed:
        letter = letters.get(row.id)
        if letter is None:  # its destination was disconnected meanwhile (cascade)
            continue
        if down is not None:
            _failed(sessions, row, f"Not tried: {down}")
            continue
        message = compose(
            letter,
            sender=settings.effective_mail_from,
            stale_hours=settings.ad_stale_hours,
            public_url=settings.public_url,
        )
        try:
            send(server, message, timeout=timeout)
        except NotSent as error:
            _failed(sessions, row, error.words)
            down = error.words if error.server_down else None
            continue
        with sessions.begin() as session:
            recorded = queries.record(
                session,
                alert_id=row.id,
                lease_until=row.lease_until,
                sent_at=utcnow(),
                next_attempt_at=None,
                last_error=None,
            )
        sent += 1
        log.info("alert %s (%s) sent", row.id, letter.state)
        if not recorded:
            log.warning("alert %s was sent after its lease ran out", row.id)
    return sent


def _failed(sessions: sessionmaker[Session], row: Any, words: str) -> None:
    """Records the failure and when to try again: with backoff (the claim counted the
    attempt), or never once GIVE_UP_SECONDS have passed since the state changed."""
    now = utcnow()
    next_attempt: datetime | None = now + timedelta(
        seconds=jobs.backoff_seconds(
            row.attempts, base=BACKOFF_BASE_SECONDS, cap=BACKOFF_CAP_SECONDS
        )
    )
    if jobs.gave_up(row.created_at, now, GIVE_UP_SECONDS):
        tries = f"{row.attempts} {'try' if row.attempts == 1 else 'tries'}"
        next_attempt, words = None, f"Given up after {tries}. {words}"
    with sessions.begin() as session:
        queries.record(
            session,
            alert_id=row.id,
            lease_until=row.lease_until,
            next_attempt_at=next_attempt,
            last_error=words,
        )
    log.warning("alert %s not sent (try %s): %s", row.id, row.attempts, words)
