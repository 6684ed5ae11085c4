"""Ad platforms (CONTRACT §11): destinations, the members each holds, the orders sent.

Revision ID: 0018
Revises: 0019 (assigned 0016; chained after the merged platforms branch's 0019 so the
branch has one head: the lead re-chains on merge)
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0019"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "destinations",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column(
            "profile_id",
            sa.String(length=36),
            sa.ForeignKey("profiles.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("platform", sa.String(length=10), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("segment", sa.String(length=20), nullable=True),
        sa.Column("campaign_id", sa.String(length=200), nullable=True),
        sa.Column("target", sa.JSON(), nullable=False),
        sa.Column("consent", sa.JSON(), nullable=True),
        sa.Column("credentials_sealed", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("last_sync_at", TIME, nullable=True),
        sa.Column("last_error", sa.JSON(), nullable=True),
        sa.Column("last_report", sa.JSON(), nullable=True),
        sa.Column("members", sa.BigInteger(), nullable=False),
        sa.Column("sent_added", sa.BigInteger(), nullable=False),
        sa.Column("sent_removed", sa.BigInteger(), nullable=False),
        sa.Column("sent_events", sa.BigInteger(), nullable=False),
        sa.Column("sent_rejected", sa.BigInteger(), nullable=False),
        sa.Column("next_attempt_at", TIME, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_until", TIME, nullable=True),
        sa.Column("sync_requested", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
    )
    op.create_index("ix_destinations_profile_id", "destinations", ["profile_id"])
    op.create_index("ix_destinations_due", "destinations", ["next_attempt_at"])
    op.create_table(
        "destination_members",
        sa.Column(
            "destination_id",
            sa.String(length=36),
            sa.ForeignKey("destinations.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("customer_id", sa.BigInteger(), primary_key=True),
        sa.Column("profile_id", sa.String(length=36), nullable=False),
        sa.Column("sent", sa.Text(), nullable=False),
    )
    op.create_table(
        "destination_conversions",
        sa.Column(
            "destination_id",
            sa.String(length=36),
            sa.ForeignKey("destinations.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("order_row_id", sa.BigInteger(), primary_key=True),
        sa.Column("profile_id", sa.String(length=36), nullable=False),
        sa.Column("sent_at", TIME, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("destination_conversions")
    op.drop_table("destination_members")
    op.drop_index("ix_destinations_due", table_name="destinations")
    op.drop_index("ix_destinations_profile_id", table_name="destinations")
    op.drop_table("destinations")
