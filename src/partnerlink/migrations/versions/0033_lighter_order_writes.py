"""Lighter writes for every order: foreign keys another key already implies, and index
entries no query reads.

Every order inserts an order, usually a receipt (then updated once sent) and a journal
row under load; each foreign key is a look-up and a row lock per row, each index an
insert per row version.

- PostgreSQL only, foreign keys implied by another (since 0025 the store key carries
  profile_id, and a store belongs to its profile): orders -> profiles (orders ->
  stores(id, profile_id) implies it), order_journal -> profiles (likewise), receipts ->
  stores (receipts -> orders(id, profile_id) implies it: a receipt's store is its
  order's). Deleting a profile or a store still deletes all three, through the keys
  kept. SQLite's store keys are single-column: its foreign keys stay.
- Both databases: `ix_receipts_status` is dropped (every query by status also gives
  next_attempt_at or the message id, and `ix_receipts_status_due` leads with status);
  `ix_receipts_status_due` keeps only pending receipts (the worker's claim is its one
  reader), so a receipt leaves it once sent; `ix_receipts_provider_message_id` keeps only
  receipts with a message id (a receipt has none until sent).

Revision ID: 0033
Revises: 0032
"""

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

_IMPLIED_KEYS = (
    ("fk_orders_profile_id_profiles", "orders", "profiles", ["profile_id"], ["id"]),
    ("fk_order_journal_profile_id_profiles", "order_journal", "profiles", ["profile_id"], ["id"]),
    (
        "fk_receipts_store_id_stores",
        "receipts",
        "stores",
        ["store_id", "profile_id"],
        ["id", "profile_id"],
    ),
)
_PENDING = sa.text("status = 'pending'")
_WITH_MESSAGE_ID = sa.text("provider_message_id IS NOT NULL")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, table, *_ in _IMPLIED_KEYS:
            op.drop_constraint(name, table, type_="foreignkey")
    op.drop_index("ix_receipts_status", table_name="receipts")
    _partial_index("ix_receipts_status_due", ["status", "next_attempt_at"], _PENDING)
    _partial_index("ix_receipts_provider_message_id", ["provider_message_id"], _WITH_MESSAGE_ID)


def downgrade() -> None:
    _partial_index("ix_receipts_provider_message_id", ["provider_message_id"], None)
    _partial_index("ix_receipts_status_due", ["status", "next_attempt_at"], None)
    op.create_index("ix_receipts_status", "receipts", ["status"])
    if op.get_bind().dialect.name == "postgresql":
        for name, table, referred, columns, referred_columns in _IMPLIED_KEYS:
            op.create_foreign_key(
                name, table, referred, columns, referred_columns, ondelete="CASCADE"
            )


def _partial_index(name: str, columns: list[str], where: sa.TextClause | None) -> None:
    op.drop_index(name, table_name="receipts")
    op.create_index(name, "receipts", columns, postgresql_where=where, sqlite_where=where)
