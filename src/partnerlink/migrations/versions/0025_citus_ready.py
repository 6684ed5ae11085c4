"""Ready for sharding by profile with Citus (issue 28).

The plan is partnerlink.db.distribution.PLAN (docs/deployment.md, "Distribution plan
(Citus)"); tests/db/test_citus_ready.py checks the migrated PostgreSQL schema against it.

Both dialects:
- `connections`, `tokens` and `receipts` get `profile_id`, filled from the parent row
  (the store; the connection). A plain ADD COLUMN, nullable (SQLite adds NOT NULL
  columns only with a default); PostgreSQL then sets it NOT NULL.
- the unique keys an upsert names (ON CONFLICT) get `profile_id`: on SQLite as a new
  unique index beside the old constraint (SQLite checks the upsert's target first, so
  the statement text is the same on both), except audience_opt_outs' primary key:
  SQLite's is customer_id, the rowid, which an upsert can only name alone.

PostgreSQL only:
- every primary key of a distributed table becomes (its columns, profile_id), and every
  unique key gets profile_id, so Citus can enforce it within a shard;
- the foreign keys between distributed tables become composite, (x_id, profile_id) →
  (id, profile_id); `orders → customers` is NO ACTION instead of SET NULL (a SET NULL
  would null `profile_id` too): erasure detaches a person's orders before deleting the
  customer (audiences/choices.py), and nothing else deletes a customer alone;
- the foreign keys from the reference tables to distributed ones go:
  `pairing_codes.store_id`, `integration_tokens.store_id` and
  `oauth_authorizations.connection_id` stay as plain columns (the code reads the store
  or connection by id and treats a missing one as gone).

SQLite keeps its primary and foreign keys as they were: changing them means a batch
rebuild of stores, orders, customers... whose ON DELETE CASCADE children would be
deleted with the old copy. SQLite is a single-node store; Citus is PostgreSQL's.

Revision ID: 0025
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

# table → the parent row it takes profile_id from (a correlated subquery: same text on both)
NEW_COLUMNS = {
    "connections": "SELECT stores.profile_id FROM stores WHERE stores.id = connections.store_id",
    "tokens": (
        "SELECT connections.profile_id FROM connections WHERE connections.id = tokens.connection_id"
    ),
    "receipts": "SELECT stores.profile_id FROM stores WHERE stores.id = receipts.store_id",
}

# Primary keys of distributed tables: name → (table, columns without profile_id).
PRIMARY_KEYS = {
    "pk_stores": ("stores", ["id"]),
    "pk_customers": ("customers", ["id"]),
    "pk_orders": ("orders", ["id"]),
    "pk_touches": ("touches", ["id"]),
    "pk_campaigns": ("campaigns", ["id"]),
    "pk_connections": ("connections", ["id"]),
    "pk_tokens": ("tokens", ["id"]),
    "pk_uploads": ("uploads", ["id"]),
    "pk_receipts": ("receipts", ["id"]),
    "pk_destinations": ("destinations", ["id"]),
    "pk_audience_opt_outs": ("audience_opt_outs", ["customer_id"]),
    "pk_destination_members": ("destination_members", ["destination_id", "customer_id"]),
    "pk_destination_conversions": ("destination_conversions", ["destination_id", "order_row_id"]),
}

# Unique keys: old name → (new name, table, columns without profile_id, an upsert's target).
UNIQUE_KEYS = {
    "uq_orders_store_partner_order": (
        "uq_orders_store_partner_order_profile",
        "orders",
        ["store_id", "partner_id", "order_id"],
        True,
    ),
    "uq_receipts_order_pk": ("uq_receipts_order_pk_profile", "receipts", ["order_pk"], True),
    "uq_receipts_key_hash": ("uq_receipts_key_hash_profile", "receipts", ["key_hash"], False),
    "uq_tokens_token_hash": ("uq_tokens_token_hash_profile", "tokens", ["token_hash"], False),
    "uq_uploads_nonce": ("uq_uploads_nonce_profile", "uploads", ["nonce"], False),
}

# SQLite's stand-ins for the primary keys an upsert names (ON CONFLICT). Not
# audience_opt_outs': its key, customer_id, is the rowid, which an upsert can only name
# alone (audiences/queries.py names it so on SQLite).
SQLITE_UPSERT_KEYS = {
    "uq_destination_members_destination_customer_profile": (
        "destination_members",
        ["destination_id", "customer_id"],
    ),
}

# Foreign keys between distributed tables: name → (table, column, target, ON DELETE).
DISTRIBUTED_FOREIGN_KEYS = {
    "fk_connections_store_id_stores": ("connections", "store_id", "stores", "CASCADE"),
    "fk_tokens_connection_id_connections": (
        "tokens",
        "connection_id",
        "connections",
        "CASCADE",
    ),
    "fk_orders_store_id_stores": ("orders", "store_id", "stores", "CASCADE"),
    "fk_orders_customer_id_customers": ("orders", "customer_id", "customers", "NO ACTION"),
    "fk_uploads_store_id_stores": ("uploads", "store_id", "stores", "CASCADE"),
    "fk_receipts_order_pk_orders": ("receipts", "order_pk", "orders", "CASCADE"),
    "fk_receipts_store_id_stores": ("receipts", "store_id", "stores", "CASCADE"),
    "fk_audience_opt_outs_customer_id_customers": (
        "audience_opt_outs",
        "customer_id",
        "customers",
        "CASCADE",
    ),
    "fk_destination_members_destination_id_destinations": (
        "destination_members",
        "destination_id",
        "destinations",
        "CASCADE",
    ),
    "fk_destination_conversions_destination_id_destinations": (
        "destination_conversions",
        "destination_id",
        "destinations",
        "CASCADE",
    ),
}
WAS_SET_NULL = {"fk_orders_customer_id_customers"}

# Foreign keys from reference tables to distributed ones: name → (table, column, target,
# ON DELETE), for the downgrade.
REFERENCE_FOREIGN_KEYS = {
    "fk_pairing_codes_store_id_stores": ("pairing_codes", "store_id", "stores", "CASCADE"),
    "fk_integration_tokens_store_id_stores": (
        "integration_tokens",
        "store_id",
        "stores",
        "SET NULL",
    ),
    "fk_oauth_authorizations_connection_id_connections": (
        "oauth_authorizations",
        "connection_id",
        "connections",
        "SET NULL",
    ),
}


def _postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    for table, parent in NEW_COLUMNS.items():
        op.add_column(table, sa.Column("profile_id", sa.String(36), nullable=True))
        op.execute(f"UPDATE {table} SET profile_id = ({parent})")
    if not _postgres():
        for new, table, columns, upsert in UNIQUE_KEYS.values():
            if upsert:
                op.create_index(new, table, [*columns, "profile_id"], unique=True)
        for name, (table, columns) in SQLITE_UPSERT_KEYS.items():
            op.create_index(name, table, [*columns, "profile_id"], unique=True)
        return
    for table in NEW_COLUMNS:
        op.alter_column(table, "profile_id", nullable=False)
    for name, (table, *_rest) in {**DISTRIBUTED_FOREIGN_KEYS, **REFERENCE_FOREIGN_KEYS}.items():
        op.drop_constraint(name, table, type_="foreignkey")
    for name, (table, columns) in PRIMARY_KEYS.items():
        op.drop_constraint(name, table, type_="primary")
        op.create_primary_key(name, table, [*columns, "profile_id"])
    for old, (new, table, columns, _upsert) in UNIQUE_KEYS.items():
        op.drop_constraint(old, table, type_="unique")
        op.create_unique_constraint(new, table, [*columns, "profile_id"])
    for name, (table, column, target, on_delete) in DISTRIBUTED_FOREIGN_KEYS.items():
        op.create_foreign_key(
            name,
            table,
            target,
            [column, "profile_id"],
            ["id", "profile_id"],
            ondelete=None if on_delete == "NO ACTION" else on_delete,
        )


def downgrade() -> None:
    if _postgres():
        for name, (table, *_rest) in DISTRIBUTED_FOREIGN_KEYS.items():
            op.drop_constraint(name, table, type_="foreignkey")
        for old, (new, table, columns, _upsert) in UNIQUE_KEYS.items():
            op.drop_constraint(new, table, type_="unique")
            op.create_unique_constraint(old, table, columns)
        for name, (table, columns) in PRIMARY_KEYS.items():
            op.drop_constraint(name, table, type_="primary")
            op.create_primary_key(name, table, columns)
        for name, (table, column, target, on_delete) in {
            **DISTRIBUTED_FOREIGN_KEYS,
            **REFERENCE_FOREIGN_KEYS,
        }.items():
            if name in WAS_SET_NULL:
                on_delete = "SET NULL"
            op.create_foreign_key(name, table, target, [column], ["id"], ondelete=on_delete)
    else:
        for name, (table, _columns) in SQLITE_UPSERT_KEYS.items():
            op.drop_index(name, table_name=table)
        for new, table, _columns, upsert in UNIQUE_KEYS.values():
            if upsert:
                op.drop_index(new, table_name=table)
    for table in reversed(list(NEW_COLUMNS)):
        op.drop_column(table, "profile_id")
