"""An index of each destination's held members with their fingerprints.

An incremental audience sync compares the segment's fingerprints with the held ones,
a range of customer ids at a time; this index answers that side alone (an index-only
scan on PostgreSQL once the table is vacuumed, a covering index on SQLite) instead of
reading the heap of rows sent, nearly all of the table's bytes.

Revision ID: 0029
Revises: 0026
"""

from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

NAME = "ix_destination_members_fingerprint"


def upgrade() -> None:
    op.create_index(NAME, "destination_members", ["destination_id", "customer_id", "fingerprint"])


def downgrade() -> None:
    op.drop_index(NAME, table_name="destination_members")
