"""Migration 0034: campaigns get their windows, touches their kind and the end of their
window, orders the kind of the touch that attributed them; stored classes hold.

Built on a database of its own at 0033; upgraded to the head and back down.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, select, text
from sqlalchemy.orm import Session

from partnerlink.db.engine import make_engine
from partnerlink.db.migrate import alembic_config, upgrade
from partnerlink.orders.models import Touch
from tests.factories import create_merchant_account, create_profile, create_store
from tests.migrations import database_at

PREVIOUS = "0033"
# Both with fractions of a second; the second a moment before midnight, which SQLite's
# date functions would round into the next day.
TOUCHED = [
    datetime(2024, 5, 2, 12, 0, 0, 250000, tzinfo=UTC),
    datetime(2024, 2, 27, 23, 59, 59, 999999, tzinfo=UTC),
]


@pytest.fixture
def database_before(tmp_path: Path) -> Iterator[str]:
    with database_at(PREVIOUS, tmp_path) as url:
        yield url


def _fill(url: str) -> None:
    engine = make_engine(url)
    with Session(engine) as session:
        profile = create_profile(session, create_merchant_account(session))
        store = create_store(session, profile)
        ids = {"profile": profile.id, "store": store.id}
    times = {f"t{i}": at.strftime("%Y-%m-%d %H:%M:%S.%f+00") for i, at in enumerate(TOUCHED)}
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO campaigns (profile_id, campaign_id, name, starts_at, holdout_percent,"
                " salt, created_at) VALUES (:profile, 'spring', 'Spring', :t0, 0, :salt, :t0)"
            ),
            {**ids, **times, "salt": b"s" * 32},
        )
        for n, campaign in enumerate(("spring", "unnamed")):
            conn.execute(
                text(
                    "INSERT INTO touches (profile_id, campaign_id, email_sha256, touched_at,"
                    f" imported_at) VALUES (:profile, :campaign, 'h', :t{n}, :t{n})"
                ),
                {**ids, **times, "campaign": campaign},
            )
        attributed: tuple[tuple[str, str | None], ...] = (("A-1", "spring"), ("A-2", None))
        for order_id, campaign_id in attributed:
            conn.execute(
                text(
                    "INSERT INTO orders (store_id, profile_id, partner_id, order_id, order_price,"
                    " order_currency, ordered_at, details, conversion, campaign_id, received_at,"
                    " updated_at) VALUES (:store, :profile, 'p', :order_id, 100, 'USD', :t0,"
                    " '{}', :conversion, :campaign, :t0, :t0)"
                ),
                {
                    **ids,
                    **times,
                    "order_id": order_id,
                    "campaign": campaign_id,
                    "conversion": "new" if campaign_id else "organic",
                },
            )
    engine.dispose()


@pytest.mark.parametrize(("setting", "days"), [(None, 7), ("14", 14), ("365", 90)])
def test_0034_gives_every_campaign_and_touch_the_window_that_applied(
    database_before: str, monkeypatch: pytest.MonkeyPatch, setting: str | None, days: int
) -> None:
    if setting is None:
        monkeypatch.delenv("PARTNERLINK_ATTRIBUTION_WINDOW_DAYS", raising=False)
    else:
        monkeypatch.setenv("PARTNERLINK_ATTRIBUTION_WINDOW_DAYS", setting)
    _fill(database_before)

    upgrade(database_before)
    engine = make_engine(database_before)
    with engine.connect() as conn:
        windows = conn.execute(text("SELECT click_window_days, view_window_days FROM campaigns"))
        assert windows.all() == [(days, 1)]
        kinds = conn.execute(text("SELECT order_id, touch_kind FROM orders ORDER BY order_id"))
        assert kinds.all() == [("A-1", "click"), ("A-2", None)]
        if engine.dialect.name == "postgresql":  # room for re-classified rows in their page
            options = (
                "SELECT relname, reloptions FROM pg_class"
                " WHERE relname IN ('orders', 'touches') ORDER BY relname"
            )
            assert [tuple(row) for row in conn.execute(text(options))] == [
                ("orders", ["fillfactor=90"]),
                ("touches", ["fillfactor=50"]),  # since migration 0038 (half free)
            ]
    with Session(engine) as session:
        touches = session.execute(
            select(Touch.campaign_id, Touch.kind, Touch.touched_at, Touch.counts_until).order_by(
                Touch.id
            )
        ).all()
    # A touch of a campaign that does not exist gets the same window.
    assert touches == [
        (campaign, "click", at, at + timedelta(days=days))
        for campaign, at in zip(("spring", "unnamed"), TOUCHED, strict=True)
    ]
    engine.dispose()

    command.downgrade(alembic_config(database_before), PREVIOUS)
    engine = make_engine(database_before)
    inspector = inspect(engine)
    assert "kind" not in {c["name"] for c in inspector.get_columns("touches")}
    assert "touch_kind" not in {c["name"] for c in inspector.get_columns("orders")}
    # The expression index is kept (the inspector does not reflect it on SQLite).
    indexes = (
        "SELECT indexname FROM pg_indexes WHERE tablename = 'touches'"
        if engine.dialect.name == "postgresql"
        else "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'touches'"
    )
    with engine.connect() as conn:
        assert "uq_touches_content" in conn.execute(text(indexes)).scalars().all()
    engine.dispose()
