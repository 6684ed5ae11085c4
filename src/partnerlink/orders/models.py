"""Orders streamed by partners, and the ad touches that classify them.

orders owns the touches table (ARCHITECTURE.md, "Who owns which table"): an order's
conversion class is read from it inside the order's own upsert, and measurement,
which imports orders, writes the touches a merchant imports through orders/touches.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, UTCDateTime, utcnow

DEFAULT_CLICK_WINDOW_DAYS = 7  # PARTNERLINK_ATTRIBUTION_WINDOW_DAYS' default


def _default_window_end(context: Any) -> datetime:
    touched_at: datetime = context.get_current_parameters()["touched_at"]
    return touched_at + timedelta(days=DEFAULT_CLICK_WINDOW_DAYS)


class Order(Base):
    __tablename__ = "orders"
    __table_args__ = (
        # Each partner connected to a store has its own order ids (CONTRACT.md §6); the
        # upsert's ON CONFLICT and GET /v1/orders look orders up by this key. It carries
        # profile_id, the distribution column (migration 0025; on SQLite a unique index
        # beside the older key without it).
        UniqueConstraint(
            "store_id",
            "partner_id",
            "order_id",
            "profile_id",
            name="uq_orders_store_partner_order_profile",
        ),
        Index("ix_orders_store_created", "store_id", "ordered_at"),
        Index("ix_orders_customer", "customer_id", "ordered_at"),
        # Results (measurement/): a profile's orders in a period.
        Index("ix_orders_profile_ordered", "profile_id", "ordered_at"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"))
    # On PostgreSQL the store key (store_id, profile_id) implies this one: 0033 dropped it there.
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    # The partner of the connection whose token sent the order (its key: CONTRACT.md §6).
    # No foreign key, like uploads.connection_id: on PostgreSQL the check would share-lock
    # the partner's one row for every new order of all its stores, on the hottest path;
    # the token look-up that admits an order has just read the partner's connection.
    partner_id: Mapped[str] = mapped_column(String(36))
    order_id: Mapped[str] = mapped_column(String(200))  # the partner's id
    order_price: Mapped[int] = mapped_column(BigInteger)  # minor units
    order_currency: Mapped[str] = mapped_column(String(3))
    order_status: Mapped[str | None] = mapped_column(String(50))
    order_type: Mapped[str | None] = mapped_column(String(200))
    ordered_at: Mapped[datetime] = mapped_column(UTCDateTime)  # the order's createdAt
    # createdAt's own UTC offset: the receipt shows the time as the store's clock read it.
    ordered_at_offset_minutes: Mapped[int | None] = mapped_column(Integer)
    partner_updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # updatedAt
    customer_id: Mapped[int | None] = mapped_column(ForeignKey("customers.id", ondelete="SET NULL"))
    customer_first_name: Mapped[str | None] = mapped_column(String(200))
    customer_last_name: Mapped[str | None] = mapped_column(String(200))
    customer_email: Mapped[str | None] = mapped_column(String(320))
    customer_phone_number: Mapped[str | None] = mapped_column(String(50))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # orderDetails as given
    store_snapshot: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    conversion: Mapped[str] = mapped_column(String(20))  # new|returning|organic|anonymous
    # The campaign of the latest touch that made the order new or returning (orders/conversion.py).
    campaign_id: Mapped[str | None] = mapped_column(String(200))
    # That touch's kind, click or view (NULL when none): Results split a campaign's orders by it.
    touch_kind: Mapped[str | None] = mapped_column(String(5))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Touch(Base):
    """An ad impression or click reaching a person, known only by identifier hashes.

    `email_sha256` and `phone_sha256` are lower-case hex SHA-256 of the normalized
    email and E.164 phone (orders/conversion.py: identifier_hash); plain identifiers
    given are hashed and never stored. A touch is kept whether or not a customer
    matches it yet: it applies when one appears.
    """

    __tablename__ = "touches"
    __table_args__ = (
        # Led by the key, like the customers' look-up indexes (migration 0007); then the
        # order in which an order takes its latest touch (conversion._LATEST_FIRST), so
        # that the look-up reads the index in order and sorts nothing (migration 0038).
        *(
            Index(
                f"ix_touches_{column}",
                column,
                "profile_id",
                text("touched_at DESC"),
                text("campaign_id DESC"),
                "kind",
            )
            for column in ("email_sha256", "phone_sha256")
        ),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    campaign_id: Mapped[str] = mapped_column(String(200))
    email_sha256: Mapped[str | None] = mapped_column(String(64))
    phone_sha256: Mapped[str | None] = mapped_column(String(64))
    touched_at: Mapped[datetime] = mapped_column(UTCDateTime)
    imported_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # click or view (CONTRACT.md §16): which of its campaign's two windows applies.
    kind: Mapped[str] = mapped_column(String(5), default="click", server_default="click")
    # The end of that window: touched_at plus the campaign's window of the touch's kind,
    # written by measurement with the touch and moved when the window changes, so that an
    # order's statement reads the window from the touch and never the campaign
    # (orders/conversion.py). A touch written without it (a test's) has the default
    # click window.
    counts_until: Mapped[datetime] = mapped_column(UTCDateTime, default=_default_window_end)


# A touch is stored once (CONTRACT §13): equal profile, campaign, identifier hashes and time.
# NULL hashes compare as "" (a unique index holds NULLs distinct). Migration 0021.
Index(
    "uq_touches_content",
    Touch.profile_id,
    Touch.campaign_id,
    func.coalesce(Touch.email_sha256, ""),
    func.coalesce(Touch.phone_sha256, ""),
    Touch.touched_at,
    unique=True,
)


class JournaledOrder(Base):
    """An order acknowledged under load and not yet applied (orders/intake/journal.py).

    `body` is the order's JSON as the partner sent it; `connection_id` the connection
    whose token was accepted. Applied in `id` order, then deleted in the same
    transaction. On PostgreSQL the key is (id, profile_id) (migration 0032).
    """

    __tablename__ = "order_journal"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    # On PostgreSQL the store key (store_id, profile_id) implies this one: 0033 dropped it there.
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"))
    connection_id: Mapped[str] = mapped_column(String(36))
    body: Mapped[str] = mapped_column(Text)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    error: Mapped[str | None] = mapped_column(String(500))
