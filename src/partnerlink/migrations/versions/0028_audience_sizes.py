"""A profile's last counted audiences list (`audience_sizes`), kept for large profiles.

The list (CONTRACT §8) takes seconds at a million customers; a profile whose count took
longer than a threshold answers its stored count while it is younger than a freshness
bound, and the worker counts again before then (docs/audiences.md). A new table of its
own: nothing else changes.

Revision ID: 0028
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audience_sizes",
        sa.Column("profile_id", sa.String(length=36), nullable=False),
        sa.Column("audiences", sa.Text(), nullable=True),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("took_seconds", sa.Float(), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["profile_id"],
            ["profiles.id"],
            name=op.f("fk_audience_sizes_profile_id_profiles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("profile_id", name=op.f("pk_audience_sizes")),
    )


def downgrade() -> None:
    op.drop_table("audience_sizes")
