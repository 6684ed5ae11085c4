"""The touches table's statements (orders owns it: ARCHITECTURE.md, "Who owns which table").

An order's conversion class reads the touches inside the order's own upsert
(`queries.UPSERT_ORDER`), and `conversion.reclassify_customers` reads them again when
late data arrives; measurement, which imports orders, writes the touches a merchant
imports with `record_touches`, and audiences erases a person's with `erase_touches`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import delete, insert, or_
from sqlalchemy.orm import Session

from partnerlink.orders.models import Touch


def record_touches(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Inserts touches: dicts of Touch's columns (profile_id, campaign_id, email_sha256,
    phone_sha256, touched_at, imported_at)."""
    if rows:
        session.execute(insert(Touch), list(rows))


def erase_touches(session: Session, *, profile_id: str, hashes: Collection[str]) -> None:
    """Deletes the profile's touches that carry any of these identifier hashes."""
    session.execute(
        delete(Touch).where(
            Touch.profile_id == profile_id,
            or_(Touch.email_sha256.in_(hashes), Touch.phone_sha256.in_(hashes)),
        )
    )
