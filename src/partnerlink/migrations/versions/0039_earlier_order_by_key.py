"""An earlier order found by key: `ix_orders_profile_customer` holds `ordered_at` in its key.

Whether a customer has an order older than one (the rule's `earlier_order`,
orders/conversion.py) is asked of every order the re-classification classifies
(orders/reclassification.py), of each `new` order that `mark_returning` looks at, and of
each order's upsert. With `ordered_at` only carried (INCLUDE), PostgreSQL read the
customer's entries in no order and checked each one's time, visiting the table for each
entry on a page changed since the last vacuum (~1.5 an order); with it in the key the
look-up is one step down the index to the first entry before the order's time: ~4 us an
order instead of ~8 when 12,821 orders were classified again (EXPLAIN ANALYZE;
bench/README.md, "The window change, third pass"). The audiences' statistics still read
the index in customer order (migration 0023): its first two keys are unchanged, and it
carries the same columns.

SQLite, which cannot INCLUDE columns, gets `ordered_at` as a third key column too.

Revision ID: 0039
Revises: 0038
"""

from alembic import op

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

NAME = "ix_orders_profile_customer"
CARRIED = ["order_price", "order_currency", "store_id"]


def upgrade() -> None:
    op.drop_index(NAME, table_name="orders")
    op.create_index(
        NAME, "orders", ["profile_id", "customer_id", "ordered_at"], postgresql_include=CARRIED
    )


def downgrade() -> None:
    op.drop_index(NAME, table_name="orders")
    op.create_index(
        NAME, "orders", ["profile_id", "customer_id"], postgresql_include=["ordered_at", *CARRIED]
    )
