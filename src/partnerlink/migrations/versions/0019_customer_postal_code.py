"""Customers' postal code (CONTRACT §8, §11): a match key for Google's audiences.

Optional, at most 16 characters, stored trimmed; erased with the customer.

Revision ID: 0019
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0016"
branch_labels = None
depends_on = None


# Plain ADD/DROP COLUMN, never a batch copy: on SQLite a copy of `customers` would drop
# the old table, and its foreign keys (orders ON DELETE SET NULL, opt-outs CASCADE) would
# detach every order and lose every opt-out.
def upgrade() -> None:
    op.add_column("customers", sa.Column("postal_code", sa.String(length=16), nullable=True))


def downgrade() -> None:
    op.drop_column("customers", "postal_code")
