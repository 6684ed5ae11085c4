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


def upgrade() -> None:
    with op.batch_alter_table("customers") as batch:
        batch.add_column(sa.Column("postal_code", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("customers") as batch:
        batch.drop_column("postal_code")
