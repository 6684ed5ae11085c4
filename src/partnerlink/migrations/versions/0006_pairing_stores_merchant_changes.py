"""Schema changes of the pairing_stores_merchant capability (empty until it needs one).

Revision ID: 0006
Revises: 0005
"""

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
