"""Receipt keys only as digests (CONTRACT §12): the texts Twilio already has keep no key.

`receipts.key_hash` has always held the key's SHA-256 (the page looks receipts up by
it), but a receipt sent through Twilio before the worker began to strip the key kept
it in clear in its stored `link` and `body`: anyone reading the database (a backup, a
replica) could open those receipts. This replaces the key in them with `[redacted]`,
as the worker now does once Twilio accepts a message. The texts of the `outbox`
provider are the messages themselves (`partnerlink sms list` shows them) and stay
whole; so do receipts not sent yet (the worker still has to send their link).

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

KEY_PARAM = "?k="
REDACTED = "[redacted]"
# Twilio has the message: sent, or a final status its callback reported; `failed` is
# also where the worker gives up, and it strips the key then too.
HANDED_TO_TWILIO = ("sent", "delivered", "undelivered", "failed")
BATCH = 500


def without_key(link: str, body: str) -> tuple[str, str] | None:
    """The link and body with the key replaced (None when there is none to replace)."""
    base, found, key = link.rpartition(KEY_PARAM)
    if not found or key == REDACTED:
        return None
    redacted = f"{base}{KEY_PARAM}{REDACTED}"
    return redacted, body.replace(link, redacted)


def upgrade() -> None:
    connection = op.get_bind()
    receipts = sa.table(
        "receipts",
        sa.column("id", sa.BigInteger),
        sa.column("link", sa.String),
        sa.column("body", sa.Text),
        sa.column("provider", sa.String),
        sa.column("status", sa.String),
    )
    last_id = 0
    while True:
        rows = connection.execute(
            sa.select(receipts.c.id, receipts.c.link, receipts.c.body)
            .where(
                receipts.c.id > last_id,
                receipts.c.provider == "twilio",
                receipts.c.status.in_(HANDED_TO_TWILIO),
            )
            .order_by(receipts.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        last_id = rows[-1].id
        changes = [
            {"receipt_id": row.id, "new_link": new[0], "new_body": new[1]}
            for row in rows
            if (new := without_key(row.link, row.body)) is not None
        ]
        if changes:
            connection.execute(
                receipts.update()
                .where(receipts.c.id == sa.bindparam("receipt_id"))
                .values(link=sa.bindparam("new_link"), body=sa.bindparam("new_body")),
                changes,
            )


def downgrade() -> None:
    # A key once removed cannot be put back; the page still finds the receipt by its digest.
    pass
