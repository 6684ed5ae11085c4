"""The orders' journal: orders acknowledged under load, waiting to be applied.

Under load, POST /v1/orders appends each validated order here (its body as received,
and the connection that sent it) and answers once that commit is durable; the worker,
or the next read, applies them in arrival order (orders/journal.py). A table of its
own: nothing else changes.

On PostgreSQL the key is (id, profile_id) and the store key (store_id, profile_id), as
every distributed table's since 0025; on SQLite `id` is the rowid.

Revision ID: 0032
Revises: 0030
"""

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    id_column = (
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False)
        if postgres
        else sa.Column("id", sa.Integer(), nullable=False)
    )
    store_key = (
        sa.ForeignKeyConstraint(
            ["store_id", "profile_id"],
            ["stores.id", "stores.profile_id"],
            name=op.f("fk_order_journal_store_id_stores"),
            ondelete="CASCADE",
        )
        if postgres
        else sa.ForeignKeyConstraint(
            ["store_id"],
            ["stores.id"],
            name=op.f("fk_order_journal_store_id_stores"),
            ondelete="CASCADE",
        )
    )
    op.create_table(
        "order_journal",
        id_column,
        sa.Column("profile_id", sa.String(length=36), nullable=False),
        sa.Column("store_id", sa.String(length=36), nullable=False),
        sa.Column("connection_id", sa.String(length=36), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        # Set when the order could not be applied alone (a bug, not load): kept, not retried.
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(
            ["profile_id"],
            ["profiles.id"],
            name=op.f("fk_order_journal_profile_id_profiles"),
            ondelete="CASCADE",
        ),
        store_key,
        sa.PrimaryKeyConstraint(
            *(["id", "profile_id"] if postgres else ["id"]), name=op.f("pk_order_journal")
        ),
    )


def downgrade() -> None:
    op.drop_table("order_journal")
