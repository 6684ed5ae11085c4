"""Keyed digests of people's identifiers: what the STOP list and the suppression list keep.

A phone number or an email address has too little entropy for a plain SHA-256 to
hide it: every phone number of a country can be hashed in minutes. So these lists
keep HMAC-SHA256 under a key derived from the service key (PARTNERLINK_SECRET_KEY,
or data/secret.key), as `security.secrets.sign` computes it: a dump of the database
alone cannot be enumerated (CONTRACT §12). Changing the service key makes the lists
unmatchable, as it makes upload URLs and webhook secrets invalid.

Exports and the receipt worker match customers and receipts against the lists in
SQL, so the same digest is written here for the database too: SQLite gets it as a
function of the connection, PostgreSQL composes HMAC from its built-in `sha256`
(RFC 2104, the key padded to SHA-256's 64-byte block), needing no extension.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, LargeBinary, String, func, literal
from sqlalchemy.engine import Connection
from sqlalchemy.orm import InstrumentedAttribute

from partnerlink.security.secrets import sign

_KEY_CONTEXT = "identifier-digest-key:"
_SQLITE_FUNCTION = "partnerlink_identifier_digest"
_BLOCK = 64


def identifier_key(signing_key: bytes) -> bytes:
    """The digest key, derived from the service key (43 bytes: within one HMAC block)."""
    return sign(signing_key, _KEY_CONTEXT).encode()


def identifier_digest(key: bytes, value: str) -> str:
    """HMAC-SHA256 of the value's UTF-8, base64url without padding (43 characters)."""
    return sign(key, value)


def register_digest_function(connection: Connection, key: bytes) -> None:
    """Gives a SQLite connection the digest (PostgreSQL composes it: nothing to do)."""
    if connection.dialect.name == "sqlite":
        raw: Any = connection.connection.driver_connection
        raw.create_function(
            _SQLITE_FUNCTION,
            1,
            lambda v: None if v is None else identifier_digest(key, v),
            deterministic=True,
        )


def identifier_digest_sql(
    dialect: str, key: bytes, value: ColumnElement[Any] | InstrumentedAttribute[Any]
) -> ColumnElement[str]:
    """The same digest of a text expression, computed by the database (NULL for NULL).

    On SQLite the connection must have had `register_digest_function` with this key.
    """
    if dialect == "sqlite":
        return getattr(func, _SQLITE_FUNCTION)(value, type_=String())
    padded = key.ljust(_BLOCK, b"\0")
    inner = literal(bytes(b ^ 0x36 for b in padded), LargeBinary)
    outer = literal(bytes(b ^ 0x5C for b in padded), LargeBinary)
    message = func.convert_to(value, "UTF8", type_=LargeBinary)
    inner_hash = func.sha256(inner.op("||", return_type=LargeBinary)(message), type_=LargeBinary)
    mac = func.sha256(outer.op("||", return_type=LargeBinary)(inner_hash), type_=LargeBinary)
    base64 = func.encode(mac, "base64", type_=String())
    return func.rtrim(func.translate(base64, "+/", "-_", type_=String()), "=", type_=String())
