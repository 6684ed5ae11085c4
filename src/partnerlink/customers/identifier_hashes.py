"""Which customers an ad touch names: by the SHA-256 of their normalized email or phone.

Touches carry only hashes (measurement/touches.py); customers keep their identifiers
plain. PostgreSQL also keeps each customer's hashes, generated from the plain columns by
the database whatever writes them (migration 0038), and compares those; SQLite, which
has no SHA-256 function, hashes each customer of the profile in process.
"""

from __future__ import annotations

from collections.abc import Collection

from partnerlink.db.raw import Sql, Statement
from partnerlink.kit.digests import sha256_hex

# customer id: (email hash, phone hash), lower-case hex, None where the customer has none
Hashes = dict[int, tuple[str | None, str | None]]

# One pass over the profile's stored hashes, each looked up in the wanted ones (PostgreSQL
# hashes a constant array of them once): at 10,000 touches and 200,000 customers, less
# than 10,000 look-ups in an index would cost, and no index slows customers' writes.
# Planned each time: only a plan made for the array it is given hashes it; a prepared
# statement's generic plan searched the wanted hashes one by one for each customer.
_BY_STORED_HASH = Statement(
    "SELECT id, encode(email_sha256, 'hex'), encode(phone_sha256, 'hex') FROM customers"
    " WHERE profile_id = :profile_id"
    " AND (email_sha256 = ANY(:wanted) OR phone_sha256 = ANY(:wanted))",
    binary=frozenset({"wanted"}),
    planned_each_time=True,
)
_IDENTIFIERS = Statement(
    "SELECT id, email, phone_number FROM customers WHERE profile_id = :profile_id"
)


def customers_hashing_to(sql: Sql, *, profile_id: str, keys: Collection[str]) -> Hashes:
    """The profile's customers whose email or phone hashes to one of `keys` (lower-case
    hex SHA-256), with both their hashes."""
    if not keys:
        return {}
    if sql.postgres:
        wanted = [bytes.fromhex(key) for key in keys]
        rows = sql.all_rows(_BY_STORED_HASH, {"profile_id": profile_id, "wanted": wanted})
        return {customer_id: (email, phone) for customer_id, email, phone in rows}
    found: Hashes = {}
    for customer_id, email, phone in sql.all_rows(_IDENTIFIERS, {"profile_id": profile_id}):
        hashes = (
            None if email is None else sha256_hex(email),
            None if phone is None else sha256_hex(phone),
        )
        if hashes[0] in keys or hashes[1] in keys:
            found[customer_id] = hashes
    return found
