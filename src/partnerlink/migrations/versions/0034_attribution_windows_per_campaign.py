"""Attribution windows per campaign and touches of two kinds (CONTRACT.md §16).

- `campaigns.click_window_days` (1-90) and `view_window_days` (0-30, default 1).
  Campaigns that exist take the window that applied to them until now: the
  `PARTNERLINK_ATTRIBUTION_WINDOW_DAYS` of the environment the upgrade runs in (7 when
  unset; a value kept only in a `.env` file is not read here: PATCH the campaign).
- `touches.kind` (`click` or `view`; every touch so far is a click) and
  `touches.counts_until`, the end of the touch's window: its time plus its campaign's
  window of its kind. An order's statement reads the window from the touch.
- `orders.touch_kind`: the kind of the touch that attributed the order (NULL when none);
  attributed orders so far were attributed by clicks.
- PostgreSQL: `orders` and `touches` keep a tenth of each new page free (fillfactor 90),
  so that re-classifying orders and moving touches' windows, which change no indexed
  column, write each row in its own page without new index entries (HOT updates):
  bench/README.md has the figures. Pages written before keep their fill until rewritten.

The classes of stored orders do not change: each touch keeps the window it had.

Revision ID: 0034
Revises: 0033
"""

import os

import sqlalchemy as sa
from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

_LONGEST_CLICK_WINDOW = 90
_FAR = "9999-12-31 23:59:59.999999"
_FILLED = ("orders", "touches")
_WINDOW_OF_CAMPAIGN = (
    "COALESCE((SELECT campaigns.click_window_days FROM campaigns"
    " WHERE campaigns.profile_id = touches.profile_id"
    " AND campaigns.campaign_id = touches.campaign_id), :days)"
)
# touched_at plus the window, at most the latest time a datetime holds. SQLite keeps times
# as text and its date functions round fractions of a second: whole seconds are moved.
_WINDOW_END = {
    "postgresql": f"LEAST(touched_at + make_interval(days => {_WINDOW_OF_CAMPAIGN}),"
    " CAST('9999-12-31 23:59:59.999999+00' AS timestamptz))",
    "sqlite": f"COALESCE(datetime(substr(touched_at, 1, 19), '+' || {_WINDOW_OF_CAMPAIGN}"
    " || ' days') || substr(touched_at, 20), '9999-12-31 23:59:59.999999')",
}


def _window_days() -> int:
    try:
        days = int(os.environ.get("PARTNERLINK_ATTRIBUTION_WINDOW_DAYS", "7"))
    except ValueError:
        days = 7
    return min(max(days, 1), _LONGEST_CLICK_WINDOW)


def upgrade() -> None:
    days = _window_days()
    op.add_column(
        "campaigns",
        sa.Column("click_window_days", sa.Integer(), nullable=False, server_default=str(days)),
    )
    op.add_column(
        "campaigns",
        sa.Column("view_window_days", sa.Integer(), nullable=False, server_default="1"),
    )
    # counts_until is added with a default standing in until the UPDATE below: SQLite cannot
    # add a NOT NULL column without one, nor drop it without rebuilding the table (whose
    # expression index uq_touches_content a rebuild would lose). PostgreSQL drops it.
    op.add_column(
        "touches",
        sa.Column("kind", sa.String(length=5), nullable=False, server_default="click"),
    )
    op.add_column(
        "touches",
        sa.Column("counts_until", sa.DateTime(timezone=True), nullable=False, server_default=_FAR),
    )
    dialect = op.get_bind().dialect.name
    op.get_bind().execute(
        sa.text(f"UPDATE touches SET counts_until = {_WINDOW_END[dialect]}"), {"days": days}
    )
    if dialect == "postgresql":
        op.alter_column("touches", "counts_until", server_default=None)
    op.add_column("orders", sa.Column("touch_kind", sa.String(length=5), nullable=True))
    op.execute("UPDATE orders SET touch_kind = 'click' WHERE campaign_id IS NOT NULL")
    if dialect == "postgresql":
        for table in _FILLED:
            op.execute(f"ALTER TABLE {table} SET (fillfactor = 90)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in _FILLED:
            op.execute(f"ALTER TABLE {table} RESET (fillfactor)")
    # Plain ALTER TABLE ... DROP COLUMN on both (SQLite 3.35 and later): no table rebuilt.
    op.drop_column("orders", "touch_kind")
    op.drop_column("touches", "counts_until")
    op.drop_column("touches", "kind")
    op.drop_column("campaigns", "view_window_days")
    op.drop_column("campaigns", "click_window_days")
