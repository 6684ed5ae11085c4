"""Receipts carry their order's partner id (`receipts.order_id`).

The receipts package names the order in messages, logs and `sms list` without
reading the orders table; the outbox INSERT fills it from then on, and the
existing receipts get it from their order here. A plain ADD COLUMN, never a
batch copy: on SQLite a batch rebuild of a table drops and re-creates it,
and rows referencing it with ON DELETE CASCADE would go with it. Nullable for
the same reason (SQLite adds a NOT NULL column only with a default).

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("receipts", sa.Column("order_id", sa.String(200), nullable=True))
    # A correlated subquery: the same text runs on SQLite and PostgreSQL.
    op.execute(
        "UPDATE receipts SET order_id ="
        " (SELECT orders.order_id FROM orders WHERE orders.id = receipts.order_pk)"
    )


def downgrade() -> None:
    op.drop_column("receipts", "order_id")
