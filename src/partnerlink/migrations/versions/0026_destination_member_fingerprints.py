"""Audience syncs read only what changed: each held member's fingerprint, each
destination's basis.

`destination_members.fingerprint` is the database's own digest of the customer columns
a member's row was made from, when it was sent; `destinations.members_basis` is what
the held rows were last fully compared under (row format, platform, segment, campaign
and its holdout). A sync then asks the database only for the segment's members whose
fingerprint differs from the one held, and the held members no longer in it
(destinations/audience_sync.py). Rows held before this migration have no fingerprint
and destinations no basis: their next sync compares everything once, as before.

Plain ADD COLUMNs, nullable, never a batch copy (SQLite rebuilds would cascade).

Revision ID: 0026
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("destination_members", sa.Column("fingerprint", sa.BigInteger(), nullable=True))
    op.add_column("destinations", sa.Column("members_basis", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("destinations", "members_basis")
    op.drop_column("destination_members", "fingerprint")
