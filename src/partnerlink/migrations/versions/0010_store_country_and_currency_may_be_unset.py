"""Stores: country and currency may be unset.

A store created by consent under a profile with no other store no longer gets
a placeholder (US/USD); its country and currency stay NULL until the partner's
PUT /v1/stores (or an order's `store` snapshot) sets them.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("stores", schema=None) as batch_op:
        batch_op.alter_column("country_code", existing_type=sa.String(length=2), nullable=True)
        batch_op.alter_column("currency", existing_type=sa.String(length=3), nullable=True)


def downgrade() -> None:
    stores = sa.table(
        "stores", sa.column("country_code", sa.String()), sa.column("currency", sa.String())
    )
    op.execute(stores.update().where(stores.c.country_code.is_(None)).values(country_code="US"))
    op.execute(stores.update().where(stores.c.currency.is_(None)).values(currency="USD"))
    with op.batch_alter_table("stores", schema=None) as batch_op:
        batch_op.alter_column("country_code", existing_type=sa.String(length=2), nullable=False)
        batch_op.alter_column("currency", existing_type=sa.String(length=3), nullable=False)
