"""Orders keyed by (store, partner, orderId): each partner of a shared store has its own ids.

`orders.partner_id` is the partner of the connection whose token sent the order
(CONTRACT.md §6). Existing orders did not record it, so each gets the partner of
the connection that most plausibly sent it: the store's latest connection opened
at or before the order was first received and not revoked by then (the one whose
token could send it); failing that, the latest opened before it was received; failing
that, the store's latest connection. Before this revision a store's orders shared
one key, so the rows stay unique under the new key.

Uploads from before 0013 have no connection; each gets, by the same rule, the
store's connection live when the file was received (only that partner reads its
report now).

An order whose store has no connection at all cannot have come through the API;
the upgrade stops, changing nothing, rather than guess a partner for it.

The column has no foreign key (see orders/models.py: it would lock the partner's row
for every new order on PostgreSQL).

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def _plausible_connection(column: str, received_at: str, store_id: str) -> str:
    """A scalar subquery: `column` of the store's connection that most plausibly sent a row
    received at `received_at` (SQL expressions of the outer row)."""
    pick = (
        f"SELECT c.{column} FROM connections AS c WHERE c.store_id = {store_id}"
        " {where} ORDER BY c.created_at DESC, c.id DESC LIMIT 1"
    )
    opened_before = f"AND c.created_at <= {received_at}"
    live_then = f"{opened_before} AND (c.revoked_at IS NULL OR c.revoked_at > {received_at})"
    candidates = (live_then, opened_before, "")
    return "COALESCE(" + ", ".join(f"({pick.format(where=w)})" for w in candidates) + ")"


def upgrade() -> None:
    bind = op.get_bind()
    orphans = bind.execute(
        sa.text(
            "SELECT COUNT(*) FROM orders WHERE NOT EXISTS"
            " (SELECT 1 FROM connections AS c WHERE c.store_id = orders.store_id)"
        )
    ).scalar_one()
    if orphans:
        raise RuntimeError(
            f"{orphans} order(s) belong to stores that never had a connection: no partner"
            " can be named for them. Delete or attribute them, then upgrade again."
        )
    with op.batch_alter_table("orders", schema=None) as batch_op:
        batch_op.add_column(sa.Column("partner_id", sa.String(length=36), nullable=True))
    sender = _plausible_connection("partner_id", "orders.received_at", "orders.store_id")
    bind.execute(sa.text(f"UPDATE orders SET partner_id = {sender}"))
    with op.batch_alter_table("orders", schema=None) as batch_op:
        batch_op.alter_column("partner_id", existing_type=sa.String(length=36), nullable=False)
        batch_op.drop_constraint("uq_orders_store_order", type_="unique")
        batch_op.create_unique_constraint(
            "uq_orders_store_partner_order", ["store_id", "partner_id", "order_id"]
        )

    asker = _plausible_connection("id", "uploads.created_at", "uploads.store_id")
    bind.execute(sa.text(f"UPDATE uploads SET connection_id = {asker} WHERE connection_id IS NULL"))


def downgrade() -> None:
    # The old key holds one order per store and orderId: of two partners' orders with the
    # same id, only the first stored is kept.
    op.execute(
        "DELETE FROM orders WHERE EXISTS (SELECT 1 FROM orders AS kept"
        " WHERE kept.store_id = orders.store_id AND kept.order_id = orders.order_id"
        " AND kept.id < orders.id)"
    )
    with op.batch_alter_table("orders", schema=None) as batch_op:
        batch_op.drop_constraint("uq_orders_store_partner_order", type_="unique")
        batch_op.create_unique_constraint("uq_orders_store_order", ["store_id", "order_id"])
        batch_op.drop_column("partner_id")
