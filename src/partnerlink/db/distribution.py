"""How each table would be placed on a Citus cluster (docs/deployment.md, "Distribution
plan (Citus)", mirrors this table; tests/db/test_citus_ready.py checks the migrated
PostgreSQL schema against it).

- DISTRIBUTED: a profile's data, sharded by `profile_id` and co-located. Every primary
  key and unique key includes `profile_id`; every foreign key to another distributed
  table includes it on both sides.
- REFERENCE: small tables copied to every node, read by every profile's queries, or
  looked up by a secret (a code, a token's hash) before any profile is known. No foreign
  key to a distributed table.
- LOCAL: stays on the coordinator; neither a distributed nor a reference table has a
  foreign key to it, and it has none to a distributed table.
"""

from __future__ import annotations

from typing import Final, Literal

Placement = Literal["distributed", "reference", "local"]

DISTRIBUTION_COLUMN: Final = "profile_id"

PLAN: Final[dict[str, Placement]] = {
    # A profile's data.
    "stores": "distributed",
    "customers": "distributed",
    "orders": "distributed",
    "order_journal": "distributed",
    "touches": "distributed",
    "campaigns": "distributed",
    "connections": "distributed",
    "tokens": "distributed",
    "uploads": "distributed",
    "receipts": "distributed",
    "audience_opt_outs": "distributed",
    "audience_suppressions": "distributed",
    "audience_sizes": "distributed",
    "destinations": "distributed",
    "destination_members": "distributed",
    "destination_conversions": "distributed",
    "destination_runs": "distributed",
    "destination_request_checks": "distributed",
    "destination_alerts": "distributed",
    "customer_deletions": "distributed",
    # Small, global, or found by a secret before the profile is known.
    "merchants": "reference",
    "profiles": "reference",
    "partners": "reference",
    "pairing_codes": "reference",
    "integration_tokens": "reference",
    "oauth_authorizations": "reference",
    "ad_connections": "reference",
    "ad_connection_states": "reference",
    # The coordinator's own.
    "merchant_sessions": "local",
    "partner_quotas": "local",
    "webhook_events": "local",
    "sms_stops": "local",
    "idempotency_keys": "local",
    "alembic_version": "local",
}


def tables(placement: Placement) -> list[str]:
    return [name for name, where in PLAN.items() if where == placement]
