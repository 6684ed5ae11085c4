"""The receipts' look-ups: the order behind a receipt link, and the messages sent."""

from __future__ import annotations

from sqlalchemy import ScalarSelect, select
from sqlalchemy.orm import Session

from partnerlink.receipts.models import Receipt
from partnerlink.security.secrets import digest

MAX_KEY_LENGTH = 100


def order_pk_of_link(*, order_id: str, key: str | None) -> ScalarSelect[int] | None:
    """The order behind a receipt link, as a subquery for the page's one statement;
    None when the key cannot be one of ours.

    The look-up is by the key's SHA-256 digest, an exact match on a value derived
    from a 128-bit secret, so timing reveals nothing usable. The link's order id
    must be the receipt's own.
    """
    if not key or len(key) > MAX_KEY_LENGTH:
        return None
    return (
        select(Receipt.order_pk)
        .where(Receipt.key_hash == digest(key), Receipt.order_id == order_id)
        .scalar_subquery()
    )


def list_messages(session: Session, *, limit: int) -> list[Receipt]:
    """The receipt messages, newest first (`partnerlink sms list`)."""
    return list(
        session.scalars(
            select(Receipt).order_by(Receipt.created_at.desc(), Receipt.id.desc()).limit(limit)
        )
    )
