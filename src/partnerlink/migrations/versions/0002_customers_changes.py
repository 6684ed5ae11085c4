"""Customers: one phone-only customer per phone and profile.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A partial unique index: concurrent creations of the same phone-only customer
    # collide (INSERT ... ON CONFLICT DO NOTHING) instead of making two.
    op.create_index(
        "uq_customers_profile_phone_no_email",
        "customers",
        ["profile_id", "phone_number"],
        unique=True,
        sqlite_where=sa.text("email IS NULL"),
        postgresql_where=sa.text("email IS NULL"),
    )
    # The worker looks for claimable uploads by status and lease.
    op.create_index("ix_uploads_status_lease", "uploads", ["status", "lease_until"])


def downgrade() -> None:
    op.drop_index("ix_uploads_status_lease", table_name="uploads")
    op.drop_index("uq_customers_profile_phone_no_email", table_name="customers")
