"""A sync a merchant can trust (CONTRACT §15): `destination_runs` (each sync's record,
kept 90 days), `destination_request_checks` (Google ingest requests whose verdict the
worker still reads with `requestStatus:retrieve`), `destination_alerts` (the email sent
once per change of state) and, on `destinations`, `match_report` (what the platforms
said they matched: `lastReport.google` / `lastReport.meta`) and `alert_state` (the state
the merchant was last told of).

Revision ID: 0036
Revises: 0035
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def _keys(table: str) -> list[Any]:
    """The row id, `destination_id` and `profile_id`, keyed as migration 0025 keys a
    distributed table on PostgreSQL: the primary key and the foreign key to
    `destinations` carry `profile_id` (Citus enforces them within a shard). SQLite keeps
    the plain row id (its rowid) and a plain foreign key."""
    if op.get_bind().dialect.name != "postgresql":
        return [
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
            sa.Column(
                "destination_id",
                sa.String(length=36),
                sa.ForeignKey("destinations.id", ondelete="CASCADE"),
                nullable=False,
            ),
            sa.Column("profile_id", sa.String(length=36), nullable=False),
        ]
    return [
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("destination_id", sa.String(length=36), nullable=False),
        sa.Column("profile_id", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("id", "profile_id", name=f"pk_{table}"),
        sa.ForeignKeyConstraint(
            ["destination_id", "profile_id"],
            ["destinations.id", "destinations.profile_id"],
            name=f"fk_{table}_destination_id_destinations",
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "destination_runs",
        *_keys("destination_runs"),
        sa.Column("started_at", TIME, nullable=False),
        sa.Column("finished_at", TIME, nullable=False),
        sa.Column("trigger", sa.String(length=10), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("added", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("removed", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("events", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("rejected", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("error", sa.JSON(), nullable=True),
    )
    op.create_index("ix_destination_runs_newest", "destination_runs", ["destination_id", "id"])
    op.create_index("ix_destination_runs_started_at", "destination_runs", ["started_at"])
    op.create_table(
        "destination_request_checks",
        *_keys("destination_request_checks"),
        sa.Column("request_id", sa.String(length=200), nullable=False),
        sa.Column("records", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("sent_at", TIME, nullable=False),
        sa.Column("next_check_at", TIME, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("lease_until", TIME, nullable=True),
    )
    op.create_index(
        "ix_destination_request_checks_due", "destination_request_checks", ["next_check_at"]
    )
    op.create_index(
        "ix_destination_request_checks_destination_id",
        "destination_request_checks",
        ["destination_id"],
    )
    op.create_table(
        "destination_alerts",
        *_keys("destination_alerts"),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("next_attempt_at", TIME, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("lease_until", TIME, nullable=True),
        sa.Column("sent_at", TIME, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
    )
    op.create_index("ix_destination_alerts_due", "destination_alerts", ["next_attempt_at"])
    op.create_index(
        "ix_destination_alerts_destination_id", "destination_alerts", ["destination_id"]
    )
    op.add_column("destinations", sa.Column("match_report", sa.JSON(), nullable=True))
    op.add_column("destinations", sa.Column("alert_state", sa.String(length=20), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("destinations") as batch:
        batch.drop_column("alert_state")
        batch.drop_column("match_report")
    op.drop_table("destination_alerts")
    op.drop_table("destination_request_checks")
    op.drop_table("destination_runs")
