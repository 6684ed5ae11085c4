"""OAuth 2.0 beside SPEC's consent flow (CONTRACT §13): partners' registered redirect
URIs, and the authorization requests and codes of the authorization endpoint.

Revision ID: 0020
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN, never a batch copy of the table: on SQLite a copy drops the old
    # `partners`, and foreign keys' ON DELETE CASCADE would empty every table below it
    # (integration tokens, connections, tokens) along the way.
    op.add_column(
        "partners",
        sa.Column("redirect_uris", sa.JSON(), nullable=False, server_default=sa.text("'[]'")),
    )
    op.create_table(
        "oauth_authorizations",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column(
            "integration_token_id",
            sa.String(length=36),
            sa.ForeignKey("integration_tokens.id", ondelete="CASCADE"),
            nullable=False,
            unique=True,
        ),
        sa.Column("redirect_uri", sa.String(length=2000), nullable=False),
        sa.Column("redirect_uri_given", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=1024), nullable=True),
        sa.Column("code_challenge", sa.String(length=128), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=True, unique=True),
        sa.Column("code_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("code_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "connection_id",
            sa.String(length=36),
            sa.ForeignKey("connections.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("oauth_authorizations")
    op.drop_column("partners", "redirect_uris")  # ALTER TABLE ... DROP COLUMN, no copy either
