"""Keyset pages (db/pages.py) over a real table: ties on the first key, items added meanwhile."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.pages import keyset_page
from partnerlink.problems import ValidationFailed
from partnerlink.tokens.models import Connection
from tests.factories import create_connected_store, create_store

SAME_MOMENT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _walk(session: Session, partner_id: str, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = keyset_page(
            session,
            select(Connection).where(Connection.partner_id == partner_id),
            key=(Connection.created_at, Connection.id),
            limit=limit,
            cursor=cursor,
        )
        seen += [c.id for c in page.items]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_ties_on_the_timestamp_are_broken_by_the_id_and_never_repeat(session: Session) -> None:
    shop = create_connected_store(session)
    for number in range(6):
        store = create_store(session, shop.profile, name=f"Store {number}")
        session.add(
            Connection(
                store_id=store.id,
                profile_id=store.profile_id,
                partner_id=shop.partner.partner.id,
                method="pairing",
                created_at=SAME_MOMENT,
            )
        )
    session.commit()

    for limit in (1, 2, 4, 7, 100):
        seen = _walk(session, shop.partner.partner.id, limit)
        assert len(seen) == 7 and len(set(seen)) == 7


def test_a_full_last_page_answers_no_next_cursor_only_when_nothing_follows(
    session: Session,
) -> None:
    shop = create_connected_store(session)
    page = keyset_page(
        session,
        select(Connection).where(Connection.partner_id == shop.partner.partner.id),
        key=(Connection.created_at, Connection.id),
        limit=1,
        cursor=None,
    )
    assert len(page.items) == 1 and page.next_cursor is None


def test_a_cursor_of_another_shape_is_refused_as_invalid_field(session: Session) -> None:
    with pytest.raises(ValidationFailed) as refused:
        keyset_page(
            session,
            select(Connection),
            key=(Connection.created_at, Connection.id),
            limit=10,
            cursor="WzFd",  # [1]: an integer key, not (createdAt, id)
        )
    assert refused.value.errors == [{"field": "cursor", "message": "not a cursor of this list"}]
