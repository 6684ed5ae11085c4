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


# Plain ADD/DROP COLUMN, never a batch copy: on SQLite a copy of `partners` drops the old
# table, and ON DELETE CASCADE would take integration tokens, connections and tokens along.
def upgrade() -> None:
    op.add_column(
        "partners", sa.Column("webhook_previous_secret_nonce", sa.String(length=64), nullable=True)
    )
    op.add_column(
        "partners",
        sa.Column("webhook_previous_secret_until", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_webhook_events_partner", "webhook_events", ["partner_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_webhook_events_partner", table_name="webhook_events")
    op.drop_column("partners", "webhook_previous_secret_until")
    op.drop_column("partners", "webhook_previous_secret_nonce")
