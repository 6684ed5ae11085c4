"""Measurement: campaigns, touches known by identifier hashes, an order's campaign.

Touches stored plain email and phone; they now keep only the lower-case hex
SHA-256 of each (the normalized value), as ad platforms hand them out.
Existing touches are hashed here, then the plain columns are dropped.

Revision ID: 0009
Revises: 0008
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _sha256(value: str | None) -> str | None:
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("profile_id", sa.String(length=36), nullable=False),
        sa.Column("campaign_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("holdout_percent", sa.Integer(), nullable=False),
        sa.Column("salt", sa.LargeBinary(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["profile_id"],
            ["profiles.id"],
            name=op.f("fk_campaigns_profile_id_profiles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
        sa.UniqueConstraint("profile_id", "campaign_id", name="uq_campaigns_profile_campaign"),
    )
    with op.batch_alter_table("orders", schema=None) as batch_op:
        batch_op.add_column(sa.Column("campaign_id", sa.String(length=200), nullable=True))
        batch_op.create_index("ix_orders_profile_ordered", ["profile_id", "ordered_at"])

    with op.batch_alter_table("touches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email_sha256", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("phone_sha256", sa.String(length=64), nullable=True))
    bind = op.get_bind()
    touches = sa.table(
        "touches",
        sa.column("id", sa.BigInteger()),
        sa.column("email", sa.String()),
        sa.column("phone_number", sa.String()),
        sa.column("email_sha256", sa.String()),
        sa.column("phone_sha256", sa.String()),
    )
    rows = bind.execute(sa.select(touches.c.id, touches.c.email, touches.c.phone_number)).all()
    if rows:
        bind.execute(
            touches.update()
            .where(touches.c.id == sa.bindparam("touch_id"))
            .values(email_sha256=sa.bindparam("e"), phone_sha256=sa.bindparam("p")),
            [{"touch_id": r.id, "e": _sha256(r.email), "p": _sha256(r.phone_number)} for r in rows],
        )
    with op.batch_alter_table("touches", schema=None) as batch_op:
        batch_op.drop_index("ix_touches_email_profile")
        batch_op.drop_index("ix_touches_phone_profile")
        batch_op.drop_column("email")
        batch_op.drop_column("phone_number")
        batch_op.create_index(
            "ix_touches_email_sha256", ["email_sha256", "profile_id", "touched_at"]
        )
        batch_op.create_index(
            "ix_touches_phone_sha256", ["phone_sha256", "profile_id", "touched_at"]
        )


def downgrade() -> None:
    # The plain identifiers cannot be recovered from their hashes: touches are emptied.
    op.execute("DELETE FROM touches")
    with op.batch_alter_table("touches", schema=None) as batch_op:
        batch_op.drop_index("ix_touches_phone_sha256")
        batch_op.drop_index("ix_touches_email_sha256")
        batch_op.add_column(sa.Column("email", sa.String(length=320), nullable=True))
        batch_op.add_column(sa.Column("phone_number", sa.String(length=20), nullable=True))
        batch_op.drop_column("phone_sha256")
        batch_op.drop_column("email_sha256")
        batch_op.create_index("ix_touches_email_profile", ["email", "profile_id"])
        batch_op.create_index("ix_touches_phone_profile", ["phone_number", "profile_id"])
    with op.batch_alter_table("orders", schema=None) as batch_op:
        batch_op.drop_index("ix_orders_profile_ordered")
        batch_op.drop_column("campaign_id")
    op.drop_table("campaigns")
