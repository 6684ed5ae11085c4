"""The touches table's statements (orders owns it: ARCHITECTURE.md, "Who owns which table").

An order's conversion class reads the touches inside the order's own upsert
(`queries.UPSERT_ORDER`), and `conversion.reclassify_customers` reads them again when
late data arrives; measurement, which imports orders, writes the touches a merchant
imports with `record_touches`, and audiences erases a person's with `erase_touches`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import delete, or_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from partnerlink.orders.models import Touch

# Rows per INSERT: 6 columns each stays far below SQLite's and PostgreSQL's parameter limits.
ROWS_PER_INSERT = 1000


def record_touches(session: Session, rows: Sequence[dict[str, Any]]) -> int:
    """Inserts touches: dicts of Touch's columns (profile_id, campaign_id, email_sha256,
    phone_sha256, touched_at, imported_at); how many were new.

    A touch equal to a stored one, or to an earlier one of `rows` (same profile, campaign,
    identifier hashes and time: the unique index `uq_touches_content`), is skipped by
    `ON CONFLICT DO NOTHING`, which also settles two imports racing with the same touch.
    """
    insert = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    new = 0
    for start in range(0, len(rows), ROWS_PER_INSERT):
        statement = (
            insert(Touch)
            .values(list(rows[start : start + ROWS_PER_INSERT]))
            .on_conflict_do_nothing()
            .returning(Touch.id)
        )
        new += len(session.execute(statement).all())
    return new


def erase_touches(session: Session, *, profile_id: str, hashes: Collection[str]) -> None:
    """Deletes the profile's touches that carry any of these identifier hashes."""
    session.execute(
        delete(Touch).where(
            Touch.profile_id == profile_id,
            or_(Touch.email_sha256.in_(hashes), Touch.phone_sha256.in_(hashes)),
        )
    )
