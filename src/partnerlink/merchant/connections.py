"""A merchant's view of its stores' connections, and revoking one."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.merchant.ownership import owned_connection, owned_store
from partnerlink.partners.models import Partner
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import revoke_connection


@dataclass(frozen=True)
class StoreConnection:
    connection: Connection
    pos_type: str
    partner_name: str


def list_store_connections(
    session: Session, *, merchant_id: str, store_id: str
) -> list[StoreConnection]:
    """Lists the store's connections, live and revoked, newest first."""
    owned_store(session, merchant_id=merchant_id, store_id=store_id)
    rows = session.execute(
        select(Connection, Partner.pos_type, Partner.name)
        .join(Partner, Partner.id == Connection.partner_id)
        .where(Connection.store_id == store_id)
        .order_by(Connection.created_at.desc(), Connection.id.desc())
    )
    return [StoreConnection(connection, pos_type, name) for connection, pos_type, name in rows]


def revoke_merchant_connection(session: Session, *, merchant_id: str, connection_id: str) -> None:
    """Revokes one of the merchant's connections; its tokens stop working at once."""
    connection = owned_connection(session, merchant_id=merchant_id, connection_id=connection_id)
    revoke_connection(session, connection, reason="merchant")
