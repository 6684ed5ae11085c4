"""Orders indexed by profile and customer, carrying what audiences aggregate.

The audiences list (CONTRACT §8) needs, for every customer of a profile, its order
count, first and last order and spend in the profile's most used currency. With
this index PostgreSQL reads them in customer order from the index alone (an
index-only scan feeding a streaming GROUP BY, merged with the customers in id
order), instead of hashing a million orders' aggregates (which spilled to disk and
was built once per parallel worker): docs/audiences.md has the figures. SQLite
cannot INCLUDE columns; it gets the two key columns.

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

NAME = "ix_orders_profile_customer"
INCLUDED = ["ordered_at", "order_price", "order_currency", "store_id"]


def upgrade() -> None:
    op.create_index(NAME, "orders", ["profile_id", "customer_id"], postgresql_include=INCLUDED)


def downgrade() -> None:
    op.drop_index(NAME, table_name="orders")
