"""What re-classifying orders reads (issue 51): customers' hashes, touches in order.

- PostgreSQL: `customers.email_sha256` and `customers.phone_sha256`: SHA-256 of the normalized
  email and phone (32 bytes; the lower-case hex of orders/conversion.identifier_hash),
  columns the database generates from `email` and `phone_number` whatever statement
  writes them (`partnerlink_sha256`, declared IMMUTABLE: the database's encoding never
  changes under it). Finding the customers a campaign's touches name read and hashed
  every customer of the profile (~400 ms at 200,000); it now compares the stored hashes
  (customers/identifier_hashes.py). No index: one pass over the stored hashes answers
  10,000 touches at once, and an index would cost every customer write. The columns
  cost the writes that create customers: a first upload of 200,000 ran 12% slower
  (bench/README.md, "The window change, second pass").
- PostgreSQL: `touches` keeps half of each new page free (fillfactor 50, was 90): a window change
  moves the window ends of all of a campaign's touches, which sit together in the
  pages their import filled; with room beside each row they are written in place
  without new index entries (HOT updates): 10,000 touches in ~35 ms instead of ~250.
  Pages written before keep their fill until rewritten.
- `ix_touches_email_sha256` and `ix_touches_phone_sha256` (both databases) hold the touches
  in the order an order takes its latest touch (time, then campaign id, newest first, then
  a click before a view: orders/conversion._LATEST_FIRST), so that the look-up reads the
  index in order and sorts nothing: three sorts a look-up went (the upsert's and the
  re-classification's), ~18 -> ~10 us an order when 12,000 are re-classified.

SQLite has no SHA-256 function to generate the columns: it hashes in process, as before.

Revision ID: 0038
Revises: 0037
"""

from alembic import op

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

_HASHED = {"email_sha256": "email", "phone_sha256": "phone_number"}
_LATEST_FIRST = "touched_at DESC, campaign_id DESC, kind"


def _touch_indexes(order: str) -> None:
    for column in ("email_sha256", "phone_sha256"):
        op.execute(f"DROP INDEX ix_touches_{column}")
        op.execute(f"CREATE INDEX ix_touches_{column} ON touches ({column}, profile_id, {order})")


def upgrade() -> None:
    _touch_indexes(_LATEST_FIRST)
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE FUNCTION partnerlink_sha256(value text) RETURNS bytea"
        " LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE"
        " AS $$ SELECT sha256(convert_to(value, 'UTF8')) $$"
    )
    op.execute(
        "ALTER TABLE customers "
        + ", ".join(
            f"ADD COLUMN {column} bytea GENERATED ALWAYS AS (partnerlink_sha256({source})) STORED"
            for column, source in _HASHED.items()
        )
    )
    op.execute("ALTER TABLE touches SET (fillfactor = 50)")


def downgrade() -> None:
    _touch_indexes("touched_at")
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE touches SET (fillfactor = 90)")
    op.execute("ALTER TABLE customers " + ", ".join(f"DROP COLUMN {c}" for c in _HASHED))
    op.execute("DROP FUNCTION partnerlink_sha256(text)")
