"""Sandbox: partners whose credentials and tokens carry `_test_`, and their test stores;
and the connection behind each upload.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("partners", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("sandbox", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("stores", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("is_test", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    # The connection that asked for an upload's URL (its partner hears when it finishes).
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.add_column(sa.Column("connection_id", sa.String(length=36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.drop_column("connection_id")
    with op.batch_alter_table("stores", schema=None) as batch_op:
        batch_op.drop_column("is_test")
    with op.batch_alter_table("partners", schema=None) as batch_op:
        batch_op.drop_column("sandbox")
