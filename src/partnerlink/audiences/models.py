"""Customers' choices: opt-outs, and the suppression list of erased identifiers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.customers.models import Customer
from partnerlink.db.base import Base, UTCDateTime, utcnow
from partnerlink.orders.models import Order


class OptOut(Base):
    """A customer who is never exported again, and who asked for it.

    The merchant's opt-out (§8) and the phone's SMS STOP (§9) are kept apart: START
    lifts only what STOP did, and the merchant lifts only its own (CONTRACT §12).
    The row goes when neither holds any more.
    """

    __tablename__ = "audience_opt_outs"

    customer_id: Mapped[int] = mapped_column(
        ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True
    )
    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    by_merchant: Mapped[bool] = mapped_column(Boolean, default=False)
    by_stop: Mapped[bool] = mapped_column(Boolean, default=False)


# What a suppression's digest is of: the identifier itself, or (for rows erased
# before digests were keyed) the identifier's SHA-256 hex, which is all that was
# kept of it; `LEGACY_SHA256` rows are the unkeyed hashes themselves, waiting for
# the start-up that keys them (audiences/legacy_digests.py).
DIGEST_OF_VALUE = "hmac"
DIGEST_OF_SHA256 = "hmac-of-sha256"
LEGACY_SHA256 = "sha256"


class Suppression(Base):
    """An erased person's email or phone, kept only as a keyed digest of its normalized form
    (security/identifier_digests.py, CONTRACT §12).

    Email: trimmed and lower-cased; phone: E.164 with its `+` (CONTRACT §6, §7): the
    forms customers are stored in, so a customer who comes back is recognised.
    """

    __tablename__ = "audience_suppressions"

    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), primary_key=True
    )
    identifier_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    digest_of: Mapped[str] = mapped_column(String(16), default=DIGEST_OF_VALUE)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class StoredSizes(Base):
    """A profile's last counted audiences list (CONTRACT §8), kept for large profiles only.

    The list answers from `audiences` while it is younger than the freshness bound
    (setting `audience_sizes_max_age_seconds`) and the count took at least
    `stored_sizes.LARGE_AFTER_SECONDS`; the worker counts again before it gets that
    old (audiences/stored_sizes.py). A merchant's opt-out, its lifting, an erasure and
    an SMS STOP/START empty `audiences` in their own transaction and bump `generation`,
    so a count begun before them is never stored after them. `lease_until` is the
    worker's lease (partnerlink.jobs); emptying the row drops it, which fences off a
    refresh under way.
    """

    __tablename__ = "audience_sizes"

    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), primary_key=True
    )
    # The JSON of the answer's `audiences`; NULL once invalidated.
    audiences: Mapped[str | None] = mapped_column(Text, default=None)
    computed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # How long the exact count took: a profile is "large" while it takes the threshold.
    took_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    # When a merchant last asked for the list: the worker refreshes only lists in use.
    requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    generation: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


# Exports walk a profile's customers in id order, a chunk at a time (keyset pages):
# this index finds each chunk without reading other profiles' customers.
CUSTOMERS_BY_PROFILE = Index("ix_customers_profile_id_id", Customer.profile_id, Customer.id)
# Segment sizes read every customer's order statistics (count, first and last order,
# spend) in customer order from this index alone on PostgreSQL (migration 0023); the
# rule's earlier-order look-up takes one step down it to a customer's first order before
# a time (`ordered_at` a key since migration 0039).
ORDERS_BY_PROFILE_CUSTOMER = Index(
    "ix_orders_profile_customer",
    Order.profile_id,
    Order.customer_id,
    Order.ordered_at,
    postgresql_include=["order_price", "order_currency", "store_id"],
)
