"""SQLite: a deleted customer's number is above the one it had (migration 0030's fix).

Migration 0030's SQLite trigger `customers_deleted` numbers a deletion one above the
profile's highest number, read AFTER the row is gone: when the erased customer held the
highest number, the deletion got that same number back. A destination that had compared
up to it (`destinations.members_seq`) reads only the changes past it, so the erasure
never reached that audience. The trigger now takes one above the deleted row's own
number too. PostgreSQL numbers from a sequence and is not affected.

Revision ID: 0037
Revises: 0036
"""

from alembic import op

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None


def _highest(table: str) -> str:
    return (
        f"coalesce((SELECT change_seq FROM {table} WHERE profile_id = OLD.profile_id "
        "AND change_seq IS NOT NULL ORDER BY change_seq DESC LIMIT 1), 0)"
    )


def _trigger(number: str) -> str:
    return f"""
    CREATE TRIGGER customers_deleted AFTER DELETE ON customers BEGIN
        INSERT INTO customer_deletions (profile_id, customer_id, change_seq)
        VALUES (OLD.profile_id, OLD.id, {number});
    END
    """


BEFORE = f"(max({_highest('customers')}, {_highest('customer_deletions')}) + 1)"
AFTER = (
    f"(max({_highest('customers')}, {_highest('customer_deletions')}, "
    "coalesce(OLD.change_seq, 0)) + 1)"
)


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def upgrade() -> None:
    if _sqlite():
        op.execute("DROP TRIGGER customers_deleted")
        op.execute(_trigger(AFTER))


def downgrade() -> None:
    if _sqlite():
        op.execute("DROP TRIGGER customers_deleted")
        op.execute(_trigger(BEFORE))
