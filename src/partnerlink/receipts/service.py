"""What happens to a text after it is sent: the provider's delivery status, and STOP.

Twilio reports each message's fate to its status callback (`delivered`,
`undelivered`, `failed`); the receipt takes it over. A phone that replies STOP
(or another of Twilio's opt-out words) is kept in `sms_stops`, as a keyed digest
of the number only (security/identifier_digests.py, CONTRACT §12): its pending
receipts become `suppressed`, and so does every later one, never sent
(`suppress_stopped`, run by the worker before it claims receipts). START
lifts the stop. Opting the customer out of audiences is the audiences' side
(audiences/sms_replies.py), which calls this module.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, delete, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.receipts.models import Receipt, SmsStop
from partnerlink.receipts.outbox import FAILED, PENDING, SENT
from partnerlink.security.identifier_digests import (
    identifier_digest,
    identifier_digest_sql,
    register_digest_function,
)

DELIVERED, UNDELIVERED, SUPPRESSED = "delivered", "undelivered", "suppressed"
# Twilio's final message statuses; the ones before them (queued, sending, sent) say
# nothing a receipt does not already show, and may arrive after a final one.
FINAL_STATUSES = frozenset({DELIVERED, UNDELIVERED, FAILED})
# A status callback may move a receipt only from these: never back from a final one,
# except `undelivered` → `delivered` (a carrier's late confirmation).
_MOVABLE_FROM = {
    DELIVERED: (SENT, UNDELIVERED),
    UNDELIVERED: (SENT,),
    FAILED: (SENT, UNDELIVERED),
}

# Twilio's default opt-out and opt-in words for long codes (its "Advanced Opt-Out"
# documentation): the whole trimmed body, in any case.
OPT_OUT_WORDS = frozenset(
    {"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPTOUT"}
)
OPT_IN_WORDS = frozenset({"START", "YES", "UNSTOP"})


def record_delivery_status(session: Session, *, message_id: str, status: str) -> bool:
    """The provider's final status of a message; answers whether a receipt changed."""
    if status not in FINAL_STATUSES:
        return False
    result = session.execute(
        update(Receipt)
        .where(
            Receipt.provider_message_id == message_id,
            Receipt.status.in_(_MOVABLE_FROM[status]),
        )
        .values(status=status)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


def reply_keyword(body: str | None) -> str | None:
    """`stop`, `start` or None for a reply's text (Twilio's words, whole body only)."""
    word = (body or "").strip().upper()
    if word in OPT_OUT_WORDS:
        return "stop"
    if word in OPT_IN_WORDS:
        return "start"
    return None


def stop_phone(session: Session, phone_e164: str, digest_key: bytes) -> int:
    """Stops texts to a phone; answers how many pending receipts were suppressed."""
    digest = identifier_digest(digest_key, phone_e164)
    if session.get(SmsStop, digest) is None:
        try:
            with session.begin_nested():
                session.add(SmsStop(phone_digest=digest, stopped_at=utcnow()))
        except IntegrityError:  # the same STOP, delivered twice at once
            pass
    result = session.execute(
        update(Receipt)
        .where(Receipt.status == PENDING, Receipt.to_phone == phone_e164)
        .values(status=SUPPRESSED, lease_until=None)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def start_phone(session: Session, phone_e164: str, digest_key: bytes) -> bool:
    """Lifts a stop; receipts suppressed meanwhile stay unsent (they were never wanted)."""
    digest = identifier_digest(digest_key, phone_e164)
    result = session.execute(delete(SmsStop).where(SmsStop.phone_digest == digest))
    return bool(getattr(result, "rowcount", 0))


def is_stopped(session: Session, phone_e164: str, digest_key: bytes) -> bool:
    return session.get(SmsStop, identifier_digest(digest_key, phone_e164)) is not None


def stopped_receipt(session: Session, digest_key: bytes) -> ColumnElement[bool] | None:
    """A receipt whose phone is on the STOP list, as SQL; None while the list is empty
    (then no receipt's digest needs computing)."""
    if session.scalar(select(SmsStop.phone_digest).limit(1)) is None:
        return None
    connection = session.connection()
    register_digest_function(connection, digest_key)
    digest = identifier_digest_sql(connection.dialect.name, digest_key, Receipt.to_phone)
    return exists(select(SmsStop.phone_digest).where(SmsStop.phone_digest == digest))


def suppress_stopped(session: Session, stopped: ColumnElement[bool] | None) -> int:
    """Suppresses pending receipts to stopped phones (run before each claim)."""
    if stopped is None:
        return 0
    result = session.execute(
        update(Receipt)
        .where(Receipt.status == PENDING, Receipt.to_phone.is_not(None), stopped)
        .values(status=SUPPRESSED, lease_until=None)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)
