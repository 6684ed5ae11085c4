"""SMS STOP: phones that replied STOP, and receipts found by the provider's message id.

`sms_stops` holds the E.164 numbers that opted out of our texts (Twilio's STOP
words); their receipts are `suppressed`, never sent. Delivery-status callbacks
find their receipt by `provider_message_id`, hence its index.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sms_stops",
        sa.Column("phone_number", sa.String(length=20), primary_key=True),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_receipts_provider_message_id", "receipts", ["provider_message_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_receipts_provider_message_id", table_name="receipts")
    op.drop_table("sms_stops")
