"""Webhooks: a partner's URL and the nonce its signing secret is derived from; the events
and the log of their delivery.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("partners", schema=None) as batch_op:
        batch_op.add_column(sa.Column("webhook_url", sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column("webhook_secret_nonce", sa.String(length=64), nullable=True))
    op.create_table(
        "webhook_events",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("event_id", sa.String(length=40), nullable=False, unique=True),
        sa.Column(
            "partner_id",
            sa.String(length=36),
            sa.ForeignKey("partners.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("queue", sa.String(length=64), nullable=False),
        sa.Column("event_type", sa.String(length=60), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_webhook_events_due", "webhook_events", ["status", "next_attempt_at"])
    op.create_index("ix_webhook_events_queue", "webhook_events", ["queue", "status", "seq"])


def downgrade() -> None:
    op.drop_index("ix_webhook_events_queue", table_name="webhook_events")
    op.drop_index("ix_webhook_events_due", table_name="webhook_events")
    op.drop_table("webhook_events")
    with op.batch_alter_table("partners", schema=None) as batch_op:
        batch_op.drop_column("webhook_secret_nonce")
        batch_op.drop_column("webhook_url")
