"""Orders keep createdAt's UTC offset; receipts are claimed by status and due time.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("orders") as batch:
        batch.add_column(sa.Column("ordered_at_offset_minutes", sa.Integer(), nullable=True))
    op.create_index("ix_receipts_status_due", "receipts", ["status", "next_attempt_at"])


def downgrade() -> None:
    op.drop_index("ix_receipts_status_due", table_name="receipts")
    with op.batch_alter_table("orders") as batch:
        batch.drop_column("ordered_at_offset_minutes")
