"""Webhooks in the Standard Webhooks form (CONTRACT.md §13): the secret a rotation
replaced keeps signing for 24 h, and partners page through their own deliveries.

`partners` gains the replaced secret's nonce and until when it signs (the secret
itself is never stored: webhooks/signing.py derives it from the nonce). Existing
secrets are left as they are: they keep signing `PartnerLink-Signature`, and a
rotation gives a partner one that signs `webhook-signature` too (signing.py says why
they cannot be turned into Standard Webhooks secrets here). `webhook_events` gains an
index for one partner's deliveries, newest first (`GET /v1/webhooks/deliveries`).

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("partners", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("webhook_previous_secret_nonce", sa.String(length=64), nullable=True)
        )
        batch_op.add_column(
            sa.Column("webhook_previous_secret_until", sa.DateTime(timezone=True), nullable=True)
        )
    op.create_index("ix_webhook_events_partner", "webhook_events", ["partner_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_webhook_events_partner", table_name="webhook_events")
    with op.batch_alter_table("partners", schema=None) as batch_op:
        batch_op.drop_column("webhook_previous_secret_until")
        batch_op.drop_column("webhook_previous_secret_nonce")
