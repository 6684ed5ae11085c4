"""Approved integration partners (POS systems and other data sources)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, false
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, IdColumn, UTCDateTime, utcnow


class Partner(Base):
    __tablename__ = "partners"

    id: Mapped[str] = IdColumn()
    name: Mapped[str] = mapped_column(String(200))
    # posType names exactly one partner (CONTRACT.md §4).
    pos_type: Mapped[str] = mapped_column(String(100), unique=True)
    client_id: Mapped[str] = mapped_column(String(100), unique=True)
    client_secret_hash: Mapped[str] = mapped_column(String(64))
    ereceipt: Mapped[bool] = mapped_column(Boolean, default=False)
    frame_origins: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Where the OAuth authorization endpoint may send the merchant back (CONTRACT §13),
    # compared as exact strings (RFC 6749 §3.1.2.3).
    redirect_uris: Mapped[list[str]] = mapped_column(JSON, default=list)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    # A sandbox partner (CONTRACT §9): `_test_` credentials and tokens, test stores only.
    sandbox: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Where its webhook events go (webhooks/), and the nonce its signing secret is derived
    # from with the service's key (webhooks/signing.py): the secret itself is never stored.
    webhook_url: Mapped[str | None] = mapped_column(String(2000))
    webhook_secret_nonce: Mapped[str | None] = mapped_column(String(64))
    # The nonce of the secret a rotation replaced, which keeps signing beside the new one
    # until `webhook_previous_secret_until` (24 h after the rotation; CONTRACT.md §13).
    webhook_previous_secret_nonce: Mapped[str | None] = mapped_column(String(64))
    webhook_previous_secret_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PartnerQuota(Base):
    """A partner's own quota of requests per minute (CONTRACT §13), where it is not the
    setting's (`PARTNERLINK_PARTNER_REQUESTS_PER_MINUTE`). A table of its own rather than
    a partners column: a partner row stays what every revision's tests build."""

    __tablename__ = "partner_quotas"

    partner_id: Mapped[str] = mapped_column(
        ForeignKey("partners.id", ondelete="CASCADE"), primary_key=True
    )
    requests_per_minute: Mapped[int] = mapped_column(Integer)
