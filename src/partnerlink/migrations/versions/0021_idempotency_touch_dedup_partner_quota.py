"""Idempotency keys, touches stored once, a partner's own request quota (CONTRACT §13).

- `idempotency_keys`: the first answer to a request sent with an `Idempotency-Key`,
  written in that request's transaction, unique per caller (scope) and key.
- `touches`: a touch equal to a stored one (same profile, campaign, identifier hashes
  and time) is stored once. Rows stored twice before are deleted first (the oldest row
  of each group stays), so the unique index can be built. NULL hashes are compared as
  empty text, since a unique index holds NULLs distinct.
- `partner_quotas`: a partner's own requests-per-minute quota (without a row: the
  setting's).

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

TOUCH_CONTENT = (
    "profile_id, campaign_id, COALESCE(email_sha256, ''), COALESCE(phone_sha256, ''), touched_at"
)


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_digest", sa.String(length=64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_keys")),
        sa.UniqueConstraint("scope", "key", name="uq_idempotency_keys_scope_key"),
    )
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])

    op.execute(
        "DELETE FROM touches WHERE id NOT IN "
        f"(SELECT MIN(id) FROM touches GROUP BY {TOUCH_CONTENT})"
    )
    op.execute(f"CREATE UNIQUE INDEX uq_touches_content ON touches ({TOUCH_CONTENT})")

    op.create_table(
        "partner_quotas",
        sa.Column("partner_id", sa.String(length=36), nullable=False),
        sa.Column("requests_per_minute", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["partner_id"],
            ["partners.id"],
            name=op.f("fk_partner_quotas_partner_id_partners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("partner_id", name=op.f("pk_partner_quotas")),
    )


def downgrade() -> None:
    op.drop_table("partner_quotas")
    op.execute("DROP INDEX uq_touches_content")
    op.drop_index("ix_idempotency_keys_created_at", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
