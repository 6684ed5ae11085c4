"""Audiences: opt-outs, the suppression list of erased identifiers, customers by profile.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audience_opt_outs",
        sa.Column(
            "customer_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("profile_id", sa.String(36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name="fk_audience_opt_outs_customer_id_customers",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["profile_id"],
            ["profiles.id"],
            name="fk_audience_opt_outs_profile_id_profiles",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("customer_id", name="pk_audience_opt_outs"),
    )
    op.create_index("ix_audience_opt_outs_profile_id", "audience_opt_outs", ["profile_id"])
    op.create_table(
        "audience_suppressions",
        sa.Column("profile_id", sa.String(36), nullable=False),
        sa.Column("identifier_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["profile_id"],
            ["profiles.id"],
            name="fk_audience_suppressions_profile_id_profiles",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("profile_id", "identifier_sha256", name="pk_audience_suppressions"),
    )
    op.create_index("ix_customers_profile_id_id", "customers", ["profile_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_customers_profile_id_id", table_name="customers")
    op.drop_table("audience_suppressions")
    op.drop_index("ix_audience_opt_outs_profile_id", table_name="audience_opt_outs")
    op.drop_table("audience_opt_outs")
