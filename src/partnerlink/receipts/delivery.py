"""What happens to a text after it is sent: the provider's delivery status, and STOP.

Twilio reports each message's fate to its status callback (`delivered`,
`undelivered`, `failed`); the receipt takes it over. A phone that replies STOP
(or another of Twilio's opt-out words) is kept in `sms_stops`: its pending
receipts become `suppressed`, and so does every later one, never sent
(`suppress_stopped`, run by the worker before it claims receipts). START
lifts the stop. Opting the customer out of audiences is the audiences' side
(audiences/sms_replies.py), which calls this module.
"""

from __future__ import annotations

from sqlalchemy import delete, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.orders.receipt_outbox import FAILED, PENDING, SENT
from partnerlink.receipts.models import Receipt, SmsStop

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


def stop_phone(session: Session, phone_e164: str) -> int:
    """Stops texts to a phone; answers how many pending receipts were suppressed."""
    if session.get(SmsStop, phone_e164) is None:
        try:
            with session.begin_nested():
                session.add(SmsStop(phone_number=phone_e164, stopped_at=utcnow()))
        except IntegrityError:  # the same STOP, delivered twice at once
            pass
    result = session.execute(
        update(Receipt)
        .where(Receipt.status == PENDING, Receipt.to_phone == phone_e164)
        .values(status=SUPPRESSED, lease_until=None)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def start_phone(session: Session, phone_e164: str) -> bool:
    """Lifts a stop; receipts suppressed meanwhile stay unsent (they were never wanted)."""
    result = session.execute(delete(SmsStop).where(SmsStop.phone_number == phone_e164))
    return bool(getattr(result, "rowcount", 0))


def is_stopped(session: Session, phone_e164: str) -> bool:
    return session.get(SmsStop, phone_e164) is not None


def suppress_stopped(session: Session) -> int:
    """Suppresses pending receipts to stopped phones (run before each claim)."""
    stopped = exists(select(SmsStop.phone_number).where(SmsStop.phone_number == Receipt.to_phone))
    result = session.execute(
        update(Receipt)
        .where(Receipt.status == PENDING, stopped)
        .values(status=SUPPRESSED, lease_until=None)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)
