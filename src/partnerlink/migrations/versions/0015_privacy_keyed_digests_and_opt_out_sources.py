"""Privacy (CONTRACT §12): who opted a customer out, and keyed digests in the STOP and
suppression lists.

`audience_opt_outs` says whether the merchant (`by_merchant`) or the phone's SMS STOP
(`by_stop`) opted the customer out. Which one made an existing row is not recorded:
every existing row counts as the merchant's (START can no longer lift it; the
merchant can), and also as STOP's where the customer's phone is on the STOP list.
Erring that way keeps out of exports everyone who was out of them.

`sms_stops.phone_number` becomes `phone_digest` and `audience_suppressions.
identifier_sha256` becomes `identifier_digest`, with `digest_of` saying what the
digest is of. The key is derived from the service key, which a migration does not
know (it may run from a process with other settings, and tests build the schema
once for many keys), so this revision only marks the existing rows: plain phones
(they start with `+`) and `digest_of = 'sha256'`. The application keys them when it
starts (audiences/legacy_digests.py, run by `serve`, `worker`, `db upgrade` and at
every application start-up, before anything reads the lists).

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audience_opt_outs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("by_merchant", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch_op.add_column(
            sa.Column("by_stop", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.execute(
        "UPDATE audience_opt_outs SET by_stop = "
        + ("1" if op.get_bind().dialect.name == "sqlite" else "true")
        + " WHERE customer_id IN (SELECT c.id FROM customers c"
        " JOIN sms_stops s ON s.phone_number = c.phone_number)"
    )
    with op.batch_alter_table("audience_opt_outs", schema=None) as batch_op:
        batch_op.alter_column("by_merchant", server_default=None, existing_type=sa.Boolean())
        batch_op.alter_column("by_stop", server_default=None, existing_type=sa.Boolean())

    with op.batch_alter_table("sms_stops", schema=None) as batch_op:
        batch_op.alter_column(
            "phone_number",
            new_column_name="phone_digest",
            type_=sa.String(length=64),
            existing_type=sa.String(length=20),
            existing_nullable=False,
        )

    with op.batch_alter_table("audience_suppressions", schema=None) as batch_op:
        batch_op.alter_column(
            "identifier_sha256",
            new_column_name="identifier_digest",
            existing_type=sa.String(length=64),
            existing_nullable=False,
        )
        batch_op.add_column(
            sa.Column("digest_of", sa.String(length=16), nullable=False, server_default="sha256")
        )
    with op.batch_alter_table("audience_suppressions", schema=None) as batch_op:
        batch_op.alter_column("digest_of", server_default=None, existing_type=sa.String(16))


def downgrade() -> None:
    # Keyed digests cannot become plain values or unkeyed hashes again: the lists keep
    # their digests, which the older version does not match.
    with op.batch_alter_table("audience_suppressions", schema=None) as batch_op:
        batch_op.drop_column("digest_of")
        batch_op.alter_column(
            "identifier_digest",
            new_column_name="identifier_sha256",
            existing_type=sa.String(length=64),
            existing_nullable=False,
        )
    with op.batch_alter_table("sms_stops", schema=None) as batch_op:
        batch_op.alter_column(
            "phone_digest",
            new_column_name="phone_number",
            existing_type=sa.String(length=64),
            existing_nullable=False,
        )
    with op.batch_alter_table("audience_opt_outs", schema=None) as batch_op:
        batch_op.drop_column("by_stop")
        batch_op.drop_column("by_merchant")
