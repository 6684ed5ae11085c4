"""Ad platforms connected by signing in (CONTRACT §14): `ad_connections` (a merchant's
Meta or Google sign-in, its token sealed), `ad_connection_states` (the sign-ins under
way: a digest of `state`, single use, bound to the session and profile) and
`destinations.ad_connection_id` (the connection whose token a destination uses).

Revision ID: 0035
Revises: 0034
"""

import sqlalchemy as sa
from alembic import op

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def _profile() -> sa.Column:
    return sa.Column(
        "profile_id",
        sa.String(length=36),
        sa.ForeignKey("profiles.id", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "ad_connections",
        sa.Column("id", sa.String(length=36), primary_key=True),
        _profile(),
        sa.Column("merchant_id", sa.String(length=36), nullable=False),
        sa.Column("platform", sa.String(length=10), nullable=False),
        sa.Column("account_name", sa.String(length=200), nullable=True),
        sa.Column("token_sealed", sa.Text(), nullable=False),
        sa.Column("expires_at", TIME, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
    )
    op.create_index("ix_ad_connections_profile_id", "ad_connections", ["profile_id"])
    op.create_table(
        "ad_connection_states",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("state_digest", sa.String(length=64), nullable=False, unique=True),
        _profile(),
        sa.Column("merchant_id", sa.String(length=36), nullable=False),
        sa.Column("session_digest", sa.String(length=64), nullable=False),
        sa.Column("via", sa.String(length=10), nullable=False),
        sa.Column("platform", sa.String(length=10), nullable=False),
        sa.Column("connection_id", sa.String(length=36), nullable=True),
        sa.Column("segment", sa.String(length=20), nullable=True),
        sa.Column("verifier_sealed", sa.Text(), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("used_at", TIME, nullable=True),
    )
    op.create_index("ix_ad_connection_states_profile_id", "ad_connection_states", ["profile_id"])
    op.add_column(
        "destinations", sa.Column("ad_connection_id", sa.String(length=36), nullable=True)
    )
    op.create_index("ix_destinations_ad_connection_id", "destinations", ["ad_connection_id"])


def downgrade() -> None:
    op.drop_index("ix_destinations_ad_connection_id", table_name="destinations")
    with op.batch_alter_table("destinations") as batch:
        batch.drop_column("ad_connection_id")
    op.drop_table("ad_connection_states")
    op.drop_table("ad_connections")
